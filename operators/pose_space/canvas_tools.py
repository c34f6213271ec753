"""The pose-space canvas's drag tools: modal operators on the canvas in the 3D Viewport sidebar.

Each is an operator whose ``execute()`` takes its result as properties, so every interaction runs
(and is tested) headless (docs/pose_space.md, "Canvas UI"):

* ``anim_signals.pose_space_navigate``  drag a free cursor: the pose follows live (``position``)
* ``anim_signals.pose_space_edit_time`` drag a time-signal control point, local in time (``index``, ``position``)
* ``anim_signals.pose_space_pin``       drag a frame: MDS re-solves live with the pin (``frame``, ``position``, ``clear``)
* ``anim_signals.pose_space_sketch``    draw a stroke: a new sequence along it (``stroke``, ``frames``)

A drag is one undo step; ESC or right-click during a drag restores the state before it. The model
comes from :mod:`.storage` and poses through :mod:`.posing`; view and hit-testing from
:mod:`.canvas_state` and the pure :mod:`anim_signals.posespace.canvas`. The view operators, the
press dispatcher and the PNG are in :mod:`.canvas_view`.
"""

from __future__ import annotations

import time
from typing import Any

import bpy
import numpy as np
from bpy.props import BoolProperty, CollectionProperty, FloatVectorProperty, IntProperty

from ...anim_signals.posespace import canvas as cv
from ..blender_data.armatures import read_bone_transforms, restore_bone_transforms
from ..blender_data.shape_keys import read_key_values, restore_key_values
from ..common.transaction import current_transaction, transaction, transactional
from .canvas_state import (
    HIT_RADIUS,
    POSE_SPACE,
    SURE_RADIUS,
    ZOOM_STEP,
    canvas_rect,
    canvas_region,
    checked_point,
    checked_stroke,
    current_time,
    poll_space,
    space_or_report,
    state_of,
    tag_redraw,
    ui_metrics,
    view_for,
)
from .posing import (
    MAX_SEQUENCE_FRAMES,
    apply_position,
    apply_time,
    read_posed_vertices,
    restore_posed_vertices,
)
from .properties import AnimSignalsStrokePoint
from .storage import save_space

__all__ = [
    "ANIM_SIGNALS_OT_pose_space_edit_time",
    "ANIM_SIGNALS_OT_pose_space_navigate",
    "ANIM_SIGNALS_OT_pose_space_pin",
    "ANIM_SIGNALS_OT_pose_space_sketch",
    "TOOL_KEYS",
    "CanvasDrag",
    "CursorDrag",
    "commit_space",
    "keep_pose",
    "navigate_latency",
    "stroke_items",
]


def keep_pose(ob) -> None:
    """Record the shape-key values and bone transforms of ``ob`` on the running transaction: what
    posing it writes in place, put back if the operator fails."""
    values, transforms, vertices = read_key_values(ob), read_bone_transforms(ob), read_posed_vertices(ob)

    def restore() -> None:
        restore_key_values(ob, values)
        restore_bone_transforms(ob, transforms)
        restore_posed_vertices(ob, vertices)

    current_transaction().on_rollback(restore)


def commit_space(context, ob, space) -> None:
    """Store an edited model on the object and show the current frame's pose under it: both or
    neither (a failure puts the stored model and the pose back, then raises). Raises ValueError
    (no pose space, read-only data)."""
    with transaction():
        keep_pose(ob)
        save_space(ob, space)
        apply_time(ob, space, current_time(context.scene))
    tag_redraw(context)


def _commit_or_report(op, context, ob, space) -> bool:
    """:func:`commit_space`, its refusal reported as an error on ``op``; True when stored."""
    try:
        commit_space(context, ob, space)
    except ValueError as err:
        op.report({"ERROR"}, str(err))
        return False
    return True


# A sketch's control points (one per stroke point) this far apart: the 7 px squares then leave about
# half of the curve showing between them (at 6 px they covered it all), and the B-spline smooths the
# hand's jitter.
SKETCH_SPACING_PX = 24.0
TOOL_KEYS = "  |  Wheel: zoom, MMB / Ctrl+drag: pan, Esc / RMB: cancel"
HELD = "  |  Held at the edge of the frames' neighbourhood: further out the pose only distorts"


