"""Operators ``anim_signals.build_pose_space``, ``anim_signals.pose_space_resample``,
``anim_signals.pose_space_bake`` (Cashman & Hormann: time, pose and shape signals).

Thin, like :mod:`.fit` and :mod:`.motion_ops`: the data layer :mod:`.pose_space` plans and checks
(raising :class:`~.pose_space.PoseSpaceInputError`, nothing changed), the core builds on arrays, and
only then is anything written. Building is modal in the UI (progress bar, Esc / right-click
cancels while frames are read); every operator also runs synchronously through ``execute()``.
The canvas operators (navigate, sketch, edit time, pin) live elsewhere and use the same data layer.

No ``from __future__ import annotations`` here: the scene settings (panels/props.py) reuse these
operators' property annotations, which Blender needs as real objects.
"""

import time
from collections.abc import Sequence

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty

from . import pose_space as ps
from .common.modal import StepwiseModal
from .pose_space import PoseSpaceInputError

SOURCE_ITEMS = [
    ("AUTO", "Auto", "Armatures: their action; meshes: the evaluated mesh when it has modifiers (mesh cache, "
     "Alembic, cloth ...), else its shape-key animation"),
    ("ACTION", "Action", "An armature's action: the pose vector of every animated pose-bone channel"),
    ("SHAPE_KEYS", "Shape Keys", "A mesh's shape-key animation (vertex positions blended from the keys, before modifiers)"),
    ("MESH", "Mesh", "The evaluated mesh frame by frame (Mesh Cache PC2/MDD, Mesh Sequence Cache, cloth, any modifier)"),
]
RANGE_ITEMS = [
    ("AUTO", "Auto", "The action's frame range (actions, shape keys), the Mesh Cache file's frames, else the scene range"),
    ("SCENE", "Scene", "The scene's frame range"),
    ("CUSTOM", "Custom", "The frames from Start to End"),
]
RESAMPLE_ITEMS = [
    ("SPEED", "Speed", "Play the whole sequence Speed times as fast (0.5: slow motion, twice the frames)"),
    ("FRAME_COUNT", "Frame Count", "Spread a new number of frames evenly over the sequence"),
    ("FRAME_RATE", "Frame Rate", "Convert from one frame rate to another (same duration in seconds)"),
    ("RANGE", "Range", "Play only the frames from Range Start to Range End at Speed (slow down or speed up a part)"),
]

BUILD_SETTINGS = ("source", "range_mode", "frame_start", "frame_end", "frame_step", "exact", "tolerance",
                  "tolerance_rotation", "k", "l", "m", "keep_pins")
RESAMPLE_SETTINGS = ("mode", "speed", "frame_count", "fps_from", "fps_to", "range_start", "range_end", "bake",
                     "set_scene_range")
BAKE_SETTINGS = ("set_scene_range",)


def _settings(context, name: str):
    return getattr(getattr(context.scene, "anim_signals", None), name, None)


def _fill_from_settings(op, settings, names: Sequence[str]) -> None:
    """Properties not given explicitly take the sidebar's values (menu / F3 / button calls)."""
    if settings is None:
        return
    for name in names:
        if not op.properties.is_property_set(name) and hasattr(settings, name):
            setattr(op, name, getattr(settings, name))


def store_build_summary(scene, s: ps.BuildSummary) -> None:
    """Keep the last build's numbers on the scene (``scene.anim_signals.last_pose_space``)."""
    res = getattr(getattr(scene, "anim_signals", None), "last_pose_space", None)
    if res is None:
        return
    res.valid = True
    res.object_name = s.object_name
    res.source_object = s.source_object
    res.source = s.source
    res.frame_start = int(round(s.frame_start))
    res.frame_end = int(round(s.frame_end))
    res.n, res.k, res.l, res.m, res.values = s.n, s.k, s.l, s.m, s.d
    res.rms_error, res.max_error = float(s.rms_error), float(s.max_error)
    res.error_units = s.error_units
    res.tolerance = float(s.tolerance)
    res.seconds = float(s.seconds)


