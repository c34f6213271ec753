"""Spatial Keyframes from the 3D Viewport's Signals tab: Build, Esc and Compact Action by real clicks.

The demo biped (240 frames) is active. The panel (closed by default, the last of the tab) is opened
by a click on its header, found by clicking down from the Pose Space panel's Build button (the
panels between are closed: this scenario runs before the motion database's and transfer's); Build Spatial Keyframes stores a model whose markers are the key poses the
core picks (``marker_count``) and whose trajectory has every frame; a second build with the slow
t-SNE projection is cancelled with a real Esc and leaves the stored model as it was; Compact Action
writes ``<action>.skc``, plays it on the biped, and the sidebar's comparison lists the temporal
schemes beside the spatial one, with the numbers the result holds. After the build the canvas at
the top of the tab shows the markers (the canvas tools are ``spatial_keyframes_canvas``).
"""

from __future__ import annotations

from collections.abc import Iterator

import bpy
from uikit import (
    Wait,
    button_of,
    canvas_geometry,
    check,
    click_button,
    click_then_escape,
    demo_biped,
    ext,
    make_active,
    modal_running,
    move_mouse,
    region_of,
    scan_buttons,
    screenshot,
    ui_scale,
    xdotool,
)

from ._panels import PanelDraws, RegionDraws, scroll_to_bottom

BUILD, COMPACT = "anim_signals.spatial_keyframes_from_action", "anim_signals.compact_action"
BUILD_POSE_SPACE = "anim_signals.build_pose_space"
PANEL = "ANIM_SIGNALS_PT_spatial_keyframes"


SIGNALS_PANELS = ("ANIM_SIGNALS_PT_pose_space", "ANIM_SIGNALS_PT_motion_db", "ANIM_SIGNALS_PT_deformation_transfer",
                  PANEL)


def toggle_panel_below(area, sidebar, below_y: float, redraws: RegionDraws, header: list, *,
                       close: bool = False) -> Iterator[Wait]:
    """Open (``close``: close) the Spatial Keyframes panel by a real click on its header, clicking
    down the sidebar from ``below_y`` (under the Pose Space panel's last button) in half-row steps.
    Which panels are open is read from their draws over a few sidebar redraws before and after each
    click (the clicks go at most 16 half rows down); a click that toggled another panel is undone by a second click at the same spot (the
    header has not moved). Stops at a click that ran an operator (a button, not a header). Appends
    the header's y (region pixels) to ``header`` when the panel opened (closed)."""
    watched = {name: PanelDraws(name) for name in SIGNALS_PANELS if hasattr(bpy.types, name)}
    ran = bpy.context.window_manager.operators

    def observe(what: str) -> Iterator[Wait]:
        """Count each panel's draws afresh over the next redraws (twice: a panel closing is still
        drawn while Blender animates it shut, so the second window is the settled state)."""
        for _ in range(2):
            for w in watched.values():
                w.count = 0
            yield redraws.after(area, what, 3)

    def drawn() -> set:
        return {name for name, w in watched.items() if w.count > 0}

    try:
        step = 10.0 * ui_scale()
        y = below_y
        # the header lies a few headers below: never click on down into the viewport under the sidebar
        while y > max(step, below_y - 16 * step):
            yield from observe("sidebar drawn before a click")
            before = drawn()
            last = ran[-1].bl_idname if len(ran) else ""
            move_mouse(sidebar, sidebar.width * 0.4, y)
            xdotool("click", "1")
            yield from observe("sidebar drawn after a click")
            after = drawn()
            if (ran[-1].bl_idname if len(ran) else "") != last:  # a button, not a header: stop clicking
                check("the clicks down the sidebar hit only headers", False, f"a click ran {ran[-1].bl_idname}")
                break
            if PANEL in (before - after if close else after - before):
                header.append(y)
                break
            if (before ^ after) - {PANEL}:  # another panel's header: toggle it back
                xdotool("click", "1")
                yield from observe("sidebar drawn after toggling a panel back")
            y -= step
        move_mouse(sidebar, sidebar.width * 0.5, sidebar.height * 0.5)  # no tooltip on the header
    finally:
        for w in watched.values():
            w.close()


def open_panel_below(area, sidebar, below_y: float, redraws: RegionDraws, header: list) -> Iterator[Wait]:
    """:func:`toggle_panel_below` opening the panel."""
    yield from toggle_panel_below(area, sidebar, below_y, redraws, header)


