"""Pose-space canvas geometry (anim_signals.posespace.canvas): view, fit, picking, strokes, colours, rendering.

Written against the "Canvas geometry" contract in docs/pose_space.md.  Pixels are region pixels with
y up (Blender POST_PIXEL); rendered images have row 0 at the top.
"""

from __future__ import annotations

import math
import struct
import time
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest

from anim_signals.posespace import canvas
from anim_signals.posespace.canvas import (
    Hit,
    View,
    canvas_geometry,
    fit_view,
    hit_test,
    stroke_to_pose,
)
from anim_signals.posespace.render import render_png, render_rgba

# --------------------------------------------------------------------------------------------------
# a duck-typed stand-in for posespace.PoseSpace


@dataclass
class LineTime:
    """f(t) = (t, 0): a straight time signal; control points below it."""

    control: np.ndarray

    def evaluate(self, times):
        t = np.asarray(times, dtype=float)
        return np.stack([t, np.zeros_like(t)], axis=-1)


@dataclass
class Sites:
    sites: np.ndarray


@dataclass
class Space:
    positions: np.ndarray
    pose: Sites
    time: LineTime
    frames: np.ndarray
    pins: dict = field(default_factory=dict)


def line_space(n: int = 10, pins: dict | None = None) -> Space:
    """Frames i = 1..n at (i, 1) above the curve y = 0, control points (1, 4, 7, 10) at y = -1."""
    frames = np.arange(1.0, n + 1.0)
    positions = np.column_stack([frames, np.ones(n)])
    control = np.array([[1.0, -1.0], [4.0, -1.0], [7.0, -1.0], [10.0, -1.0]])
    return Space(positions, Sites(positions[:4].copy()), LineTime(control), frames, dict(pins or {}))


# view centred so that pose (5.5, 0) is the region pixel centre (120.5, 60.5): pixel (120, 60)
VIEW = View((5.5, 0.0), 20.0, 241, 121)


def image_rc(xy, height: int = 121) -> tuple[int, int]:
    """(row, col) of the raster pixel holding region point xy (pixel centres at half integers)."""
    x, y = float(xy[0]), float(xy[1])
    return int(math.floor(height - y)), int(math.floor(x))


def rgba(color) -> np.ndarray:
    return np.asarray(color, dtype=np.float32)


# --------------------------------------------------------------------------------------------------
# view


def test_view_maps_center_to_middle_and_round_trips():
    v = View((2.0, -1.0), 40.0, 300, 200, origin=(10.0, 20.0))
    assert np.allclose(v.to_pixels([2.0, -1.0]), [160.0, 120.0])
    assert np.allclose(v.to_pixels([3.0, -1.0]) - v.to_pixels([2.0, -1.0]), [40.0, 0.0])
    assert np.allclose(v.to_pixels([2.0, 0.0]) - v.to_pixels([2.0, -1.0]), [0.0, 40.0])  # y up
    rng = np.random.default_rng(1)
    P = rng.normal(size=(3, 5, 2)) * 7.0
    assert v.to_pixels(P).shape == (3, 5, 2)
    assert np.allclose(v.to_pose(v.to_pixels(P)), P, atol=1e-12)
    XY = rng.random((9, 2)) * 300
    assert np.allclose(v.to_pixels(v.to_pose(XY)), XY, atol=1e-9)
    xmin, ymin, xmax, ymax = v.pose_bounds()
    assert np.allclose(v.to_pixels([xmin, ymin]), [10.0, 20.0]) and np.allclose(v.to_pixels([xmax, ymax]),
                                                                                 [310.0, 220.0])
    assert v == View((2.0, -1.0), 40.0, 300, 200, origin=(10.0, 20.0))  # comparable, hashable
    assert len({v, v.panned(0.0, 0.0)}) == 1
    with pytest.raises(ValueError):
        View((0.0, 0.0), 0.0, 10, 10)
    with pytest.raises(ValueError):
        View((0.0, 0.0), 1.0, 0, 10)
    with pytest.raises(ValueError):
        View((0.0, math.nan), 1.0, 10, 10)


