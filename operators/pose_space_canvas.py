"""The pose-space canvas in the 3D Viewport sidebar (tab "Signals"): modal operators and a thin gpu layer.

Interactions (docs/pose_space.md, "Canvas UI"); each is an operator whose ``execute()`` takes its
result as properties, so every interaction runs (and is tested) headless:

* ``anim_signals.pose_space_navigate``  drag a free cursor: the pose follows live (``position``)
* ``anim_signals.pose_space_edit_time`` drag a time-signal control point, local in time (``index``, ``position``)
* ``anim_signals.pose_space_pin``       drag a frame: MDS re-solves live with the pin (``frame``, ``position``, ``clear``)
* ``anim_signals.pose_space_sketch``    draw a stroke: a new sequence along it (``stroke``, ``frames``)
* ``anim_signals.pose_space_zoom`` / ``_pan`` / ``_view_all`` / ``_canvas_press`` / ``_save_png``: view, the
  mouse dispatcher of the canvas (press on a control point edits time, on a frame pins it, elsewhere
  navigates; Shift sketches) and a PNG of the canvas.

A drag is one undo step; ESC or right-click during a drag restores the state before it.  The model
comes from the data layer (:mod:`.pose_space`: ``load_space``, ``save_space``, ``apply_position``,
``apply_time``); geometry, view, hit-testing and strokes from the pure :mod:`anim_signals.canvas`.
Drawing is a POST_PIXEL handler on the VIEW_3D sidebar; it does nothing in background mode.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    StringProperty,
)

from ..anim_signals import canvas as cv
from . import pose_space as data

CATEGORY = "Signals"
CANVAS_UNITS = 12  # default canvas height in UI units (scene.anim_signals.pose_space_canvas.height)
HIT_RADIUS = 8.0  # pixels (times the UI scale)
ZOOM_STEP = 1.2
PNG_FILE = "pose_space.png"


# --------------------------------------------------------------------------------------------------
# the model of an object, cached (poll and draw run on every redraw)


def space_of(ob) -> Any:
    """The pose space stored for ``ob`` (the pose-space object, or a source that has one), or None.

    The data layer caches the model per stored version (its ``token``), so this is cheap enough for
    poll() and every redraw; stored data that no longer fits the object counts as no pose space.
    """
    if ob is None:
        return None
    try:
        return data.load_space(ob)
    except (ValueError, KeyError, TypeError, ReferenceError):
        return None


def forget_states() -> None:
    _STATES.clear()


# --------------------------------------------------------------------------------------------------
# runtime canvas state per object (view, cursor, stroke, the model being edited); not saved


@dataclass
class CanvasState:
    center: tuple[float, float] | None = None  # pose-space point at the canvas centre
    scale: float | None = None  # pixels per pose-space unit
    cursor: np.ndarray | None = None  # (2,) pose space
    stroke: np.ndarray | None = None  # (r, 2) pose space, while sketching
    preview: Any = None  # PoseSpace being edited (drawn instead of the stored one)


_STATES: dict[str, CanvasState] = {}


def state_of(ob) -> CanvasState:
    return _STATES.setdefault(ob.name_full, CanvasState())


# --------------------------------------------------------------------------------------------------
# where the canvas sits in the sidebar (the panel reserves it), and its view


def _ui_metrics(context) -> tuple[float, float]:
    """(widget unit, UI scale) in pixels, as Blender computes U.widget_unit."""
    system = context.preferences.system
    scale = float(getattr(system, "ui_scale", 1.0) or 1.0)
    pixel = float(getattr(system, "pixel_size", 1.0) or 1.0)
    return float(round(18.0 * scale) + 2.0 * pixel), scale


def canvas_units(context) -> int:
    settings = getattr(getattr(context.scene, "anim_signals", None), "pose_space_canvas", None)
    return int(getattr(settings, "height", CANVAS_UNITS))


def canvas_rect(context, region=None) -> tuple[float, float, float, float] | None:
    """The canvas (x0, y0, width, height) in region pixels (y up), or None when there is no room.

    The headerless canvas panel is the first panel of the tab and reserves ``height`` UI units right
    at its top; the rectangle follows Blender's panel layout (UI_PANEL_MARGIN_X/Y, the style's panel
    space, the category tabs) in the region's view space, so sidebar scrolling and zoom are followed.
    """
    region = region or context.region
    if region is None or region.width < 40 or region.height < 40:
        return None
    unit, scale = _ui_metrics(context)
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


@dataclass(frozen=True)
class _Shown:
    """What the canvas draws of a model whose time signal has another frame count than its frame
    positions (after a sketch or a resample): the positions keep their order, coloured over the
    time signal's frame range (canvas_geometry wants one time per position)."""

    positions: np.ndarray
    pose: Any
    time: Any
    frames: np.ndarray
    pins: dict


_SHOWN: list[tuple[Any, Any]] = []  # [(model, drawable)]: the last one (keeps canvas.py's cache warm)


