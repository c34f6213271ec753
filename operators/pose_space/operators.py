"""Operators ``anim_signals.build_pose_space``, ``anim_signals.pose_space_resample``,
``anim_signals.pose_space_bake`` (Cashman and Hormann: time, pose and shape signals).

Thin: :mod:`.sources` plans and checks (raising :class:`~.sources.PoseSpaceInputError`, nothing
changed), :mod:`.building` reads and builds on arrays, and only then is anything written. Building
is modal in the UI (progress bar, Esc / right-click cancels while frames are read); every operator
also runs synchronously through ``execute()``. The canvas operators (navigate, sketch, edit time,
pin) are in :mod:`.canvas_tools` and use the same storage.
"""

from __future__ import annotations

import math
import time

import bpy

from ...anim_signals.posespace import resample_times, resampled_space
from ..blender_data.frames import scene_fps
from ..common import SettingsOperator, StepwiseOperator
from ..common.polls import has_active_object
from ..common.settings import draw_frame_range
from ..common.transaction import transactional
from .building import iter_build, write_build
from .posing import MAX_SEQUENCE_FRAMES, bake_refusal, bake_space
from .properties import (
    BAKE_SETTINGS,
    BUILD_SETTINGS,
    RESAMPLE_SETTINGS,
    BakeSettings,
    BuildSettings,
    ResampleSettings,
)
from .sources import BuildPlan, PoseSpaceInputError, build_plan
from .storage import PoseSpaceDataError, load_space, save_space, space_object

_RESAMPLE_NUMBERS = {"speed": "Speed", "fps_from": "From FPS", "fps_to": "To FPS", "range_start": "Range Start",
                     "range_end": "Range End"}

__all__ = [
    "ANIM_SIGNALS_OT_build_pose_space",
    "ANIM_SIGNALS_OT_pose_space_bake",
    "ANIM_SIGNALS_OT_pose_space_resample",
]


def _poll_space(cls, context) -> bool:
    if not has_active_object(cls, context):
        return False
    ob = context.active_object
    if space_object(ob) is None:
        cls.poll_message_set(f'"{ob.name}" has no pose space: build one first (Build Pose Space)')
        return False
    return True


class ANIM_SIGNALS_OT_build_pose_space(BuildSettings, StepwiseOperator, bpy.types.Operator):
    """Build a pose space from the active object's animation: every frame becomes a point of a 2D canvas (time, pose and shape signals), stored on a new "<name>.posespace" object (meshes) or on the armature"""

    bl_idname = "anim_signals.build_pose_space"
    bl_label = "Build Pose Space"
    bl_options = {"REGISTER", "UNDO"}

    SETTINGS = BUILD_SETTINGS
    STATUS_TEXT = "Building pose space... Esc / right-click to cancel"
    CANCELLED_TEXT = "Build cancelled: nothing changed"
    REMOVED_TEXT = "The source object was removed while building: nothing written"
    INPUT_ERRORS = (PoseSpaceInputError,)
    FAILURES = (PoseSpaceInputError,)

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.pose_space

    @classmethod
    def poll(cls, context):
        if context.active_object is None:
            cls.poll_message_set("No active object: select an animated mesh or armature")
            return False
        return True

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "source")
        layout.prop(self, "shape_space")
        draw_frame_range(layout, self)
        layout.prop(self, "frame_step")
        layout.prop(self, "exact")
        col = layout.column()
        col.enabled = not self.exact
        col.prop(self, "tolerance")
        col.prop(self, "tolerance_rotation")
        col.prop(self, "k")
        col.prop(self, "l")
        col.prop(self, "m")
        layout.prop(self, "keep_pins")

    def prepare(self, context) -> BuildPlan:
        scene = context.scene
        start = end = None
        if self.range_mode == "SCENE":
            start, end = scene.frame_start, scene.frame_end
        elif self.range_mode == "CUSTOM":
            start, end = self.frame_start, self.frame_end
        return build_plan(
            context.active_object, scene, source=self.source, frame_start=start, frame_end=end,
            frame_step=self.frame_step, k=self.k, l=self.l, m=self.m, tolerance=self.tolerance,
            tolerance_deg=self.tolerance_rotation, exact=self.exact, keep_pins=self.keep_pins,
            shape_space=self.shape_space,
        )

    def steps(self, plan: BuildPlan):
        return iter_build(plan)

    def finish(self, context, plan: BuildPlan) -> set[str]:
        ps_ob, summary = write_build(plan)
        summary.seconds = self.elapsed()
        context.scene.anim_signals.last_pose_space.store(summary)
        context.scene.anim_signals.pose_space_canvas.shows = "POSE_SPACE"  # what was built last shows
        src = plan.source_object
        if ps_ob != src:
            try:
                src.select_set(False)
                ps_ob.select_set(True)
                context.view_layer.objects.active = ps_ob
            except RuntimeError:  # pragma: no cover - the collection is not in this view layer
                pass
        self.report({"INFO"}, summary.message())
        return {"FINISHED"}


