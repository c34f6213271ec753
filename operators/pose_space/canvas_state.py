"""The pose-space canvas's runtime state and geometry in the sidebar: per object its view (centre,
scale), cursor, the stroke being drawn and the model being edited; where the canvas sits in the
3D Viewport sidebar; what it shows. Shared by the canvas operators and the drawing
(``panels/pose_space_canvas_draw.py``).

The canvas shows one model of the active object. Two tools draw there: Pose Space (this package)
and Spatial Keyframes (``operators/spatial_keyframes``), each registering a :class:`CanvasSource`
(how to find its model, how a press on the canvas is handled, its title). When the object has
both, the sidebar's Canvas setting (``pose_space_canvas.shows``) picks one; the pose-space drag
tools then work only while the canvas shows the pose space.

The state is module state, never saved in the .blend (forgotten when a file is loaded). Geometry,
view transform, what a time-edited model shows (``drawable``) and hit-testing come from the pure
:mod:`anim_signals.posespace.canvas`.
"""

from __future__ import annotations

from collections.abc import Callable
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
    "POSE_SPACE",
    "SPATIAL_KEYFRAMES",
    "SURE_RADIUS",
    "ZOOM_STEP",
    "CanvasSource",
    "CanvasState",
    "active_space",
    "add_canvas_source",
    "remove_canvas_source",
    "canvas_geometry_for",
    "canvas_kinds",
    "canvas_rect",
    "canvas_region",
    "canvas_units",
    "checked_point",
    "checked_stroke",
    "current_time",
    "forget_states",
    "has_states",
    "poll_space",
    "shown_on_canvas",
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
POSE_SPACE = "POSE_SPACE"
SPATIAL_KEYFRAMES = "SPATIAL_KEYFRAMES"
SHOWS_OTHER = "The canvas shows the spatial keyframes: set Canvas to Pose Space to edit the pose space there"
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


_STATES: dict[tuple[str, str], CanvasState] = {}


def state_of(ob, kind: str = POSE_SPACE) -> CanvasState:
    """The canvas state of ``ob`` showing a model of ``kind`` (made on first use): a pose space
    and the spatial keyframes of one armature keep their own views."""
    return _STATES.setdefault((ob.name_full, kind), CanvasState())


@dataclass(frozen=True)
class CanvasSource:
    """A tool whose model the canvas can show.

    ``find(ob)`` gives (the object holding the model, the model as the canvas draws it) for the
    active object, or None; ``press(context, event, ob, model, rect)`` handles a left press on
    the canvas (returns an operator result set); ``title`` heads its PNG.
    """

    kind: str
    label: str
    find: Callable[[Any], tuple[Any, Any] | None]
    press: Callable[..., set[str]] | None = None
    title: str = ""


_SOURCES: dict[str, CanvasSource] = {}


def add_canvas_source(source: CanvasSource) -> None:
    """Let the canvas show ``source``'s models (registered by the tool; the pose space first)."""
    _SOURCES[source.kind] = source


def remove_canvas_source(kind: str) -> None:
    """Forget a tool's canvas source (its unregister)."""
    _SOURCES.pop(kind, None)


def _found(source: CanvasSource, ob) -> tuple[Any, Any] | None:
    try:
        return source.find(ob)
    except (ReferenceError, ValueError, KeyError, TypeError):  # a damaged or vanishing model shows nothing
        return None


def shown_on_canvas(context) -> tuple[Any, Any, CanvasSource | None]:
    """(object, model, source) the canvas shows for the active object; (None, None, None) without
    any. With several, the sidebar's Canvas setting decides, else the first registered."""
    ob = getattr(context, "active_object", None)
    if ob is None:
        return None, None, None
    wanted = str(getattr(context.scene.anim_signals.pose_space_canvas, "shows", POSE_SPACE))
    first: tuple[Any, Any, CanvasSource | None] = (None, None, None)
    for source in _SOURCES.values():
        found = _found(source, ob)
        if found is None or found[1] is None:
            continue
        if source.kind == wanted:
            return found[0], found[1], source
        if first[2] is None:
            first = (found[0], found[1], source)
    return first


def canvas_kinds(ob) -> list[str]:
    """The kinds of model the canvas could show for ``ob`` (for the sidebar's Canvas switch)."""
    return [source.kind for source in _SOURCES.values() if (_found(source, ob) or (None, None))[1] is not None]


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


def _pose_space_of(ob) -> tuple[Any, Any] | None:
    ps = space_object(ob)
    return None if ps is None else (ps, space_of(ps))


add_canvas_source(CanvasSource(POSE_SPACE, "Pose Space", _pose_space_of, title="Pose space"))


def active_space(context):
    """(the pose-space object of the active object, its model); (None, None) without one."""
    try:
        ob = space_object(context.active_object)
    except ReferenceError:
        return None, None
    return ob, space_of(ob)


def _shows_other(context) -> bool:
    """The canvas shows another model of the active object than its pose space."""
    source = shown_on_canvas(context)[2]
    return source is not None and source.kind != POSE_SPACE


def space_or_report(op, context):
    """:func:`active_space` while the canvas shows it, with the reason reported as an error on
    ``op`` when there is none or the canvas shows another model."""
    ob, space = active_space(context)
    if space is None:
        op.report({"ERROR"}, NO_SPACE)
    elif _shows_other(context):
        op.report({"ERROR"}, SHOWS_OTHER)
        return ob, None
    return ob, space


def poll_space(cls, context) -> bool:
    """Operator poll: the active object has a pose space and the canvas shows it (else a poll
    message says why not)."""
    if not has_active_object(cls, context):
        return False
    if active_space(context)[1] is None:
        cls.poll_message_set(NO_SPACE)
        return False
    if _shows_other(context):
        cls.poll_message_set(SHOWS_OTHER)
        return False
    return True


def canvas_geometry_for(context, ob, space, rect, kind: str = POSE_SPACE) -> cv.CanvasGeometry:
    """What the canvas shows for ``ob`` in ``rect``: the model being edited (if any), the current
    frame, the cursor and the stroke being drawn."""
    st = state_of(ob, kind)
    shown = st.preview if st.preview is not None else space
    view = view_for(st, shown, rect)
    return cv.canvas_geometry(cv.drawable(shown), view, current_time=current_time(context.scene), cursor=st.cursor,
                              stroke=st.stroke)