def drawable(space) -> Any:
    """``space`` itself, or a :class:`_Shown` stand-in when ``len(space.frames) != space.n``."""
    frames = np.asarray(space.frames, dtype=float).ravel()
    if frames.size == space.n:
        return space
    if _SHOWN and _SHOWN[0][0] is space:
        return _SHOWN[0][1]
    lo, hi = (float(frames.min()), float(frames.max())) if frames.size else (1.0, float(space.n))
    shown = _Shown(space.positions, space.pose, space.time, np.linspace(lo, hi, space.n), space.pins)
    _SHOWN[:] = [(space, shown)]
    return shown


def view_for(state: CanvasState, space, rect) -> cv.View:
    """The canvas view: the state's centre and scale on ``rect`` (fitted to the model the first time)."""
    x0, y0, w, h = rect
    if state.center is None or state.scale is None:
        v = cv.fit_space_view(drawable(space), max(int(w), 1), max(int(h), 1), origin=(x0, y0))
        state.center, state.scale = v.center, v.scale
        return v
    return cv.View(state.center, state.scale, max(int(w), 1), max(int(h), 1), (x0, y0))


def _inside(rect, xy) -> bool:
    if rect is None:
        return False
    x0, y0, w, h = rect
    return x0 <= xy[0] <= x0 + w and y0 <= xy[1] <= y0 + h


def current_time(scene) -> float:
    return float(scene.frame_current) + float(getattr(scene, "frame_subframe", 0.0))


def tag_redraw(context=None) -> None:
    """Redraw every 3D Viewport (its sidebar shows the canvas, its view shows the pose)."""
    wm = bpy.context.window_manager if context is None else context.window_manager
    for win in getattr(wm, "windows", ()):
        for area in win.screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()


# --------------------------------------------------------------------------------------------------
# pose snapshot (ESC restores it)


def snapshot_pose(ob) -> dict[str, Any]:
    """Shape-key values and pose-bone transforms: what a live update may write."""
    snap: dict[str, Any] = {}
    keys = getattr(getattr(ob, "data", None), "shape_keys", None)
    if keys is not None:
        vals = np.empty(len(keys.key_blocks), dtype=np.float32)
        keys.key_blocks.foreach_get("value", vals)
        snap["values"] = vals
    if ob.pose is not None:
        bones = ob.pose.bones
        snap["bones"] = {}
        for attr, size in (("location", 3), ("rotation_quaternion", 4), ("rotation_euler", 3), ("scale", 3)):
            buf = np.empty(len(bones) * size, dtype=np.float32)
            bones.foreach_get(attr, buf)
            snap["bones"][attr] = buf
    return snap


def restore_pose(ob, snap: dict[str, Any]) -> None:
    keys = getattr(getattr(ob, "data", None), "shape_keys", None)
    vals = snap.get("values")
    if keys is not None and vals is not None and len(vals) == len(keys.key_blocks):
        keys.key_blocks.foreach_set("value", vals)
        keys.update_tag()  # foreach_set tags nothing by itself
    bones = snap.get("bones")
    if ob.pose is not None and bones:
        for attr, buf in bones.items():
            if buf.size == len(ob.pose.bones) * (4 if attr == "rotation_quaternion" else 3):
                ob.pose.bones.foreach_set(attr, buf)
    ob.update_tag()


# --------------------------------------------------------------------------------------------------
# applying edits


def _active(context):
    """(the pose-space object of the active object, its model); (None, None) without one."""
    try:
        ob = data.space_object(context.active_object)
    except ReferenceError:
        return None, None
    return ob, space_of(ob)


def commit_space(context, ob, space) -> None:
    """Store an edited model on the object and show the current frame's pose under it."""
    data.save_space(ob, space)
    data.apply_time(ob, space, current_time(context.scene))
    tag_redraw(context)


def _poll_space(cls, context) -> bool:
    if context.active_object is None:
        cls.poll_message_set("No active object")
        return False
    if _active(context)[1] is None:
        cls.poll_message_set("The active object has no pose space: build one first")
        return False
    return True


# --------------------------------------------------------------------------------------------------
# the modal machinery shared by the four interactions


