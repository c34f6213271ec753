"""Spatial Keyframes settings (one definition for the operators and the sidebar) and the last run's
numbers, with the temporal schemes it was compared with.

No ``from __future__ import annotations`` here: Blender reads these classes' annotations as
property objects.
"""

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

__all__ = [
    "BUILD_SETTINGS",
    "AnimSignalsSpatialKeyframesResult",
    "AnimSignalsSpatialKeyframesScheme",
    "AnimSignalsSpatialKeyframesSettings",
    "AnimSignalsStrokeTime",
    "BuildSettings",
]

PROJECTION_ITEMS = [
    ("MDS", "MDS", "Classical multidimensional scaling of the pose distances: fast and deterministic"),
    ("TSNE", "t-SNE", "t-SNE (perplexity 50) of the pose distances: with Optimise and uniform keys the lowest error "
     "in Costa and Esperança's comparison, but the slowest (seconds on a thousand frames)"),
    ("PCA", "PCA", "Principal components of the pose vectors: the fastest, keeps only the two main directions"),
    ("FORCE", "Force Scheme", "Force Scheme (50 iterations) on the pose distances"),
    ("ISOMAP", "Isomap", "Isomap (15 neighbours): distances along the clip's pose manifold"),
    ("LLE", "LLE", "Locally linear embedding (15 neighbours) of the pose vectors"),
    ("RBFP", "RBFP", "Two steps: the key poses placed by MDS, every other frame by an RBF over its distances to them"),
]
SELECTION_ITEMS = [
    ("UNIFORM", "Uniform", "Key poses evenly spread over the clip (the seed's best with t-SNE)"),
    ("SCS", "Curve Simplification", "Keys added where interpolating between keys misses the clip most "
     "(simple curve simplification, Lim and Thalmann)"),
    ("PB", "Position Based", "Keys removed where they matter least, one at a time (Togawa and Okuda)"),
    ("ROLS", "ROLS", "Regularised orthogonal least squares: the poses that explain the others best "
     "(Chen, Chng and Alkadhimi)"),
]
KEY_MODE_ITEMS = [
    ("RATIO", "Ratio", "Markers as a fraction of the clip's frames (Ratio)"),
    ("COUNT", "Count", "A fixed number of markers (Count)"),
]
MIN_MARKERS = 3
"""Fewest markers: the back-projection's linear part needs three markers that span the plane."""


class BuildSettings:
    """Spatial-keyframe settings: inherited by both operators and by the scene's settings group."""

    projection: EnumProperty(  # type: ignore[valid-type]
        name="Projection",
        description="How every frame's pose becomes a point of the plane (the canvas)",
        items=PROJECTION_ITEMS,
        default="MDS",
    )
    selection: EnumProperty(  # type: ignore[valid-type]
        name="Key Poses",
        description="How the key poses (the markers) are chosen among the frames",
        items=SELECTION_ITEMS,
        default="UNIFORM",
    )
    key_mode: EnumProperty(  # type: ignore[valid-type]
        name="Markers By",
        description="Give the number of markers as a fraction of the frames or as a count",
        items=KEY_MODE_ITEMS,
        default="RATIO",
    )
    ratio: FloatProperty(  # type: ignore[valid-type]
        name="Ratio",
        description="Markers per frame (0.03: 3 key poses per 100 frames, the seed's setting); at least "
        f"{MIN_MARKERS} markers are needed",
        default=0.03,
        min=0.001,
        max=1.0,
        precision=3,
    )
    count: IntProperty(  # type: ignore[valid-type]
        name="Count",
        description=f"Number of markers (key poses), at least {MIN_MARKERS} and at most the clip's distinct poses",
        default=8,
        min=MIN_MARKERS,
        soft_max=100,
    )
    optimise: BoolProperty(  # type: ignore[valid-type]
        name="Optimise Projection",
        description="Move every non-key frame's point to where the markers' blend reproduces its pose best "
        "(Costa and Esperança, Algorithm 1): lower error, a little slower",
        default=True,
    )


BUILD_SETTINGS = setting_names(BuildSettings)


class AnimSignalsSpatialKeyframesSettings(BuildSettings, bpy.types.PropertyGroup):
    """Spatial Keyframes settings of the scene (the sidebar's values)"""

    record_frames: IntProperty(  # type: ignore[valid-type]
        name="Record Frames",
        description="Frames of a recorded motion: 0 times it by the drag (the hand's speed is the motion's, at the "
        "scene's frame rate); more spreads the stroke evenly over that many frames. A recording blends rotations "
        "only: the root bone holds its location",
        default=0,
        min=0,
        soft_max=1000,
    )


