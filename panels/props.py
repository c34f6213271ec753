"""Settings stored on the scene: ``Scene.anim_signals`` (one PropertyGroup for all tools).

``scene.anim_signals.fit`` holds the Fit Spline settings (the same properties, defaults and
tooltips as the operator, so the sidebar and F3 / menu calls agree) and
``scene.anim_signals.last_fit`` the numbers of the last fit, drawn by the sidebar panel.
Likewise ``.loop`` / ``.last_loop`` (Make Cyclic), ``.blend`` / ``.last_blend`` (Blend Actions) and
``.compare`` / ``.last_compare`` / ``.compare_results`` (Compare Actions, one item per action).
Pose space: ``.pose_space`` (Build Pose Space settings), ``.pose_space_resample`` (Resample),
``.pose_space_bake`` (Bake) and ``.last_pose_space`` (the last build's numbers and the last bake).
"""


import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    FloatProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from ..operators.motion_ops import (
    BLEND_SETTINGS,
    COMPARE_SETTINGS,
    LOOP_SETTINGS,
    ANIM_SIGNALS_OT_blend_actions,
    ANIM_SIGNALS_OT_compare_actions,
    ANIM_SIGNALS_OT_make_cyclic,
)
from ..operators.pose_space_ops import (
    BAKE_SETTINGS,
    BUILD_SETTINGS,
    RESAMPLE_SETTINGS,
    ANIM_SIGNALS_OT_build_pose_space,
    ANIM_SIGNALS_OT_pose_space_bake,
    ANIM_SIGNALS_OT_pose_space_resample,
)
from .motion_db_props import AnimSignalsMotionDB, AnimSignalsMotionDBAction  # motion database


def _settings_annotations(op_cls, names) -> dict:
    ops = op_cls.__annotations__
    return {name: ops[name] for name in names}


def _settings_group(name: str, op_cls, names, doc: str):
    """A PropertyGroup reusing the operator's property definitions (built when this module loads)."""
    return type(name, (bpy.types.PropertyGroup,), {"__annotations__": _settings_annotations(op_cls, names), "__doc__": doc})


AnimSignalsLoopSettings = _settings_group("AnimSignalsLoopSettings", ANIM_SIGNALS_OT_make_cyclic, LOOP_SETTINGS, "Make Cyclic settings")
AnimSignalsBlendSettings = _settings_group(
    "AnimSignalsBlendSettings", ANIM_SIGNALS_OT_blend_actions, BLEND_SETTINGS, "Blend Actions settings"
)
AnimSignalsCompareSettings = _settings_group(
    "AnimSignalsCompareSettings", ANIM_SIGNALS_OT_compare_actions, COMPARE_SETTINGS, "Compare Actions settings"
)
AnimSignalsPoseSpaceSettings = _settings_group(
    "AnimSignalsPoseSpaceSettings", ANIM_SIGNALS_OT_build_pose_space, BUILD_SETTINGS, "Build Pose Space settings"
)
AnimSignalsPoseSpaceResampleSettings = _settings_group(
    "AnimSignalsPoseSpaceResampleSettings", ANIM_SIGNALS_OT_pose_space_resample, RESAMPLE_SETTINGS,
    "Resample Pose Space settings",
)
AnimSignalsPoseSpaceBakeSettings = _settings_group(
    "AnimSignalsPoseSpaceBakeSettings", ANIM_SIGNALS_OT_pose_space_bake, BAKE_SETTINGS, "Bake Pose Space settings"
)


