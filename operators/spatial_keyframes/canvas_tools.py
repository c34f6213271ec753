"""Spatial keyframes' canvas tools: modal operators on the pose-space canvas in the 3D Viewport
sidebar while it shows an armature's spatial keyframes (Igarashi et al.'s spatial keyframing).

Each operator's ``execute()`` takes its result as properties, so scripts and headless tests drive
every interaction; in a window ``invoke()`` waits for a press on the canvas and drags (the
pose-space tools' :class:`~..pose_space.canvas_tools.CanvasDrag`: wheel zooms, middle mouse /
Ctrl+drag pans, Esc / right-click restores the state before the drag):

* ``anim_signals.spatial_keyframes_navigate``      the cursor poses the rig live (``position``)
* ``anim_signals.spatial_keyframes_move_marker``   drag a marker (``index``, ``position``)
* ``anim_signals.spatial_keyframes_add_marker``    the rig's current pose becomes a marker (``position``)
* ``anim_signals.spatial_keyframes_remove_marker`` remove a marker (``index``)

:func:`canvas_press` is the canvas's press handler for spatial keyframes (registered with their
:class:`~..pose_space.canvas_state.CanvasSource`): a press on a marker moves it, elsewhere the
cursor navigates, Shift records (``anim_signals.spatial_keyframes_record``, when registered). An
edit is stored with :func:`~.storage.store_edited` on release, one undo step; while dragging only
the canvas's preview and the rig's pose change.
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np
from bpy.props import FloatVectorProperty, IntProperty

from ...anim_signals.posespace import canvas as cv
from ...anim_signals.spatialkeys import SpatialKeyframeClip, canvas_model
from ..blender_data.actions import id_read_only_reason
from ..common.polls import NO_ACTIVE_OBJECT, has_active_object
from ..common.transaction import transaction, transactional
from ..pose_space.canvas_state import (
    HIT_RADIUS,
    SPATIAL_KEYFRAMES,
    SURE_RADIUS,
    checked_point,
    current_time,
    shown_on_canvas,
    state_of,
    tag_redraw,
    ui_metrics,
    view_for,
)
from ..pose_space.canvas_tools import TOOL_KEYS, CanvasDrag, CursorDrag, keep_pose
from .posing import pose_from_point
from .storage import PROP, LoadedModel, ModelDataError, load_model, store_edited

__all__ = [
    "ANIM_SIGNALS_OT_spatial_keyframes_add_marker",
    "ANIM_SIGNALS_OT_spatial_keyframes_move_marker",
    "ANIM_SIGNALS_OT_spatial_keyframes_navigate",
    "ANIM_SIGNALS_OT_spatial_keyframes_remove_marker",
    "canvas_press",
    "commit_clip",
]

NO_MODEL = "The active object has no spatial keyframes: build them first (Spatial Keyframes panel)"
SHOWS_POSE_SPACE = ("The canvas shows the pose space: set Canvas to Spatial Keyframes to edit the markers "
                    "there")
ON_A_MARKER = "  |  Another marker is there: held at the last free point"


def _shows_other(context) -> bool:
    source = shown_on_canvas(context)[2]
    return source is not None and source.kind != SPATIAL_KEYFRAMES


def _has_model(ob) -> bool:
    return ob is not None and ob.type == "ARMATURE" and PROP in ob.keys()


def poll_model(cls, context, *, on_canvas: bool = True) -> bool:
    """Operator poll: the active object is an armature with spatial keyframes and (``on_canvas``)
    the canvas shows them (else a poll message says why not). The model itself is checked by the
    operator."""
    if not has_active_object(cls, context):
        return False
    if not _has_model(context.active_object):
        cls.poll_message_set(NO_MODEL)
        return False
    if on_canvas and _shows_other(context):
        cls.poll_message_set(SHOWS_POSE_SPACE)
        return False
    return True


def model_or_report(op, context) -> tuple[Any, LoadedModel | None]:
    """(the active armature, its loaded model), or (object, None) with the reason reported as an
    error on ``op``: no object or model, a model that no longer fits the bones, read-only data, or
    a canvas showing the pose space."""
    ob = context.active_object
    reason = None
    model = None
    if ob is None:
        reason = NO_ACTIVE_OBJECT
    elif not _has_model(ob):
        reason = NO_MODEL
    else:
        try:
            model = load_model(ob)
        except ModelDataError as err:
            reason = str(err)
        reason = reason or id_read_only_reason(ob) or (SHOWS_POSE_SPACE if _shows_other(context) else None)
    if reason:
        op.report({"ERROR"}, reason)
        return ob, None
    return ob, model


def _current_point(context, model: LoadedModel) -> np.ndarray:
    """The current frame's point of the trajectory (clamped to the clip's frames)."""
    return model.shown.time.evaluate(np.array([current_time(context.scene)]))[0]


def _marker_index(model: LoadedModel, index: int) -> int:
    count = len(model.clip.markers)
    if not 0 <= int(index) < count:
        raise ValueError(f"Marker {int(index)} does not exist: the model has {count} markers (0-{count - 1})")
    return int(index)


def commit_clip(context, ob, clip: SpatialKeyframeClip, *, pose_current_frame: bool = True) -> None:
    """Store an edited clip on ``ob`` and (``pose_current_frame``) show the current frame's pose
    through it: both or neither (a failure puts the stored model and the pose back, then raises).
    Raises ValueError (no model, read-only data)."""
    with transaction():
        keep_pose(ob)
        store_edited(ob, clip)
        if pose_current_frame:
            model = load_model(ob)
            assert model is not None
            pose_from_point(ob, _current_point(context, model))
    tag_redraw(context)


def _commit_or_report(op, context, ob, clip, **how) -> set[str]:
    try:
        commit_clip(context, ob, clip, **how)
    except ValueError as err:
        op.report({"ERROR"}, str(err))
        return {"CANCELLED"}
    return {"FINISHED"}


class _SpatialKeyframeDrag(CanvasDrag):
    """The canvas drag on an armature's spatial keyframes: their canvas state, their model."""

    _kind = SPATIAL_KEYFRAMES
    _model: Any = None  # the LoadedModel when the tool started
    _clip: Any = None  # the edited clip of the drag (None: nothing valid yet)

    @classmethod
    def poll(cls, context):
        return poll_model(cls, context)

    def _find(self, context) -> tuple[Any, Any]:
        ob, model = model_or_report(self, context)
        self._model = model
        return ob, (None if model is None else model.shown)

    def _preview(self, clip: SpatialKeyframeClip) -> None:
        """Show ``clip`` on the canvas while dragging (nothing stored)."""
        self._clip = clip
        state_of(self._ob, self._kind).preview = canvas_model(clip, float(self._model.shown.frames[0]))

    def _commit_clip(self, context, clip, **how) -> set[str]:
        state_of(self._ob, self._kind).preview = None
        result = _commit_or_report(self, context, self._ob, clip, **how)
        if result != {"FINISHED"}:
            self._restore(context)
        return result