class AnimSignalsStrokeTime(bpy.types.PropertyGroup):
    """When one point of a recorded stroke was drawn"""

    seconds: FloatProperty(name="Seconds", description="Time of the stroke point, in seconds (any origin)")  # type: ignore[valid-type]


class AnimSignalsSpatialKeyframesScheme(bpy.types.PropertyGroup):
    """One scheme of the last compaction's comparison (read-only in the UI)"""

    kind: StringProperty(name="Kind", description="TEMPORAL (keys in time) or SPATIAL (markers on the plane)")  # type: ignore[valid-type]
    scheme: StringProperty(name="Scheme", description="linear, hermite, slerp or rbf (temporal); the projection (spatial)")  # type: ignore[valid-type]
    error: FloatProperty(name="Error", description="Error per frame per joint: the seed's pose distance (weighted radians)", precision=5)  # type: ignore[valid-type]
    size: FloatProperty(name="Size", description="Numbers stored (the seed's eqs. 3 and 4)")  # type: ignore[valid-type]
    size_ratio: FloatProperty(name="Size Ratio", description="Size over the uncompressed clip's (eq. 2)", precision=4)  # type: ignore[valid-type]


class AnimSignalsSpatialKeyframesResult(bpy.types.PropertyGroup):
    """Numbers of the last Spatial Keyframes build or compaction (read-only in the UI)."""

    valid: BoolProperty(name="Valid", description="There is a result to show", default=False)  # type: ignore[valid-type]
    compacted: BoolProperty(name="Compacted", description="The last run rewrote the action (Compact Action)")  # type: ignore[valid-type]
    object_name: StringProperty(name="Object", description="The armature the model is stored on")  # type: ignore[valid-type]
    action_name: StringProperty(name="Action", description="The action the model was built from")  # type: ignore[valid-type]
    written_action: StringProperty(name="Compacted Action", description="The action Compact Action wrote (key poses + 2D trajectory played back)")  # type: ignore[valid-type]
    frames: IntProperty(name="Frames", description="Frames read")  # type: ignore[valid-type]
    markers: IntProperty(name="Markers", description="Key poses (markers on the plane)")  # type: ignore[valid-type]
    joints: IntProperty(name="Joints", description="Bones whose rotations the model holds")  # type: ignore[valid-type]
    error: FloatProperty(name="Error", description="Error per frame per joint of the spatial keyframes: the seed's pose distance (weighted radians)", precision=5)  # type: ignore[valid-type]
    size: FloatProperty(name="Size", description="Numbers stored by the spatial keyframes (the seed's eq. 4)")  # type: ignore[valid-type]
    size_ratio: FloatProperty(name="Size Ratio", description="Size over the uncompressed clip's (eq. 2)", precision=4)  # type: ignore[valid-type]
    best_temporal: StringProperty(name="Best Temporal", description="The temporal scheme with the lowest error at the same keys")  # type: ignore[valid-type]
    best_temporal_error: FloatProperty(name="Best Temporal Error", description="Its error per frame per joint", precision=5)  # type: ignore[valid-type]
    seconds: FloatProperty(name="Time", description="Seconds the run took", unit="TIME_ABSOLUTE")  # type: ignore[valid-type]
    schemes: CollectionProperty(type=AnimSignalsSpatialKeyframesScheme, name="Schemes", description="The compaction's comparison, one row per scheme")  # type: ignore[valid-type]

    def store(self, summary) -> None:
        """Keep a finished run's numbers (a ``building.BuildSummary``) for the sidebar."""
        self.valid = True
        for name in ("compacted", "object_name", "action_name", "written_action", "frames", "markers", "joints",
                     "error", "size", "size_ratio", "best_temporal", "best_temporal_error", "seconds"):
            setattr(self, name, getattr(summary, name))
        self.schemes.clear()
        for row in summary.rows:
            item = self.schemes.add()
            item.kind, item.scheme = row["kind"].upper(), row["scheme"]
            item.error, item.size, item.size_ratio = row["error"], row["size"], row["size_ratio"]


classes = (AnimSignalsSpatialKeyframesSettings, AnimSignalsSpatialKeyframesScheme, AnimSignalsSpatialKeyframesResult,
           AnimSignalsStrokeTime)

# The tool's fields of ``Scene.anim_signals`` (see operators/scene_settings.py).
SCENE_PROPERTIES = {
    "spatial_keyframes": bpy.props.PointerProperty(type=AnimSignalsSpatialKeyframesSettings),
    "last_spatial_keyframes": bpy.props.PointerProperty(type=AnimSignalsSpatialKeyframesResult),
}
