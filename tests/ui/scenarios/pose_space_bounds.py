"""Pose space on a mesh at its limits (issue 16 faults 2 and 4): tolerance builds from the Build
button keep the time signal near the data and the view on the frames; navigating far outside the
frames holds the pose to their neighbourhood; a taller canvas refits the view.

A 40-frame flag (the issue's case was a 40-frame mesh whose tolerance build put control points at
2e12 and collapsed every frame dot onto one pixel) is built by the panel's Build button twice, with
the automatic tolerance and with a tiny one (the candidates near k = n that blew up). After each
build the time signal's control points lie within a few times the frames' extent of them, every
frame dot is inside the canvas and the dots span most of it (the view fits the frames), and the
dots are drawn where the core puts them. Then a navigate drag is released far outside the frames
(after zooming out with the wheel): the cursor stops at the frames' bounding box grown by a
quarter, and the mesh stays within the frames' own range of vertex positions (grown alike).
Between the two, the canvas is made taller in the sidebar: the view is refit to it.
"""

from __future__ import annotations

from collections.abc import Iterator

import bpy
import numpy as np
from uikit import (
    RedrawCounter,
    Wait,
    button_of,
    canvas_geometry,
    check,
    click_button,
    evaluated_coords,
    ext,
    make_active,
    modal_running,
    press_drag,
    region_of,
    region_pixels,
    scan_buttons,
    screenshot,
    ui_scale,
    wavy_flag,
    wheel,
)

from scenarios.pose_space_armature import dots_found, topmost_dot_colors, uncovered_dots

NAME = "BoundsFlag"
BUILD = "anim_signals.build_pose_space"
NAVIGATE = "anim_signals.pose_space_navigate"
FRAMES = 40
REACH = 3.0  # control points at most this many times the frames' extent away from their bounding box


def ps_object():
    return bpy.data.objects.get(f"{NAME}.posespace")


def control_reach(space) -> float:
    """How far the time signal's control points reach outside the frames' bounding box, in units
    of the box's larger side."""
    lo, hi = space.positions.min(axis=0), space.positions.max(axis=0)
    extent = float(max(hi - lo))
    outside = np.maximum(np.maximum(lo - space.time.control, space.time.control - hi), 0.0)
    return float(outside.max()) / extent


def view_fits(area, ob, what: str) -> Iterator[Wait]:
    """The canvas shows every frame dot inside it, spread over most of it, drawn where the core says."""
    yield RedrawCounter.after(area, f"{what}: sidebar redrawn", n=3)
    rect, geom = canvas_geometry(area, ob)
    if not check(f"{what}: the canvas is shown", rect is not None, str(rect)):
        return
    x0, y0, w, h = rect
    pts = np.asarray(geom.frame_points)
    inside = np.all((pts >= (x0, y0)) & (pts <= (x0 + w, y0 + h)), axis=1)
    span = (pts.max(axis=0) - pts.min(axis=0)) / np.array([w, h])
    check(f"{what}: every frame dot inside the canvas", inside.all(), f"{int(inside.sum())} of {len(pts)}")
    check(f"{what}: the frames span the canvas (the view fits them)", span.max() > 0.6,
          f"dots span {100 * span[0]:.0f}% x {100 * span[1]:.0f}% of {w:.0f} x {h:.0f} px")
    shot = screenshot(f"pose_space_bounds_{what.replace(' ', '_')}")
    free = uncovered_dots(geom, ui_scale())
    hits, n, _ = dots_found(region_pixels(shot, region_of(area, "UI")), rect, topmost_dot_colors(geom, ui_scale()),
                            free)
    check(f"{what}: frame dots drawn where the core puts them", n >= 0.5 * len(pts) and hits >= 0.95 * n,
          f"{hits} of {n} uncovered dots")


def build_from_button(area, what: str) -> Iterator[Wait]:
    sidebar = region_of(area, "UI")
    found: dict = {}
    rect, _ = canvas_geometry(area, ps_object()) if ps_object() is not None else (None, None)
    top = None if rect is None else rect[1] - 2.0
    yield from scan_buttons(sidebar, found, stop_at=f"bpy.ops.{BUILD}(", top=top)
    xy = button_of(found, BUILD)
    if not check(f"{what}: Build button found", xy is not None):
        return
    stamp = ext("operators.pose_space.storage").space_stamp
    old = stamp(ps_object()) if ps_object() is not None else None
    click_button(sidebar, xy)
    yield Wait(f"{what}: built", lambda: ps_object() is not None and stamp(ps_object()) != old
               and not modal_running(BUILD), 120.0)
    make_active(ps_object())