class _CanvasDrag:
    """Wait for a press on the canvas (or start at once when dispatched by a press), drag, commit on
    release.  Wheel zooms and middle mouse / Ctrl+drag pans while waiting; ESC or right-click cancels
    and restores the state before the drag."""

    HINT = ""

    start_drag: BoolProperty(  # type: ignore[valid-type]
        name="Start Dragging",
        description="Start dragging at the mouse position right away (set by the canvas's press handler)",
        default=False,
        options={"HIDDEN", "SKIP_SAVE"},
    )

    _rect: Any = None
    _dragging = False
    _panning: Any = None  # last mouse position while panning
    _ob: Any = None
    _space: Any = None
    _snap: Any = None
    _last_xy: Any = None

    @classmethod
    def poll(cls, context):
        return _poll_space(cls, context)

    # -- helpers -----------------------------------------------------------------------------

    def _rect_now(self, context):
        if context.region is not None and context.region.type == "UI":
            rect = canvas_rect(context)
            if rect is not None:
                self._rect = rect
        return self._rect

    def _view(self, context) -> cv.View | None:
        rect = self._rect_now(context)
        if rect is None or self._space is None:
            return None
        return view_for(state_of(self._ob), self._space, rect)

    def _pose_xy(self, context, xy) -> np.ndarray:
        view = self._view(context)
        assert view is not None
        return view.to_pose(np.asarray(xy, dtype=float))

    def _hit(self, context, xy) -> cv.Hit:
        view = self._view(context)
        assert view is not None
        geom = cv.canvas_geometry(drawable(self._space), view)
        _, scale = _ui_metrics(context)
        return cv.hit_test(geom, xy, radius_px=HIT_RADIUS * max(scale, 1.0))

    def _grab(self, context, xy, kind: str, given: int, count: int, hint: str) -> int | None:
        """The item a drag starts on: ``given`` (started from a press already hit-tested) or the
        ``kind`` under the mouse; None (and ``hint`` reported) when the press missed."""
        if self.start_drag and 0 <= given < count:  # type: ignore[attr-defined]
            return int(given)
        hit = self._hit(context, xy)
        if hit.kind != kind:
            self.report({"INFO"}, hint)  # type: ignore[attr-defined]
            return None
        return hit.index

    def _status(self, context, text: str | None) -> None:
        if context.workspace is not None and not bpy.app.background:
            context.workspace.status_text_set(text)

    def _end(self, context) -> None:
        self._status(context, None)
        self._dragging = False
        self._panning = None
        tag_redraw(context)

    # -- invoke / modal ----------------------------------------------------------------------

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        ob, space = _active(context)
        if space is None:
            self.report({"ERROR"}, "The active object has no pose space: build one first")
            return {"CANCELLED"}
        self._ob, self._space = ob, space
        self._dragging = False
        self._panning = None
        self._rect = None
        if self._rect_now(context) is None:
            self.report({"ERROR"}, "Open the Signals tab of the 3D Viewport sidebar: the canvas is not visible")
            return {"CANCELLED"}
        if self.start_drag:  # dispatched by a press on the canvas: drag at once
            xy = (event.mouse_region_x, event.mouse_region_y)
            if not self._begin(context, xy):
                return {"CANCELLED"}
            self._dragging = True
            self._last_xy = xy
        context.window_manager.modal_handler_add(self)
        self._status(context, self.HINT + "  |  Wheel: zoom, MMB / Ctrl+drag: pan, Esc / RMB: cancel")
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        kind, value = event.type, event.value
        xy = (event.mouse_region_x, event.mouse_region_y)
        if kind in {"ESC", "RIGHTMOUSE"} and value == "PRESS":
            if self._dragging:
                self._restore(context)
                self.report({"INFO"}, "Cancelled: restored the state before the drag")
            self._end(context)
            return {"CANCELLED"}
        if self._panning is not None:
            if kind in {"MOUSEMOVE", "INBETWEEN_MOUSEMOVE"}:
                self._pan(context, xy)
            elif kind in {"MIDDLEMOUSE", "LEFTMOUSE"} and value == "RELEASE":
                self._panning = None
            return {"RUNNING_MODAL"}
        if self._dragging:
            if kind in {"MOUSEMOVE", "INBETWEEN_MOUSEMOVE"}:
                self._last_xy = xy
                self._update(context, xy)
                tag_redraw(context)
            elif kind == "LEFTMOUSE" and value == "RELEASE":
                self._last_xy = xy
                result = self._finish(context, xy)
                self._end(context)
                return result
            return {"RUNNING_MODAL"}  # nothing else while dragging
        rect = self._rect_now(context)
        inside = _inside(rect, xy)
        if inside and kind in {"WHEELUPMOUSE", "WHEELDOWNMOUSE"}:
            self._zoom(context, xy, ZOOM_STEP if kind == "WHEELUPMOUSE" else 1.0 / ZOOM_STEP)
            return {"RUNNING_MODAL"}
        if inside and value == "PRESS" and (kind == "MIDDLEMOUSE" or (kind == "LEFTMOUSE" and event.ctrl)):
            self._panning = xy
            return {"RUNNING_MODAL"}
        if kind == "LEFTMOUSE" and value == "PRESS":
            if not inside:  # a click elsewhere ends the tool and goes on to its target
                self._end(context)
                return {"CANCELLED", "PASS_THROUGH"}
            if self._begin(context, xy):
                self._dragging = True
                self._last_xy = xy
                tag_redraw(context)
            return {"RUNNING_MODAL"}
        return {"PASS_THROUGH"}

    def _zoom(self, context, xy, factor: float) -> None:
        view = self._view(context)
        if view is None:
            return
        v = view.zoomed(factor, xy)
        st = state_of(self._ob)
        st.center, st.scale = v.center, v.scale
        tag_redraw(context)

    def _pan(self, context, xy) -> None:
        view = self._view(context)
        if view is None or self._panning is None:
            return
        v = view.panned(xy[0] - self._panning[0], xy[1] - self._panning[1])
        st = state_of(self._ob)
        st.center, st.scale = v.center, v.scale
        self._panning = xy
        tag_redraw(context)

    # -- per interaction ---------------------------------------------------------------------

    def _begin(self, context, xy) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def _update(self, context, xy) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _finish(self, context, xy) -> set[str]:  # pragma: no cover - overridden
        raise NotImplementedError

    def _restore(self, context) -> None:
        st = state_of(self._ob)
        st.preview = None
        st.stroke = None
        if self._snap is not None:
            restore_pose(self._ob, self._snap)
        tag_redraw(context)


