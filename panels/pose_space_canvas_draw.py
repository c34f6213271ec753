"""The pose-space canvas's gpu layer: a ``POST_PIXEL`` draw handler on the 3D Viewport sidebar that
draws what the canvas shows (``operators/pose_space/canvas_state.canvas_geometry_for``) over the
space the headerless canvas panel reserves; it does nothing in background mode.

The triangles and lines, their colours and widths come from the core
(``anim_signals.posespace.shapes.canvas_marks``); this module draws them with builtin shaders whose
names are valid on Blender 4.2 LTS to 5.x (``UNIFORM_COLOR``, ``FLAT_COLOR``,
``POLYLINE_UNIFORM_COLOR``).
"""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np

from ..anim_signals.posespace import canvas as cv
from ..anim_signals.posespace.shapes import canvas_marks
from ..operators.pose_space.canvas_state import (
    CATEGORY,
    canvas_geometry_for,
    canvas_rect,
    has_states,
    shown_on_canvas,
    tag_redraw,
    ui_metrics,
)

__all__ = ["draw_geometry", "register", "unregister"]


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
    """Draw a CanvasGeometry (region pixels) clipped to ``rect``: the core's marks
    (``posespace.shapes.canvas_marks``, the same layers as the PNG rendering), one batch each."""
    import gpu

    x0, y0, w, h = rect
    paint = _Painter(viewport)
    gpu.state.blend_set("ALPHA")
    old_scissor = gpu.state.scissor_get()
    gpu.state.scissor_test_set(True)
    gpu.state.scissor_set(int(x0), int(y0), int(math.ceil(w)), int(math.ceil(h)))
    try:
        for mark in canvas_marks(geom, rect, scale):
            if mark.primitive == "LINES":
                paint.lines(mark.vertices, mark.color, mark.width)
            elif mark.colors is not None:
                paint.tris_colored(mark.vertices, mark.colors)
            else:
                paint.tris(mark.vertices, mark.color)
    finally:
        gpu.state.scissor_set(*old_scissor)
        gpu.state.scissor_test_set(False)
        gpu.state.blend_set("NONE")


def _draw_callback() -> None:
    if bpy.app.background:
        return
    context = bpy.context
    region = context.region
    if region is None or region.type != "UI" or region.active_panel_category != CATEGORY:
        return
    ob, model, source = shown_on_canvas(context)
    if model is None or source is None:
        return
    rect = canvas_rect(context)
    if rect is None:
        return
    try:
        geom = canvas_geometry_for(context, ob, model, rect, source.kind)
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