class AnimSignalsLoopResult(bpy.types.PropertyGroup):
    """Numbers of the last Make Cyclic run (read-only in the UI)."""

    valid: BoolProperty(name="Valid", description="There is a result to show", default=False)  # type: ignore[valid-type]
    object_name: StringProperty(name="Object", description="The object whose animation was looped")  # type: ignore[valid-type]
    action_name: StringProperty(name="Action", description="The action holding the looped keys")  # type: ignore[valid-type]
    frame_start: IntProperty(name="Start", description="First frame of the cycle")  # type: ignore[valid-type]
    frame_end: IntProperty(name="End", description="Last frame of the cycle (the first frame's pose)")  # type: ignore[valid-type]
    auto_range: BoolProperty(name="Found Cycle", description="The cycle's range was found automatically")  # type: ignore[valid-type]
    curves: IntProperty(name="Curves", description="Number of F-curves looped")  # type: ignore[valid-type]
    travel_channels: IntProperty(name="Travel Channels", description="Root location channels kept travelling (looped as velocity)")  # type: ignore[valid-type]
    pose_before_deg: FloatProperty(name="Seam Pose Before", description="Largest jump of a rotation channel where the original repeats (degrees)")  # type: ignore[valid-type]
    pose_after_deg: FloatProperty(name="Seam Pose After", description="Largest jump of a rotation channel where the loop repeats (degrees)")  # type: ignore[valid-type]
    velocity_before_deg: FloatProperty(name="Seam Velocity Before", description="Largest change of a rotation channel's frame-to-frame step across the original's seam (degrees per frame)")  # type: ignore[valid-type]
    velocity_after_deg: FloatProperty(name="Seam Velocity After", description="Largest change of a rotation channel's frame-to-frame step across the loop's seam (degrees per frame)")  # type: ignore[valid-type]
    pose_before_loc: FloatProperty(name="Seam Location Before", description="Largest jump of a location channel at the original's seam (travel excluded)", subtype="DISTANCE")  # type: ignore[valid-type]
    pose_after_loc: FloatProperty(name="Seam Location After", description="Largest jump of a location channel at the loop's seam (travel excluded)", subtype="DISTANCE")  # type: ignore[valid-type]
    velocity_before_loc: FloatProperty(name="Seam Location Velocity Before", description="Largest change of a location channel's step across the original's seam", subtype="DISTANCE")  # type: ignore[valid-type]
    velocity_after_loc: FloatProperty(name="Seam Location Velocity After", description="Largest change of a location channel's step across the loop's seam", subtype="DISTANCE")  # type: ignore[valid-type]
    joint_pose_before_cm: FloatProperty(name="Joint Seam Before", description="Armatures: largest world-space joint jump at the original's seam (cm, travel excluded). Negative: not an armature", default=-1.0)  # type: ignore[valid-type]
    joint_pose_after_cm: FloatProperty(name="Joint Seam After", description="Armatures: largest world-space joint jump at the loop's seam (cm, travel excluded). Negative: not an armature", default=-1.0)  # type: ignore[valid-type]
    joint_velocity_before_cm: FloatProperty(name="Joint Velocity Seam Before", description="Armatures: largest change of a joint's world-space step across the original's seam (cm per frame)", default=-1.0)  # type: ignore[valid-type]
    joint_velocity_after_cm: FloatProperty(name="Joint Velocity Seam After", description="Armatures: largest change of a joint's world-space step across the loop's seam (cm per frame)", default=-1.0)  # type: ignore[valid-type]
    rms_deviation_deg: FloatProperty(name="RMS Change", description="Root-mean-square change of the rotation channels from the original (degrees)")  # type: ignore[valid-type]
    rms_deviation_loc: FloatProperty(name="RMS Location Change", description="Root-mean-square change of the location channels from the original", subtype="DISTANCE")  # type: ignore[valid-type]
    iterations: IntProperty(name="Iterations", description="Newton iterations of the closure projection")  # type: ignore[valid-type]
    converged: BoolProperty(name="Converged", description="The closure projection reached its tolerance")  # type: ignore[valid-type]
    seconds: FloatProperty(name="Time", description="Seconds the loop took", unit="TIME_ABSOLUTE")  # type: ignore[valid-type]


class AnimSignalsBlendResult(bpy.types.PropertyGroup):
    """What the last Blend Actions run made (read-only in the UI)."""

    valid: BoolProperty(name="Valid", description="There is a result to show", default=False)  # type: ignore[valid-type]
    action_names: StringProperty(name="Actions", description="The blended actions made")  # type: ignore[valid-type]
    channels: IntProperty(name="Channels", description="Channels present in both actions (the ones blended)")  # type: ignore[valid-type]
    closed: BoolProperty(name="Cyclic", description="Blended as closed cycles")  # type: ignore[valid-type]
    assigned_to: StringProperty(name="Assigned To", description="The object (or shape keys) the first blend was assigned to")  # type: ignore[valid-type]
    missing_in_a: IntProperty(name="Missing in A", description="Channels of B that A lacks (left out)")  # type: ignore[valid-type]
    missing_in_b: IntProperty(name="Missing in B", description="Channels of A that B lacks (left out)")  # type: ignore[valid-type]
    seconds: FloatProperty(name="Time", description="Seconds the blend took", unit="TIME_ABSOLUTE")  # type: ignore[valid-type]