class ANIM_SIGNALS_OT_pose_space_resample(ResampleSettings, SettingsOperator, bpy.types.Operator):
    """Retime the pose space's sequence (Cashman & Hormann §4.2): speed up, slow down (all or a range) or convert the frame rate, then bake the new frames"""

    bl_idname = "anim_signals.pose_space_resample"
    bl_label = "Resample Pose Space"
    bl_options = {"REGISTER", "UNDO"}

    SETTINGS = RESAMPLE_SETTINGS

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.pose_space_resample

    @classmethod
    def poll(cls, context):
        return _poll_space(cls, context)

    def _bad_setting(self, space, fps_from: float) -> str | None:
        """A setting that is not a finite number, or would make more frames than a sequence may
        have (estimated before the core allocates them)."""
        for name, label in _RESAMPLE_NUMBERS.items():
            value = float(getattr(self, name))
            if not math.isfinite(value):
                return f"{label} must be a finite number, got {value:g}"
        a, b = float(space.time.frames[0]), float(space.time.frames[-1])
        if self.mode == "FRAME_COUNT":
            count = float(self.frame_count)
        elif self.mode == "FRAME_RATE":
            count = (b - a) * self.fps_to / max(fps_from, 1e-300) + 1.0
        elif self.mode == "RANGE":
            part = max(min(self.range_end, b) - max(self.range_start, a), 0.0)
            count = (b - a - part) + part / max(self.speed, 1e-300) + 1.0
        else:
            count = (b - a) / max(self.speed, 1e-300) + 1.0
        if count < 2.0:
            return f"it would leave {max(count, 0.0):.3g} frames (fewer than 2): speed up less"
        if count > MAX_SEQUENCE_FRAMES:
            return (f"it would make {count:.0f} frames; a resampled sequence has at most {MAX_SEQUENCE_FRAMES} "
                    "(slow down less)")
        return None

    @transactional  # a bake that fails after the resampled model is stored takes the model back
    def execute(self, context):
        t0 = time.perf_counter()
        ob = context.active_object
        try:
            space = load_space(ob)
        except PoseSpaceDataError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        if space is None:  # pragma: no cover - poll
            self.report({"ERROR"}, f'"{ob.name}" has no pose space')
            return {"CANCELLED"}
        fps_from = self.fps_from or scene_fps(context.scene)
        problem = self._bad_setting(space, fps_from)
        if problem is None and self.bake:
            problem = bake_refusal(space_object(ob))
        if problem:
            self.report({"ERROR"}, f"Cannot resample: {problem}")
            return {"CANCELLED"}
        try:
            frames, taus = resample_times(
                space.time, mode=self.mode, speed=self.speed, frame_count=self.frame_count, fps_from=fps_from,
                fps_to=self.fps_to, range_start=self.range_start, range_end=self.range_end,
            )
            new_space = resampled_space(space, frames, taus)
            save_space(ob, new_space)
        except ValueError as err:
            self.report({"ERROR"}, f"Cannot resample: {err}")
            return {"CANCELLED"}
        msg = (f"Resampled {space.time.frames.size} -> {frames.size} frames "
               f"({frames[0]:g}-{frames[-1]:g}, times {taus[0]:.4g}-{taus[-1]:.4g})")
        if self.bake:
            try:
                s = bake_space(ob, new_space, context.scene, set_scene_range=self.set_scene_range)
            except ValueError as err:
                self.report({"ERROR"}, f"Cannot bake: {err}")
                return {"CANCELLED"}  # @transactional puts the stored model back
            s.seconds = time.perf_counter() - t0
            context.scene.anim_signals.last_pose_space.store_bake(s)
            msg += "; " + s.message()
        self.report({"INFO"}, msg)
        return {"FINISHED"}


class ANIM_SIGNALS_OT_pose_space_bake(BakeSettings, SettingsOperator, bpy.types.Operator):
    """Bake the pose space's sequence: keys on every frame of its time signal (shape-key values of the pose-space object, or bone transforms into a new action)"""

    bl_idname = "anim_signals.pose_space_bake"
    bl_label = "Bake Pose Space"
    bl_options = {"REGISTER", "UNDO"}

    SETTINGS = BAKE_SETTINGS

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.pose_space_bake

    @classmethod
    def poll(cls, context):
        return _poll_space(cls, context)

    @transactional
    def execute(self, context):
        t0 = time.perf_counter()
        try:
            s = bake_space(context.active_object, None, context.scene, set_scene_range=self.set_scene_range)
        except ValueError as err:
            self.report({"ERROR"}, f"Cannot bake: {err}")
            return {"CANCELLED"}
        s.seconds = time.perf_counter() - t0
        context.scene.anim_signals.last_pose_space.store_bake(s)
        self.report({"INFO"}, s.message())
        return {"FINISHED"}


classes = (ANIM_SIGNALS_OT_build_pose_space, ANIM_SIGNALS_OT_pose_space_resample, ANIM_SIGNALS_OT_pose_space_bake)
