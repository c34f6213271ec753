"""Pose space on a generated mesh (a PC2-played flag): the canvas draws the frame dots where the core
puts them."""

from __future__ import annotations

from collections.abc import Iterator

import bpy
import numpy as np
from uikit import (
    RedrawCounter,
    Wait,
    check,
    ext,
    make_active,
    override,
    region_of,
    region_pixels,
    screenshot,
    wavy_flag,
)


def canvas_geometry(area, ob):
    """The canvas rectangle in the sidebar (x, y, w, h region pixels) and the core's geometry of it."""
    data = ext("operators.pose_space")
    canvas_state = ext("operators.pose_space.canvas_state")
    sidebar = region_of(area, "UI")
    with override(area, sidebar):
        rect = canvas_state.canvas_rect(bpy.context, sidebar)
        space = data.load_space(ob)
        geom = canvas_state.canvas_geometry_for(bpy.context, ob, space, rect) if rect else None
    return rect, geom


def dots_found(pixels: np.ndarray, rect, geom) -> tuple[int, int, float]:
    """How many frame dots are drawn at the core's positions in their own colour; and the share of
    canvas pixels that differ from its background."""
    x0, y0, w, h = (int(round(v)) for v in rect)
    canvas = pixels[y0:y0 + h, x0:x0 + w]
    background = np.median(canvas.reshape(-1, 3), axis=0)
    differs = np.abs(canvas - background).max(axis=2) > 0.08
    hits = 0
    points = np.asarray(geom.frame_points)
    for (px, py), color in zip(points, np.asarray(geom.frame_colors)[:, :3]):
        ix, iy = int(round(px)), int(round(py))
        patch = pixels[max(iy - 1, 0):iy + 2, max(ix - 1, 0):ix + 2].reshape(-1, 3)
        if patch.size and np.abs(patch - color).max(axis=1).min() < np.abs(background - color).max() * 0.5 + 0.05:
            hits += 1
    return hits, len(points), float(differs.mean())


def run(area) -> Iterator[Wait]:
    data = ext("operators.pose_space")
    flag = wavy_flag()
    scene = bpy.context.scene
    ps_ob, _, _ = data.build(flag, scene, frame_start=1, frame_end=24, k=12, l=12, m=4)
    make_active(ps_ob)
    yield RedrawCounter.after(area, "sidebar redrawn with the canvas", n=3)
    rect, geom = canvas_geometry(area, ps_ob)
    if not check("canvas has a rectangle in the sidebar", rect is not None, str(rect)):
        return
    shot = screenshot("pose_space_mesh_canvas")
    hits, n, blank = dots_found(region_pixels(shot, region_of(area, "UI")), rect, geom)
    check("canvas is not blank", blank > 0.005, f"{100 * blank:.2f}% of the canvas differs from the background")
    # Some dots are covered by control points or the cursor: 80 % must be found.
    check("frame dots drawn where the core puts them", hits >= 0.8 * n, f"{hits} of {n} dots found at their positions")
