"""Pose Space settings (one definition for the operators and the sidebar), the canvas settings, and
the last build's and bake's numbers.

No ``from __future__ import annotations`` here: Blender reads these classes' annotations as
property objects.
"""

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    StringProperty,
)

from ..common.settings import setting_names
from .sources import DEFAULT_TOLERANCE_DEG

__all__ = [
    "BAKE_SETTINGS",
    "BUILD_SETTINGS",
    "RESAMPLE_SETTINGS",
    "AnimSignalsPoseSpaceBakeSettings",
    "AnimSignalsPoseSpaceCanvasSettings",
    "AnimSignalsPoseSpaceResampleSettings",
    "AnimSignalsPoseSpaceResult",
    "AnimSignalsPoseSpaceSettings",
    "AnimSignalsStrokePoint",
    "BakeSettings",
    "BuildSettings",
    "ResampleSettings",
]

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
SHAPE_SPACE_ITEMS = [
    ("VERTEX", "Vertices", "Blend vertex positions: the pose-space object's shape keys (fast, native blending); "
     "large rotations shrink between frames"),
    ("GRADIENT", "Deformation Gradients", "Meshes only: blend per-triangle rotation and stretch, positions recovered "
     "by a sparse Poisson solve; keeps the shape through large rotations (Cashman and Hormann §5). Posing writes "
     "vertex positions, a bake writes a point cache (PC2) played by a Mesh Cache modifier"),
]
CANVAS_UNITS = 12  # default canvas height in UI units


def _set_scene_range(default: bool = False, why: str = ""):
    return BoolProperty(
        name="Set Scene Range",
        description="Set the scene's frame range to the baked frames" + why,
        default=default,
    )


class BuildSettings:
    """Build Pose Space settings: inherited by the operator and by the scene's settings group."""

    source: EnumProperty(  # type: ignore[valid-type]
        name="Source",
        description="What the frames are made of",
        items=SOURCE_ITEMS,
        default="AUTO",
    )
    shape_space: EnumProperty(  # type: ignore[valid-type]
        name="Shape Space",
        description="What the shape signal blends (meshes; armatures always blend their channels)",
        items=SHAPE_SPACE_ITEMS,
        default="VERTEX",
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
        "(0: automatic, 0.2 % of the bounding-box diagonal); with Deformation Gradients measured on the decoded "
        "vertices",
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
        default=DEFAULT_TOLERANCE_DEG,
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
    l: IntProperty(  # type: ignore[valid-type]  # noqa: E741  (the paper's name)
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


class ResampleSettings:
    """Resample Pose Space settings: inherited by the operator and by the scene's settings group."""

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
    # on by default: a resample changes the sequence's length, and a scene range left as it was
    # would cut the new frames off (or play past them)
    set_scene_range: _set_scene_range(True, " (a resample changes the sequence's length)")  # type: ignore[valid-type]


class BakeSettings:
    """Bake Pose Space settings: inherited by the operator and by the scene's settings group."""

    set_scene_range: _set_scene_range()  # type: ignore[valid-type]


BUILD_SETTINGS = setting_names(BuildSettings)
RESAMPLE_SETTINGS = setting_names(ResampleSettings)
BAKE_SETTINGS = setting_names(BakeSettings)


class AnimSignalsPoseSpaceSettings(BuildSettings, bpy.types.PropertyGroup):
    """Build Pose Space settings"""


class AnimSignalsPoseSpaceResampleSettings(ResampleSettings, bpy.types.PropertyGroup):
    """Resample Pose Space settings"""


class AnimSignalsPoseSpaceBakeSettings(BakeSettings, bpy.types.PropertyGroup):
    """Bake Pose Space settings"""


class AnimSignalsPoseSpaceCanvasSettings(bpy.types.PropertyGroup):
    """Settings of the pose-space canvas in the 3D Viewport sidebar"""

    height: IntProperty(  # type: ignore[valid-type]
        name="Canvas Height",
        description="Height of the pose-space canvas in the sidebar, in UI units",
        default=CANVAS_UNITS,
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
    shows: EnumProperty(  # type: ignore[valid-type]
        name="Canvas",
        description="What the canvas shows when the active object has both a pose space and spatial keyframes "
        "(with only one, the canvas shows that one)",
        items=(
            ("POSE_SPACE", "Pose Space", "The pose space: frames, time curve, control points and pins"),
            ("SPATIAL_KEYFRAMES", "Spatial Keyframes", "The spatial keyframes: key poses as markers, the trajectory"),
        ),
        default="POSE_SPACE",
    )
    png_path: StringProperty(  # type: ignore[valid-type]
        name="PNG File",
        description='Where Save PNG writes the canvas ("": <object>_pose_space.png next to the .blend, or in the temp folder)',
        default="",
        subtype="FILE_PATH",
    )


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

    def store(self, summary) -> None:
        """Keep a finished build's numbers (a ``building.BuildSummary``) for the sidebar."""
        self.valid = True
        self.object_name = summary.object_name
        self.source_object = summary.source_object
        self.source = summary.source
        self.frame_start = int(round(summary.frame_start))
        self.frame_end = int(round(summary.frame_end))
        self.n, self.k, self.l, self.m, self.values = summary.n, summary.k, summary.l, summary.m, summary.d
        self.rms_error, self.max_error = float(summary.rms_error), float(summary.max_error)
        self.error_units = summary.error_units
        self.tolerance = float(summary.tolerance)
        self.seconds = float(summary.seconds)

    def store_bake(self, summary) -> None:
        """Keep a finished bake's action and frames (a ``posing.BakeSummary``)."""
        self.baked_action = summary.action_name
        self.bake_frame_start = summary.frame_start
        self.bake_frame_end = summary.frame_end


class AnimSignalsStrokePoint(bpy.types.PropertyGroup):
    """One point of a sketched stroke (pose-space units)"""

    co: FloatVectorProperty(name="Point", description="Pose-space point", size=2)  # type: ignore[valid-type]


classes = (
    AnimSignalsPoseSpaceSettings,
    AnimSignalsPoseSpaceResampleSettings,
    AnimSignalsPoseSpaceBakeSettings,
    AnimSignalsPoseSpaceResult,
    AnimSignalsPoseSpaceCanvasSettings,
    AnimSignalsStrokePoint,
)

# The tool's fields of ``Scene.anim_signals`` (see operators/scene_settings.py).
SCENE_PROPERTIES = {
    "pose_space": bpy.props.PointerProperty(type=AnimSignalsPoseSpaceSettings),
    "pose_space_resample": bpy.props.PointerProperty(type=AnimSignalsPoseSpaceResampleSettings),
    "pose_space_bake": bpy.props.PointerProperty(type=AnimSignalsPoseSpaceBakeSettings),
    "last_pose_space": bpy.props.PointerProperty(type=AnimSignalsPoseSpaceResult),
    "pose_space_canvas": bpy.props.PointerProperty(type=AnimSignalsPoseSpaceCanvasSettings),
}