def run(area) -> Iterator[Wait]:
    root = bpy.context.scene.anim_signals
    settings = root.pose_space
    saved = {name: getattr(settings, name) for name in ("exact", "tolerance", "k", "l", "m")}
    height = root.pose_space_canvas.height
    try:
        yield from _scenario(area, root, settings)
    finally:
        for name, value in saved.items():
            setattr(settings, name, value)
        root.pose_space_canvas.height = height


def _scenario(area, root, settings) -> Iterator[Wait]:
    data = ext("operators.pose_space")
    flag = wavy_flag(FRAMES, name=NAME)
    make_active(flag)
    settings.exact, settings.k, settings.l, settings.m = False, 0, 0, 0

    for what, tolerance in (("automatic tolerance", 0.0), ("tiny tolerance", 1e-6)):
        settings.tolerance = tolerance
        make_active(flag if ps_object() is None else ps_object())
        yield RedrawCounter.after(area, f"{what}: sidebar drawn", n=2)
        yield from build_from_button(area, what)
        space = data.load_space(ps_object())
        reach = control_reach(space)
        check(f"{what}: the time signal's control points stay near the frames", reach <= REACH,
              f"n {space.n} k {space.k} l {space.l} m {space.m}; control points reach {reach:.3g} x the frames' "
              f"extent outside them (at most {REACH:g})")
        yield from view_fits(area, ps_object(), what)

    # -- a taller canvas refits the view (the view was not zoomed or panned by hand) -------------
    root.pose_space_canvas.height = root.pose_space_canvas.height + 6
    yield from view_fits(area, ps_object(), "taller canvas")

    # -- navigating far outside the frames holds the pose to their neighbourhood ------------------
    ps = ps_object()
    space = data.load_space(ps)
    sidebar = region_of(area, "UI")
    rect, geom = canvas_geometry(area, ps)
    centre = (rect[0] + rect[2] / 2, rect[1] + rect[3] / 2)
    wheel(sidebar, centre, -6)  # zoom out: the canvas's corners lie far outside the frames
    yield RedrawCounter.after(area, "zoomed out", n=3)
    rect, geom = canvas_geometry(area, ps)
    corner = (rect[0] + 6.0, rect[1] + 6.0)
    view = geom.view
    lo, hi = space.positions.min(axis=0), space.positions.max(axis=0)
    far = view.to_pose(np.asarray(corner, dtype=float))
    grow = 0.25 * float(max(hi - lo))
    check("the release point lies far outside the frames", np.any((far < lo - 2 * grow) | (far > hi + 2 * grow)),
          f"pose point {np.round(far, 3)}, frames {np.round(lo, 3)}..{np.round(hi, 3)}")
    # press away from dots and control points, near the frames' middle, then out to the corner
    mid = view.to_pixels((lo + hi) / 2)
    marks = np.vstack([geom.frame_points, geom.control])
    offsets = [np.array((dx, dy)) for dx in range(-40, 41, 4) for dy in range(-40, 41, 4)]
    press = max((mid + o for o in offsets), key=lambda p: np.linalg.norm(marks - p, axis=1).min())
    cursor = ext("operators.pose_space.canvas_state").state_of
    yield from press_drag(sidebar, [tuple(press), tuple((press + np.asarray(corner)) / 2), corner],
                          lambda: modal_running(NAVIGATE), what="navigate out of the frames")
    yield Wait("navigate drag finished", lambda: not modal_running(NAVIGATE), 20.0)
    held = np.asarray(cursor(ps).cursor, dtype=float)
    check("the cursor stops at the frames' bounding box grown by a quarter",
          np.all(held >= lo - grow - 1e-9) and np.all(held <= hi + grow + 1e-9),
          f"cursor {np.round(held, 3)}, box {np.round(lo - grow, 3)}..{np.round(hi + grow, 3)}")
    frames = np.asarray(ext("anim_signals.meshio.meshcache").read_pc2(bpy.path.abspath(
        bpy.data.objects[NAME].modifiers[0].filepath))[0], dtype=float)
    flo, fhi = frames.reshape(-1, 3).min(axis=0), frames.reshape(-1, 3).max(axis=0)
    margin = 0.5 * (fhi - flo).max()
    coords = evaluated_coords(ps)
    check("the mesh stays within the frames' range of positions (no extrapolated distortion)",
          np.all(coords >= flo - margin) and np.all(coords <= fhi + margin),
          f"mesh {np.round(coords.min(axis=0), 3)}..{np.round(coords.max(axis=0), 3)}, frames {np.round(flo, 3)}.."
          f"{np.round(fhi, 3)} (margin {margin:.3g})")
    screenshot("pose_space_bounds_navigated_out")