class CanvasDrag:
    """Wait for a press on the canvas (or start at once when dispatched by a press), drag, commit on
    release.  Wheel zooms and middle mouse / Ctrl+drag pans while waiting; ESC or right-click cancels
    and restores the state before the drag.

    Another tool's canvas model (the spatial keyframes) reuses it by setting ``_kind`` (whose canvas
    state, view and cursor it works on) and ``_find`` (its object and the model the canvas draws, or
    the reason reported); the snapshot covers what posing writes on any object."""

    HINT = ""
    _kind = POSE_SPACE

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
    _snap: Any = None  # (shape-key values, bone transforms, gradient-space vertices) before the drag, restored on cancel
    _last_xy: Any = None

    @classmethod
    def poll(cls, context):
        return poll_space(cls, context)

    def _find(self, context) -> tuple[Any, Any]:
        """(object, the model the canvas draws) for this tool; (object, None) with the reason reported."""
        return space_or_report(self, context)

    def _snapshot(self) -> tuple[Any, Any, Any]:
        """What a live pose update may write on the object: its shape-key values and bone transforms
        (gradient space: its vertex positions)."""
        return read_key_values(self._ob), read_bone_transforms(self._ob), read_posed_vertices(self._ob)

    def _rect_now(self, context):
        region = canvas_region(context)
        if region is not None:
            rect = canvas_rect(context, region)
            if rect is not None:
                self._rect = rect
        return self._rect

    @staticmethod
    def _xy(context, event) -> tuple[float, float]:
        """The mouse in the canvas region's pixels: a tool started by a panel button runs in the
        viewport's main region, whose own mouse coordinates are not the sidebar's."""
        region = canvas_region(context)
        if region is None or region == context.region or not hasattr(event, "mouse_x"):
            return (event.mouse_region_x, event.mouse_region_y)
        return (float(event.mouse_x - region.x), float(event.mouse_y - region.y))

    def _view(self, context) -> cv.View | None:
        rect = self._rect_now(context)
        if rect is None or self._space is None:
            return None
        return view_for(state_of(self._ob, self._kind), self._space, rect)

    def _pose_xy(self, context, xy) -> np.ndarray:
        view = self._view(context)
        assert view is not None
        return view.to_pose(np.asarray(xy, dtype=float))

    def _hit(self, context, xy, kind: str) -> cv.Hit:
        """The nearest item of ``kind`` under the mouse (a tool chosen by its button picks only its
        own kind: Edit Time a control point even under a frame's dot)."""
        view = self._view(context)
        assert view is not None
        geom = cv.canvas_geometry(cv.drawable(self._space), view)
        _, scale = ui_metrics(context)
        return cv.hit_test(geom, xy, radius_px=HIT_RADIUS * max(scale, 1.0), sure_px=SURE_RADIUS * max(scale, 1.0),
                           kinds=(kind,))

    def _grab(self, context, xy, kind: str, given: int, count: int, hint: str) -> int | None:
        """The item a drag starts on: ``given`` (started from a press already hit-tested) or the
        ``kind`` under the mouse; None (and ``hint`` reported) when the press missed."""
        if self.start_drag and 0 <= given < count:  # type: ignore[attr-defined]
            return int(given)
        hit = self._hit(context, xy, kind)
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

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        return self._start(context, event)

    def _start(self, context, event) -> set[str]:
        """Wait for a press on the canvas (or drag at once when dispatched by one)."""
        ob, space = self._find(context)
        if space is None:
            return {"CANCELLED"}
        self._ob, self._space = ob, space
        self._dragging = False
        self._panning = None
        self._rect = None
        if self._rect_now(context) is None:
            self.report({"ERROR"},  # type: ignore[attr-defined]
                        "Open the Signals tab of the 3D Viewport sidebar: the canvas is not visible")
            return {"CANCELLED"}
        if self.start_drag:  # dispatched by a press on the canvas: drag at once
            xy = self._xy(context, event)
            if not self._begin(context, xy):
                return {"CANCELLED"}
            self._dragging = True
            self._last_xy = xy
        context.window_manager.modal_handler_add(self)
        self._status(context, self.HINT + TOOL_KEYS)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        kind, value = event.type, event.value
        xy = self._xy(context, event)
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
        on_canvas = cv.inside(rect, xy)
        if on_canvas and kind in {"WHEELUPMOUSE", "WHEELDOWNMOUSE"}:
            self._zoom(context, xy, ZOOM_STEP if kind == "WHEELUPMOUSE" else 1.0 / ZOOM_STEP)
            return {"RUNNING_MODAL"}
        if on_canvas and value == "PRESS" and (kind == "MIDDLEMOUSE" or (kind == "LEFTMOUSE" and event.ctrl)):
            self._panning = xy
            return {"RUNNING_MODAL"}
        if kind == "LEFTMOUSE" and value == "PRESS":
            if not on_canvas:  # a click elsewhere ends the tool and goes on to its target
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
        st = state_of(self._ob, self._kind)
        st.center, st.scale = v.center, v.scale
        tag_redraw(context)

    def _pan(self, context, xy) -> None:
        view = self._view(context)
        if view is None or self._panning is None:
            return
        v = view.panned(xy[0] - self._panning[0], xy[1] - self._panning[1])
        st = state_of(self._ob, self._kind)
        st.center, st.scale = v.center, v.scale
        self._panning = xy
        tag_redraw(context)

    def _begin(self, context, xy) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def _update(self, context, xy) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _finish(self, context, xy) -> set[str]:  # pragma: no cover - overridden
        raise NotImplementedError

    def _commit_drag(self, context, space) -> set[str]:
        """Store the model a drag made; when that is refused, the state before the drag comes back."""
        if _commit_or_report(self, context, self._ob, space):
            return {"FINISHED"}
        self._restore(context)
        return {"CANCELLED"}

    def _restore(self, context) -> None:
        st = state_of(self._ob, self._kind)
        st.preview = None
        st.stroke = None
        if self._snap is not None:
            values, transforms, vertices = self._snap
            restore_key_values(self._ob, values)
            restore_bone_transforms(self._ob, transforms)
            restore_posed_vertices(self._ob, vertices)
        tag_redraw(context)