def test_zoom_keeps_point_under_mouse_fixed():
    v = View((0.3, 0.7), 25.0, 400, 300, origin=(5.0, 7.0))
    for about in ((17.0, 250.0), (200.0, 150.0), (399.0, 3.0)):
        p = v.to_pose(about)
        for factor in (1.25, 0.5, 3.0):
            z = v.zoomed(factor, about)
            assert z.scale == pytest.approx(v.scale * factor)
            assert np.allclose(z.to_pixels(p), about, atol=1e-9)
            assert np.allclose(z.to_pose(about), p, atol=1e-12)
    # default: about the canvas centre, which keeps the pose centre
    z = v.zoomed(2.0)
    assert z.center == v.center and z.scale == 50.0
    # zooming in then out returns to the same view
    back = v.zoomed(1.7, (100.0, 80.0)).zoomed(1 / 1.7, (100.0, 80.0))
    assert np.allclose(back.center, v.center) and back.scale == pytest.approx(v.scale)
    with pytest.raises(ValueError):
        v.zoomed(0.0, (1.0, 1.0))


def test_pan_moves_content_by_pixels():
    v = View((1.0, 2.0), 30.0, 200, 100)
    P = np.array([[0.0, 0.0], [1.0, 2.0], [-3.0, 5.5]])
    w = v.panned(12.0, -7.0)
    assert np.allclose(w.to_pixels(P) - v.to_pixels(P), [12.0, -7.0])
    assert w.scale == v.scale and (w.width, w.height, w.origin) == (v.width, v.height, v.origin)
    r = v.resized(50, 60, origin=(3.0, 4.0))
    assert (r.width, r.height, r.origin, r.center, r.scale) == (50, 60, (3.0, 4.0), v.center, v.scale)


def test_fit_view_contains_points_with_margin():
    rng = np.random.default_rng(2)
    P = rng.normal(size=(50, 2)) * [3.0, 0.5] + [10.0, -4.0]
    for w, h, margin, origin in ((400, 300, 0.08, (0.0, 0.0)), (200, 600, 0.1, (30.0, 40.0)),
                                 (640, 100, 0.0, (0.0, 0.0))):
        v = fit_view(P, w, h, margin=margin, origin=origin)
        xy = v.to_pixels(P) - origin
        lo = np.array([w, h]) * margin
        hi = np.array([w, h]) * (1 - margin)
        assert np.all(xy >= lo - 1e-9) and np.all(xy <= hi + 1e-9)
        # tight along one axis at least: the points touch the margin on both sides of it
        span = xy.max(axis=0) - xy.min(axis=0)
        assert np.any(np.isclose(span, hi - lo))
        # centred
        assert np.allclose((xy.max(axis=0) + xy.min(axis=0)) / 2, [w / 2, h / 2])
    # degenerate inputs: one point, empty, collinear, non-finite rows ignored
    v = fit_view([[2.0, 3.0]], 100, 100)
    assert np.allclose(v.to_pixels([2.0, 3.0]), [50.0, 50.0]) and np.isfinite(v.scale)
    v = fit_view(np.zeros((0, 2)), 100, 50)
    assert v.center == (0.0, 0.0) and v.scale > 0
    v = fit_view([[0.0, 1.0], [4.0, 1.0], [math.nan, 7.0]], 100, 100, margin=0.1)
    assert v.scale == pytest.approx(20.0) and v.center == (2.0, 1.0)
    with pytest.raises(ValueError):
        fit_view(P, 100, 100, margin=0.5)


# --------------------------------------------------------------------------------------------------
# geometry


def test_geometry_contents_in_pixels():
    space = line_space(pins={5: (5.0, 2.0), 2: np.array([2.0, 2.5])})
    g = canvas_geometry(space, VIEW, current_time=4.25, cursor=(8.0, -0.5),
                        stroke=[[1.0, 0.0], [2.0, 0.5]], curve_samples=37)
    assert np.allclose(g.frame_points, VIEW.to_pixels(space.positions))
    assert g.frame_colors.shape == (10, 4)
    assert np.allclose(g.sites, VIEW.to_pixels(space.positions[:4]))
    assert g.pin_frames.tolist() == [2, 5]
    assert np.allclose(g.pins, VIEW.to_pixels([[2.0, 2.5], [5.0, 2.0]]))
    assert g.curve.shape == (37, 2) and len(g.curve_times) == 37
    assert np.allclose(g.curve, VIEW.to_pixels(np.column_stack([np.linspace(1, 10, 37), np.zeros(37)])))
    assert np.allclose(g.control, VIEW.to_pixels(space.time.control))
    assert np.allclose(g.control_polygon, g.control)
    assert np.allclose(g.current, VIEW.to_pixels([4.25, 0.0]))
    assert g.current_time == 4.25
    assert np.allclose(g.cursor, VIEW.to_pixels([8.0, -0.5]))
    assert np.allclose(g.stroke, VIEW.to_pixels([[1.0, 0.0], [2.0, 0.5]]))
    assert g.view is VIEW
    # current time clamped to the frames; no optional parts -> None
    g = canvas_geometry(space, VIEW, current_time=99.0)
    assert g.current_time == 10.0 and np.allclose(g.current, VIEW.to_pixels([10.0, 0.0]))
    assert g.cursor is None and g.stroke is None
    g = canvas_geometry(line_space(), VIEW)
    assert g.current is None and g.pins.shape == (0, 2) and g.pin_frames.shape == (0,)
    with pytest.raises(ValueError):
        canvas_geometry(space, VIEW, curve_samples=1)


