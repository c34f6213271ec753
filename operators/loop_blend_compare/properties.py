"""Make Cyclic, Blend Actions and Compare Actions settings (one definition each for the operator
and the sidebar) and the numbers of their last runs.

The scene holds ``.loop`` / ``.last_loop`` (Make Cyclic), ``.blend`` / ``.last_blend`` (Blend
Actions) and ``.compare`` / ``.last_compare`` / ``.compare_results`` / ``.compare_index`` (Compare
Actions, one row per compared action) on ``Scene.anim_signals``.
"""

from __future__ import annotations

import json

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    StringProperty,
)

from ..common.settings import setting_names
from .clips import MIN_FRAMES

__all__ = [
    "BLEND_SETTINGS",
    "COMPARE_SETTINGS",
    "LOOP_SETTINGS",
    "AnimSignalsBlendResult",
    "AnimSignalsBlendSettings",
    "AnimSignalsCompareItem",
    "AnimSignalsCompareResult",
    "AnimSignalsCompareSettings",
    "AnimSignalsLoopResult",
    "AnimSignalsLoopSettings",
    "BlendSettings",
    "CompareSettings",
    "LoopSettings",
]

RANGE_ITEMS = [
    ("ACTION", "Action Range", "Loop the action's whole frame range"),
    ("CUSTOM", "Custom", "Loop the frames from Start to End"),
    ("AUTO", "Find Cycle", "Find the best cycle inside the clip (between the min and max period) and loop that"),
]
TRAVEL_ITEMS = [
    ("AUTO", "Root Travels", "The root's horizontal location (object X/Y, or the root bone's horizontal axes) keeps "
     "moving from cycle to cycle: only its velocity is looped"),
    ("NONE", "In Place", "Every channel, root location included, returns to its start value"),
]
CYCLIC_ITEMS = [
    ("AUTO", "Auto", "Closed when both clips have Cycles modifiers or end close to where they start"),
    ("OPEN", "Open", "Blend as open clips (start and end poses blended separately)"),
    ("CLOSED", "Closed", "Blend as cycles: every blend is a seamless loop (Cycles modifiers added)"),
]
FEATURE_ITEMS = [
    ("CHANNELS", "Rotation Channels", "Compare the rotation curves by name: all actions need the same bones"),
    ("BODY", "Body", "Compare world-space body features (limb directions): works across different rigs; "
     "each action is played on an armature that uses it, or on the active armature"),
]
METRIC_ITEMS = [
    ("ELASTIC", "Elastic", "Geodesic distance on the motion manifold with optimal time warping (Eslitzbichler's method)"),
    ("LINEAR", "Linear", "Plain L2 distance between the resampled curves (baseline)"),
]


class LoopSettings:
    """The Make Cyclic settings: inherited by the operator and by the scene's settings group."""

    range_mode: EnumProperty(  # type: ignore[valid-type]
        name="Range",
        description="Which frames become the cycle: the action's range, a custom range, or the best cycle found in the clip",
        items=RANGE_ITEMS,
        default="ACTION",
    )
    frame_start: IntProperty(  # type: ignore[valid-type]
        name="Start",
        description="First frame of the cycle (Custom range)",
        default=1,
    )
    frame_end: IntProperty(  # type: ignore[valid-type]
        name="End",
        description="Last frame of the cycle (Custom range): it gets the first frame's pose",
        default=100,
    )
    min_period: IntProperty(  # type: ignore[valid-type]
        name="Min Period",
        description="Shortest cycle to look for, in frames (Find Cycle; 0: automatic: the first clear repeat of the motion)",
        default=0,
        min=0,
    )
    max_period: IntProperty(  # type: ignore[valid-type]
        name="Max Period",
        description="Longest cycle to look for, in frames (Find Cycle; 0: automatic)",
        default=0,
        min=0,
    )
    velocity_window: IntProperty(  # type: ignore[valid-type]
        name="Velocity Window",
        description="Frames at each end over which the velocity is matched across the seam (0: automatic)",
        default=0,
        min=0,
        max=100000,
        soft_max=60,
    )
    travel: EnumProperty(  # type: ignore[valid-type]
        name="Travel",
        description="Whether the root keeps travelling forward from cycle to cycle (locomotion) or loops in place",
        items=TRAVEL_ITEMS,
        default="AUTO",
    )
    add_cycles: BoolProperty(  # type: ignore[valid-type]
        name="Add Cycles Modifiers",
        description="Add a Cycles F-modifier (Repeat with Offset) to every looped curve, so the loop plays forever "
        "and travelling roots keep moving forward",
        default=True,
    )
    keep_original: BoolProperty(  # type: ignore[valid-type]
        name="Keep Original",
        description='Leave the original action untouched and assign a looped copy named "<action>.loop"',
        default=True,
    )


