"""Performance-driven animation on the spatial-keyframe canvas (Igarashi, Moscovich and Hughes,
"Spatial keyframing for performance-driven animation"), and the model played back.

* ``anim_signals.spatial_keyframes_record``: drag the cursor among the markers (or give a stroke):
  the pose under the cursor over time becomes a new action ``"<action>.sk"``, one LINEAR key per
  frame from the scene's start frame. Timed (``frames`` 0) the hand's speed is the motion's: the
  cursor path is sampled at the scene's frame rate (:func:`~anim_signals.spatialkeys.timed_stroke_frames`);
  with ``frames`` > 0 the stroke is spread evenly over that many frames
  (:func:`~anim_signals.spatialkeys.even_stroke_frames`). Spatial keyframes blend rotations only:
  every model bone's rotation is keyed (in its rotation mode) and the root bones hold the location
  they have now.
* ``anim_signals.spatial_keyframes_play_back``: the model's trajectory through its current (maybe
  edited) markers written as ``"<action>.skc"``, exactly as Compact Action writes it but without
  rebuilding, then played.

Both keep the action assigned before (fake user; a recording does not keep a ``.skc``, which play
back writes again); an earlier ``.sk`` / ``.skc`` of the same action is replaced when nothing else
uses it. Bad input is refused with one message and nothing changed.
The drag is :class:`~..pose_space.canvas_tools.CanvasDrag`'s (Esc / right-click restores the pose);
as the navigate cursor, the recorded point is held near the trajectory and the markers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np
from bpy.props import CollectionProperty, IntProperty

from ...anim_signals.posespace import canvas as cv
from ...anim_signals.spatialkeys import (
    MAX_RECORDED_FRAMES,
    as_matrices,
    as_quaternions,
    error_per_frame_per_joint,
    even_stroke_frames,
    joint_weights,
    timed_stroke_frames,
)
from ...anim_signals.spatialkeys.rotation_modes import quaternions_to_mode_values
from ..blender_data.actions import (
    find_action,
    get_action,
    id_read_only_reason,
    new_action,
    remove_if_unused,
    tweak_mode_reason,
)
from ..blender_data.armatures import key_held_locations
from ..blender_data.bone_rotations import BoneRotations, read_bone_rotations, write_rotation_curves
from ..blender_data.fcurves import KeyframeError
from ..common.transaction import current_transaction, transaction, transactional
from ..pose_space.canvas_state import SPATIAL_KEYFRAMES, checked_stroke, state_of, tag_redraw
from ..pose_space.canvas_tools import HELD, TOOL_KEYS, CanvasDrag
from ..pose_space.properties import AnimSignalsStrokePoint
from .building import COMPACT_SUFFIX, write_compacted
from .canvas_tools import model_or_report, poll_model
from .posing import pose_from_point
from .properties import AnimSignalsStrokeTime
from .sources import COMPACT_MARK
from .storage import LoadedModel, ModelDataError, load_model, model_info

__all__ = [
    "RECORD_SUFFIX",
    "ANIM_SIGNALS_OT_spatial_keyframes_play_back",
    "ANIM_SIGNALS_OT_spatial_keyframes_record",
    "PlayBack",
    "Recording",
    "play_back",
    "record",
    "recorded_points",
    "time_items",
]

RECORD_SUFFIX = ".sk"
"""Name suffix of a recorded action: ``"<action>.sk"``."""
CLOCK = time.perf_counter
"""Where a drag's timestamps come from (seconds)."""
ROTATIONS_ONLY = "spatial keyframes blend rotations only: the root bone holds its location"


@dataclass
class Recording:
    """What a recording wrote."""

    action_name: str
    frames: int
    fps: float
    points: np.ndarray  # (frames, 2) the plane point of every frame

    @property
    def seconds(self) -> float:
        """Time from the first to the last key at ``fps``."""
        return (self.frames - 1) / self.fps

    def message(self) -> str:
        return (f'Recorded "{self.action_name}": {self.frames} frames, {self.seconds:.2f} s at {self.fps:g} fps '
                f"({ROTATIONS_ONLY})")


@dataclass
class PlayBack:
    """What playing the model back wrote."""

    action_name: str
    frames: int
    original: str  # the action the model was built from
    error: float | None  # per frame per joint against it; None when it no longer exists

    def message(self) -> str:
        text = f'Played back "{self.action_name}": {self.frames} frames'
        if self.error is None:
            return text + f' (the original action "{self.original}" no longer exists: no error to report)'
        return text + f', error {self.error:.4g} per frame per joint against "{self.original}"'