def test_cache_follows_new_models_and_attributes():
    space = line_space()
    g1 = canvas_geometry(space, VIEW)
    # a new time signal (the models are immutable: edits make new objects)
    space.time = LineTime(space.time.control + [0.0, -0.5])
    g2 = canvas_geometry(space, VIEW)
    assert np.allclose(g2.control - g1.control, [0.0, -10.0])
    space.positions = space.positions + [0.0, 1.0]
    g3 = canvas_geometry(space, VIEW)
    assert np.allclose(g3.frame_points - g1.frame_points, [0.0, 20.0])
    # an in-place edit needs clear_cache
    space.positions[0] = [0.0, 0.0]
    canvas.clear_cache()
    assert np.allclose(canvas_geometry(space, VIEW).frame_points[0], VIEW.to_pixels([0.0, 0.0]))


def test_frame_colours_are_ordered_by_time():
    space = line_space(12)
    g = canvas_geometry(space, VIEW)
    c = g.frame_colors
    assert np.all((c >= 0) & (c <= 1)) and np.all(c[:, 3] == 1.0)
    luma = c[:, :3] @ [0.299, 0.587, 0.114]
    assert np.all(np.diff(luma) > 0)  # a ramp with monotone lightness, first -> last
    # colours follow the times, not the row order
    t = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    col = canvas.time_colors(t)
    order = np.argsort(t)
    assert np.all(np.diff(col[order, :3] @ [0.299, 0.587, 0.114]) > 0)
    assert np.allclose(canvas.time_colors([7.0, 7.0])[0], canvas.time_colors([7.0, 7.0])[1])
    assert canvas.time_colors([]).shape == (0, 4)


# --------------------------------------------------------------------------------------------------
# picking


def test_hit_test_nearest_control_point_within_radius():
    g = canvas_geometry(line_space(), VIEW)
    cp = g.control[2]
    hit = hit_test(g, cp + [3.0, -2.0])
    assert hit.kind == "CONTROL_POINT" and hit.index == 2
    assert hit.distance_px == pytest.approx(math.hypot(3.0, 2.0))
    # the nearest of two control points inside a big radius
    mid = (g.control[1] + g.control[2]) / 2 + [-1.0, 0.0]
    assert hit_test(g, mid, radius_px=40.0).index == 1
    # outside the radius: the curve is 20 px above the control points, frames 40 px
    assert hit_test(g, cp + [0.0, -9.0]).kind == "NONE"
    miss = hit_test(g, (-500.0, -500.0))
    assert miss == Hit("NONE", -1, math.inf)


def test_hit_test_priority_control_point_frame_curve():
    space = line_space()
    g = canvas_geometry(space, VIEW)
    frame3 = g.frame_points[3]
    # a frame right under the mouse, a control point 6 px away: the frame (the nearest) wins
    g.control = np.vstack([g.control, frame3 + [6.0, 0.0]])
    hit = hit_test(g, frame3)
    assert hit.kind == "FRAME" and hit.index == 3
    # 5 px from the frame, 1 px from the control point: the control point (the nearest) wins
    hit = hit_test(g, frame3 + [5.0, 0.0])
    assert hit.kind == "CONTROL_POINT" and hit.index == 4
    # frame over site (the first 4 frames are sites) and over the curve
    g = canvas_geometry(space, VIEW)
    hit = hit_test(g, frame3 + [0.0, -2.0])
    assert hit.kind == "FRAME" and hit.index == 3 and hit.time == 4.0
    # frame beats curve when both are within the radius
    hit = hit_test(g, frame3 + [0.0, -12.0], radius_px=15.0)
    assert hit.kind == "FRAME" and hit.distance_px == pytest.approx(12.0)
    # curve alone: the segment, its distance and the frame time under the mouse
    xy = VIEW.to_pixels([6.3, 0.0]) + [0.0, 5.0]
    hit = hit_test(g, xy)
    assert hit.kind == "CURVE" and hit.distance_px == pytest.approx(5.0)
    assert hit.time == pytest.approx(6.3)
    assert g.curve[hit.index, 0] <= xy[0] <= g.curve[hit.index + 1, 0]
    # a site that is not a frame
    g.sites = np.array([[30.0, 30.0]])
    assert hit_test(g, (33.0, 30.0)).kind == "SITE"