def store_bake_summary(scene, s: ps.BakeSummary) -> None:
    res = getattr(getattr(scene, "anim_signals", None), "last_pose_space", None)
    if res is None:
        return
    res.baked_action = s.action_name
    res.bake_frame_start = s.frame_start
    res.bake_frame_end = s.frame_end


def _poll_space(cls, context) -> bool:
    ob = context.active_object
    if ob is None:
        cls.poll_message_set("No active object")
        return False
    if ps.space_object(ob) is None:
        cls.poll_message_set(f'"{ob.name}" has no pose space: build one first (Build Pose Space)')
        return False
    return True


class ANIM_SIGNALS_OT_build_pose_space(StepwiseModal, bpy.types.Operator):
    """Build a pose space from the active object's animation: every frame becomes a point of a 2D canvas (time, pose and shape signals), stored on a new "<name>.posespace" object (meshes) or on the armature"""

    bl_idname = "anim_signals.build_pose_space"
    bl_label = "Build Pose Space"
    bl_options = {"REGISTER", "UNDO"}

    source: EnumProperty(  # type: ignore[valid-type]
        name="Source",
        description="What the frames are made of",
        items=SOURCE_ITEMS,
        default="AUTO",
    )
    range_mode: EnumProperty(  # type: ignore[valid-type]
        name="Range",
        description="Which frames are read",
        items=RANGE_ITEMS,
        default="AUTO",
    )
    frame_start: IntProperty(  # type: ignore[valid-type]
        name="Start",
        description="First frame read (Custom range)",
        default=1,
    )
    frame_end: IntProperty(  # type: ignore[valid-type]
        name="End",
        description="Last frame read (Custom range)",
        default=250,
    )
    frame_step: IntProperty(  # type: ignore[valid-type]
        name="Step",
        description="Read every Step-th frame (the frames between are then shown by the model)",
        default=1,
        min=1,
        soft_max=10,
    )
    exact: BoolProperty(  # type: ignore[valid-type]
        name="Interpolate Frames",
        description="Reproduce every frame exactly (k - 2 = l = m + 1 = n) instead of the fewest components within "
        "the tolerance",
        default=False,
    )
    tolerance: FloatProperty(  # type: ignore[valid-type]
        name="Tolerance",
        description="Meshes: RMS error per vertex allowed when choosing k, l and m, in the object's units "
        "(0: automatic, 0.2 % of the bounding-box diagonal)",
        default=0.0,
        min=0.0,
        soft_max=1.0,
        precision=4,
        subtype="DISTANCE",
    )
    tolerance_rotation: FloatProperty(  # type: ignore[valid-type]
        name="Rotation Tolerance",
        description="Armatures: RMS error per channel allowed when choosing k, l and m, in degrees "
        "(locations count 2 / figure height per unit, like a rotation)",
        default=ps.DEFAULT_TOLERANCE_DEG,
        min=1e-4,
        soft_max=10.0,
        precision=3,
    )
    k: IntProperty(  # type: ignore[valid-type]
        name="Control Points (k)",
        description="Control points of the time-signal curve (0: automatic, from the tolerance)",
        default=0,
        min=0,
    )
    l: IntProperty(  # type: ignore[valid-type]  # noqa: E741  (the seed's name)
        name="Sites (l)",
        description="Thin-plate spline sites of the pose signal (0: automatic, from the tolerance)",
        default=0,
        min=0,
    )
    m: IntProperty(  # type: ignore[valid-type]
        name="Components (m)",
        description="Shape components: shape keys of the pose-space object (0: automatic, from the tolerance)",
        default=0,
        min=0,
    )
    keep_pins: BoolProperty(  # type: ignore[valid-type]
        name="Keep Pins",
        description="Rebuilding keeps the frames you pinned on the canvas",
        default=True,
    )

    STEP_SECONDS = 0.08  # work per timer event, so the UI stays responsive to Esc
    STATUS_TEXT = "Building pose space... Esc / right-click to cancel"
    CANCELLED_TEXT = "Build cancelled: nothing changed"
    REMOVED_TEXT = "The source object was removed while building: nothing written"
    FAILURES = (PoseSpaceInputError,)
    _t0 = 0.0

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
        layout.prop(self, "range_mode")
        if self.range_mode == "CUSTOM":
            col = layout.column(align=True)
            col.prop(self, "frame_start")
            col.prop(self, "frame_end")
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

    def _plan_or_report(self, context) -> ps.BuildPlan | None:
        scene = context.scene
        start = end = None
        if self.range_mode == "SCENE":
            start, end = scene.frame_start, scene.frame_end
        elif self.range_mode == "CUSTOM":
            start, end = self.frame_start, self.frame_end
        try:
            plan = ps.build_plan(
                context.active_object, scene, source=self.source, frame_start=start, frame_end=end,
                frame_step=self.frame_step, k=self.k, l=self.l, m=self.m, tolerance=self.tolerance,
                tolerance_deg=self.tolerance_rotation, exact=self.exact, keep_pins=self.keep_pins,
            )
        except PoseSpaceInputError as err:
            self.report({"ERROR"}, str(err))
            return None
        return plan

    def _finish(self, context, plan: ps.BuildPlan) -> set[str]:
        ps_ob, summary = ps.write_build(plan)
        summary.seconds = time.perf_counter() - self._t0
        store_build_summary(context.scene, summary)
        src = plan.source_object
        if ps_ob != src:
            try:
                src.select_set(False)
                ps_ob.select_set(True)
                context.view_layer.objects.active = ps_ob
            except RuntimeError:  # pragma: no cover - the collection is not in this view layer
                pass
        for w in summary.warnings:
            self.report({"WARNING"}, w)
        self.report({"INFO"}, summary.message())
        return {"FINISHED"}

    def execute(self, context):
        self._t0 = time.perf_counter()
        plan = self._plan_or_report(context)
        if plan is None:
            return {"CANCELLED"}
        wm = context.window_manager
        wm.progress_begin(0, 100)
        try:
            for frac in ps.iter_build(plan):
                wm.progress_update(int(100 * frac))
        except PoseSpaceInputError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        return self._finish(context, plan)

    def invoke(self, context, event):
        _fill_from_settings(self, _settings(context, "pose_space"), BUILD_SETTINGS)
        if context.window is None or bpy.app.background:
            return self.execute(context)  # no event loop: a modal operator would never finish
        self._t0 = time.perf_counter()
        plan = self._plan_or_report(context)
        if plan is None:
            return {"CANCELLED"}
        return self.start_stepping(context, plan, ps.iter_build(plan))