class BlendSettings:
    """The Blend Actions settings: inherited by the operator and by the scene's settings group."""

    action_a: StringProperty(  # type: ignore[valid-type]
        name="Action A",
        description="The first action (weight 0 gives this one)",
        default="",
    )
    action_b: StringProperty(  # type: ignore[valid-type]
        name="Action B",
        description="The second action (weight 1 gives this one)",
        default="",
    )
    weight: FloatProperty(  # type: ignore[valid-type]
        name="Weight",
        description="How far from A towards B the blend lies (0: A, 1: B)",
        default=0.5,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
    )
    count: IntProperty(  # type: ignore[valid-type]
        name="In-betweens",
        description="Make this many evenly spaced blends between A and B instead of one at Weight (0: one blend at Weight). "
                    "Each is a new action: at most 100",
        default=0,
        min=0,
        max=100,
        soft_max=10,
    )
    cyclic: EnumProperty(  # type: ignore[valid-type]
        name="Cyclic",
        description="Blend as open clips or as seamless cycles",
        items=CYCLIC_ITEMS,
        default="AUTO",
    )
    align: BoolProperty(  # type: ignore[valid-type]
        name="Align Timing",
        description="Time-warp B onto A before blending (optimal reparametrisation), so matching phases blend together",
        default=True,
    )
    assign: BoolProperty(  # type: ignore[valid-type]
        name="Assign",
        description="Assign the (first) blended action to the active object when it can play it",
        default=True,
    )


class CompareSettings:
    """The Compare Actions settings: inherited by the operator and by the scene's settings group."""

    actions: StringProperty(  # type: ignore[valid-type]
        name="Actions",
        description='Comma-separated action names to compare; a name holding a comma goes in double quotes, as in '
        '"Walk, fast", Run (empty: every action in the file)',
        default="",
    )
    features: EnumProperty(  # type: ignore[valid-type]
        name="Features",
        description="What is compared: rotation channels by name (one skeleton) or body features (any rigs)",
        items=FEATURE_ITEMS,
        default="CHANNELS",
    )
    metric: EnumProperty(  # type: ignore[valid-type]
        name="Metric",
        description="Elastic (geodesic, time-warped) or linear distance",
        items=METRIC_ITEMS,
        default="ELASTIC",
    )
    cyclic: BoolProperty(  # type: ignore[valid-type]
        name="As Cycles",
        description="Compare clips as closed cycles (each projected to a loop first; start point and speed factored "
        "out), as Eslitzbichler does for clustering",
        default=True,
    )
    n_samples: IntProperty(  # type: ignore[valid-type]
        name="Samples",
        description="Samples per clip for the comparison (clips of any length are resampled to this)",
        default=100,
        min=MIN_FRAMES,
        max=10000,
        soft_max=400,
    )
    n_clusters: IntProperty(  # type: ignore[valid-type]
        name="Clusters",
        description="Number of clusters (0: automatic, the cut of the dendrogram with the best silhouette, 2 to 10 clusters)",
        default=0,
        min=0,
        max=1000,
        soft_max=20,
    )
    image_path: StringProperty(  # type: ignore[valid-type]
        name="Image File",
        description="Where the dendrogram PNG is written (empty: next to the saved .blend, else the temp folder)",
        default="",
        subtype="FILE_PATH",
    )


LOOP_SETTINGS = setting_names(LoopSettings)
BLEND_SETTINGS = setting_names(BlendSettings)
COMPARE_SETTINGS = setting_names(CompareSettings)


class AnimSignalsLoopSettings(LoopSettings, bpy.types.PropertyGroup):
    """Make Cyclic settings"""


class AnimSignalsBlendSettings(BlendSettings, bpy.types.PropertyGroup):
    """Blend Actions settings"""


