"""The pose-space canvas's gpu layer: a ``POST_PIXEL`` draw handler on the 3D Viewport sidebar that
draws what the canvas shows (``operators/pose_space/canvas_state.canvas_geometry_for``) over the
space the headerless canvas panel reserves; it does nothing in background mode.

Triangles and lines are built with numpy and drawn with builtin shaders whose names are valid on
Blender 4.2 LTS to 5.x (``UNIFORM_COLOR``, ``FLAT_COLOR``, ``POLYLINE_UNIFORM_COLOR``).
"""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np

from ..anim_signals.posespace import canvas as cv
from ..operators.pose_space.canvas_state import (
    CATEGORY,
    active_space,
    canvas_geometry_for,
    canvas_rect,
    has_states,
    tag_redraw,
    ui_metrics,
)

__all__ = [
    "crosshair_lines",
    "dashed_segments",
    "disc_tris",
    "draw_geometry",
    "polyline_segments",
    "register",
    "ring_tris",
    "square_lines",
    "square_tris",
    "unregister",
]


def _circle(segments: int) -> np.ndarray:
    a = np.linspace(0.0, 2.0 * math.pi, segments + 1)
    return np.column_stack([np.cos(a), np.sin(a)])


def disc_tris(centers: np.ndarray, radius: float, segments: int = 12) -> np.ndarray:
    """Filled circles as triangles: (n * segments * 3, 2)."""
    C = np.asarray(centers, dtype=float).reshape(-1, 2)
    ring = _circle(segments) * radius
    tri = np.stack([np.zeros((segments, 2)), ring[:-1], ring[1:]], axis=1)  # (segments, 3, 2)
    return (C[:, None, None, :] + tri[None]).reshape(-1, 2)


def ring_tris(centers: np.ndarray, r_out: float, r_in: float, segments: int = 16) -> np.ndarray:
    """Annuli as triangles: (n * segments * 6, 2)."""
    C = np.asarray(centers, dtype=float).reshape(-1, 2)
    u = _circle(segments)
    o, i = u * r_out, u * r_in
    quads = np.stack([o[:-1], o[1:], i[1:], o[:-1], i[1:], i[:-1]], axis=1)  # (segments, 6, 2)
    return (C[:, None, None, :] + quads[None]).reshape(-1, 2)


def square_tris(centers: np.ndarray, half: float) -> np.ndarray:
    C = np.asarray(centers, dtype=float).reshape(-1, 2)
    h = float(half)
    sq = np.array([(-h, -h), (h, -h), (h, h), (-h, -h), (h, h), (-h, h)])
    return (C[:, None, :] + sq[None]).reshape(-1, 2)


def square_lines(centers: np.ndarray, half: float) -> np.ndarray:
    C = np.asarray(centers, dtype=float).reshape(-1, 2)
    h = float(half)
    e = np.array([(-h, -h), (h, -h), (h, -h), (h, h), (h, h), (-h, h), (-h, h), (-h, -h)])
    return (C[:, None, :] + e[None]).reshape(-1, 2)


def crosshair_lines(center: np.ndarray, arm: float, gap: float) -> np.ndarray:
    x, y = float(center[0]), float(center[1])
    return np.array([(x - arm, y), (x - gap, y), (x + gap, y), (x + arm, y),
                     (x, y - arm), (x, y - gap), (x, y + gap), (x, y + arm)])


def polyline_segments(P: np.ndarray) -> np.ndarray:
    """An open polyline (s, 2) as LINES pairs (2 (s - 1), 2)."""
    P = np.asarray(P, dtype=float).reshape(-1, 2)
    if len(P) < 2:
        return np.zeros((0, 2))
    return np.stack([P[:-1], P[1:]], axis=1).reshape(-1, 2)


def dashed_segments(P: np.ndarray, dash: float = 5.0, gap: float = 4.0) -> np.ndarray:
    """An open polyline as the LINES pairs of a dashed line (dash / gap lengths in pixels)."""
    P = np.asarray(P, dtype=float).reshape(-1, 2)
    out = []
    period = dash + gap
    for a, b in zip(P[:-1], P[1:]):
        seg = float(np.hypot(*(b - a)))
        if seg <= 0.0:
            continue
        for s0 in np.arange(0.0, seg, period):
            s1 = min(s0 + dash, seg)
            out.append(a + (b - a) * (s0 / seg))
            out.append(a + (b - a) * (s1 / seg))
    return np.array(out).reshape(-1, 2)


class _Painter:
    """Builtin shaders valid on Blender 4.2 LTS - 5.x ('2D_*' names were removed in 4.0)."""

    def __init__(self, viewport: tuple[float, float]):
        import gpu
        from gpu_extras.batch import batch_for_shader

        self.batch_for_shader = batch_for_shader
        self.uniform = gpu.shader.from_builtin("UNIFORM_COLOR")
        self.flat = gpu.shader.from_builtin("FLAT_COLOR")
        self.line = gpu.shader.from_builtin("POLYLINE_UNIFORM_COLOR")
        self.viewport = viewport

    @staticmethod
    def _f32(P: np.ndarray) -> Any:
        return np.ascontiguousarray(np.asarray(P, dtype=np.float32).reshape(-1, 2))

    def tris(self, P: np.ndarray, color) -> None:
        if len(P) >= 3:
            self.uniform.bind()
            self.uniform.uniform_float("color", tuple(color))
            self.batch_for_shader(self.uniform, "TRIS", {"pos": self._f32(P)}).draw(self.uniform)

    def tris_colored(self, P: np.ndarray, colors: np.ndarray) -> None:
        if len(P) >= 3:
            cols: Any = np.ascontiguousarray(np.asarray(colors, dtype=np.float32).reshape(-1, 4))
            self.flat.bind()
            self.batch_for_shader(self.flat, "TRIS", {"pos": self._f32(P), "color": cols}).draw(self.flat)

    def lines(self, P: np.ndarray, color, width: float = 1.0) -> None:
        if len(P) >= 2:
            self.line.bind()
            self.line.uniform_float("viewportSize", self.viewport)
            self.line.uniform_float("lineWidth", float(width))
            self.line.uniform_float("color", tuple(color))
            self.batch_for_shader(self.line, "LINES", {"pos": self._f32(P)}).draw(self.line)