class ANIM_SIGNALS_OT_pose_space_resample(bpy.types.Operator):
    """Retime the pose space's sequence (seed 4.2): speed up, slow down (all or a range) or convert the frame rate, then bake the new frames"""

    bl_idname = "anim_signals.pose_space_resample"
    bl_label = "Resample Pose Space"
    bl_options = {"REGISTER", "UNDO"}

    mode: EnumProperty(  # type: ignore[valid-type]
        name="Mode",
        description="How the new frames sample the sequence",
        items=RESAMPLE_ITEMS,
        default="SPEED",
    )
    speed: FloatProperty(  # type: ignore[valid-type]
        name="Speed",
        description="Playback speed factor (Speed, Range): 2 plays twice as fast (half the frames), 0.5 is slow "
        "motion (twice the frames)",
        default=1.0,
        min=0.01,
        soft_max=10.0,
    )
    frame_count: IntProperty(  # type: ignore[valid-type]
        name="Frames",
        description="Number of frames of the resampled sequence (Frame Count)",
        default=48,
        min=2,
    )
    fps_from: FloatProperty(  # type: ignore[valid-type]
        name="From FPS",
        description="Frame rate the sequence was made for (Frame Rate; 0: the scene's)",
        default=0.0,
        min=0.0,
    )
    fps_to: FloatProperty(  # type: ignore[valid-type]
        name="To FPS",
        description="Frame rate to convert to (Frame Rate)",
        default=60.0,
        min=0.01,
    )
    range_start: FloatProperty(  # type: ignore[valid-type]
        name="Range Start",
        description="First frame of the part played at Speed (Range)",
        default=1.0,
    )
    range_end: FloatProperty(  # type: ignore[valid-type]
        name="Range End",
        description="Last frame of the part played at Speed (Range)",
        default=10.0,
    )
    bake: BoolProperty(  # type: ignore[valid-type]
        name="Bake",
        description="Bake keys for every new frame (else only the stored time signal changes)",
        default=True,
    )
    set_scene_range: BoolProperty(  # type: ignore[valid-type]
        name="Set Scene Range",
        description="Set the scene's frame range to the baked frames",
        default=False,
    )

    @classmethod
    def poll(cls, context):
        return _poll_space(cls, context)

    def execute(self, context):
        t0 = time.perf_counter()
        ob = context.active_object
        try:
            space = ps.load_space(ob)
        except ps.PoseSpaceDataError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        if space is None:  # pragma: no cover - poll
            self.report({"ERROR"}, f'"{ob.name}" has no pose space')
            return {"CANCELLED"}
        fps_from = self.fps_from or float(context.scene.render.fps) / float(context.scene.render.fps_base or 1.0)
        try:
            frames, taus = ps.resample_times(
                space.time, mode=self.mode, speed=self.speed, frame_count=self.frame_count, fps_from=fps_from,
                fps_to=self.fps_to, range_start=self.range_start, range_end=self.range_end,
            )
            new_space = ps.resampled_space(space, frames, taus)
            ps.save_space(ob, new_space)
        except ValueError as err:
            self.report({"ERROR"}, f"Cannot resample: {err}")
            return {"CANCELLED"}
        msg = (f"Resampled {space.time.frames.size} -> {frames.size} frames "
               f"({frames[0]:g}-{frames[-1]:g}, times {taus[0]:.4g}-{taus[-1]:.4g})")
        if self.bake:
            try:
                s = ps.bake_space(ob, new_space, context.scene, set_scene_range=self.set_scene_range)
            except ValueError as err:  # pragma: no cover - save_space checked the same
                self.report({"ERROR"}, f"Cannot bake: {err}")
                return {"CANCELLED"}
            s.seconds = time.perf_counter() - t0
            store_bake_summary(context.scene, s)
            msg += "; " + s.message()
        self.report({"INFO"}, msg)
        return {"FINISHED"}

    def invoke(self, context, event):
        _fill_from_settings(self, _settings(context, "pose_space_resample"), RESAMPLE_SETTINGS)
        return self.execute(context)