# --------------------------------------------------------------------------------------------------
# navigate: a free cursor poses the character live


class ANIM_SIGNALS_OT_pose_space_navigate(_CanvasDrag, bpy.types.Operator):
    """Drag a cursor through the pose space: the character takes the pose under it (shape-key values g(p))"""

    bl_idname = "anim_signals.pose_space_navigate"
    bl_label = "Navigate Pose Space"
    bl_options = {"REGISTER", "UNDO"}
    HINT = "Navigate: drag in the canvas to pose the character"

    position: FloatVectorProperty(  # type: ignore[valid-type]
        name="Position",
        description="Pose-space point whose pose is applied (the cursor)",
        size=2,
        default=(0.0, 0.0),
    )

    _old_cursor: Any = None

    def execute(self, context):
        ob, space = _active(context)
        if space is None:
            self.report({"ERROR"}, "The active object has no pose space: build one first")
            return {"CANCELLED"}
        p = np.array(self.position[:], dtype=float)
        if not np.all(np.isfinite(p)):
            self.report({"ERROR"}, "The position must be finite")
            return {"CANCELLED"}
        data.apply_position(ob, space, p)
        state_of(ob).cursor = p
        tag_redraw(context)
        return {"FINISHED"}

    def _begin(self, context, xy) -> bool:
        self._snap = snapshot_pose(self._ob)
        self._old_cursor = state_of(self._ob).cursor
        self._update(context, xy)
        return True

    def _update(self, context, xy) -> None:
        p = self._pose_xy(context, xy)
        data.apply_position(self._ob, self._space, p)
        state_of(self._ob).cursor = p
        self.position = (float(p[0]), float(p[1]))

    def _finish(self, context, xy) -> set[str]:
        self._update(context, xy)
        return {"FINISHED"}

    def _restore(self, context) -> None:
        state_of(self._ob).cursor = self._old_cursor
        _CanvasDrag._restore(self, context)


# --------------------------------------------------------------------------------------------------
# edit time: move a control point of f (local in time)


class ANIM_SIGNALS_OT_pose_space_edit_time(_CanvasDrag, bpy.types.Operator):
    """Move a control point of the time signal: only frames within its B-spline's support change"""

    bl_idname = "anim_signals.pose_space_edit_time"
    bl_label = "Edit Time Signal"
    bl_options = {"REGISTER", "UNDO"}
    HINT = "Edit Time: drag a control point (square) of the curve"

    index: IntProperty(  # type: ignore[valid-type]
        name="Control Point",
        description="Index of the time-signal control point to move (from 0)",
        default=0,
        min=0,
    )
    position: FloatVectorProperty(  # type: ignore[valid-type]
        name="Position",
        description="New pose-space position of the control point",
        size=2,
        default=(0.0, 0.0),
    )

    _offset: Any = None

    def execute(self, context):
        ob, space = _active(context)
        if space is None:
            self.report({"ERROR"}, "The active object has no pose space: build one first")
            return {"CANCELLED"}
        try:
            new = space.with_control_point(int(self.index), np.array(self.position[:], dtype=float))
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        commit_space(context, ob, new)
        return {"FINISHED"}

    def _begin(self, context, xy) -> bool:
        j = self._grab(context, xy, "CONTROL_POINT", self.index, self._space.k,
                       "Press on a control point (square) of the time signal")
        if j is None:
            return False
        self.index = j
        self._offset = self._space.time.control[j] - self._pose_xy(context, xy)
        self._snap = snapshot_pose(self._ob)
        self._update(context, xy)
        return True

    def _update(self, context, xy) -> None:
        p = self._pose_xy(context, xy) + self._offset
        preview = self._space.with_control_point(int(self.index), p)
        state_of(self._ob).preview = preview
        data.apply_time(self._ob, preview, current_time(context.scene))
        self.position = (float(p[0]), float(p[1]))

    def _finish(self, context, xy) -> set[str]:
        self._update(context, xy)
        st = state_of(self._ob)
        new, st.preview = st.preview, None
        commit_space(context, self._ob, new)
        return {"FINISHED"}


