"""The pose-space canvas's runtime state and geometry in the sidebar: per object its view (centre,
scale), cursor, the stroke being drawn and the model being edited; where the canvas sits in the
3D Viewport sidebar; what it shows. Shared by the canvas operators and the drawing
(``panels/pose_space_canvas_draw.py``).

The state is module state, never saved in the .blend (forgotten when a file is loaded). Geometry,
view transform, what a time-edited model shows (``drawable``) and hit-testing come from the pure
:mod:`anim_signals.posespace.canvas`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np

from ...anim_signals.posespace import canvas as cv
from ..common.polls import has_active_object
from .storage import space_object, space_of

__all__ = [
    "CATEGORY",
    "HIT_RADIUS",
    "NO_SPACE",
    "SURE_RADIUS",
    "ZOOM_STEP",
    "CanvasState",
    "active_space",
    "canvas_geometry_for",
    "canvas_rect",
    "canvas_region",
    "canvas_units",
    "checked_point",
    "checked_stroke",
    "current_time",
    "forget_states",
    "has_states",
    "poll_space",
    "space_or_report",
    "state_of",
    "tag_redraw",
    "ui_metrics",
    "view_for",
]

CATEGORY = "Signals"
HIT_RADIUS = 8.0  # pixels (times the UI scale)
SURE_RADIUS = 3.0  # a frame's dot this close to a press is picked whatever else is near (pixels x UI scale)
ZOOM_STEP = 1.2
NO_SPACE = "The active object has no pose space: build one first"
FAR = 1000.0  # a point given to a canvas tool lies within this many pose-space sizes of the frames


@dataclass
class CanvasState:
    """The canvas of one object, while Blender runs (not saved)."""

    center: tuple[float, float] | None = None  # pose-space point at the canvas centre
    scale: float | None = None  # pixels per pose-space unit
    cursor: np.ndarray | None = None  # (2,) pose space
    stroke: np.ndarray | None = None  # (r, 2) pose space, while sketching
    preview: Any = None  # PoseSpace being edited (drawn instead of the stored one)
    fitted: tuple | None = None  # (center, scale, width, height) of the last automatic fit


_STATES: dict[str, CanvasState] = {}


def state_of(ob) -> CanvasState:
    """The canvas state of ``ob`` (made on first use)."""
    return _STATES.setdefault(ob.name_full, CanvasState())


def forget_states() -> None:
    """Drop every canvas state (views, cursors, strokes, previews)."""
    _STATES.clear()


def has_states() -> bool:
    """Some canvas has been shown or used since the file was loaded."""
    return bool(_STATES)


@bpy.app.handlers.persistent
def _on_load(*args) -> None:
    forget_states()


def register() -> None:
    """Forget the canvas states whenever a file is loaded."""
    bpy.app.handlers.load_post.append(_on_load)


def unregister() -> None:
    if _on_load in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(_on_load)
    forget_states()


def _reach(space) -> tuple[np.ndarray, float]:
    """The centre of the frames' positions and how far from it a given point may lie."""
    positions = np.asarray(space.positions, dtype=float)
    centre = positions.mean(axis=0)
    size = float(np.max(np.ptp(positions, axis=0))) if positions.size else 0.0
    return centre, FAR * max(size, 1e-6)


def checked_point(space, point, what: str = "position") -> np.ndarray:
    """``point`` as a (2,) array, or ValueError naming ``what`` when it is not finite or lies
    absurdly far from the pose space (more than :data:`FAR` times its size from its frames): such a
    point makes no pose, only overflowing weights and a layout squashed to a line."""
    p = np.asarray(point, dtype=float).reshape(2)
    if not np.all(np.isfinite(p)):
        raise ValueError(f"The {what} ({p[0]:g}, {p[1]:g}) must be finite numbers")
    centre, reach = _reach(space)
    if float(np.max(np.abs(p - centre))) > reach:
        raise ValueError(f"The {what} ({p[0]:.3g}, {p[1]:.3g}) lies more than {FAR:g} times the pose space's "
                         "size away from its frames: use a point on the canvas")
    return p


def checked_stroke(space, points) -> np.ndarray:
    """A sketched stroke as an (r, 2) array, every point checked by :func:`checked_point`."""
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    centre, reach = _reach(space)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(pts).all(axis=1) | (np.abs(pts - centre).max(axis=1, initial=0.0) > reach)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        checked_point(space, pts[i], f"stroke point {i}")
    return pts


def ui_metrics(context) -> tuple[float, float]:
    """(widget unit, UI scale) in pixels, as Blender computes U.widget_unit."""
    system = context.preferences.system
    scale = float(getattr(system, "ui_scale", 1.0) or 1.0)
    pixel = float(getattr(system, "pixel_size", 1.0) or 1.0)
    return float(round(18.0 * scale) + 2.0 * pixel), scale


def canvas_units(context) -> int:
    """The canvas height in UI units (the sidebar's setting)."""
    return int(context.scene.anim_signals.pose_space_canvas.height)