class ANIM_SIGNALS_OT_pose_space_bake(bpy.types.Operator):
    """Bake the pose space's sequence: keys on every frame of its time signal (shape-key values of the pose-space object, or bone transforms into a new action)"""

    bl_idname = "anim_signals.pose_space_bake"
    bl_label = "Bake Pose Space"
    bl_options = {"REGISTER", "UNDO"}

    set_scene_range: BoolProperty(  # type: ignore[valid-type]
        name="Set Scene Range",
        description="Set the scene's frame range to the baked frames",
        default=False,
    )

    @classmethod
    def poll(cls, context):
        return _poll_space(cls, context)

    def execute(self, context):
        t0 = time.perf_counter()
        try:
            s = ps.bake_space(context.active_object, None, context.scene, set_scene_range=self.set_scene_range)
        except ValueError as err:
            self.report({"ERROR"}, f"Cannot bake: {err}")
            return {"CANCELLED"}
        s.seconds = time.perf_counter() - t0
        store_bake_summary(context.scene, s)
        self.report({"INFO"}, s.message())
        return {"FINISHED"}

    def invoke(self, context, event):
        _fill_from_settings(self, _settings(context, "pose_space_bake"), BAKE_SETTINGS)
        return self.execute(context)


classes = (ANIM_SIGNALS_OT_build_pose_space, ANIM_SIGNALS_OT_pose_space_resample, ANIM_SIGNALS_OT_pose_space_bake)
_register, _unregister = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register()


def unregister() -> None:
    _unregister()
