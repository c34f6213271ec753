"""Pose space on an armature (the demo biped, 240 frames), all through the sidebar with real events:
Build Pose Space by its button; the canvas's frame dots where the core puts them; a navigate drag
poses the bones as the core's pose signal at the release point; presses on frame dots pin those
frames (issue 16, item 3); Clear Pins; a Shift-drag sketch replaces the sequence; Bake keys the
sketched sequence on the bones; Resample x0.5 makes twice the frames and sets the scene's range
(issue 16, item 4)."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import bpy
import numpy as np
from uikit import (
    RedrawCounter,
    Wait,
    button_of,
    canvas_geometry,
    check,
    click_button,
    demo_biped,
    ext,
    make_active,
    modal_running,
    move_mouse,
    press_drag,
    region_of,
    region_pixels,
    scan_buttons,
    screenshot,
    ui_scale,
)

BUILD = "anim_signals.build_pose_space"
PIN = "anim_signals.pose_space_pin"
SKETCH = "anim_signals.pose_space_sketch"
EDIT_TIME = "anim_signals.pose_space_edit_time"
BAKE = "anim_signals.pose_space_bake"
RESAMPLE = "anim_signals.pose_space_resample"
NAVIGATE = "anim_signals.pose_space_navigate"
PINNED_FRAMES = 5  # frames pinned by presses on their dots, spread over the sequence
CLEAR_PX = 11.0  # a navigate press/release this far (x UI scale) from every frame and control point
# (the press dispatcher picks within 8 px x UI scale)


def uncovered_dots(geom, scale: float) -> np.ndarray:
    """Rows of the frame dots that nothing but other dots is drawn over: filled control points
    (squares of half-size 3.5 x UI scale; dense ones are drawn hollow behind the dots, as the core's
    ``shapes.controls_hide_frames`` decides), the current-frame ring and the cursor's crosshair."""
    dots = np.asarray(geom.frame_points)
    free = np.ones(len(dots), dtype=bool)
    control = np.asarray(geom.control).reshape(-1, 2)
    if len(control) and not ext("anim_signals.posespace.shapes").controls_hide_frames(geom, scale):
        cheb = np.abs(dots[:, None, :] - control[None]).max(axis=2).min(axis=1)
        free &= cheb > 3.5 * scale + 1.5
    for mark, reach in ((geom.current, 12.0), (geom.cursor, 9.0)):
        if mark is not None:
            free &= np.abs(dots - np.asarray(mark)).max(axis=1) > reach * scale + 1.5
    return np.flatnonzero(free)


def topmost_dot_colors(geom, scale: float):
    """``geom`` with each frame's colour replaced by the colour expected at its dot's centre: the
    last-drawn dot whose coloured disc (radius 3 x UI scale) covers that pixel. Dense frames overlap,
    and later frames are drawn on top (all outlines go first, so they never cover a colour)."""
    dots = np.asarray(geom.frame_points, dtype=float)
    colors = np.asarray(geom.frame_colors)
    covers = np.linalg.norm(dots[:, None, :] - dots[None, :, :], axis=2) < 3.0 * scale  # [centre i, disc j]
    last = np.array([np.flatnonzero(row).max() for row in covers])
    return SimpleNamespace(frame_points=dots, frame_colors=colors[last])


def dots_found(pixels: np.ndarray, rect, geom, rows=None) -> tuple[int, int, float]:
    """How many frame dots (of ``rows``, default all) are drawn at the core's positions in their own
    colour (a 3 x 3 patch around the position); and the share of canvas pixels that differ from the
    canvas's background."""
    x0, y0, w, h = (int(round(v)) for v in rect)
    canvas = pixels[y0:y0 + h, x0:x0 + w]
    background = np.median(canvas.reshape(-1, 3), axis=0)
    differs = np.abs(canvas - background).max(axis=2) > 0.08
    points = np.asarray(geom.frame_points)
    colors = np.asarray(geom.frame_colors)[:, :3]
    rows = np.arange(len(points)) if rows is None else np.asarray(rows, dtype=int)
    hits = 0
    for (px, py), color in zip(points[rows], colors[rows]):
        ix, iy = int(round(px)), int(round(py))
        patch = pixels[max(iy - 1, 0):iy + 2, max(ix - 1, 0):ix + 2].reshape(-1, 3)
        if patch.size and np.abs(patch - color).max(axis=1).min() < np.abs(background - color).max() * 0.5 + 0.05:
            hits += 1
    return hits, len(rows), float(differs.mean())


def _channel_paths(ob) -> tuple[list[str], list[int]]:
    info = ext("operators.pose_space").load_info(ob) or {}
    return [str(p) for p in info.get("channel_paths", [])], [int(i) for i in info.get("channel_indices", [])]