class CursorDrag(CanvasDrag):
    """Drag a free cursor: the object takes the pose under it (``_pose_at``) and the cursor is drawn;
    ESC puts the pose and the cursor back. The model only extrapolates into ever more distorted
    poses away from what it was made of (``_held_near``: the frames), so the cursor stops at the
    edge of their neighbourhood (bounding box grown by a quarter)."""

    _old_cursor: Any = None

    def _held_near(self) -> np.ndarray:
        """The points (n, 2) whose neighbourhood the cursor stays in."""
        return np.asarray(self._space.positions, dtype=float)

    def _pose_at(self, p: np.ndarray) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _begin(self, context, xy) -> bool:
        self._snap = self._snapshot()
        self._old_cursor = state_of(self._ob, self._kind).cursor
        self._update(context, xy)
        return True

    def _update(self, context, xy) -> None:
        p, held = cv.near_the_frames(self._held_near(), self._pose_xy(context, xy))
        self._pose_at(p)
        state_of(self._ob, self._kind).cursor = p
        self.position = (float(p[0]), float(p[1]))  # type: ignore[attr-defined]
        self._status(context, self.HINT + (HELD if held else "") + TOOL_KEYS)

    def _finish(self, context, xy) -> set[str]:
        self._update(context, xy)
        return {"FINISHED"}

    def _restore(self, context) -> None:
        state_of(self._ob, self._kind).cursor = self._old_cursor
        CanvasDrag._restore(self, context)


class ANIM_SIGNALS_OT_pose_space_navigate(CursorDrag, bpy.types.Operator):
    """Drag a cursor through the pose space: the character takes the pose under it (shape-key values g(p))"""

    bl_idname = "anim_signals.pose_space_navigate"
    bl_label = "Navigate Pose Space"
    bl_options = {"REGISTER", "UNDO"}
    HINT = "Navigate: drag in the canvas to pose the character (near the frames)"

    position: FloatVectorProperty(  # type: ignore[valid-type]
        name="Position",
        description="Pose-space point whose pose is applied (the cursor)",
        size=2,
        default=(0.0, 0.0),
    )

    @transactional
    def execute(self, context):
        ob, space = space_or_report(self, context)
        if space is None:
            return {"CANCELLED"}
        try:
            p = checked_point(space, self.position[:])
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        keep_pose(ob)
        apply_position(ob, space, p)
        state_of(ob).cursor = p
        tag_redraw(context)
        return {"FINISHED"}

    def _pose_at(self, p: np.ndarray) -> None:
        apply_position(self._ob, self._space, p)


