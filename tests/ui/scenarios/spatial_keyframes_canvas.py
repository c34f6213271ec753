"""Spatial keyframes on the canvas, all with real events: the markers drawn where the core puts them;
a drag away from the markers poses the rig through the markers' RBF; a drag on a marker moves it
(stored when released) and Esc during such a drag leaves the model as it was; a Shift-drag records
a new action ``<action>.sk`` of the sidebar's Record Frames; Add Marker then a click on the canvas
adds the rig's current pose there; Remove Marker then a click on a marker removes it; Play Back
writes ``<action>.skc`` through the edited markers and starts playback, which a real Esc stops.

Runs after ``spatial_keyframes`` on its biped (built here when run alone). The Spatial Keyframes
panel is the last of the tab: it is opened by a click on its header below the Pose Space panel,
its tool buttons are found once with the sidebar scrolled to the bottom, and the sidebar is
scrolled back to the top (where the canvas is) for the presses on the canvas.
"""

from __future__ import annotations

from collections.abc import Iterator

import bpy
import numpy as np
from uikit import (
    Wait,
    button_of,
    canvas_geometry,
    check,
    demo_biped,
    ext,
    make_active,
    modal_running,
    move_mouse,
    paced_click,
    press_drag,
    press_key,
    region_of,
    region_pixels,
    scan_buttons,
    screenshot,
    ui_scale,
    xdotool,
)

from ._panels import RegionDraws, scroll_to_bottom
from .spatial_keyframes import BUILD_POSE_SPACE, open_panel_below, toggle_panel_below

NAVIGATE = "anim_signals.spatial_keyframes_navigate"
MOVE = "anim_signals.spatial_keyframes_move_marker"
ADD = "anim_signals.spatial_keyframes_add_marker"
REMOVE = "anim_signals.spatial_keyframes_remove_marker"
RECORD = "anim_signals.spatial_keyframes_record"
PLAY_BACK = "anim_signals.spatial_keyframes_play_back"
RECORD_FRAMES = 20
CLEAR_PX = 16.0  # a press this far (x UI scale) from every marker starts no marker drag (picks within 8)


def free_spots(geom, rect, margin: float) -> np.ndarray:
    """Canvas pixels (integers) at least ``margin`` px from every marker, the current-frame ring and
    the canvas's edge, inside the frames' and markers' pixel bounding box (so the cursor is not held
    at its edge)."""
    x0, y0, w, h = rect
    items = np.vstack([np.asarray(geom.frame_points), np.asarray(geom.markers)])
    lo, hi = items.min(axis=0), items.max(axis=0)
    xs = np.arange(np.ceil(max(x0 + margin, lo[0])), np.floor(min(x0 + w - margin, hi[0])), 2.0)
    ys = np.arange(np.ceil(max(y0 + margin, lo[1])), np.floor(min(y0 + h - margin, hi[1])), 2.0)
    grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)
    avoid = np.vstack([np.asarray(geom.markers)] + ([np.asarray(geom.current)[None]] if geom.current is not None
                                                    else []))
    d = np.sqrt(((grid[:, None, :] - avoid[None]) ** 2).sum(axis=2)).min(axis=1)
    return grid[d >= margin]


def rig_rotations(ob, bones) -> np.ndarray:
    """The bones' local rotations as Blender computes them from their modes, (J, 3, 3)."""
    return np.array([np.array(ob.pose.bones[name].matrix_basis)[:3, :3] for name in bones])


def markers_shown(pixels: np.ndarray, geom, marker_color) -> int:
    """Markers whose diamond shows the marker colour within a pixel of its centre."""
    found = 0
    for px, py in np.asarray(geom.markers):
        ix, iy = int(round(px)), int(round(py))
        patch = pixels[max(iy - 1, 0):iy + 2, max(ix - 1, 0):ix + 2].reshape(-1, 3)
        if patch.size and np.abs(patch - np.asarray(marker_color[:3])).max(axis=1).min() < 0.06:
            found += 1
    return found