# --------------------------------------------------------------------------------------------------
# pin: move a frame's pose-space position, MDS re-solves with the pin (seed §3.2.1)


class ANIM_SIGNALS_OT_pose_space_pin(_CanvasDrag, bpy.types.Operator):
    """Pin a frame to a pose-space position: the other positions re-solve by MDS, g and f are refitted"""

    bl_idname = "anim_signals.pose_space_pin"
    bl_label = "Pin Frame"
    bl_options = {"REGISTER", "UNDO"}
    HINT = "Pin: drag a frame (dot) to a new position"

    frame: IntProperty(  # type: ignore[valid-type]
        name="Frame",
        description="Row of the frame to pin (0 = the first frame of the pose space); with Clear, "
        "-1 removes every pin",
        default=0,
        min=-1,
    )
    position: FloatVectorProperty(  # type: ignore[valid-type]
        name="Position",
        description="Pose-space position the frame is pinned to",
        size=2,
        default=(0.0, 0.0),
    )
    clear: BoolProperty(  # type: ignore[valid-type]
        name="Clear",
        description="Remove the frame's pin (all pins with frame -1) instead of pinning",
        default=False,
        options={"SKIP_SAVE"},
    )

    _offset: Any = None
    _live: Any = None

    def execute(self, context):
        ob, space = _active(context)
        if space is None:
            self.report({"ERROR"}, "The active object has no pose space: build one first")
            return {"CANCELLED"}
        i = int(self.frame)
        try:
            if self.clear:
                if not space.pins:
                    self.report({"INFO"}, "No pins to clear")
                    return {"CANCELLED"}
                rest = {} if i < 0 else {k: v for k, v in space.pins.items() if k != i}
                if i >= 0 and i not in space.pins:
                    self.report({"INFO"}, f"Frame row {i} has no pin")
                    return {"CANCELLED"}
                new = space.without_pins()
                if rest:
                    new = new.with_pins(rest)
            else:
                if not 0 <= i < space.n:
                    raise ValueError(f"frame row {i} is outside 0..{space.n - 1}")
                new = space.with_pins({i: np.array(self.position[:], dtype=float)})
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        commit_space(context, ob, new)
        return {"FINISHED"}

    def _begin(self, context, xy) -> bool:
        i = self._grab(context, xy, "FRAME", self.frame, self._space.n, "Press on a frame (dot) to pin it")
        if i is None:
            return False
        self.frame = i
        self.clear = False
        self._offset = self._space.positions[i] - self._pose_xy(context, xy)
        self._snap = snapshot_pose(self._ob)
        self._live = self._space
        self._update(context, xy)
        return True

    def _update(self, context, xy) -> None:
        p = self._pose_xy(context, xy) + self._offset
        try:  # warm start from the last solve: MDS follows the drag
            preview = self._live.with_pins({int(self.frame): p})
        except ValueError as err:
            self.report({"WARNING"}, str(err))
            return
        self._live = preview
        state_of(self._ob).preview = preview
        data.apply_time(self._ob, preview, current_time(context.scene))
        self.position = (float(p[0]), float(p[1]))

    def _finish(self, context, xy) -> set[str]:
        self._update(context, xy)
        st = state_of(self._ob)
        st.preview = None
        commit_space(context, self._ob, self._live)
        return {"FINISHED"}


# --------------------------------------------------------------------------------------------------
# sketch: a new sequence along a stroke (seed §4.4)


class AnimSignalsStrokePoint(bpy.types.PropertyGroup):
    """One point of a sketched stroke (pose-space units)"""

    co: FloatVectorProperty(name="Point", description="Pose-space point", size=2)  # type: ignore[valid-type]


def stroke_items(points) -> list[dict[str, Any]]:
    """Points (r, 2) as the ``stroke`` argument of ``anim_signals.pose_space_sketch`` (Blender wants
    every property of a collection item, ``name`` included)."""
    return [{"name": "", "co": (float(x), float(y))} for x, y in np.asarray(points, dtype=float).reshape(-1, 2)]


