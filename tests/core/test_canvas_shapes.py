"""The canvas's GPU-ready marks (anim_signals.posespace.shapes), what a time-edited model shows
(canvas.drawable) and the canvas rectangle test (canvas.inside).

Expectations come from closed forms: polygon areas by the shoelace formula, dash lengths of a
polyline of known length, triangle fans around their centres, and the PNG rendering of the same
dashed line (one dash pattern on screen and in pictures).
"""

from __future__ import annotations

import math
import types

import numpy as np
import pytest

from anim_signals.posespace import canvas, palette, render, shapes
from anim_signals.posespace.canvas import View, canvas_geometry, drawable, fit_space_view, inside


def tri_areas(tris: np.ndarray) -> np.ndarray:
    """Signed areas of consecutive vertex triples (shoelace)."""
    a, b, c = tris[0::3], tris[1::3], tris[2::3]
    return 0.5 * ((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1]))


def regular_polygon_area(r: float, sides: int) -> float:
    return 0.5 * sides * r * r * math.sin(2.0 * math.pi / sides)


CENTERS = np.array([[10.0, 20.0], [-30.0, 40.5]])


def test_disc_tris_fan_around_each_center():
    tris = shapes.disc_tris(CENTERS, 3.0, 12)
    assert tris.shape == (2 * 12 * 3, 2)
    np.testing.assert_array_equal(tris[0::3], np.repeat(CENTERS, 12, axis=0))  # every fan starts at its centre
    rim = np.concatenate([tris[1::3], tris[2::3]])
    centers = np.concatenate([np.repeat(CENTERS, 12, axis=0)] * 2)
    np.testing.assert_allclose(np.linalg.norm(rim - centers, axis=1), 3.0, rtol=1e-15)
    areas = tri_areas(tris)
    assert np.all(areas > 0)  # counter-clockwise
    np.testing.assert_allclose(areas.reshape(2, 12).sum(axis=1), regular_polygon_area(3.0, 12), rtol=1e-12)
    assert shapes.disc_tris(np.zeros((0, 2)), 3.0).shape == (0, 2)


def test_ring_tris_cover_the_annulus():
    tris = shapes.ring_tris(CENTERS, 5.0, 4.0, 16)
    assert tris.shape == (2 * 16 * 6, 2)
    areas = np.abs(tri_areas(tris)).reshape(2, -1).sum(axis=1)
    np.testing.assert_allclose(areas, regular_polygon_area(5.0, 16) - regular_polygon_area(4.0, 16), rtol=1e-12)
    d = np.linalg.norm(tris - np.repeat(CENTERS, 16 * 6, axis=0), axis=1)
    assert np.all(np.isclose(d, 5.0) | np.isclose(d, 4.0))


def test_squares_and_crosshair():
    tris = shapes.square_tris(CENTERS, 2.0)
    assert tris.shape == (12, 2)
    np.testing.assert_allclose(np.abs(tri_areas(tris)).reshape(2, 2).sum(axis=1), 16.0)  # (2 * half)^2
    lines = shapes.square_lines(CENTERS, 2.0).reshape(2, 4, 2, 2)  # square, edge, end, xy
    np.testing.assert_array_equal(lines[:, :, 1], np.roll(lines[:, :, 0], -1, axis=1))  # a closed loop
    np.testing.assert_allclose(np.linalg.norm(lines[:, :, 1] - lines[:, :, 0], axis=-1), 4.0)
    cross = shapes.crosshair_lines(CENTERS[0], 9.0, 3.0).reshape(4, 2, 2)
    np.testing.assert_allclose(np.linalg.norm(cross[:, 1] - cross[:, 0], axis=1), 6.0)  # arm - gap
    np.testing.assert_allclose(np.sort(np.linalg.norm(cross - CENTERS[0], axis=-1), axis=1), [[3, 9]] * 4)
    np.testing.assert_array_equal(shapes.rect_tris((1.0, 2.0, 3.0, 4.0)).min(axis=0), [1.0, 2.0])
    assert abs(tri_areas(shapes.rect_tris((1.0, 2.0, 3.0, 4.0))).sum()) == 12.0


def test_polyline_segments_are_consecutive_pairs():
    P = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 2.0], [5.0, 2.0]])
    seg = shapes.polyline_segments(P).reshape(3, 2, 2)
    np.testing.assert_array_equal(seg[:, 0], P[:-1])
    np.testing.assert_array_equal(seg[:, 1], P[1:])
    assert shapes.polyline_segments(P[:1]).shape == (0, 2)


def on_length(total: float, dash: float, gap: float) -> float:
    period = dash + gap
    return math.floor(total / period) * dash + min(total % period, dash)


