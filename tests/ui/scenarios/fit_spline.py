"""Fit Spline from the Graph Editor's Signals tab: a real click runs the modal fit in the default
mode (Fewest Keys, whose panel greys the spline-only settings out); Esc cancels a fit."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import bpy
import numpy as np
from uikit import (
    Wait,
    button_of,
    check,
    click_button,
    click_then_escape,
    demo_biped,
    ext,
    key_count,
    make_active,
    modal_running,
    move_mouse,
    open_signals_sidebar,
    region_of,
    region_pixels,
    scan_buttons,
    screenshot,
)

from ._panels import PanelDraws, RegionDraws

FIT = "anim_signals.fit_latent_spline"
# Rows of the sidebar picture that differ by more than this (RGB, 0-1) between two modes.
PIXEL_DIFF = 0.05


def _bands(rows: np.ndarray, gap: int = 3) -> list[tuple[int, int]]:
    """Runs of row indices (gaps up to ``gap`` rows bridged) as (first, last)."""
    bands: list[tuple[int, int]] = []
    for r in rows.tolist():
        if bands and r - bands[-1][1] <= gap:
            bands[-1] = (bands[-1][0], r)
        else:
            bands.append((r, r))
    return bands


def _greyed_out_in_fewest(area, sidebar, settings) -> Iterator[Wait]:
    """The sidebar drawn in Fewest Keys and again in Auto Spline (nothing else changed): the rows
    that differ are the Mode row (its text) and the spline-only settings (Keys, Keys on Whole
    Frames, Free Handle Lengths), which Fewest Keys draws inactive: darker, their text at half
    strength. Leaves the mode at Fewest Keys."""
    draws = RegionDraws(bpy.types.SpaceGraphEditor)
    try:
        move_mouse(region_of(area, "WINDOW"), 40, 40)  # off the sidebar: no hover, no tooltip
        yield draws.after(area, "sidebar drawn in Fewest Keys", 3)
        fewest = region_pixels(screenshot("fit_spline_panel_fewest"), sidebar)
        settings.mode = "AUTO"
        yield draws.after(area, "sidebar drawn in Auto Spline", 3)
        auto = region_pixels(screenshot("fit_spline_panel_auto"), sidebar)
        settings.mode = "FEWEST"
        yield draws.after(area, "sidebar drawn in Fewest Keys again", 3)
    finally:
        draws.close()
    rows = np.where((np.abs(fewest - auto).max(axis=2) > PIXEL_DIFF).any(axis=1))[0]
    bands = _bands(rows)
    # region rows run bottom-up: the topmost band (the Mode row) is the last one
    light = [(int(fewest[a:b + 1].sum()), int(auto[a:b + 1].sum())) for a, b in bands]
    darker = [i for i, (f, a) in enumerate(light[:-1]) if f < a]  # below the Mode row
    detail = f"bands (rows, sum Fewest/Auto): {[(b, f, a) for b, (f, a) in zip(bands, light)]}"
    check("Fewest Keys greys out the spline-only settings (rows below Mode drawn darker than in Auto Spline)",
          len(bands) >= 3 and len(darker) >= 2, detail)


@contextmanager
def _calls_of(kernel, method: str, note: Callable) -> Iterator[None]:
    """Meanwhile, ``note(*args, **kwargs)`` at each call of the worker's ``method`` (nothing without one)."""
    original = getattr(kernel, method, None)
    if original is None:
        yield
        return

    def spy(*args, **kwargs):
        note(*args, **kwargs)
        return original(*args, **kwargs)

    setattr(kernel, method, spy)
    try:
        yield
    finally:
        delattr(kernel, method)


def _fit_with_settings(sidebar, biped, label: str, **settings) -> Iterator[Wait]:
    """Find the Fit Spline button passing ``settings`` (rows above it move with the settings), click
    it, and wait until the biped's result is shown and the panel redrawn with it."""
    last = bpy.context.scene.anim_signals.last_fit
    found: dict = {}
    yield from scan_buttons(sidebar, found, stop_at=f"bpy.ops.{FIT}(")
    xy = button_of(found, FIT, **settings)
    if not check(f"the Fit Spline button passes {label}", xy is not None, next((c for c in found if FIT in c), "")):
        return
    shown = PanelDraws("ANIM_SIGNALS_PT_fit_spline", lambda: last.valid and last.object_name == biped.name)
    try:
        click_button(sidebar, xy)
        yield Wait(f"Fit Spline ({label}) finished", lambda: last.valid and last.object_name == biped.name
                   and not modal_running(FIT), 300.0)
        yield Wait(f"the panel redrawn with the result ({label})", lambda: any(shown.seen), 10.0, required=False)
    finally:
        shown.close()