def run(area) -> Iterator[Wait]:
    storage = ext("operators.spatial_keyframes.storage")
    scene = bpy.context.scene
    biped = bpy.data.objects.get("SK_Biped")
    hidden = biped is not None and biped.hide_get()
    if biped is None or storage.model_info(biped) is None:  # run alone: the model is setup, not under test
        biped = demo_biped("SK_Biped")
        bpy.context.view_layer.update()  # the new armature's pose exists from here on
        make_active(biped)
        with bpy.context.temp_override(active_object=biped, object=biped):
            bpy.ops.anim_signals.spatial_keyframes_from_action("EXEC_DEFAULT", key_mode="RATIO", ratio=0.03,
                                                               projection="MDS", selection="UNIFORM")
    biped.hide_set(False)  # the driver hid the previous scenario's objects
    make_active(biped)
    if not check("the biped has spatial keyframes to show", storage.model_info(biped) is not None):
        return
    scene.anim_signals.pose_space_canvas.shows = "SPATIAL_KEYFRAMES"
    settings = scene.anim_signals.spatial_keyframes
    frames_before, range_before = settings.record_frames, (scene.frame_start, scene.frame_end)
    settings.record_frames = RECORD_FRAMES
    sidebar = region_of(area, "UI")
    redraws = RegionDraws(bpy.types.SpaceView3D)
    try:
        yield from _scenario(area, sidebar, biped, storage, scene, redraws)
    finally:
        if bpy.context.screen is not None and bpy.context.screen.is_animation_playing:
            with bpy.context.temp_override(area=area):
                bpy.ops.screen.animation_cancel(restore_frame=True)
        settings.record_frames = frames_before
        scene.frame_start, scene.frame_end = range_before
        biped.hide_set(hidden)
        redraws.close()