class ANIM_SIGNALS_OT_spatial_keyframes_navigate(_SpatialKeyframeDrag, CursorDrag, bpy.types.Operator):
    """Move a cursor over the spatial keyframes: the rig takes the pose the markers' RBF gives under it (at a marker exactly its key pose)"""

    bl_idname = "anim_signals.spatial_keyframes_navigate"
    bl_label = "Navigate Spatial Keyframes"
    bl_options = {"REGISTER", "UNDO"}
    HINT = "Navigate: drag on the canvas to pose the rig (on a diamond: its key pose)"

    position: FloatVectorProperty(  # type: ignore[valid-type]
        name="Position",
        description="Point of the plane whose pose is applied to the rig (the cursor)",
        size=2,
        default=(0.0, 0.0),
    )

    @transactional
    def execute(self, context):
        ob, model = model_or_report(self, context)
        if model is None:
            return {"CANCELLED"}
        try:
            p = checked_point(model.shown, self.position[:], "cursor position")
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        keep_pose(ob)
        pose_from_point(ob, p)
        state_of(ob, self._kind).cursor = p
        tag_redraw(context)
        return {"FINISHED"}

    def _held_near(self) -> np.ndarray:
        return np.concatenate([self._model.shown.positions, self._model.shown.markers])

    def _pose_at(self, p: np.ndarray) -> None:
        pose_from_point(self._ob, p)