def canvas_rect(context, region=None) -> tuple[float, float, float, float] | None:
    """The canvas (x0, y0, width, height) in region pixels (y up), or None when there is no room.

    The headerless canvas panel is the first panel of the tab and reserves ``height`` UI units right
    at its top; the rectangle follows Blender's panel layout (UI_PANEL_MARGIN_X/Y, the style's panel
    space, the category tabs) in the region's view space, so sidebar scrolling and zoom are followed.
    """
    region = region or context.region
    if region is None or region.width < 40 or region.height < 40:
        return None
    unit, scale = ui_metrics(context)
    v2d = region.view2d
    x_left, y_top = v2d.region_to_view(0, region.height)
    x_right, _ = v2d.region_to_view(region.width, region.height)
    view_w = x_right - x_left
    tabs = unit if getattr(region, "alignment", "RIGHT") != "LEFT" else 0.0
    offset = unit if getattr(region, "alignment", "RIGHT") == "LEFT" else 0.0
    pad = 0.4 * unit + 8.0 * scale  # panel margin + panel space
    left = offset + pad
    right = view_w - tabs + offset - pad
    top = -(0.1 * unit + 8.0 * scale) - 2.0 * scale
    bottom = top - canvas_units(context) * unit + 4.0 * scale
    if right - left < 32 or top - bottom < 32:
        return None
    x0, y0 = v2d.view_to_region(left, bottom, clip=False)
    x1, y1 = v2d.view_to_region(right, top, clip=False)
    if x1 - x0 < 32 or y1 - y0 < 32:
        return None
    return float(x0), float(y0), float(x1 - x0), float(y1 - y0)


def canvas_region(context):
    """The 3D Viewport sidebar region that shows the canvas: ``context.region`` when it is that
    sidebar (a press on the canvas), else the sidebar of ``context.area`` (a panel button runs its
    operator in the area's main region); None when the area is no 3D Viewport, its sidebar is
    hidden or shows another tab."""
    area = getattr(context, "area", None)
    region = getattr(context, "region", None)
    if region is not None and region.type == "UI":
        return region
    if area is None or area.type != "VIEW_3D":
        return None
    if not getattr(area.spaces.active, "show_region_ui", True):
        return None
    for candidate in area.regions:
        if candidate.type == "UI" and getattr(candidate, "active_panel_category", CATEGORY) == CATEGORY:
            return candidate
    return None


def view_for(state: CanvasState, space, rect) -> cv.View:
    """The canvas view: the state's centre and scale on ``rect``; fitted to the model the first
    time, and again when the canvas changes size while the view is still the automatic fit (a
    view the user zoomed or panned is kept)."""
    x0, y0, w, h = rect
    size = (max(int(w), 1), max(int(h), 1))
    fitted = state.fitted
    resized_fit = fitted is not None and fitted[:2] == (state.center, state.scale) and fitted[2:] != size
    if state.center is None or state.scale is None or resized_fit:
        v = cv.fit_space_view(cv.drawable(space), size[0], size[1], origin=(x0, y0))
        state.center, state.scale = v.center, v.scale
        state.fitted = (v.center, v.scale, *size)
        return v
    return cv.View(state.center, state.scale, size[0], size[1], (x0, y0))


def current_time(scene) -> float:
    """The scene's current frame with its subframe: the time the canvas marks."""
    return float(scene.frame_current) + float(getattr(scene, "frame_subframe", 0.0))


def tag_redraw(context=None) -> None:
    """Redraw every 3D Viewport (its sidebar shows the canvas, its view shows the pose)."""
    wm = bpy.context.window_manager if context is None else context.window_manager
    for win in getattr(wm, "windows", ()):
        for area in win.screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()


def active_space(context):
    """(the pose-space object of the active object, its model); (None, None) without one."""
    try:
        ob = space_object(context.active_object)
    except ReferenceError:
        return None, None
    return ob, space_of(ob)


def space_or_report(op, context):
    """:func:`active_space`, with the reason reported as an error on ``op`` when there is none."""
    ob, space = active_space(context)
    if space is None:
        op.report({"ERROR"}, NO_SPACE)
    return ob, space


def poll_space(cls, context) -> bool:
    """Operator poll: the active object has a pose space (else a poll message says why not)."""
    if not has_active_object(cls, context):
        return False
    if active_space(context)[1] is None:
        cls.poll_message_set(NO_SPACE)
        return False
    return True


def canvas_geometry_for(context, ob, space, rect) -> cv.CanvasGeometry:
    """What the canvas shows for ``ob`` in ``rect``: the model being edited (if any), the current
    frame, the cursor and the stroke being drawn."""
    st = state_of(ob)
    shown = st.preview if st.preview is not None else space
    view = view_for(st, shown, rect)
    return cv.canvas_geometry(cv.drawable(shown), view, current_time=current_time(context.scene), cursor=st.cursor,
                              stroke=st.stroke)