class ANIM_SIGNALS_OT_pose_space_edit_time(CanvasDrag, bpy.types.Operator):
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

    @transactional
    def execute(self, context):
        ob, space = space_or_report(self, context)
        if space is None:
            return {"CANCELLED"}
        try:
            p = checked_point(space, self.position[:], f"position of control point {int(self.index)}")
            new = space.with_control_point(int(self.index), p)
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        return {"FINISHED"} if _commit_or_report(self, context, ob, new) else {"CANCELLED"}

    def _begin(self, context, xy) -> bool:
        j = self._grab(context, xy, "CONTROL_POINT", self.index, self._space.k,
                       "Press on a control point (square) of the time signal")
        if j is None:
            return False
        self.index = j
        self._offset = self._space.time.control[j] - self._pose_xy(context, xy)
        self._snap = self._snapshot()
        self._update(context, xy)
        return True

    def _update(self, context, xy) -> None:
        p = self._pose_xy(context, xy) + self._offset
        preview = self._space.with_control_point(int(self.index), p)
        state_of(self._ob).preview = preview
        apply_time(self._ob, preview, current_time(context.scene))
        self.position = (float(p[0]), float(p[1]))

    def _finish(self, context, xy) -> set[str]:
        self._update(context, xy)
        st = state_of(self._ob)
        new, st.preview = st.preview, None
        return self._commit_drag(context, new)


class ANIM_SIGNALS_OT_pose_space_pin(CanvasDrag, bpy.types.Operator):
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

    def invoke(self, context, event):
        if self.clear:  # the Clear Pins button: nothing to drag, clear at once
            return self.execute(context)
        return CanvasDrag.invoke(self, context, event)

    @transactional
    def execute(self, context):
        ob, space = space_or_report(self, context)
        if space is None:
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
                new = space.with_pins({i: checked_point(space, self.position[:], f"pin position of frame row {i}")})
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        return {"FINISHED"} if _commit_or_report(self, context, ob, new) else {"CANCELLED"}

    def _begin(self, context, xy) -> bool:
        i = self._grab(context, xy, "FRAME", self.frame, self._space.n, "Press on a frame (dot) to pin it")
        if i is None:
            return False
        self.frame = i
        self.clear = False
        self._offset = self._space.positions[i] - self._pose_xy(context, xy)
        self._snap = self._snapshot()
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
        apply_time(self._ob, preview, current_time(context.scene))
        self.position = (float(p[0]), float(p[1]))

    def _finish(self, context, xy) -> set[str]:
        self._update(context, xy)
        st = state_of(self._ob)
        st.preview = None
        return self._commit_drag(context, self._live)


def stroke_items(points) -> list[dict[str, Any]]:
    """Points (r, 2) as the ``stroke`` argument of ``anim_signals.pose_space_sketch`` (Blender wants
    every property of a collection item, ``name`` included)."""
    return [{"name": "", "co": (float(x), float(y))} for x, y in np.asarray(points, dtype=float).reshape(-1, 2)]


class ANIM_SIGNALS_OT_pose_space_sketch(CanvasDrag, bpy.types.Operator):
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
            if n_frames > MAX_SEQUENCE_FRAMES:
                raise ValueError(f"Frames {n_frames}: a sketched sequence has at most {MAX_SEQUENCE_FRAMES} frames")
            new = space.with_stroke(checked_stroke(space, pts), n_frames)
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        if not _commit_or_report(self, context, ob, new):
            return {"CANCELLED"}
        self.report({"INFO"}, f"New sequence of {n_frames} frames along a {len(pts)}-point stroke")
        return {"FINISHED"}

    @transactional
    def execute(self, context):
        ob, space = space_or_report(self, context)
        if space is None:
            return {"CANCELLED"}
        pts = np.array([p.co[:] for p in self.stroke], dtype=float).reshape(-1, 2)
        return self._run(context, ob, space, pts)

    def _begin(self, context, xy) -> bool:
        self._pixels = [tuple(map(float, xy))]
        self._snap = self._snapshot()
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
        _, scale = ui_metrics(context)
        pts = cv.stroke_to_pose(view, np.array(self._pixels), spacing_px=SKETCH_SPACING_PX * max(scale, 1.0))
        if len(pts) < 2:
            self.report({"WARNING"}, "The stroke is too short: nothing changed")
            return {"CANCELLED"}
        self.stroke.clear()
        for p in pts:
            self.stroke.add().co = (float(p[0]), float(p[1]))
        return self._run(context, self._ob, self._space, pts)


def navigate_latency(ob, space, points: np.ndarray) -> float:
    """Mean milliseconds of one navigate update (TPS evaluation + writing the pose) over ``points``."""
    t0 = time.perf_counter()
    for p in points:
        apply_position(ob, space, p)
    return 1e3 * (time.perf_counter() - t0) / max(len(points), 1)



classes = (
    ANIM_SIGNALS_OT_pose_space_navigate,
    ANIM_SIGNALS_OT_pose_space_edit_time,
    ANIM_SIGNALS_OT_pose_space_pin,
    ANIM_SIGNALS_OT_pose_space_sketch,
)