def run(area) -> Iterator[Wait]:
    biped = demo_biped("UI_Biped")
    make_active(biped)
    before = key_count(biped)
    # The big area becomes a Graph Editor for the fit (other areas are too narrow or too low for
    # the Graph Editor's sidebar to show) and a 3D Viewport again at the end.
    area.type = "GRAPH_EDITOR"
    area.ui_type = "FCURVES"
    yield from open_signals_sidebar(area)
    sidebar = region_of(area, "UI")
    check("Graph Editor sidebar shows the Signals tab", sidebar.active_panel_category == "Signals")
    settings = bpy.context.scene.anim_signals.fit
    check("the sidebar's Fit Spline mode is Fewest Keys by default", settings.mode == "FEWEST", settings.mode)
    yield from _greyed_out_in_fewest(area, sidebar, settings)
    # The extension compiles the segment test in the background at startup (about 30 s on a clean
    # clone, in the worker process), so the first fit does not wait for it.
    warm = ext("operators.fit_spline.warm_up").STATE
    yield Wait("the startup warm-up of the segment test finished", lambda: warm["state"] not in ("", "running"),
               240.0, required=False)
    check("the startup warm-up compiled the segment test in the worker process", warm["state"] == "worker",
          warm["state"])
    found: dict = {}
    yield from scan_buttons(sidebar, found, stop_at=f"bpy.ops.{FIT}(")
    xy = button_of(found, FIT)
    if not check("Fit Spline button found in the Graph Editor sidebar", xy is not None):
        return
    button = [xy]
    check("the Fit Spline button passes mode Fewest Keys", button_of(found, FIT, mode="FEWEST") is not None,
          next((c for c in found if FIT in c), ""))
    last = bpy.context.scene.anim_signals.last_fit
    # the panel's draws, each noting whether it had the biped's result to show
    shown = PanelDraws("ANIM_SIGNALS_PT_fit_spline", lambda: last.valid and last.object_name == biped.name)
    try:
        click_button(sidebar, button[0])  # a real click on the panel's button
        # finished = the biped's result is shown and the modal run is over (not merely "not running",
        # which is also true before Blender has handled the click)
        yield Wait("Fit Spline finished", lambda: last.valid and last.object_name == biped.name
                   and not modal_running(FIT), 300.0)
        # the operator's own redraw at the end (nothing here tags the sidebar) shows the result
        yield Wait("the panel redrawn with the result", lambda: any(shown.seen), 10.0, required=False)
        check("the Fit Spline panel redraws with the result after the fit", any(shown.seen),
              f"{len(shown.seen)} draws since the click")
    finally:
        shown.close()
    after = key_count(biped)
    check("Fit Spline reduces the keys", 0 < after < before, f"{before} -> {after} keys")
    check("Fit Spline result shown for the biped", last.valid and last.object_name == biped.name
          and last.keys_before == before and last.keys_after == after,
          f"last fit: {last.object_name} {last.keys_before} -> {last.keys_after}")
    check("Fit Spline ran Fewest Keys", last.mode_used == "FEWEST", last.mode_used)
    check("Fit Spline reports keyed frames and broken handles", 0 < last.keyed_frames <= 240 and last.broken_keys > 0,
          f"{last.keyed_frames} keyed frames, {last.broken_keys} broken handles")
    fcurves = biped.animation_data.action.fcurves
    free = all(k.handle_left_type == k.handle_right_type == "FREE" for fc in fcurves for k in fc.keyframe_points)
    check("Fewest Keys writes FREE handles", free)
    segment_fit = next((m for name, m in sys.modules.items() if name.endswith("anim_signals.splines.segment_fit")), None)
    where = segment_fit.kernel_location() if segment_fit is not None else "not loaded"
    # Mesa's OpenGL (software GL here) loads its own LLVM into Blender, beside which llvmlite's
    # crashes: the compiled test then runs in a worker process
    check("the fit ran the compiled segment test, in a worker process beside Mesa's LLVM",
          where == "worker", f"{where}; failure: {getattr(segment_fit, 'KERNEL_FAILURE', None)}")
    screenshot("fit_spline_done")

    # Editable Keys: its search runs whole in the worker too (one request per share of the curves)
    biped5 = demo_biped("UI_Biped_Editable")
    make_active(biped5)
    before5 = key_count(biped5)
    kernel = segment_fit._kernel() if segment_fit is not None else None
    asked: list = []
    settings.mode = "EDITABLE"
    try:
        with _calls_of(kernel, "search", lambda *a, **k: asked.append(a[16] if len(a) > 16 else k.get("editable"))):
            yield from _fit_with_settings(sidebar, biped5, "Editable Keys", mode="EDITABLE")
    finally:
        settings.mode = "FEWEST"
    after5 = key_count(biped5)
    keys5 = [k for fc in biped5.animation_data.action.fcurves if len(fc.keyframe_points) > 1
             for k in list(fc.keyframe_points)[1:-1]]
    aligned5 = sum(k.handle_left_type == k.handle_right_type == "ALIGNED" for k in keys5)
    check("Editable Keys reduces the keys", 0 < after5 < before5 and last.object_name == biped5.name
          and last.mode_used == "EDITABLE", f"{before5} -> {after5} keys ({last.mode_used})")
    check("Editable Keys: ALIGNED handles but at the few corners it reports",
          aligned5 >= 0.9 * len(keys5) and last.broken_keys == len(keys5) - aligned5,
          f"{aligned5} of {len(keys5)} inner keys aligned, {last.broken_keys} broken reported")
    check("Editable Keys: the whole search ran in the worker process",
          bool(asked) and all(a is not None for a in asked) and not getattr(segment_fit, "KERNEL_FAILURE", ["?"]),
          f"{len(asked)} searches; failure: {getattr(segment_fit, 'KERNEL_FAILURE', None)}")
    screenshot("fit_spline_editable_done")

    # Per Curve Spline: its knot scoring, insertion and local refits run compiled in the worker too
    # (numba must not load here); what it writes is Blender Bezier keys within every curve's max error.
    biped6 = demo_biped("UI_Biped_Spline")
    make_active(biped6)
    before6 = key_count(biped6)
    knots = next((m for name, m in sys.modules.items() if name.endswith("anim_signals.splines.knots")), None)
    requests: list[str] = []
    settings.mode = "PER_CHANNEL"
    try:
        with _calls_of(kernel, "spline", lambda name, *a: requests.append(name)):
            yield from _fit_with_settings(sidebar, biped6, "Per Curve Spline", mode="PER_CHANNEL")
    finally:
        settings.mode = "FEWEST"
    after6 = key_count(biped6)
    check("Per Curve Spline reduces the keys within every curve's max error", 0 < after6 < before6
          and last.object_name == biped6.name and last.mode_used == "PER_CHANNEL" and last.within_tolerance,
          f"{before6} -> {after6} keys ({last.mode_used}, within tolerance {last.within_tolerance})")
    failure = getattr(knots, "_SCORER_FAILURE", ["not loaded"])
    check("Per Curve Spline: the knot scoring, insertion and local refits ran compiled in the worker process",
          {"score_candidates", "split_lane_spans", "local_refits"} <= set(requests) and not failure,
          f"{len(requests)} requests ({sorted(set(requests))}); failure: {failure}")

    biped2 = demo_biped("UI_Biped_Esc")
    make_active(biped2)
    before2 = key_count(biped2)
    action2 = biped2.animation_data.action
    actions_before = set(bpy.data.actions.keys())
    last_before = last.object_name
    # Fewest Keys fits the biped in about half a second, too fast to be caught: Esc is tried on a
    # spline mode (seconds), which the button passes from the sidebar the same way.
    settings.mode = "AUTO"
    try:
        yield from click_then_escape(sidebar, button[0], FIT, "the fit")
    finally:
        settings.mode = "FEWEST"
    check("Esc cancels the fit: keys unchanged", key_count(biped2) == before2
          and biped2.animation_data.action == action2, f"{before2} -> {key_count(biped2)} keys")
    check("Esc cancels the fit: no action added", set(bpy.data.actions.keys()) == actions_before,
          f"new: {sorted(set(bpy.data.actions.keys()) - actions_before)}")
    check("Esc cancels the fit: the last fit shown is still the one before", last.object_name == last_before,
          f"{last_before} -> {last.object_name}")

    # A fit clicked while the startup warm-up still compiles (as it is here, pretended) waits for it
    # on the modal timer, the window live and nothing written, and runs once the warm-up is done.
    biped3 = demo_biped("UI_Biped_Wait")
    make_active(biped3)
    before3 = key_count(biped3)
    state = warm["state"]
    warm["state"] = "running"
    try:
        click_button(sidebar, button[0])
        yield Wait("the click starts the fit", lambda: modal_running(FIT), 20.0)
        yield Wait("a second of waiting for the warm-up", lambda: False, 1.0, required=False)
        check("a fit clicked during the warm-up waits for it: still modal after 1 s, nothing written",
              modal_running(FIT) and key_count(biped3) == before3, f"{before3} -> {key_count(biped3)} keys")
    finally:
        warm["state"] = state
    yield Wait("the fit runs once the warm-up is done", lambda: not modal_running(FIT), 60.0)
    check("the fit that waited for the warm-up then fits", 0 < key_count(biped3) < before3
          and last.object_name == biped3.name, f"{before3} -> {key_count(biped3)} keys")

    # The Joints error space with keys shared by all curves: the search checks every candidate
    # segment with the pose model (the values between keys from the compiled kernel, here in the
    # worker process beside Mesa's LLVM) and the result is measured through the depsgraph at every
    # frame. Its rows push the Fit button down: the buttons are found again.
    biped4 = demo_biped("UI_Biped_Joints")
    make_active(biped4)
    before4 = key_count(biped4)
    settings.error_space = "JOINTS"
    settings.share_keys = "ALL"
    # The rig is read over time in an evaluation scene of its own: the scene on screen (with the
    # rest of the user's objects) keeps its frame all along, and the evaluation scene goes after.
    frame_changes: list[str] = []
    scenes_before = sorted(s.name for s in bpy.data.scenes)

    def record_frame_change(changed, *_args):
        frame_changes.append(changed.name)

    bpy.app.handlers.frame_change_post.append(record_frame_change)
    try:
        yield from _fit_with_settings(sidebar, biped4, "the Joints error space and keys shared by all curves",
                                      error_space="JOINTS", share_keys="ALL")
    finally:
        bpy.app.handlers.frame_change_post.remove(record_frame_change)
        settings.error_space = "PER_CURVE"
        settings.share_keys = "CURVE"
    shown_scene = bpy.context.scene.name
    check("Joints, all curves: the rig is read over time without changing the frame of the scene shown",
          shown_scene not in frame_changes and len(frame_changes) >= 240  # (the final check reads all 240 frames)
          and sorted(s.name for s in bpy.data.scenes) == scenes_before,
          f"{len(frame_changes)} frame changes, {frame_changes.count(shown_scene)} of them in {shown_scene!r}; "
          f"scenes {sorted(s.name for s in bpy.data.scenes)}")
    after4 = key_count(biped4)
    frames = 240
    check("Joints, all curves: fewer keys, on at most 20 % of the frames", 0 < after4 < before4
          and last.object_name == biped4.name and 0 < last.keyed_frames <= frames // 5,
          f"{before4} -> {after4} keys on {last.keyed_frames} frames")
    check("Joints, all curves: every joint within 1 cm at every frame (measured through the depsgraph)",
          last.object_name == biped4.name and 0.0 <= last.joint_error_cm <= 1.0 and last.within_tolerance,
          f"{last.joint_error_cm:.3f} cm, within tolerance {last.within_tolerance}")
    where = segment_fit.kernel_location() if segment_fit is not None else "not loaded"
    check("Joints, all curves: the compiled kernel in the worker process answered every request",
          where == "worker" and not getattr(segment_fit, "KERNEL_FAILURE", ["not loaded"])
          and getattr(getattr(segment_fit, "_compiled_values", lambda: None)(), "__self__", None) is not None,
          f"{where}; failure: {getattr(segment_fit, 'KERNEL_FAILURE', None)}")
    # the final check's hidden copy of the armature (playing the fitted keys) is gone again
    check("Joints, all curves: the check's temporary armature copy is removed",
          not [o.name for o in bpy.data.objects if o.name.startswith(biped4.name + ".verify")],
          str([o.name for o in bpy.data.objects if o.name.startswith(biped4.name)]))
    screenshot("fit_spline_joints_done")