class ANIM_SIGNALS_OT_pose_space_sketch(_CanvasDrag, bpy.types.Operator):
    """Sketch a stroke in the pose space: the time signal is replaced by one along it (a new sequence)"""

    bl_idname = "anim_signals.pose_space_sketch"
    bl_label = "Sketch Sequence"
    bl_options = {"REGISTER", "UNDO"}
    HINT = "Sketch: draw a stroke in the canvas"

    stroke: CollectionProperty(  # type: ignore[valid-type]
        type=AnimSignalsStrokePoint,
        name="Stroke",
        description="Pose-space points of the stroke, in drawing order (at least 2)",
        options={"SKIP_SAVE"},
    )
    frames: IntProperty(  # type: ignore[valid-type]
        name="Frames",
        description="Frames of the new sequence (0: as many as the current one)",
        default=0,
        min=0,
        soft_max=1000,
    )

    _pixels: Any = None

    def _run(self, context, ob, space, pts: np.ndarray) -> set[str]:
        n_frames = int(self.frames) or int(np.asarray(space.frames).size)
        try:
            new = space.with_stroke(pts, n_frames)
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        commit_space(context, ob, new)
        self.report({"INFO"}, f"New sequence of {n_frames} frames along a {len(pts)}-point stroke")
        return {"FINISHED"}

    def execute(self, context):
        ob, space = _active(context)
        if space is None:
            self.report({"ERROR"}, "The active object has no pose space: build one first")
            return {"CANCELLED"}
        pts = np.array([p.co[:] for p in self.stroke], dtype=float).reshape(-1, 2)
        return self._run(context, ob, space, pts)

    def _begin(self, context, xy) -> bool:
        self._pixels = [tuple(map(float, xy))]
        self._snap = snapshot_pose(self._ob)
        state_of(self._ob).stroke = self._pose_xy(context, xy)[None, :]
        return True

    def _update(self, context, xy) -> None:
        self._pixels.append(tuple(map(float, xy)))
        st = state_of(self._ob)
        st.stroke = self._pose_xy(context, np.array(self._pixels))

    def _finish(self, context, xy) -> set[str]:
        self._update(context, xy)
        st = state_of(self._ob)
        st.stroke = None
        view = self._view(context)
        assert view is not None
        _, scale = _ui_metrics(context)
        pts = cv.stroke_to_pose(view, np.array(self._pixels), spacing_px=6.0 * max(scale, 1.0))
        if len(pts) < 2:
            self.report({"WARNING"}, "The stroke is too short: nothing changed")
            return {"CANCELLED"}
        self.stroke.clear()
        for p in pts:
            self.stroke.add().co = (float(p[0]), float(p[1]))
        return self._run(context, self._ob, self._space, pts)


# --------------------------------------------------------------------------------------------------
# view operators and the canvas's mouse dispatcher (keymap of the sidebar)


def _canvas_under_mouse(context, event):
    """(object, space, rect) when the mouse is over the canvas of an active pose space, else None."""
    if context.region is None or context.region.type != "UI" or context.area is None \
            or context.area.type != "VIEW_3D" or context.region.active_panel_category != CATEGORY:
        return None
    ob, space = _active(context)
    if space is None:
        return None
    rect = canvas_rect(context)
    if not _inside(rect, (event.mouse_region_x, event.mouse_region_y)):
        return None
    return ob, space, rect


class ANIM_SIGNALS_OT_pose_space_zoom(bpy.types.Operator):
    """Zoom the pose-space canvas about the mouse"""

    bl_idname = "anim_signals.pose_space_zoom"
    bl_label = "Zoom Pose-Space Canvas"
    bl_options = {"INTERNAL"}

    factor: FloatProperty(  # type: ignore[valid-type]
        name="Factor", description="Zoom factor (> 1 zooms in)", default=ZOOM_STEP, min=0.01, max=100.0
    )

    def invoke(self, context, event):
        hit = _canvas_under_mouse(context, event)
        if hit is None:
            return {"PASS_THROUGH"}
        ob, space, rect = hit
        st = state_of(ob)
        v = view_for(st, space, rect).zoomed(self.factor, (event.mouse_region_x, event.mouse_region_y))
        st.center, st.scale = v.center, v.scale
        context.region.tag_redraw()
        return {"FINISHED"}

    def execute(self, context):
        ob, space = _active(context)
        if space is None:
            return {"CANCELLED"}
        st = state_of(ob)
        if st.scale is not None:
            st.scale *= float(self.factor)
        tag_redraw(context)
        return {"FINISHED"}


class ANIM_SIGNALS_OT_pose_space_pan(bpy.types.Operator):
    """Pan the pose-space canvas (drag)"""

    bl_idname = "anim_signals.pose_space_pan"
    bl_label = "Pan Pose-Space Canvas"
    bl_options = {"INTERNAL"}

    _ob: Any = None
    _last: Any = None

    def invoke(self, context, event):
        hit = _canvas_under_mouse(context, event)
        if hit is None:
            return {"PASS_THROUGH"}
        self._ob = hit[0]
        self._last = (event.mouse_region_x, event.mouse_region_y)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type in {"MOUSEMOVE", "INBETWEEN_MOUSEMOVE"}:
            xy = (event.mouse_region_x, event.mouse_region_y)
            st = state_of(self._ob)
            if st.scale is not None and st.center is not None:
                st.center = (st.center[0] - (xy[0] - self._last[0]) / st.scale,
                             st.center[1] - (xy[1] - self._last[1]) / st.scale)
            self._last = xy
            context.region.tag_redraw()
            return {"RUNNING_MODAL"}
        if event.value == "RELEASE" or event.type in {"ESC", "RIGHTMOUSE"}:
            return {"FINISHED"}
        return {"RUNNING_MODAL"}