def _scenario(area, sidebar, biped, storage, scene, redraws) -> Iterator[Wait]:
    scale = ui_scale()
    palette = ext("anim_signals.posespace.palette")
    model = storage.load_model(biped)

    # -- the markers where the core puts them ---------------------------------------------------
    move_mouse(sidebar, 4, 4)
    yield redraws.after(area, "sidebar drawn with the spatial keyframes on the canvas", 3)
    rect, geom = canvas_geometry(area, biped)
    if not check("the canvas shows the biped's spatial keyframes", geom is not None and len(geom.markers)
                 == len(model.clip.keys), f"{None if geom is None else len(geom.markers)} markers drawn"):
        return
    shot = screenshot("spatial_keyframes_canvas")
    shown = markers_shown(region_pixels(shot, sidebar), geom, palette.MARKER)
    check("every marker's diamond is drawn where the core puts it", shown == len(geom.markers),
          f"{shown} of {len(geom.markers)} markers in the marker colour at their positions")

    # -- navigate: a drag away from the markers poses the rig through their RBF ----------------
    spots = free_spots(geom, rect, CLEAR_PX * scale)
    if not check("the canvas has room for presses away from the markers", len(spots) >= 3, f"{len(spots)} spots"):
        return
    centre = np.array([rect[0] + rect[2] / 2, rect[1] + rect[3] / 2])
    press = spots[np.argmin(np.linalg.norm(spots - (centre - [rect[2] / 6, 0]), axis=1))]
    release = spots[np.argmin(np.linalg.norm(spots - (centre + [rect[2] / 6, rect[3] / 8]), axis=1))]
    state = ext("operators.pose_space.canvas_state")
    cursor = lambda: state.state_of(biped, state.SPATIAL_KEYFRAMES).cursor  # noqa: E731
    target = geom.view.to_pose(release)
    yield from press_drag(sidebar, [tuple(press), tuple((press + release) / 2), tuple(release)],
                          lambda: modal_running(NAVIGATE), what="navigate drag")
    yield Wait("navigate drag released", lambda: not modal_running(NAVIGATE) and cursor() is not None
               and np.linalg.norm(np.asarray(cursor()) - target) < 0.5 / geom.view.scale, 20.0)
    expected = model.rbf.evaluate(np.asarray(cursor(), dtype=float)[None])[0]
    err = float(np.max(np.abs(rig_rotations(biped, model.bones) - expected)))
    check("a navigate drag poses the rig as the markers' RBF at the release point", err < 1e-4,
          f"max |Blender - core| {err:.2e} over {len(model.bones)} bones")
    screenshot("spatial_keyframes_navigated")

    # -- move a marker: drag it, stored on release ---------------------------------------------
    token = biped[storage.PROP]["token"]
    i = int(np.argmin(np.linalg.norm(np.asarray(geom.markers) - centre, axis=1)))
    start = np.round(np.asarray(geom.markers[i]))
    moved = spots[np.argmin(np.linalg.norm(spots - (start + [25.0 * scale, 18.0 * scale]), axis=1))]
    yield from press_drag(sidebar, [tuple(start), tuple((start + moved) / 2), tuple(moved)],
                          lambda: modal_running(MOVE), what="marker drag")
    yield Wait("the marker drag is stored", lambda: not modal_running(MOVE)
               and biped[storage.PROP]["token"] != token, 20.0)
    after = storage.load_model(biped)
    want = model.clip.markers[i] + (moved - start) / geom.view.scale
    gap = float(np.linalg.norm(after.clip.markers[i] - want) * geom.view.scale)
    others = float(np.max(np.abs(np.delete(after.clip.markers, i, axis=0) - np.delete(model.clip.markers, i, axis=0))))
    check("a drag on a marker moves that marker by the drag", gap < 1.0 and others == 0.0,
          f"marker {i} {gap:.2f} px from where the drag put it; others moved {others:.2e}")
    check("the panel's model is marked edited", bool(storage.model_info(biped)["edited"]))
    screenshot("spatial_keyframes_marker_moved")

    # -- Esc during a marker drag leaves the model as it was ------------------------------------
    rect, geom = canvas_geometry(area, biped)
    token = biped[storage.PROP]["token"]
    j = (i + 1) % len(geom.markers)
    start = np.round(np.asarray(geom.markers[j]))
    move_mouse(sidebar, *start)
    xdotool("mousedown", "1")
    yield Wait("the press starts a marker drag", lambda: modal_running(MOVE), 5.0)
    move_mouse(sidebar, start[0] + 20 * scale, start[1] - 12 * scale)
    yield Wait("the drag previews", lambda: state.state_of(biped, state.SPATIAL_KEYFRAMES).preview is not None,
               5.0, required=False)
    press_key("Escape")
    yield Wait("Esc ends the marker drag", lambda: not modal_running(MOVE), 10.0)
    xdotool("mouseup", "1")
    yield redraws.after(area, "sidebar drawn after Esc")
    check("Esc during a marker drag leaves the stored model as it was", biped[storage.PROP]["token"] == token
          and state.state_of(biped, state.SPATIAL_KEYFRAMES).preview is None)

    # -- Shift-drag records <action>.sk ---------------------------------------------------------
    rect, geom = canvas_geometry(area, biped)
    spots = free_spots(geom, rect, CLEAR_PX * scale)
    stroke = [tuple(spots[np.argmin(np.linalg.norm(spots - (centre + offset), axis=1))])
              for offset in ([-rect[2] / 4, -rect[3] / 6], [0, rect[3] / 6], [rect[2] / 4, -rect[3] / 8])]
    recorded = storage.model_info(biped)["action"] + ".sk"
    yield from press_drag(sidebar, stroke, lambda: modal_running(RECORD), modifiers="shift", what="recording")
    yield Wait("the recording is written", lambda: not modal_running(RECORD)
               and bpy.data.actions.get(recorded) is not None, 20.0)
    action = bpy.data.actions.get(recorded)
    ad = biped.animation_data
    counts = {len(fc.keyframe_points) for fc in _fcurves(ad)} if action is not None else set()
    check("a Shift-drag records <action>.sk with the sidebar's Record Frames and plays it", action is not None
          and ad.action == action and counts == {RECORD_FRAMES}, f"{recorded}: key counts {sorted(counts)}")
    check("after the recording the stroke is no longer drawn",
          state.state_of(biped, state.SPATIAL_KEYFRAMES).stroke is None)
    yield redraws.after(area, "sidebar drawn after the recording", 3)
    screenshot("spatial_keyframes_recorded")

    # -- the tool buttons, found once with the panel open and the sidebar at the bottom --------
    header: list = []
    above: list = []
    yield from open_the_panel(area, sidebar, redraws, header, above)
    if not check("Spatial Keyframes panel opened by a click on its header", bool(header),
                 f"Build Pose Space button at {above}"):
        screenshot("spatial_keyframes_canvas_panel_closed")
        return
    yield from scroll_to_bottom(area, sidebar, redraws)
    found: dict = {}
    yield from scan_buttons(sidebar, found, stop_at=PLAY_BACK)
    add, remove, play = button_of(found, ADD), button_of(found, REMOVE), button_of(found, PLAY_BACK)
    if not check("Add Marker, Remove Marker and Play Back buttons found", None not in (add, remove, play),
                 f"{sorted(c.split('(')[0] for c in found)}"):
        return

    # -- Add Marker, then a click on the canvas ------------------------------------------------
    n_markers = len(storage.load_model(biped).clip.keys)
    clicked: list = []
    yield from _button_then_canvas_click(area, sidebar, redraws, add, ADD, biped, lambda geom, rect: tuple(
        free_spots(geom, rect, CLEAR_PX * scale)[0]), "Add Marker", clicked)
    after = storage.load_model(biped)
    rect, geom = canvas_geometry(area, biped)
    gap = float(np.linalg.norm(after.clip.markers[-1] - clicked[0]) * geom.view.scale) if clicked else np.inf
    check("Add Marker then a click adds a marker where the click was", len(after.clip.keys) == n_markers + 1
          and int(after.clip.keys[-1]) == -1 and gap < 1.0,
          f"{n_markers} -> {len(after.clip.keys)} markers, the new one {gap:.2f} px from the click")
    pose = rig_rotations(biped, after.bones)
    err = float(np.max(np.abs(after.rbf.evaluate(after.clip.markers[-1:])[0] - pose)))
    check("the new marker's pose is the rig's pose when it was added", err < 1e-4, f"max error {err:.2e}")

    # -- Remove Marker, then a click on that marker ---------------------------------------------
    yield from _button_then_canvas_click(area, sidebar, redraws, remove, REMOVE, biped,
                                         lambda geom, rect: tuple(np.round(geom.markers[-1])), "Remove Marker", [])
    after = storage.load_model(biped)
    check("Remove Marker then a click on a marker removes it", len(after.clip.keys) == n_markers
          and int(after.clip.keys[-1]) != -1, f"{len(after.clip.keys)} markers")

    # -- Play Back: <action>.skc through the edited markers, played; a real Esc stops it -------
    yield from paced_click(sidebar, play, "Play Back")
    played = storage.model_info(biped)["action"] + ".skc"
    yield Wait("Play Back writes and plays", lambda: bpy.data.actions.get(played) is not None
               and biped.animation_data.action == bpy.data.actions.get(played)
               and bpy.context.screen.is_animation_playing, 20.0)
    check("Play Back writes <action>.skc, assigns it and plays", bpy.context.screen.is_animation_playing
          and biped.animation_data.action.name == played)
    main = region_of(area, "WINDOW")
    move_mouse(main, main.width / 2, main.height / 2)
    press_key("Escape")
    yield Wait("Esc stops playback", lambda: not bpy.context.screen.is_animation_playing, 10.0)
    check("a real Esc stops the playback", not bpy.context.screen.is_animation_playing)
    yield from close_the_panel(area, sidebar, redraws)