def time_items(seconds) -> list[dict[str, Any]]:
    """Timestamps as the ``seconds`` argument of ``anim_signals.spatial_keyframes_record``."""
    return [{"name": "", "seconds": float(t)} for t in np.asarray(seconds, dtype=float).reshape(-1)]


def _model_of(ob: Any) -> LoadedModel:
    """The stored model of ``ob``, ready to write; ValueError with the reason otherwise."""
    if ob is None:
        raise ValueError("No active object: select the armature with spatial keyframes")
    try:
        model = load_model(ob)
    except ModelDataError as err:
        raise ValueError(str(err)) from err
    if model is None:
        raise ValueError(f'"{ob.name}" has no spatial keyframes: build them first')
    reason = id_read_only_reason(ob) or tweak_mode_reason(ob)
    if reason:
        raise ValueError(reason)
    return model


def _info(ob: Any) -> dict[str, Any]:
    info = model_info(ob)
    assert info is not None  # after _model_of
    return info


def recorded_points(model: LoadedModel, points, seconds, frames: int, fps: float) -> np.ndarray:
    """The plane point of every frame of a recording: ``points`` (r, 2) timed by ``seconds`` (r,)
    at ``fps`` when ``frames`` is 0, else spread evenly over ``frames``. Raises ValueError on a
    stroke of fewer than 2 points, without length, not finite or far off the canvas, timestamps
    that do not fit (count, NaN, backwards), no time elapsed, or too many frames."""
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    if len(pts) < 2:
        raise ValueError(f"A recording needs a stroke of at least 2 points, got {len(pts)}")
    checked_stroke(model.shown, pts)
    if not np.any(np.diff(pts, axis=0) != 0.0):
        raise ValueError("The stroke has no length: drag the cursor across the canvas")
    t = None if seconds is None or len(seconds) == 0 else np.asarray(seconds, dtype=float).reshape(-1)
    if t is not None:
        if len(t) != len(pts):
            raise ValueError(f"{len(t)} timestamps for {len(pts)} stroke points: give one per point, or none")
        if not np.all(np.isfinite(t)):
            raise ValueError("The stroke's timestamps hold NaN or infinite values")
        if np.any(np.diff(t) < 0.0):
            raise ValueError("The stroke's timestamps go backwards")
    if frames < 0 or frames > MAX_RECORDED_FRAMES:
        raise ValueError(f"Frames {frames}: a recording has 2 to {MAX_RECORDED_FRAMES} frames (0: timed)")
    if frames > 0:
        return even_stroke_frames(pts, frames)
    if t is None:
        raise ValueError("A stroke without timestamps needs Frames (how many frames to spread it over)")
    if t[-1] - t[0] <= 0.0:
        raise ValueError("No time elapsed during the stroke: a timed recording needs a duration (or give Frames)")
    return timed_stroke_frames(pts, t, fps)


def scene_fps(scene: Any) -> float:
    """The scene's frame rate, frames per second."""
    return float(scene.render.fps) / float(scene.render.fps_base)


def _set_scene_range(scene: Any, start: int, end: int) -> None:
    current_transaction().keep(scene, "frame_start", "frame_end")
    if start > scene.frame_end:  # never an inverted range on the way
        scene.frame_end, scene.frame_start = end, start
    else:
        scene.frame_start, scene.frame_end = start, end


def _rotations_to_write(ob: Any, model: LoadedModel, frames: np.ndarray, quats: np.ndarray) -> BoneRotations:
    """Every model bone keyed, in its mode, continuous from frame to frame."""
    modes = [ob.pose.bones[name].rotation_mode for name in model.bones]
    values = [quaternions_to_mode_values(quats[:, j], mode, continuous=True) for j, mode in enumerate(modes)]
    return BoneRotations(list(model.bones), list(model.parents), modes, frames, quats, [True] * len(modes), values)


def record(ob: Any, scene: Any, points, seconds=None, frames: int = 0) -> Recording:
    """Write a recording on ``ob`` (see the module) from its stored model: ``points`` (r, 2)
    plane points of the stroke, ``seconds`` (r,) their timestamps (optional with ``frames`` > 0).
    Part of the running transaction; raises ValueError (nothing written) on bad input."""
    model = _model_of(ob)
    fps = scene_fps(scene)
    path = recorded_points(model, points, seconds, int(frames), fps)
    quats = as_quaternions(model.rbf.evaluate(path))
    start = int(scene.frame_start)
    name = _write_new_action(ob, scene, model, _info(ob)["action"] + RECORD_SUFFIX, start, quats)
    return Recording(name, len(path), fps, path)