def bone_values(ob) -> np.ndarray:
    """The armature's pose channels the pose space drives, in the stored channel order."""
    paths, indices = _channel_paths(ob)
    return np.array([float(ob.path_resolve(p)[i]) for p, i in zip(paths, indices, strict=True)])


def core_pose(ob, space, points) -> np.ndarray:
    """The core's pose signal at pose-space points (..., 2): channel values (..., d)."""
    posespace = ext("anim_signals.posespace")
    _, binding = ext("operators.pose_space.storage").cached(ob)
    w = space.weights_at(np.asarray(points, dtype=float))
    return posespace.channel_values(space.shape, w, binding.channel_scale, binding.quat_groups)


def clear_spots(geom, rect, margin: float) -> np.ndarray:
    """Canvas pixels (integers) at least ``margin`` px from every frame dot and control point and
    inside the frames' pixel bounding box (so navigation is not held at its edge)."""
    x0, y0, w, h = rect
    frames = np.asarray(geom.frame_points)
    lo, hi = frames.min(axis=0), frames.max(axis=0)
    xs = np.arange(np.ceil(max(x0 + 4, lo[0])), np.floor(min(x0 + w - 4, hi[0])), 2.0)
    ys = np.arange(np.ceil(max(y0 + 4, lo[1])), np.floor(min(y0 + h - 4, hi[1])), 2.0)
    grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2)
    items = np.vstack([frames, np.asarray(geom.control).reshape(-1, 2)])
    d = np.sqrt(((grid[:, None, :] - items[None]) ** 2).sum(axis=2)).min(axis=1)
    return grid[d >= margin]


def scan_below_canvas(area, ob, found: dict, stop_at: str) -> Iterator[Wait]:
    """``scan_buttons`` of the sidebar from just below the canvas down (the canvas has no buttons,
    and probing it row by row costs a round trip per row)."""
    sidebar = region_of(area, "UI")
    rect, _ = canvas_geometry(area, ob)
    top = None if rect is None else min(rect[1] - 2.0, sidebar.height - 6.0 * ui_scale())
    yield from scan_buttons(sidebar, found, stop_at=stop_at, top=top)


def held_drag(region, points, tools: tuple[str, ...], modifiers: str = "") -> Iterator[Wait]:
    """``press_drag`` that waits until the press has started one of ``tools`` (events sent while
    Blender is busy are queued, and a press handled late lands where the later moves put it:
    measured, a fast drag from one dot pinned the frame under the release)."""
    yield from press_drag(region, points, lambda: any(modal_running(t) for t in tools), modifiers=modifiers,
                          what=f"drag with {' or '.join(tools)}")


def run(area) -> Iterator[Wait]:
    data = ext("operators.pose_space")
    scene = bpy.context.scene
    root = scene.anim_signals
    range_before = (scene.frame_start, scene.frame_end)
    resample_before = (root.pose_space_resample.mode, root.pose_space_resample.speed)
    biped = demo_biped("UI_PS_Biped")
    make_active(biped)
    sidebar = region_of(area, "UI")
    yield RedrawCounter.after(area, "sidebar redrawn for the biped")
    try:
        yield from _scenario(area, sidebar, biped, data, scene, root)
    finally:
        scene.frame_start, scene.frame_end = range_before
        root.pose_space_resample.mode, root.pose_space_resample.speed = resample_before