@pytest.mark.parametrize(("dash", "gap"), [(5.0, 4.0), (2.0, 0.5), (7.5, 7.5), (3.0, 0.0)])
def test_dashes_run_along_the_arc_length_across_corners(dash, gap):
    P = np.array([[0.0, 0.0], [13.0, 0.0], [13.0, 7.0], [2.0, 7.0], [2.0, 30.0]])  # corners mid-dash
    pieces = shapes.dashed_segments(P, dash, gap).reshape(-1, 2, 2)
    lengths = np.linalg.norm(pieces[:, 1] - pieces[:, 0], axis=1)
    total = 13.0 + 7.0 + 11.0 + 23.0
    assert lengths.sum() == pytest.approx(on_length(total, dash, gap), rel=1e-12)
    assert np.all(lengths > 0) and np.all(lengths <= dash + 1e-12)
    # each piece lies on one segment of the polyline: shared x or y with it
    assert np.all((pieces[:, 0, 0] == pieces[:, 1, 0]) | (pieces[:, 0, 1] == pieces[:, 1, 1]))
    # where each piece starts, measured along the polyline, is inside a dash
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(P, axis=0), axis=1))])
    starts = []
    for a in pieces[:, 0]:
        for i in range(len(P) - 1):
            u = P[i + 1] - P[i]
            t = float(np.dot(a - P[i], u) / np.dot(u, u))
            if -1e-12 <= t <= 1 + 1e-12 and np.linalg.norm(P[i] + t * u - a) < 1e-9:
                starts.append(arc[i] + t * np.linalg.norm(u))
                break
    assert len(starts) == len(pieces)
    assert np.all(np.mod(np.array(starts) + 1e-9, dash + gap) < dash)


def test_dashed_segments_edge_cases():
    one = shapes.dashed_segments([[0.0, 0.0], [90.0, 0.0]], 5.0, 4.0)
    assert one.shape == (20, 2)  # ten dashes of 5 on 90 px
    np.testing.assert_allclose(one[0::2, 0], np.arange(0.0, 90.0, 9.0))
    assert shapes.dashed_segments([[1.0, 1.0]], 5.0, 4.0).shape == (0, 2)
    assert shapes.dashed_segments([[1.0, 1.0], [1.0, 1.0]], 5.0, 4.0).shape == (0, 2)
    with pytest.raises(ValueError):
        shapes.dashed_segments([[0.0, 0.0], [9.0, 0.0]], 0.0, 4.0)


def test_png_dashes_follow_the_same_pattern():
    """The PNG rendering's dashed line lights the pixels of the GPU dashes (same arc-length rule)."""
    img = np.zeros((20, 120, 4), dtype=np.float32)
    P = np.array([[0.0, 10.0], [60.0, 10.0], [60.0, 10.0], [110.0, 10.0]])  # with a zero-length segment
    render._polyline(img, P, (1.0, 1.0, 1.0, 1.0), 1, dash=(5.0, 4.0))
    lit = np.flatnonzero(img[10, :, 3] > 0)
    pieces = shapes.dashed_segments(P, 5.0, 4.0).reshape(-1, 2, 2)[:, :, 0]
    covered = np.zeros(120, dtype=bool)
    for a, b in pieces:
        covered[int(math.ceil(a - 0.5)):int(math.floor(b + 0.5)) + 1] = True
    assert lit.size and np.all(covered[lit])


def test_dash_mask():
    np.testing.assert_array_equal(shapes.dash_mask([0.0, 4.99, 5.0, 8.99, 9.0, 13.99], 5.0, 4.0),
                                  [True, True, False, False, True, True])


# ------------------------------------------------------------------------------------------------
# the canvas's draw calls


def small_space():
    from anim_signals.posespace import build_pose_space

    t = np.linspace(0.0, 2 * np.pi, 10, endpoint=False)
    return build_pose_space(np.column_stack([np.cos(t), np.sin(t), np.cos(2 * t)]), row_size=1)


def build_sparse_space():
    """10 frames, a time signal of 5 control points (sparse: the squares leave the dots free)."""
    from anim_signals.posespace import build_pose_space

    t = np.linspace(0.0, 2 * np.pi, 10, endpoint=False)
    return build_pose_space(np.column_stack([np.cos(t), np.sin(t), np.cos(2 * t)]), row_size=1, k=5, l=8)