def _write_new_action(ob: Any, scene: Any, model: LoadedModel, wanted: str, start: int, quats: np.ndarray) -> str:
    """A new action ``wanted`` on ``ob`` keying ``quats`` ((F, J, 4), the model's bones) from frame
    ``start`` and the root bones' locations held, assigned; the scene's range set to it. The action
    assigned before keeps a fake user, unless it is the earlier ``wanted`` (removed once unused) or
    a compaction / play-back, which the model writes again. Returns the action's name."""
    earlier = find_action(wanted)
    if earlier is not None and earlier.library is not None:
        earlier = None
    frames = start + np.arange(len(quats), dtype=np.float64)
    current_transaction().keep_action(ob)
    before = get_action(ob)
    keep = before is not None and before != earlier and not before.get(COMPACT_MARK)
    action: Any = new_action(ob, wanted, keep_previous=keep)
    write_rotation_curves(ob, action, _rotations_to_write(ob, model, frames, quats), quats)
    key_held_locations(ob, action, [b for b, p in zip(model.bones, model.parents, strict=True) if p < 0], frames)
    _set_scene_range(scene, start, start + len(quats) - 1)
    if earlier is not None and remove_if_unused(earlier):  # last: a rollback cannot bring it back
        action.name = wanted
    return action.name


def play_back(ob: Any, scene: Any) -> PlayBack:
    """Write the model's trajectory through its current markers as ``"<action>.skc"`` on ``ob``
    (a copy of the original action with its rotations replaced, as Compact Action writes; a new
    action of rotations and held root locations when the original is gone), assign it and set the
    scene's range to the model's frames. Part of the running transaction; raises ValueError."""
    model = _model_of(ob)
    info = _info(ob)
    start = int(info["frame_start"])
    n = len(model.clip.trajectory)
    frames = start + np.arange(n, dtype=np.float64)
    played = model.rbf.evaluate(model.clip.trajectory)  # (N, J, 3, 3)
    quats = as_quaternions(played)
    original = find_action(info["action"])
    if original is None:
        name = _write_new_action(ob, scene, model, info["action"] + COMPACT_SUFFIX, start, quats)
        return PlayBack(name, n, info["action"], None)
    try:
        rotations = read_bone_rotations(ob, frames, original)
    except KeyframeError as err:
        raise ValueError(f'The original action "{original.name}" cannot be read: {err}') from err
    where = {name: i for i, name in enumerate(rotations.names)}
    cols = [where[name] for name in model.bones]
    written_q = rotations.quaternions.copy()
    written_q[:, cols] = quats
    for c in cols:  # every model bone plays back, also one the original did not key
        rotations.animated[c] = True
    error = error_per_frame_per_joint(as_matrices(rotations.quaternions[:, cols]), played,
                                      joint_weights(model.parents))
    earlier = find_action(original.name + COMPACT_SUFFIX)
    if earlier is not None and (earlier.library is not None or earlier == original):
        earlier = None
    written = write_compacted(ob, original, rotations, written_q, earlier)
    _set_scene_range(scene, start, start + n - 1)
    return PlayBack(written.name, n, original.name, float(error))


# ----------------------------------------------------------------------------------------------
# Operators
# ----------------------------------------------------------------------------------------------