class ANIM_SIGNALS_OT_pose_space_view_all(bpy.types.Operator):
    """Fit the canvas view to the whole pose space (frames, sites, curve and control points)"""

    bl_idname = "anim_signals.pose_space_view_all"
    bl_label = "Frame All"

    @classmethod
    def poll(cls, context):
        return _poll_space(cls, context)

    def execute(self, context):
        ob, _ = _active(context)
        st = state_of(ob)
        st.center = st.scale = None
        tag_redraw(context)
        return {"FINISHED"}


class ANIM_SIGNALS_OT_pose_space_canvas_press(bpy.types.Operator):
    """Press on the pose-space canvas: a control point edits the time signal, a frame is pinned, elsewhere the cursor navigates; Shift sketches"""

    bl_idname = "anim_signals.pose_space_canvas_press"
    bl_label = "Pose-Space Canvas Press"
    bl_options = {"INTERNAL"}

    def invoke(self, context, event):
        hit = _canvas_under_mouse(context, event)
        if hit is None:
            return {"PASS_THROUGH"}
        ob, space, rect = hit
        xy = (event.mouse_region_x, event.mouse_region_y)
        if event.shift:
            bpy.ops.anim_signals.pose_space_sketch("INVOKE_DEFAULT", start_drag=True)
            return {"FINISHED"}
        view = view_for(state_of(ob), space, rect)
        _, scale = _ui_metrics(context)
        h = cv.hit_test(cv.canvas_geometry(drawable(space), view), xy, radius_px=HIT_RADIUS * max(scale, 1.0))
        if h.kind == "CONTROL_POINT":
            bpy.ops.anim_signals.pose_space_edit_time("INVOKE_DEFAULT", index=h.index, start_drag=True)
        elif h.kind == "FRAME":
            bpy.ops.anim_signals.pose_space_pin("INVOKE_DEFAULT", frame=h.index, start_drag=True)
        else:
            bpy.ops.anim_signals.pose_space_navigate("INVOKE_DEFAULT", start_drag=True)
        return {"FINISHED"}


# --------------------------------------------------------------------------------------------------
# PNG of the canvas


def resolve_png_path(path: str, ob_name: str) -> str:
    """'' -> "//<object>_pose_space.png" next to a saved .blend, else the temp dir; '.png' appended."""
    name = f"{bpy.path.clean_name(ob_name)}_{PNG_FILE}"
    if not path.strip():
        if bpy.data.is_saved:
            return bpy.path.abspath("//" + name)
        return os.path.join(tempfile.gettempdir(), name)
    out = bpy.path.abspath(path.strip())
    if os.path.isdir(out) or out.endswith(os.sep):
        out = os.path.join(out, name)
    if not out.lower().endswith(".png"):
        out += ".png"
    return out


class ANIM_SIGNALS_OT_pose_space_save_png(bpy.types.Operator):
    """Write the pose-space canvas of the active object to a PNG file (frames, sites, curve, pins, current frame, cursor)"""

    bl_idname = "anim_signals.pose_space_save_png"
    bl_label = "Save Canvas PNG"

    filepath: StringProperty(  # type: ignore[valid-type]
        name="File",
        description='PNG file to write ("": <object>_pose_space.png next to the .blend, or in the temp folder)',
        default="",
        subtype="FILE_PATH",
    )
    width: IntProperty(name="Width", description="Image width in pixels", default=640, min=64, max=8192)  # type: ignore[valid-type]
    height: IntProperty(name="Height", description="Image height in pixels", default=480, min=64, max=8192)  # type: ignore[valid-type]

    @classmethod
    def poll(cls, context):
        return _poll_space(cls, context)

    def execute(self, context):
        ob, space = _active(context)
        if space is None:
            self.report({"ERROR"}, "The active object has no pose space: build one first")
            return {"CANCELLED"}
        path = resolve_png_path(self.filepath, ob.name)
        st = state_of(ob)
        view = cv.fit_space_view(drawable(space), self.width, self.height)
        geom = cv.canvas_geometry(drawable(space), view, current_time=current_time(context.scene), cursor=st.cursor)
        try:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            written = cv.render_png(geom, path, title=f"Pose space: {ob.name}")
        except OSError as err:
            self.report({"ERROR"}, f"Could not write {path}: {err}")
            return {"CANCELLED"}
        self.filepath = written
        self.report({"INFO"}, f"Wrote {written}")
        return {"FINISHED"}


# --------------------------------------------------------------------------------------------------
# the gpu layer: triangles and lines built with numpy, drawn with builtin shaders (4.2 - 5.x names)


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


def canvas_geometry_for(context, ob, space, rect) -> cv.CanvasGeometry:
    """What the canvas shows for ``ob`` in ``rect``: the model being edited (if any), the current
    frame, the cursor and the stroke being drawn."""
    st = state_of(ob)
    shown = st.preview if st.preview is not None else space
    view = view_for(st, shown, rect)
    return cv.canvas_geometry(drawable(shown), view, current_time=current_time(context.scene), cursor=st.cursor,
                              stroke=st.stroke)