class AnimSignalsCompareResult(bpy.types.PropertyGroup):
    """Summary of the last Compare Actions run (read-only in the UI)."""

    valid: BoolProperty(name="Valid", description="There is a result to show", default=False)  # type: ignore[valid-type]
    actions: IntProperty(name="Actions", description="Number of actions compared")  # type: ignore[valid-type]
    clusters: IntProperty(name="Clusters", description="Number of clusters found")  # type: ignore[valid-type]
    reference: StringProperty(name="Reference", description="The active object's action, whose nearest clips are listed")  # type: ignore[valid-type]
    nearest: StringProperty(name="Nearest", description="The clips nearest to the reference action, with their distances")  # type: ignore[valid-type]
    image_name: StringProperty(name="Image", description="The Image datablock holding the dendrogram")  # type: ignore[valid-type]
    image_path: StringProperty(name="Image File", description="The PNG file the dendrogram was written to", subtype="FILE_PATH")  # type: ignore[valid-type]
    metric: StringProperty(name="Metric", description="Distance used (ELASTIC or LINEAR)")  # type: ignore[valid-type]
    features: StringProperty(name="Features", description="What was compared (CHANNELS or BODY)")  # type: ignore[valid-type]
    seconds: FloatProperty(name="Time", description="Seconds the comparison took", unit="TIME_ABSOLUTE")  # type: ignore[valid-type]
    matrix_json: StringProperty(  # type: ignore[valid-type]
        name="Distance Matrix",
        description='The full result as JSON for scripts: {"actions": [...], "distances": [[...]], "clusters": [...]}',
    )


class AnimSignalsCompareItem(bpy.types.PropertyGroup):
    """One compared action: its cluster and distance to the reference action."""

    action_name: StringProperty(name="Action", description="The compared action")  # type: ignore[valid-type]
    cluster: IntProperty(name="Cluster", description="Cluster number (from 1), also stored on the action as anim_signals_cluster")  # type: ignore[valid-type]
    distance: FloatProperty(name="Distance", description="Distance to the reference action (negative: no reference)", default=-1.0)  # type: ignore[valid-type]
    is_reference: BoolProperty(name="Reference", description="This is the active object's action")  # type: ignore[valid-type]


# ---- pose-space canvas (operators/pose_space_canvas.py, panels/pose_space_panel.py) ------------------


class AnimSignalsPoseSpaceCanvasSettings(bpy.types.PropertyGroup):
    """Settings of the pose-space canvas in the 3D Viewport sidebar"""

    height: IntProperty(  # type: ignore[valid-type]
        name="Canvas Height",
        description="Height of the pose-space canvas in the sidebar, in UI units",
        default=12,
        min=6,
        max=40,
    )
    sketch_frames: IntProperty(  # type: ignore[valid-type]
        name="Sketch Frames",
        description="Frames of a sequence made by sketching a stroke (0: as many as the current sequence)",
        default=0,
        min=0,
        soft_max=1000,
    )
    png_path: StringProperty(  # type: ignore[valid-type]
        name="PNG File",
        description='Where Save PNG writes the canvas ("": <object>_pose_space.png next to the .blend, or in the temp folder)',
        default="",
        subtype="FILE_PATH",
    )

# ---- end pose-space canvas ----------------------------------------------------------------------------