class ANIM_SIGNALS_OT_spatial_keyframes_move_marker(_SpatialKeyframeDrag, bpy.types.Operator):
    """Move a marker (a key pose) on the plane: the motion along the trajectory changes; while dragging, the rig shows the current frame's pose through the moved markers"""

    bl_idname = "anim_signals.spatial_keyframes_move_marker"
    bl_label = "Move Spatial Keyframe Marker"
    bl_options = {"REGISTER", "UNDO"}
    HINT = "Move Marker: drag a marker (diamond)"

    index: IntProperty(  # type: ignore[valid-type]
        name="Marker",
        description="Index of the marker to move (from 0, in the model's marker order)",
        default=0,
        min=0,
    )
    position: FloatVectorProperty(  # type: ignore[valid-type]
        name="Position",
        description="New point of the marker on the plane (not on another marker)",
        size=2,
        default=(0.0, 0.0),
    )

    _offset: Any = None

    @transactional
    def execute(self, context):
        ob, model = model_or_report(self, context)
        if model is None:
            return {"CANCELLED"}
        try:
            i = _marker_index(model, self.index)
            clip = model.clip.with_marker_moved(i, checked_point(model.shown, self.position[:],
                                                                 f"position of marker {i}"))
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        return _commit_or_report(self, context, ob, clip)

    def _begin(self, context, xy) -> bool:
        markers = self._model.clip.markers
        i = self._grab(context, xy, "MARKER", self.index, len(markers), "Press on a marker (diamond) to move it")
        if i is None:
            return False
        self.index = i
        self._offset = markers[i] - self._pose_xy(context, xy)
        self._snap = self._snapshot()
        self._clip = None
        self._update(context, xy)
        return True

    def _update(self, context, xy) -> None:
        p = self._pose_xy(context, xy) + self._offset
        try:
            clip = self._model.clip.with_marker_moved(int(self.index), p)
        except ValueError:  # on another marker: the last free point stays
            self._status(context, self.HINT + ON_A_MARKER + TOOL_KEYS)
            return
        self._preview(clip)
        pose_from_point(self._ob, _current_point(context, self._model), rbf=clip.rbf())
        self.position = (float(p[0]), float(p[1]))
        self._status(context, self.HINT + TOOL_KEYS)

    def _finish(self, context, xy) -> set[str]:
        self._update(context, xy)
        return self._commit_clip(context, self._clip)


class ANIM_SIGNALS_OT_spatial_keyframes_add_marker(_SpatialKeyframeDrag, bpy.types.Operator):
    """Add a marker: the rig's current pose becomes a new key pose at a point of the plane (click on the canvas where it goes)"""

    bl_idname = "anim_signals.spatial_keyframes_add_marker"
    bl_label = "Add Spatial Keyframe Marker"
    bl_options = {"REGISTER", "UNDO"}
    HINT = "Add Marker: click on the canvas where the rig's current pose goes (drag to adjust)"

    position: FloatVectorProperty(  # type: ignore[valid-type]
        name="Position",
        description="Point of the plane for the new marker (not on another marker)",
        size=2,
        default=(0.0, 0.0),
    )

    _pose: Any = None  # the rig's pose when the press came

    @transactional
    def execute(self, context):
        ob, model = model_or_report(self, context)
        if model is None:
            return {"CANCELLED"}
        try:
            p = checked_point(model.shown, self.position[:], "position of the new marker")
            clip = model.clip.with_marker_added(model.writer.read(ob), p)
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        result = _commit_or_report(self, context, ob, clip, pose_current_frame=False)
        if result == {"FINISHED"}:
            state_of(ob, self._kind).cursor = p
            self.report({"INFO"}, f"Marker {len(clip.markers) - 1} added from the current pose")
        return result

    def _begin(self, context, xy) -> bool:
        self._pose = self._model.writer.read(self._ob)
        self._snap = self._snapshot()
        self._clip = None
        self._update(context, xy)
        return True

    def _update(self, context, xy) -> None:
        p = self._pose_xy(context, xy)
        try:
            clip = self._model.clip.with_marker_added(self._pose, p)
        except ValueError:
            self._status(context, self.HINT + ON_A_MARKER + TOOL_KEYS)
            return
        self._preview(clip)
        self.position = (float(p[0]), float(p[1]))

    def _finish(self, context, xy) -> set[str]:
        self._update(context, xy)
        if self._clip is None:
            self._restore(context)
            self.report({"WARNING"}, "Another marker is there: nothing added")
            return {"CANCELLED"}
        result = self._commit_clip(context, self._clip, pose_current_frame=False)
        if result == {"FINISHED"}:
            state_of(self._ob, self._kind).cursor = np.array(self.position[:], dtype=float)
        return result