def run(area) -> Iterator[Wait]:
    storage = ext("operators.spatial_keyframes.storage")
    sources = ext("operators.spatial_keyframes.sources")
    biped = demo_biped("SK_Biped")
    make_active(biped)
    action = biped.animation_data.action
    scene = bpy.context.scene
    settings = scene.anim_signals.spatial_keyframes
    settings.projection, settings.selection, settings.key_mode, settings.ratio = "MDS", "UNIFORM", "RATIO", 0.03
    settings.optimise = True
    sidebar = region_of(area, "UI")
    redraws = RegionDraws(bpy.types.SpaceView3D)
    try:
        found: dict = {}
        yield from scan_buttons(sidebar, found, stop_at=BUILD_POSE_SPACE)
        above = button_of(found, BUILD_POSE_SPACE)
        if not check("Pose Space's Build button found above the Spatial Keyframes panel", above is not None):
            return
        header: list = []
        yield from open_panel_below(area, sidebar, above[1] - 1.5 * 20 * ui_scale(), redraws, header)
        if not check("Spatial Keyframes panel opened by a click on its header", bool(header)):
            screenshot("spatial_keyframes_closed")
            return
        found = {}
        yield from scan_buttons(sidebar, found, stop_at=COMPACT, top=header[0])
        build, compact = button_of(found, BUILD), button_of(found, COMPACT)
        if not check("Build and Compact Action buttons found", build is not None and compact is not None,
                     f"{sorted(c.split('(')[0] for c in found)}"):
            screenshot("spatial_keyframes_buttons_missing")
            return

        # -- Build: the model holds the markers the settings ask for and every frame ---------------
        n_frames = int(action.frame_range[1] - action.frame_range[0]) + 1
        expected_markers = sources.marker_count(n_frames, "RATIO", 0.03, 8)
        click_button(sidebar, build)
        yield Wait("the model is built", lambda: storage.model_info(biped) is not None and not modal_running(BUILD),
                   120.0)
        info = storage.model_info(biped)
        check("Build stores a model with the markers asked for and every frame",
              info["markers"] == expected_markers and info["frames"] == n_frames and info["action"] == action.name,
              f"{info['markers']} markers (expected {expected_markers}), {info['frames']} of {n_frames} frames")
        model = storage.load_model(biped)
        check("markers are distinct points of the plane", len({tuple(p) for p in model.clip.markers.round(9).tolist()})
              == info["markers"], f"{info['markers']} markers")
        token = biped[storage.PROP]["token"]
        yield redraws.after(area, "sidebar shows the model")
        screenshot("spatial_keyframes_built")
        # the canvas now shows the markers at the top of the tab and pushes the panel down: find
        # the buttons again (the header moved with them)
        rect, _ = canvas_geometry(area, biped)
        check("after the build the canvas shows the spatial keyframes", rect is not None
              and scene.anim_signals.pose_space_canvas.shows == "SPATIAL_KEYFRAMES")
        found = {}
        yield from scan_buttons(sidebar, found, stop_at=COMPACT, top=None if rect is None else rect[1] - 2.0)
        moved_build, compact = button_of(found, BUILD), button_of(found, COMPACT)
        if not check("Build and Compact Action found again below the canvas", moved_build is not None
                     and compact is not None, f"{sorted(c.split('(')[0] for c in found)}"):
            return
        build, above = moved_build, button_of(found, BUILD_POSE_SPACE) or above

        # -- Esc: a slow rebuild (t-SNE) cancelled leaves the stored model as it was ----------------
        settings.projection = "TSNE"
        actions_before = set(bpy.data.actions.keys())
        yield redraws.after(area, "sidebar drawn with t-SNE chosen")
        yield from click_then_escape(sidebar, build, BUILD, "the rebuild")
        check("Esc cancels the rebuild: the stored model is unchanged", biped[storage.PROP]["token"] == token
              and storage.model_info(biped)["projection"].upper() == "MDS",
              f"projection {storage.model_info(biped)['projection']}")
        check("Esc cancels the rebuild: no action added", set(bpy.data.actions.keys()) == actions_before)
        settings.projection = "MDS"

        # -- Compact Action: <action>.skc written and played, schemes compared --------------------
        yield redraws.after(area, "sidebar drawn with MDS chosen again")
        result = scene.anim_signals.last_spatial_keyframes
        click_button(sidebar, compact)
        yield Wait("the action is compacted", lambda: result.valid and result.compacted
                   and result.object_name == biped.name and not modal_running(COMPACT), 120.0)
        written = bpy.data.actions.get(result.written_action)
        check("Compact Action writes <action>.skc and plays it", written is not None
              and written.name.startswith(action.name) and written.name.endswith(".skc")
              and biped.animation_data.action == written, f"written {result.written_action!r}")
        check("the original action is kept", bpy.data.actions.get(action.name) is not None)
        kinds = {row.kind for row in result.schemes}
        temporal = [row for row in result.schemes if row.kind == "TEMPORAL"]
        check("the comparison lists temporal schemes beside the spatial one", kinds == {"TEMPORAL", "SPATIAL"}
              and len(temporal) >= 3, f"{[(r.kind, r.scheme) for r in result.schemes]}")
        best = min(temporal, key=lambda r: r.error)
        check("the best temporal scheme shown is the lowest of the rows", result.best_temporal == best.scheme
              and abs(result.best_temporal_error - best.error) < 1e-9,
              f"{result.best_temporal} {result.best_temporal_error:.4g}; rows {[(r.scheme, round(r.error, 4)) for r in temporal]}")
        yield redraws.after(area, "sidebar shows the comparison")
        screenshot("spatial_keyframes_compacted")
        # close the panel again, so the next scenarios find the tab as they expect it
        yield from scroll_to_bottom(area, sidebar, redraws, up=True)
        closed: list = []
        yield from toggle_panel_below(area, sidebar, above[1] - 1.5 * 20 * ui_scale(), redraws, closed, close=True)
        check("a click on its header closes the panel again", bool(closed))
    finally:
        redraws.close()