class AnimSignalsPoseSpaceResult(bpy.types.PropertyGroup):
    """Numbers of the last Build Pose Space run and the last bake (read-only in the UI)."""

    valid: BoolProperty(name="Valid", description="There is a result to show", default=False)  # type: ignore[valid-type]
    object_name: StringProperty(name="Pose Space", description="The object holding the pose space (\"<name>.posespace\" for meshes, the armature itself)")  # type: ignore[valid-type]
    source_object: StringProperty(name="Source", description="The object whose animation was read")  # type: ignore[valid-type]
    source: StringProperty(name="Source Type", description="What the frames were made of: ACTION, SHAPE_KEYS or MESH")  # type: ignore[valid-type]
    frame_start: IntProperty(name="Start", description="First frame read")  # type: ignore[valid-type]
    frame_end: IntProperty(name="End", description="Last frame read")  # type: ignore[valid-type]
    n: IntProperty(name="Frames (n)", description="Number of frames read")  # type: ignore[valid-type]
    k: IntProperty(name="Control Points (k)", description="Control points of the time-signal curve")  # type: ignore[valid-type]
    l: IntProperty(name="Sites (l)", description="Thin-plate spline sites of the pose signal")  # type: ignore[valid-type]  # noqa: E741
    m: IntProperty(name="Components (m)", description="Shape components (shape keys of the pose-space object)")  # type: ignore[valid-type]
    values: IntProperty(name="Values per Frame", description="Numbers per frame: 3 x vertices, or armature channels")  # type: ignore[valid-type]
    rms_error: FloatProperty(name="RMS Error", description="Root-mean-square reconstruction error per vertex (scene units) or per channel (degrees)", precision=5)  # type: ignore[valid-type]
    max_error: FloatProperty(name="Max Error", description="Largest reconstruction error of a vertex (scene units) or channel (degrees) at any frame", precision=5)  # type: ignore[valid-type]
    error_units: StringProperty(name="Error Units", description='"deg" for armatures (degrees), empty for meshes (scene units)')  # type: ignore[valid-type]
    tolerance: FloatProperty(name="Tolerance Used", description="The tolerance k, l and m were chosen for (0: exact interpolation)", precision=5)  # type: ignore[valid-type]
    seconds: FloatProperty(name="Time", description="Seconds the build took", unit="TIME_ABSOLUTE")  # type: ignore[valid-type]
    baked_action: StringProperty(name="Baked Action", description="The action written by the last bake or resample")  # type: ignore[valid-type]
    bake_frame_start: IntProperty(name="Baked Start", description="First frame of the last bake")  # type: ignore[valid-type]
    bake_frame_end: IntProperty(name="Baked End", description="Last frame of the last bake")  # type: ignore[valid-type]


classes = (
    AnimSignalsLoopSettings,
    AnimSignalsLoopResult,
    AnimSignalsBlendSettings,
    AnimSignalsBlendResult,
    AnimSignalsCompareSettings,
    AnimSignalsCompareResult,
    AnimSignalsCompareItem,
    AnimSignalsPoseSpaceSettings,
    AnimSignalsPoseSpaceResampleSettings,
    AnimSignalsPoseSpaceBakeSettings,
    AnimSignalsPoseSpaceResult,
    AnimSignalsPoseSpaceCanvasSettings,  # pose-space canvas
    AnimSignalsMotionDBAction,  # motion database
    AnimSignalsMotionDB,  # motion database
)
# Fields of ``Scene.anim_signals`` for the tools not yet in their own package (operators/scene_settings.py).
SCENE_PROPERTIES = {
    "loop": PointerProperty(type=AnimSignalsLoopSettings),
    "last_loop": PointerProperty(type=AnimSignalsLoopResult),
    "blend": PointerProperty(type=AnimSignalsBlendSettings),
    "last_blend": PointerProperty(type=AnimSignalsBlendResult),
    "compare": PointerProperty(type=AnimSignalsCompareSettings),
    "last_compare": PointerProperty(type=AnimSignalsCompareResult),
    "compare_results": CollectionProperty(type=AnimSignalsCompareItem),
    "compare_index": IntProperty(name="Active Result", description="The selected row of the comparison results", default=0),
    "pose_space": PointerProperty(type=AnimSignalsPoseSpaceSettings),
    "pose_space_resample": PointerProperty(type=AnimSignalsPoseSpaceResampleSettings),
    "pose_space_bake": PointerProperty(type=AnimSignalsPoseSpaceBakeSettings),
    "last_pose_space": PointerProperty(type=AnimSignalsPoseSpaceResult),
    "pose_space_canvas": PointerProperty(type=AnimSignalsPoseSpaceCanvasSettings),
    "motion_db": PointerProperty(type=AnimSignalsMotionDB),
}


PROPERTY_CLASSES = classes