def test_canvas_marks_layers_in_order():
    space = build_sparse_space().with_pins({2: (0.1, 0.2)})
    rect = (10.0, 20.0, 300.0, 200.0)
    view = fit_space_view(space, 300, 200, origin=rect[:2])
    geometry = canvas_geometry(space, view, current_time=3.0, cursor=(0.0, 0.0), stroke=[[0, 0], [1, 1], [1, 0]])
    marks = shapes.canvas_marks(geometry, rect, ui_scale=2.0)
    order = [m.color if m.colors is None else "by time" for m in marks]
    assert order == [palette.BACKGROUND, palette.AXIS, palette.POLYGON, palette.CURVE, palette.OUTLINE, "by time",
                     palette.SITE, palette.PIN, palette.OUTLINE, palette.HANDLE, palette.STROKE, palette.CURRENT,
                     palette.CURRENT, palette.CURSOR]
    np.testing.assert_array_equal(marks[0].vertices, shapes.rect_tris(rect))
    dots = marks[5]
    assert dots.primitive == "TRIS" and len(dots.vertices) == len(dots.colors) == space.n * 12 * 3
    np.testing.assert_array_equal(dots.colors[::36], geometry.frame_colors)  # one colour per frame dot
    np.testing.assert_allclose(np.linalg.norm(dots.vertices[1::3] - np.repeat(geometry.frame_points, 12, axis=0),
                                              axis=1), 3.0 * 2.0)  # sizes follow the UI scale
    assert marks[3].width == 4.0 and marks[-1].width == 3.0
    origin = view.to_pixels(np.zeros(2))
    np.testing.assert_allclose(marks[1].vertices, [(10, origin[1]), (310, origin[1]), (origin[0], 20), (origin[0], 220)])
    assert not shapes.controls_hide_frames(geometry, 2.0)
    # no pins, cursor, stroke or current frame: only what there is
    bare = shapes.canvas_marks(canvas_geometry(small_space(), view), rect)
    assert palette.PIN not in [m.color for m in bare] and palette.CURSOR not in [m.color for m in bare]
    assert all(len(m.vertices) >= (3 if m.primitive == "TRIS" else 2) for m in bare)


# ------------------------------------------------------------------------------------------------
# drawable and inside


def test_drawable_is_the_model_unless_its_time_was_edited():
    space = small_space()
    assert drawable(space) is space
    sketched = space.with_stroke(np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 0.0]]), 25)
    assert sketched.frames.size == 25 and sketched.n == 10
    shown = drawable(sketched)
    assert shown is not sketched and drawable(sketched) is shown  # reused for the same model
    np.testing.assert_array_equal(shown.frames, np.linspace(1.0, 25.0, 10))
    assert shown.positions is sketched.positions and shown.time is sketched.time and shown.pose is sketched.pose
    geometry = canvas_geometry(shown, View((0.0, 0.0), 50.0, 200, 100))
    np.testing.assert_array_equal(geometry.frame_numbers, shown.frames)
    canvas.clear_cache()
    assert drawable(sketched) is not shown  # a new stand-in after clearing the cache
    empty = types.SimpleNamespace(frames=np.zeros(0), n=3, positions=np.zeros((3, 2)), pose=None, time=None, pins={})
    np.testing.assert_array_equal(drawable(empty).frames, [1.0, 2.0, 3.0])


def test_inside_includes_the_edges():
    rect = (10.0, 20.0, 100.0, 50.0)
    assert inside(rect, (10.0, 20.0)) and inside(rect, (110.0, 70.0)) and inside(rect, (50, 40))
    assert not inside(rect, (9.999, 40.0)) and not inside(rect, (50.0, 70.001))
    assert not inside(None, (50.0, 40.0))


def test_dense_control_points_are_drawn_hollow_behind_the_frame_dots():
    """An interpolating build puts a control point near every frame: filled squares would hide the
    dots (233 of 240 on the demo biped in a real window), so they are drawn hollow, first."""
    from anim_signals.posespace import render

    space = small_space()  # the default build interpolates: k = n + 2
    rect = (0.0, 0.0, 300.0, 200.0)
    view = fit_space_view(space, 300, 200)
    geometry = canvas_geometry(space, view)
    assert shapes.controls_hide_frames(geometry)
    marks = shapes.canvas_marks(geometry, rect)
    colours = [m.color if m.colors is None else "by time" for m in marks]
    hollow = colours.index(palette.HANDLE)
    assert marks[hollow].primitive == "LINES" and hollow < colours.index("by time")
    assert colours.count(palette.HANDLE) == 1 and colours.count(palette.OUTLINE) == 1  # no filled squares
    # every dot's own colour is visible at its centre in the PNG rendering as well
    img = render.render_rgba(geometry, 300, 200, title="", legend=False, grid=False)
    h = img.shape[0]
    last = {(round(x, 3), round(y, 3)): col for (x, y), col in zip(geometry.frame_points, geometry.frame_colors)}
    for (x, y), col in last.items():  # frames at one spot: the later is drawn on top
        row, column = int(round(h - 0.5 - y)), int(round(x - 0.5))
        np.testing.assert_allclose(img[row, column, :3] / (255.0 if img.dtype == np.uint8 else 1.0), col[:3],
                                   atol=0.02)