class ANIM_SIGNALS_OT_spatial_keyframes_remove_marker(_SpatialKeyframeDrag, bpy.types.Operator):
    """Remove a marker (its key pose); at least 3 stay. The rig then shows the current frame's pose without it"""

    bl_idname = "anim_signals.spatial_keyframes_remove_marker"
    bl_label = "Remove Spatial Keyframe Marker"
    bl_options = {"REGISTER", "UNDO"}
    HINT = "Remove Marker: click a marker (diamond)"

    index: IntProperty(  # type: ignore[valid-type]
        name="Marker",
        description="Index of the marker to remove (from 0, in the model's marker order)",
        default=0,
        min=0,
    )

    @transactional
    def execute(self, context):
        ob, model = model_or_report(self, context)
        if model is None:
            return {"CANCELLED"}
        try:
            clip = model.clip.without_marker(_marker_index(model, self.index))
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        return _commit_or_report(self, context, ob, clip)

    def _begin(self, context, xy) -> bool:
        markers = self._model.clip.markers
        i = self._grab(context, xy, "MARKER", self.index, len(markers), "Press on a marker (diamond) to remove it")
        if i is None:
            return False
        try:
            clip = self._model.clip.without_marker(i)
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return False
        self.index = i
        self._snap = self._snapshot()
        self._preview(clip)
        return True

    def _update(self, context, xy) -> None:
        pass  # the press chose the marker; releasing anywhere removes it

    def _finish(self, context, xy) -> set[str]:
        return self._commit_clip(context, self._clip)


def canvas_press(context, event, ob, model, rect) -> set[str]:
    """A left press on the canvas showing ``ob``'s spatial keyframes (``model``: what it draws, in
    ``rect``): Shift records (:mod:`.recording`), a press on a marker
    moves it, anywhere else the cursor navigates."""
    ops: Any = bpy.ops.anim_signals  # type: ignore[attr-defined]
    if event.shift:
        ops.spatial_keyframes_record("INVOKE_DEFAULT", start_drag=True)
        return {"FINISHED"}
    xy = (event.mouse_region_x, event.mouse_region_y)
    view = view_for(state_of(ob, SPATIAL_KEYFRAMES), model, rect)
    _, scale = ui_metrics(context)
    hit = cv.hit_test(cv.canvas_geometry(model, view), xy, radius_px=HIT_RADIUS * max(scale, 1.0),
                      sure_px=SURE_RADIUS * max(scale, 1.0), kinds=("MARKER",))
    if hit.kind == "MARKER":
        ops.spatial_keyframes_move_marker("INVOKE_DEFAULT", index=hit.index, start_drag=True)
    else:
        ops.spatial_keyframes_navigate("INVOKE_DEFAULT", start_drag=True)
    return {"FINISHED"}


classes = (
    ANIM_SIGNALS_OT_spatial_keyframes_navigate,
    ANIM_SIGNALS_OT_spatial_keyframes_move_marker,
    ANIM_SIGNALS_OT_spatial_keyframes_add_marker,
    ANIM_SIGNALS_OT_spatial_keyframes_remove_marker,
)