def draw_geometry(geom: cv.CanvasGeometry, rect, viewport: tuple[float, float], scale: float = 1.0) -> None:
    """Draw a CanvasGeometry (region pixels) clipped to ``rect``: the same layers as canvas.render_rgba."""
    import gpu

    x0, y0, w, h = rect
    s = max(scale, 0.5)
    paint = _Painter(viewport)
    gpu.state.blend_set("ALPHA")
    old_scissor = gpu.state.scissor_get()
    gpu.state.scissor_test_set(True)
    gpu.state.scissor_set(int(x0), int(y0), int(math.ceil(w)), int(math.ceil(h)))
    try:
        paint.tris(_rect_tris(rect), cv.BACKGROUND)
        view = geom.view
        if view is not None:  # axes through the pose-space origin
            o = view.to_pixels(np.zeros(2))
            axes = np.array([(x0, o[1]), (x0 + w, o[1]), (o[0], y0), (o[0], y0 + h)])
            paint.lines(axes, cv.AXIS, 1.0)
        if len(geom.control_polygon) >= 2:
            paint.lines(dashed_segments(geom.control_polygon, 5.0 * s, 4.0 * s), cv.POLYGON, 1.0)
        paint.lines(polyline_segments(geom.curve), cv.CURVE, 2.0 * s)
        n = len(geom.frame_points)
        if n:
            paint.tris(disc_tris(geom.frame_points, 4.0 * s), cv.OUTLINE)
            seg = 12
            cols = np.repeat(np.asarray(geom.frame_colors, dtype=float), seg * 3, axis=0)
            paint.tris_colored(disc_tris(geom.frame_points, 3.0 * s, seg), cols)
        paint.lines(square_lines(geom.sites, 3.5 * s), cv.SITE, 1.0)
        paint.tris(ring_tris(geom.pins, 7.5 * s, 5.5 * s), cv.PIN)
        paint.tris(square_tris(geom.control, 3.5 * s), cv.OUTLINE)
        paint.tris(square_tris(geom.control, 2.5 * s), cv.HANDLE)
        if geom.stroke is not None and len(geom.stroke):
            paint.lines(polyline_segments(geom.stroke), cv.STROKE, 2.0 * s)
        if geom.current is not None:
            paint.tris(ring_tris(geom.current, 6.0 * s, 4.5 * s), cv.CURRENT)
            paint.lines(crosshair_lines(geom.current, 12.0 * s, 6.0 * s), cv.CURRENT, 1.0)
        if geom.cursor is not None:
            paint.lines(crosshair_lines(geom.cursor, 9.0 * s, 3.0 * s), cv.CURSOR, 1.5 * s)
    finally:
        gpu.state.scissor_set(*old_scissor)
        gpu.state.scissor_test_set(False)
        gpu.state.blend_set("NONE")


def _rect_tris(rect) -> np.ndarray:
    x0, y0, w, h = rect
    return np.array([(x0, y0), (x0 + w, y0), (x0 + w, y0 + h), (x0, y0), (x0 + w, y0 + h), (x0, y0 + h)])


def _draw_callback() -> None:
    if bpy.app.background:
        return
    context = bpy.context
    region = context.region
    if region is None or region.type != "UI" or region.active_panel_category != CATEGORY:
        return
    ob, space = active_space(context)
    if space is None:
        return
    rect = canvas_rect(context)
    if rect is None:
        return
    try:
        geom = canvas_geometry_for(context, ob, space, rect)
        _, scale = ui_metrics(context)
        draw_geometry(geom, rect, (float(region.width), float(region.height)), scale)
    except (ValueError, ReferenceError):  # a model being rebuilt, a removed object: skip this redraw
        return
    except Exception as err:  # noqa: BLE001  a drawing bug must not break the sidebar: report it once
        global _draw_error
        if _draw_error != repr(err):
            _draw_error = repr(err)
            print(f"Anim Signals: drawing the pose-space canvas failed: {err!r} (the tools still work)")


_draw_error = ""


@bpy.app.handlers.persistent
def _on_frame_change(scene, *args) -> None:
    if not bpy.app.background and has_states():
        tag_redraw()


_handle: Any = None


def register() -> None:
    """Add the draw handler and the redraw on frame changes (the canvas marks the current frame)."""
    global _handle
    _handle = bpy.types.SpaceView3D.draw_handler_add(_draw_callback, (), "UI", "POST_PIXEL")
    bpy.app.handlers.frame_change_post.append(_on_frame_change)


def unregister() -> None:
    global _handle
    if _on_frame_change in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.remove(_on_frame_change)
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, "UI")
        _handle = None