class ANIM_SIGNALS_OT_spatial_keyframes_record(CanvasDrag, bpy.types.Operator):
    """Record a motion by dragging the cursor among the markers (or from a given stroke): the pose under the cursor over time becomes a new action "<action>.sk" (rotations only: the root bone holds its location)"""

    bl_idname = "anim_signals.spatial_keyframes_record"
    bl_label = "Record Motion"
    bl_options = {"REGISTER", "UNDO"}
    HINT = "Record: drag in the canvas, the rig follows; release to write the motion"
    _kind = SPATIAL_KEYFRAMES

    stroke: CollectionProperty(  # type: ignore[valid-type]
        type=AnimSignalsStrokePoint,
        name="Stroke",
        description="Plane points of the cursor's path on the canvas, in drawing order (at least 2)",
        options={"SKIP_SAVE"},
    )
    seconds: CollectionProperty(  # type: ignore[valid-type]
        type=AnimSignalsStrokeTime,
        name="Seconds",
        description="When each stroke point was drawn (one per point; needed when Frames is 0)",
        options={"SKIP_SAVE"},
    )
    frames: IntProperty(  # type: ignore[valid-type]
        name="Frames",
        description="Frames of the motion: 0 times it by the stroke's timestamps at the scene's frame rate (the "
        "hand's speed is the motion's); more spreads the stroke evenly over that many frames. Rotations only: "
        "the root bone holds its location",
        default=0,
        min=0,
        soft_max=1000,
    )

    _times: Any = None
    _points: Any = None
    _old_cursor: Any = None
    _held = False

    @classmethod
    def poll(cls, context):
        return poll_model(cls, context)

    def invoke(self, context, event):
        if not self.properties.is_property_set("frames"):  # a press on the canvas: the sidebar's setting
            self.frames = context.scene.anim_signals.spatial_keyframes.record_frames
        return CanvasDrag.invoke(self, context, event)

    def _run(self, context, ob, points, seconds) -> set[str]:
        try:
            done = record(ob, context.scene, points, seconds, int(self.frames))
        except ValueError as err:
            self.report({"ERROR"}, str(err))  # type: ignore[attr-defined]
            return {"CANCELLED"}
        self.report({"INFO"}, done.message())  # type: ignore[attr-defined]
        tag_redraw(context)
        return {"FINISHED"}

    @transactional
    def execute(self, context):
        pts = np.array([p.co[:] for p in self.stroke], dtype=float).reshape(-1, 2)
        secs = np.array([t.seconds for t in self.seconds], dtype=float)
        return self._run(context, context.active_object, pts, secs)

    # -- the drag (CanvasDrag's hooks) ---------------------------------------------------------

    def _find(self, context) -> tuple[Any, Any]:
        ob, model = model_or_report(self, context)
        return ob, (None if model is None else model.shown)

    def _sample(self, context, xy) -> None:
        # as the navigate cursor: held near the trajectory and the markers, where the RBF's poses
        # are the clip's (further out they only distort)
        shown = self._space
        p, self._held = cv.near_the_frames(np.concatenate([shown.positions, shown.markers]), self._pose_xy(context, xy))
        self._points.append((float(p[0]), float(p[1])))
        self._times.append(CLOCK())
        pose_from_point(self._ob, p)
        st = state_of(self._ob, SPATIAL_KEYFRAMES)
        st.stroke = np.array(self._points)
        st.cursor = p

    def _begin(self, context, xy) -> bool:
        self._snap = self._snapshot()
        self._old_cursor = state_of(self._ob, SPATIAL_KEYFRAMES).cursor
        self._points, self._times = [], []
        self._sample(context, xy)
        return True

    def _update(self, context, xy) -> None:
        self._sample(context, xy)
        t = self._times[-1] - self._times[0]
        self._status(context, f"{self.HINT}  |  {t:.1f} s" + (HELD if self._held else "") + TOOL_KEYS)

    def _finish(self, context, xy) -> set[str]:
        self._sample(context, xy)
        st = state_of(self._ob, SPATIAL_KEYFRAMES)
        st.stroke = None
        self.stroke.clear()
        self.seconds.clear()
        t0 = self._times[0]
        for p, t in zip(self._points, self._times, strict=True):
            self.stroke.add().co = p
            self.seconds.add().seconds = t - t0
        with transaction() as tx:
            result = self._run(context, self._ob, np.array(self._points), np.array(self._times) - t0)
            if result != {"FINISHED"}:
                tx.rollback_and_log()
                self._restore(context)
        return result

    def _restore(self, context) -> None:
        state_of(self._ob, SPATIAL_KEYFRAMES).cursor = self._old_cursor
        CanvasDrag._restore(self, context)


class ANIM_SIGNALS_OT_spatial_keyframes_play_back(bpy.types.Operator):
    """Play the spatial keyframes back: write the trajectory through the current (maybe moved) markers as "<action>.skc", assign it and play it (the original is kept)"""

    bl_idname = "anim_signals.spatial_keyframes_play_back"
    bl_label = "Play Back"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return poll_model(cls, context, on_canvas=False)  # plays whatever the canvas shows

    @transactional
    def execute(self, context):
        try:
            done = play_back(context.active_object, context.scene)
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, done.message())
        tag_redraw(context)
        screen = getattr(context, "screen", None)
        if not bpy.app.background and context.window is not None and screen is not None \
                and not screen.is_animation_playing:
            bpy.ops.screen.animation_play()
        return {"FINISHED"}


classes = (ANIM_SIGNALS_OT_spatial_keyframes_record, ANIM_SIGNALS_OT_spatial_keyframes_play_back)