# --------------------------------------------------------------------------------------------------
# strokes


def test_stroke_to_pose_spacing_and_endpoints():
    v = View((0.0, 0.0), 10.0, 200, 200, origin=(5.0, 5.0))
    # an L-shaped stroke of length 100 + 60 with uneven, repeated mouse samples
    xs = np.concatenate([[20.0, 20.0, 23.0, 50.0, 51.0, 120.0], np.full(4, 120.0)])
    ys = np.concatenate([np.full(6, 30.0), [30.0, 45.0, 46.0, 90.0]])
    stroke = np.column_stack([xs, ys])
    P = stroke_to_pose(v, stroke, spacing_px=4.0)
    XY = v.to_pixels(P)
    assert np.allclose(XY[0], stroke[0]) and np.allclose(XY[-1], stroke[-1])
    assert len(P) == 41  # 160 px / 4 px + 1
    # equal steps along the stroke: chords are 4 px except the one across the corner
    steps = np.hypot(*np.diff(XY, axis=0).T)
    assert np.sum(np.isclose(steps, 4.0)) >= len(steps) - 1
    assert np.all(steps <= 4.0 + 1e-9) and np.all(steps > 2.0)
    # every sample lies on the stroke
    on_first = np.isclose(XY[:, 1], 30.0) & (XY[:, 0] >= 20.0 - 1e-9) & (XY[:, 0] <= 120.0 + 1e-9)
    on_second = np.isclose(XY[:, 0], 120.0) & (XY[:, 1] >= 30.0 - 1e-9)
    assert np.all(on_first | on_second)
    # spacing that does not divide the length: as even as possible, close to the request
    P = stroke_to_pose(v, [[0.0, 0.0], [10.0, 0.0]], spacing_px=3.0)
    assert len(P) == 4 and np.allclose(np.diff(v.to_pixels(P)[:, 0]), 10.0 / 3)
    # degenerate strokes
    assert stroke_to_pose(v, [[7.0, 9.0], [7.0, 9.0]]).shape == (1, 2)
    assert np.allclose(v.to_pixels(stroke_to_pose(v, [[7.0, 9.0]])), [[7.0, 9.0]])
    assert stroke_to_pose(v, np.zeros((0, 2))).shape == (0, 2)
    assert stroke_to_pose(v, [[0.0, 0.0], [1.0, 0.0]], spacing_px=50.0).shape == (2, 2)
    with pytest.raises(ValueError):
        stroke_to_pose(v, [[0.0, 0.0], [math.inf, 0.0]])
    with pytest.raises(ValueError):
        stroke_to_pose(v, [[0.0, 0.0], [1.0, 0.0]], spacing_px=0.0)


# --------------------------------------------------------------------------------------------------
# rendering