def _fcurves(ad):
    """The rotation curves of the assigned action (Blender 4.3: ``Action.fcurves``)."""
    return [fc for fc in ad.action.fcurves if "rotation" in fc.data_path]


def _button_then_canvas_click(area, sidebar, redraws, button, idname: str, biped, where, what: str,
                              clicked: list) -> Iterator[Wait]:
    """A real click on a tool's button (the sidebar at the bottom) starts the tool, which waits for a
    click on the canvas; the wheel over the sidebar below the canvas scrolls it back up (the tool
    passes the wheel on off the canvas); the click lands at ``where(geom, rect)`` (its plane point appended to ``clicked``); then the
    sidebar goes back to the bottom."""
    storage = ext("operators.spatial_keyframes.storage")
    token = biped[storage.PROP]["token"]
    yield from paced_click(sidebar, button, what)
    yield Wait(f"{what} waits for a click on the canvas", lambda: modal_running(idname), 10.0, required=False)
    running = [op.bl_idname for op in bpy.context.window_manager.windows[0].modal_operators]
    last = [op.bl_idname for op in bpy.context.window_manager.operators][-3:]
    if not check(f"a click on {what} starts it, waiting for a click on the canvas", modal_running(idname),
                 f"modal now {running}, last operators {last}, clicked at {button}"):
        screenshot(f"spatial_keyframes_{what.lower().replace(' ', '_')}_not_started")
        return
    yield from scroll_to_bottom(area, sidebar, redraws, up=True)
    rect, geom = canvas_geometry(area, biped)
    xy = where(geom, rect)
    move_mouse(sidebar, xy[0] + 1, xy[1])
    move_mouse(sidebar, *xy)
    xdotool("click", "1")
    clicked.append(geom.view.to_pose(np.asarray(xy, dtype=float)))
    yield Wait(f"{what} stores the model", lambda: not modal_running(idname)
               and biped[storage.PROP]["token"] != token, 10.0)
    yield redraws.after(area, f"sidebar drawn after {what}")
    screenshot(f"spatial_keyframes_{what.lower().replace(' ', '_')}")
    yield from scroll_to_bottom(area, sidebar, redraws)