def _draw_callback() -> None:
    if bpy.app.background:
        return
    context = bpy.context
    region = context.region
    if region is None or region.type != "UI" or region.active_panel_category != CATEGORY:
        return
    ob, space = _active(context)
    if space is None:
        return
    rect = canvas_rect(context)
    if rect is None:
        return
    try:
        geom = canvas_geometry_for(context, ob, space, rect)
        _, scale = _ui_metrics(context)
        draw_geometry(geom, rect, (float(region.width), float(region.height)), scale)
    except (ValueError, ReferenceError):  # a model being rebuilt, a removed object: skip this redraw
        return
    except Exception as err:  # noqa: BLE001  a drawing bug must not break the sidebar: report it once
        global _draw_error
        if _draw_error != repr(err):
            _draw_error = repr(err)
            print(f"Anim Signals: drawing the pose-space canvas failed: {err!r} (the tools still work)")


_draw_error = ""


# --------------------------------------------------------------------------------------------------
# timing (the benchmark and the tests read it)


def navigate_latency(ob, space, points: np.ndarray) -> float:
    """Mean milliseconds of one navigate update (TPS evaluation + writing the pose) over ``points``."""
    t0 = time.perf_counter()
    for p in points:
        data.apply_position(ob, space, p)
    return 1e3 * (time.perf_counter() - t0) / max(len(points), 1)


# --------------------------------------------------------------------------------------------------
# registration


classes = (
    AnimSignalsStrokePoint,
    ANIM_SIGNALS_OT_pose_space_navigate,
    ANIM_SIGNALS_OT_pose_space_edit_time,
    ANIM_SIGNALS_OT_pose_space_pin,
    ANIM_SIGNALS_OT_pose_space_sketch,
    ANIM_SIGNALS_OT_pose_space_zoom,
    ANIM_SIGNALS_OT_pose_space_pan,
    ANIM_SIGNALS_OT_pose_space_view_all,
    ANIM_SIGNALS_OT_pose_space_canvas_press,
    ANIM_SIGNALS_OT_pose_space_save_png,
)
_register, _unregister = bpy.utils.register_classes_factory(classes)

_handle: Any = None
_keymaps: list = []
KEYMAP_NAME = "View2D Buttons List"  # the keymap of panel regions (the sidebar), space EMPTY, region WINDOW


@bpy.app.handlers.persistent
def _on_frame_change(scene, *args) -> None:
    if not bpy.app.background and _STATES:
        tag_redraw()


@bpy.app.handlers.persistent
def _on_reload(*args) -> None:
    forget_states()


_HANDLERS = (
    ("frame_change_post", _on_frame_change),
    ("load_post", _on_reload),
)


def _add_keymaps() -> None:
    wm: Any = bpy.context.window_manager
    kc = wm.keyconfigs.addon if wm is not None else None
    if kc is None:
        return
    km = kc.keymaps.new(name=KEYMAP_NAME, space_type="EMPTY", region_type="WINDOW")
    items = [
        km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_canvas_press.bl_idname, "LEFTMOUSE", "PRESS"),
        km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_canvas_press.bl_idname, "LEFTMOUSE", "PRESS", shift=True),
        km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_pan.bl_idname, "MIDDLEMOUSE", "PRESS"),
        km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_pan.bl_idname, "LEFTMOUSE", "PRESS", ctrl=True),
    ]
    zin: Any = km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_zoom.bl_idname, "WHEELUPMOUSE", "PRESS")
    zin.properties.factor = ZOOM_STEP
    zout: Any = km.keymap_items.new(ANIM_SIGNALS_OT_pose_space_zoom.bl_idname, "WHEELDOWNMOUSE", "PRESS")
    zout.properties.factor = 1.0 / ZOOM_STEP
    _keymaps.extend((km, kmi) for kmi in (*items, zin, zout))


def register() -> None:
    global _handle
    _register()
    _handle = bpy.types.SpaceView3D.draw_handler_add(_draw_callback, (), "UI", "POST_PIXEL")
    for name, fn in _HANDLERS:
        getattr(bpy.app.handlers, name).append(fn)
    _add_keymaps()


def unregister() -> None:
    global _handle
    for km, kmi in _keymaps:
        try:
            km.keymap_items.remove(kmi)
        except (ReferenceError, RuntimeError):  # pragma: no cover - keyconfig already gone
            pass
    _keymaps.clear()
    for name, fn in _HANDLERS:
        lst = getattr(bpy.app.handlers, name)
        if fn in lst:
            lst.remove(fn)
    if _handle is not None:
        bpy.types.SpaceView3D.draw_handler_remove(_handle, "UI")
        _handle = None
    forget_states()
    _unregister()