def decode_png(data: bytes) -> np.ndarray:
    """8-bit RGBA PNG -> (H, W, 4) uint8 (the writer uses filter 0 on every row)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert header is not None
    w, h, depth, ctype, _, _, interlace = header
    assert (depth, ctype, interlace) == (8, 6, 0)
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + 4 * w)
    assert np.all(raw[:, 0] == 0)
    return raw[:, 1:].reshape(h, w, 4)


def test_render_rgba_draws_elements_where_they_are():
    space = line_space(pins={6: (7.0, 1.0)})
    g = canvas_geometry(space, VIEW, cursor=(8.5, -0.5))
    img = render_rgba(g, 241, 121)
    assert img.shape == (121, 241, 4) and img.dtype == np.float32
    # the curve y = 0 is region row y = 60.5 -> image row 60, between frames (x = 5.5 -> col 120)
    for px in (5.5, 2.25, 9.1):
        r, c = image_rc(VIEW.to_pixels([px, 0.0]))
        assert r == 60
        assert np.allclose(img[r, c], rgba(canvas.CURVE)), (px, img[r, c])
    # y up: frames (y = 1) are above the curve in the image (smaller rows), control points below
    for i in (4, 7):  # frames that are neither sites nor pinned
        r, c = image_rc(g.frame_points[i])
        assert r == 40
        assert np.allclose(img[r, c], g.frame_colors[i].astype(np.float32), atol=1e-6)
    for j in range(4):
        r, c = image_rc(g.control[j])
        assert r == 80 and np.allclose(img[r, c], rgba(canvas.HANDLE))
    # the control polygon is dashed: between two handles some pixels are polygon, some not
    r, c0 = image_rc(g.control[1])
    _, c1 = image_rc(g.control[2])
    row = img[r, c0 + 6:c1 - 5]
    is_poly = np.all(np.isclose(row, rgba(canvas.POLYGON)), axis=1)
    assert 0.3 < is_poly.mean() < 0.8
    # a site is a square outline 3 px from the frame, a pin a ring around its frame
    r, c = image_rc(g.sites[1])
    assert np.allclose(img[r - 3, c], rgba(canvas.SITE)) and np.allclose(img[r, c + 3], rgba(canvas.SITE))
    r, c = image_rc(g.pins[0])
    assert np.allclose(img[r, c + 6], rgba(canvas.PIN)) and np.allclose(img[r - 6, c], rgba(canvas.PIN))
    # the cursor crosshair: arms, no centre
    r, c = image_rc(g.cursor)
    assert np.allclose(img[r, c + 6], rgba(canvas.CURSOR)) and np.allclose(img[r - 6, c], rgba(canvas.CURSOR))
    assert not np.allclose(img[r, c], rgba(canvas.CURSOR))
    # a title and a legend: text pixels at the top and the time ramp at the bottom
    assert np.any(np.all(np.isclose(img[:16, :80], rgba(canvas.TEXT)), axis=2))
    bottom = img[-16:]
    first, last = canvas.time_colors([0.0, 1.0])
    assert np.any(np.all(np.isclose(bottom[..., :3], first[:3].astype(np.float32), atol=1e-6), axis=2))
    assert np.any(np.all(np.isclose(bottom[..., :3], last[:3].astype(np.float32), atol=1e-6), axis=2))
    # the view's size is the default
    assert render_rgba(g).shape == (121, 241, 4)


def test_render_current_frame_and_stroke_and_origin():
    space = line_space()
    # a canvas placed at (30, 50) in its region: the image covers that rectangle
    view = View(VIEW.center, VIEW.scale, VIEW.width, VIEW.height, origin=(30.0, 50.0))
    g = canvas_geometry(space, view, current_time=5.5, stroke=[[2.0, -0.5], [9.0, -0.5]])
    img = render_rgba(g, title="", legend=False, grid=False)
    xy = g.current - [30.0, 50.0]
    r, c = image_rc(xy)
    assert (r, c) == (60, 120)
    assert np.allclose(img[r, c + 10], rgba(canvas.CURRENT)) and np.allclose(img[r + 10, c], rgba(canvas.CURRENT))
    r, c = image_rc(VIEW.to_pixels([6.0, -0.5]))
    assert np.allclose(img[r, c], rgba(canvas.STROKE))
    # nothing but the background where nothing is drawn
    assert np.allclose(img[2, 2], rgba(canvas.BACKGROUND)) and np.allclose(img[-3, -3], rgba(canvas.BACKGROUND))


def test_render_png_writes_valid_png(tmp_path):
    g = canvas_geometry(line_space(pins={3: (4.0, 2.0)}), VIEW, current_time=3.0, cursor=(2.0, 2.0))
    path = render_png(g, tmp_path / "canvas" / "pose.png", width=241, height=121, title="Pose space: test")
    dec = decode_png(open(path, "rb").read())
    assert dec.shape == (121, 241, 4)
    expected = np.rint(np.clip(render_rgba(g, title="Pose space: test").astype(np.float64), 0, 1) * 255)
    assert np.array_equal(dec, expected)
    r, c = image_rc(VIEW.to_pixels([5.25, 0.0]))
    assert np.array_equal(dec[r, c], np.rint(rgba(canvas.CURVE) * 255).astype(np.uint8))


def test_render_clips_far_away_geometry_quickly():
    space = line_space()
    v = View((5.5, 0.0), 1e7, 120, 80)  # zoomed far in: segments millions of pixels long
    g = canvas_geometry(space, v)
    t0 = time.perf_counter()
    img = render_rgba(g)
    assert time.perf_counter() - t0 < 1.0
    assert np.allclose(img[40, 5], rgba(canvas.CURVE))  # the curve crosses the whole canvas


# --------------------------------------------------------------------------------------------------
# speed (generous bounds: the targets are < 1 ms per geometry and < 0.1 ms per hit test)


def test_geometry_and_hit_test_are_fast():
    n = 200
    t = np.linspace(0.0, 4 * np.pi, n)
    positions = np.column_stack([np.cos(t), np.sin(2 * t)]) * 3.0
    control = positions[::5].copy()

    @dataclass
    class CurveTime:
        control: np.ndarray

        def evaluate(self, times):
            u = (np.asarray(times, dtype=float) - 1.0) / (n - 1) * 4 * np.pi
            return np.stack([np.cos(u), np.sin(2 * u)], axis=-1) * 3.0

    space = Space(positions, Sites(positions[:60].copy()), CurveTime(control), np.arange(1.0, n + 1.0))
    view = fit_view(positions, 600, 400)
    canvas_geometry(space, view, curve_samples=400)
    reps = 200
    t0 = time.perf_counter()
    for i in range(reps):
        g = canvas_geometry(space, view.panned(i, 0), current_time=1.0 + i, cursor=(0.5, 0.5))
    per_geometry = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for i in range(reps):
        hit_test(g, (300.0 + i % 7, 200.0))
    per_hit = (time.perf_counter() - t0) / reps
    assert per_geometry < 2e-3, per_geometry
    assert per_hit < 5e-4, per_hit


# --------------------------------------------------------------------------------------------------
# the real model


def test_real_pose_space_renders():
    posespace = pytest.importorskip("anim_signals.posespace")
    rng = np.random.default_rng(3)
    n, verts = 16, 6
    base = rng.normal(size=(verts, 3))
    bend = rng.normal(size=(verts, 3))
    twist = rng.normal(size=(verts, 3))
    phase = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    Z = np.stack([(base + np.sin(a) * bend + 0.5 * np.cos(a) * twist).ravel() for a in phase])
    space = posespace.build_pose_space(Z, pins={0: (0.0, 0.0)})
    view = canvas.fit_space_view(space, 320, 240)
    g = canvas_geometry(space, view, current_time=5.0, cursor=space.positions[3])
    assert g.frame_points.shape == (n, 2) and g.control.shape == (space.k, 2)
    assert g.sites.shape == (space.l, 2) and g.pin_frames.tolist() == [0]
    # everything drawn is inside the fitted canvas
    for arr in (g.frame_points, g.control, g.curve, g.sites):
        assert np.all((arr >= 0) & (arr <= [320, 240]))
    # the interpolating representation puts the curve through the frames
    assert np.allclose(g.curve[0], g.frame_points[0], atol=1e-6)
    assert np.allclose(g.curve[-1], g.frame_points[-1], atol=1e-6)
    exact = view.to_pixels(space.time.evaluate(np.array(5.0)))
    assert np.linalg.norm(g.current - exact) < 0.5  # on the drawn polyline, within half a pixel of f
    hit = hit_test(g, g.control[2] + 1.0, kinds=("CONTROL_POINT",))
    assert hit.kind == "CONTROL_POINT" and hit.index == 2
    img = render_rgba(g, title=f"n {space.n} k {space.k} l {space.l} m {space.m}")
    curve_px = np.all(np.isclose(img, rgba(canvas.CURVE)), axis=2)
    assert curve_px.sum() > 100
    # stroke in pixels -> pose space -> a new time signal along it
    stroke = stroke_to_pose(view, g.frame_points[[0, 4, 8]], spacing_px=6.0)
    assert np.allclose(view.to_pixels(stroke[[0, -1]]), g.frame_points[[0, 8]])


def test_geometry_after_a_time_edit_draws_the_new_curve_and_the_old_frames():
    """After a sketch the time signal has other frames than the reconstructed frames: both are drawn."""
    from anim_signals import posespace as ps
    from anim_signals.posespace import canvas as cv

    rng = np.random.default_rng(5)
    z = np.cumsum(rng.normal(size=(12, 9)), axis=0)
    space = ps.build_pose_space(z, row_size=1)
    edited = space.with_stroke(np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 0.0]]), 30)
    view = cv.fit_view(edited.positions, 300, 200)
    geo = cv.canvas_geometry(edited, view)
    assert geo.frame_points.shape == (12, 2) and geo.frame_colors.shape == (12, 4)
    assert geo.curve_times[0] == 1.0 and geo.curve_times[-1] == 30.0
    np.testing.assert_allclose(view.to_pose(geo.curve[0]), [0.0, 0.0], atol=1e-6)