class AnimSignalsCompareSettings(CompareSettings, bpy.types.PropertyGroup):
    """Compare Actions settings"""


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

    def store(self, summary) -> None:
        """Keep a finished loop's numbers (a ``loop.LoopSummary``) for the sidebar."""
        self.valid = True
        self.object_name = summary.object_name
        self.action_name = ", ".join(summary.action_names)
        for name in ("frame_start", "frame_end", "auto_range", "curves", "travel_channels", "iterations", "converged"):
            setattr(self, name, getattr(summary, name))
        for name in ("pose_before_deg", "pose_after_deg", "velocity_before_deg", "velocity_after_deg",
                     "pose_before_loc", "pose_after_loc", "velocity_before_loc", "velocity_after_loc",
                     "joint_pose_before_cm", "joint_pose_after_cm", "joint_velocity_before_cm",
                     "joint_velocity_after_cm", "rms_deviation_deg", "rms_deviation_loc", "seconds"):
            setattr(self, name, float(getattr(summary, name)))


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

    def store(self, summary) -> None:
        """Keep a finished blend's numbers (a ``blend.BlendSummary``) for the sidebar."""
        self.valid = True
        self.action_names = ", ".join(summary.action_names)
        for name in ("channels", "closed", "assigned_to", "missing_in_a", "missing_in_b", "seconds"):
            setattr(self, name, getattr(summary, name))


class AnimSignalsCompareItem(bpy.types.PropertyGroup):
    """One compared action: its cluster and distance to the reference action."""

    action_name: StringProperty(name="Action", description="The compared action")  # type: ignore[valid-type]
    cluster: IntProperty(name="Cluster", description="Cluster number (from 1), also stored on the action as anim_signals_cluster")  # type: ignore[valid-type]
    distance: FloatProperty(name="Distance", description="Distance to the reference action (negative: no reference)", default=-1.0)  # type: ignore[valid-type]
    is_reference: BoolProperty(name="Reference", description="This is the active object's action")  # type: ignore[valid-type]


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

    def store(self, summary, rows) -> None:
        """Keep a finished comparison (a ``compare.CompareSummary``) for the sidebar and scripts.

        Parameters
        ----------
        summary : compare.CompareSummary
            The comparison's numbers.
        rows : bpy_prop_collection of AnimSignalsCompareItem
            The scene's ``compare_results``: refilled with one row per action, in dendrogram order.
        """
        self.valid = True
        self.actions = len(summary.names)
        self.clusters = summary.n_clusters
        self.reference = summary.reference
        self.nearest = ", ".join(f"{n} ({d:.3g})" for n, d in summary.nearest)
        for name in ("image_name", "image_path", "metric", "features", "seconds"):
            setattr(self, name, getattr(summary, name))
        self.matrix_json = json.dumps({"actions": summary.names, "distances": summary.distances,
                                       "clusters": summary.labels, "metric": summary.metric,
                                       "features": summary.features})
        rows.clear()
        n = len(summary.names)
        order = summary.leaves if sorted(summary.leaves) == list(range(n)) else list(range(n))
        for i in order:
            row = rows.add()
            row.action_name = summary.names[i]
            row.cluster = summary.labels[i]
            row.distance = summary.distances_to_reference[i] if summary.distances_to_reference else -1.0
            row.is_reference = summary.names[i] == summary.reference


classes = (
    AnimSignalsLoopSettings,
    AnimSignalsLoopResult,
    AnimSignalsBlendSettings,
    AnimSignalsBlendResult,
    AnimSignalsCompareSettings,
    AnimSignalsCompareResult,
    AnimSignalsCompareItem,
)

# The tool's fields of ``Scene.anim_signals`` (see operators/scene_settings.py).
SCENE_PROPERTIES = {
    "loop": bpy.props.PointerProperty(type=AnimSignalsLoopSettings),
    "last_loop": bpy.props.PointerProperty(type=AnimSignalsLoopResult),
    "blend": bpy.props.PointerProperty(type=AnimSignalsBlendSettings),
    "last_blend": bpy.props.PointerProperty(type=AnimSignalsBlendResult),
    "compare": bpy.props.PointerProperty(type=AnimSignalsCompareSettings),
    "last_compare": bpy.props.PointerProperty(type=AnimSignalsCompareResult),
    "compare_results": CollectionProperty(type=AnimSignalsCompareItem),
    "compare_index": IntProperty(name="Active Result", description="The selected row of the comparison results", default=0),
}