def open_the_panel(area, sidebar, redraws, header: list, above_found: list) -> Iterator[Wait]:
    """Open the Spatial Keyframes panel by a click on its header below the Pose Space panel's Build
    button (the sidebar at the top); appends the header's y to ``header`` when it opened."""
    yield from scroll_to_bottom(area, sidebar, redraws, up=True)
    rect, _ = canvas_geometry(area, bpy.context.active_object)
    found: dict = {}
    yield from scan_buttons(sidebar, found, stop_at=BUILD_POSE_SPACE, top=None if rect is None else rect[1] - 2.0)
    above = button_of(found, BUILD_POSE_SPACE)
    above_found.append(above)
    if above is not None:
        yield from open_panel_below(area, sidebar, above[1] - 1.5 * 20 * ui_scale(), redraws, header)


def close_the_panel(area, sidebar, redraws) -> Iterator[Wait]:
    """Scroll to the top and close the panel by a click on its header below the Pose Space panel's
    Build button (the next scenarios expect the tab as they found it)."""
    yield from scroll_to_bottom(area, sidebar, redraws, up=True)
    rect, _ = canvas_geometry(area, bpy.context.active_object)
    found: dict = {}
    yield from scan_buttons(sidebar, found, stop_at=BUILD_POSE_SPACE, top=None if rect is None else rect[1] - 2.0)
    above = button_of(found, BUILD_POSE_SPACE)
    closed: list = []
    if above is not None:
        yield from toggle_panel_below(area, sidebar, above[1] - 1.5 * 20 * ui_scale(), redraws, closed, close=True)
    check("a click on its header closes the panel again", bool(closed))