def _scenario(area, sidebar, biped, data, scene, root) -> Iterator[Wait]:
    scale = ui_scale()
    found: dict = {}
    yield from scan_buttons(sidebar, found, stop_at=f"bpy.ops.{BUILD}(")
    xy = button_of(found, BUILD)
    if not check("Build Pose Space button found", xy is not None, f"{len(found)} buttons"):
        return
    click_button(sidebar, xy)
    yield Wait("the click starts the build", lambda: modal_running(BUILD) or data.load_info(biped) is not None, 20.0)
    yield Wait("Build Pose Space finished", lambda: not modal_running(BUILD) and data.load_info(biped) is not None,
               240.0)
    space = data.load_space(biped)
    last = root.last_pose_space
    if not check("Build Pose Space by its button builds the biped's space",
                 space is not None and space.n == 240 and last.object_name == biped.name,
                 f"n {getattr(space, 'n', None)} k {getattr(space, 'k', None)}, last build {last.object_name} "
                 f"in {last.seconds:.1f} s"):
        return

    # the frame dots where the core puts them
    move_mouse(sidebar, 4, 4)  # the mouse off the canvas: no cursor over the dots
    yield RedrawCounter.after(area, "sidebar redrawn with the biped's canvas", n=3)
    rect, geom = canvas_geometry(area, biped)
    if not check("canvas has a rectangle in the sidebar", rect is not None, str(rect)):
        return
    shot = screenshot("pose_space_armature_canvas")
    free = uncovered_dots(geom, scale)
    hits, n, blank = dots_found(region_pixels(shot, sidebar), rect, topmost_dot_colors(geom, scale), free)
    check("biped canvas is not blank", blank > 0.005, f"{100 * blank:.2f}% differs from the background")
    # on this dense space (131 control points among 240 frames) the control points are drawn hollow
    # behind the dots (filled, they hid 233 of the 240): at every dot's centre the colour of the
    # topmost dot there must show
    check("biped frame dots drawn where the core puts them", n >= 0.9 * len(geom.frame_points)
          and hits >= 0.95 * n,
          f"{hits} of the {n} uncovered dots found at their positions ({len(geom.frame_points)} frames)")

    # navigate: press away from dots and control points, drag, release
    spots = clear_spots(geom, rect, CLEAR_PX * scale)
    if not check("canvas has room for a navigate press", len(spots) >= 2, f"{len(spots)} clear spots"):
        return
    centre = np.array([rect[0] + rect[2] / 2, rect[1] + rect[3] / 2])
    press = spots[np.argmin(np.linalg.norm(spots - (centre - [rect[2] / 5, 0]), axis=1))]
    release = spots[np.argmin(np.linalg.norm(spots - (centre + [rect[2] / 5, rect[3] / 6]), axis=1))]
    before = bone_values(biped)
    yield from press_drag(sidebar, [tuple(press), tuple((press + release) / 2), tuple(release)],
                          lambda: modal_running(NAVIGATE), what="navigate drag")
    target = geom.view.to_pose(release)
    cursor = lambda: data.canvas_state.state_of(biped).cursor  # noqa: E731
    yield Wait("navigate drag released", lambda: not modal_running("anim_signals.pose_space_navigate")
               and cursor() is not None and np.linalg.norm(np.asarray(cursor()) - target) < 0.5 / geom.view.scale, 20.0)
    after = bone_values(biped)
    expected = core_pose(biped, space, target)
    # Bone properties are float32: 1e-5 covers their rounding of values within a few units.
    err = float(np.max(np.abs(after - expected)))
    check("navigate drag poses the bones as the core's pose signal at the release point", err < 1e-5,
          f"max |bone - core| {err:.2e} over {after.size} channels; the drag moved them by "
          f"{float(np.max(np.abs(after - before))):.3f}")
    check("navigate drag changed the pose", float(np.max(np.abs(after - before))) > 1e-3)
    screenshot("pose_space_armature_navigated")

    # pins: a press on a frame's dot (within 3 px) pins that frame
    # Frames spread evenly over the sequence, pressed on the whole pixel nearest their dot: the frame
    # whose dot is nearest that pixel must be pinned (on this walk neighbouring frames' dots are often
    # 1-2 px apart, and no press tells them apart; tests/core/test_canvas_picking.py checks >= 95 %
    # of all frames offline), and pinned where the drag left it.
    rows = [int(r) for r in np.linspace(0, len(geom.frame_points) - 1, PINNED_FRAMES).round()]
    pinned_ok = []
    for row in rows:
        rect, geom = canvas_geometry(area, biped)  # each pin re-solves the layout
        space = data.load_space(biped)
        dots = np.asarray(geom.frame_points)
        at = np.round(dots[row])
        under = int(np.argmin(np.linalg.norm(dots - at, axis=1)))  # the frame under the press
        to = at + np.round(np.array([6.0, 4.0]) * scale)  # whole pixels: the mouse moves by whole pixels
        yield from held_drag(sidebar, [at, (at + to) / 2, to], (PIN, EDIT_TIME))
        yield Wait(f"frame row {under} pinned", lambda r=under: not modal_running(PIN) and not modal_running(EDIT_TIME)
                   and r in data.load_space(biped).pins, 60.0, required=False)
        pins = data.load_space(biped).pins
        want = space.positions[under] + geom.view.to_pose(to) - geom.view.to_pose(at)
        got = np.asarray(pins.get(under, (np.inf, np.inf)))
        pinned_ok.append(under in pins and float(np.linalg.norm(got - want)) * geom.view.scale < 0.05)
        check(f"press {np.linalg.norm(at - dots[row]):.1f} px from frame row {row}'s dot pins the frame under it "
              "where dragged", pinned_ok[-1],
              f"frame under the press {under} (dot {np.linalg.norm(at - dots[under]):.1f} px away); pins "
              f"{sorted(pins)}; pin at {got}, dragged to {want}")
    check("every pressed frame was pinned", all(pinned_ok) and len(rows) == PINNED_FRAMES, f"rows {rows}")
    yield RedrawCounter.after(area, "sidebar redrawn with the pins", n=3)
    screenshot("pose_space_armature_pinned")

    # the panel's buttons (the pins' line in the numbers box moves the rows below it)
    found = {}
    yield from scan_below_canvas(area, biped, found, f"bpy.ops.{RESAMPLE}(")
    xy = button_of(found, PIN, clear=True, frame=-1)
    if check("Clear Pins button found", xy is not None, ", ".join(sorted(found))):
        click_button(sidebar, xy)
        yield Wait("pins cleared", lambda: not data.load_space(biped).pins, 60.0)
        check("Clear Pins clears every pin", not data.load_space(biped).pins)
    found = {}  # without the pins' line the rows below the numbers move up
    yield from scan_below_canvas(area, biped, found, f"bpy.ops.{RESAMPLE}(")

    # sketch: Shift-drag a stroke through the canvas
    rect, geom = canvas_geometry(area, biped)
    space = data.load_space(biped)
    x0, y0, w, h = rect
    t = np.linspace(0.0, 1.0, 12)
    stroke = np.column_stack([x0 + w * (0.25 + 0.5 * t), y0 + h * (0.5 + 0.2 * np.sin(2 * np.pi * t))]).round()
    yield from held_drag(sidebar, list(stroke), (SKETCH,), modifiers="shift")
    old_control = np.asarray(space.time.control)
    yield Wait("sketch stored", lambda: not modal_running(SKETCH)
               and not np.array_equal(np.asarray(data.load_space(biped).time.control), old_control), 60.0)
    sketched = data.load_space(biped)
    ends = sketched.time.evaluate(np.array([sketched.time.frames[0], sketched.time.frames[-1]]))
    want_ends = geom.view.to_pose(stroke[[0, -1]])
    miss = float(np.max(np.linalg.norm(ends - want_ends, axis=1))) * geom.view.scale
    check("sketch: the new time signal runs from the stroke's start to its end", miss < 0.5,
          f"ends {miss:.3f} px off; {sketched.time.frames.size} frames, k {sketched.k}")
    check("sketch keeps the sequence's length (Sketch Frames 0)", sketched.time.frames.size == space.time.frames.size)
    yield RedrawCounter.after(area, "sidebar redrawn with the sketch", n=3)
    screenshot("pose_space_armature_sketched")

    # Bake: keys of the sketched sequence on the bones
    xy = button_of(found, BAKE)
    if not check("Bake button found", xy is not None):
        return
    action_before = biped.animation_data.action
    click_button(sidebar, xy)
    yield Wait("Bake wrote an action", lambda: biped.animation_data.action is not action_before, 60.0)
    action = biped.animation_data.action
    paths, indices = _channel_paths(biped)
    frames = np.asarray(ext("anim_signals.posespace").bake_frames(sketched))
    curves = {(fc.data_path, fc.array_index): fc for fc in action.fcurves}
    keyed = [curves.get((p, i)) for p, i in zip(paths, indices, strict=True)]
    check("Bake keys every driven bone channel on every frame",
          all(fc is not None and len(fc.keyframe_points) == frames.size for fc in keyed),
          f'action "{action.name}": {len(action.fcurves)} curves, {frames.size} frames')
    probe = frames[[0, frames.size // 3, frames.size - 1]]
    want = core_pose(biped, sketched, sketched.time.evaluate(probe))
    got = np.array([[fc.evaluate(float(f)) if fc else np.nan for fc in keyed] for f in probe])
    err = float(np.nanmax(np.abs(got - want))) if np.isfinite(got).all() else np.inf
    check("baked keys are the sketched sequence's poses (core evaluation)", err < 1e-5,
          f"max |key - core| {err:.2e} at frames {probe.tolist()}")

    # Resample x0.5 (Speed mode, from the scene's settings the button starts from)
    root.pose_space_resample.mode = "SPEED"
    root.pose_space_resample.speed = 0.5
    xy = button_of(found, RESAMPLE)
    if not check("Resample button found", xy is not None):
        return
    n_before = sketched.time.frames.size
    click_button(sidebar, xy)
    yield Wait("Resample finished", lambda: data.load_space(biped).time.frames.size != n_before, 60.0)
    resampled = data.load_space(biped).time.frames
    want_n = 2 * (n_before - 1) + 1
    check("Resample x0.5 makes about twice the frames", abs(resampled.size - want_n) <= 1,
          f"{n_before} -> {resampled.size} frames (want {want_n})")
    check("Resample sets the scene's frame range to the new frames",
          (scene.frame_start, scene.frame_end) == (int(resampled[0]), int(resampled[-1])),
          f"scene {scene.frame_start}-{scene.frame_end}, frames {resampled[0]:g}-{resampled[-1]:g}")
    action = biped.animation_data.action
    counts = {len(fc.keyframe_points) for fc in action.fcurves}
    check("Resample bakes a key per new frame", counts == {resampled.size}, f"keys per curve {sorted(counts)}")
    yield RedrawCounter.after(area, "sidebar redrawn after the resample", n=3)
    screenshot("pose_space_armature_resampled")
