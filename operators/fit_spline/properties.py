"""Fit Spline settings (one definition for the operator and the sidebar) and the last fit's numbers."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..common.settings import setting_names

__all__ = ["AnimSignalsFitResult", "AnimSignalsFitSettings", "FIT_SETTINGS", "FitSettings"]

CHANNEL_ITEMS = [
    ("ALL", "All", "Fit every F-curve of the action"),
    ("SELECTED", "Selected", "Fit only the F-curves selected in the Graph Editor"),
]
MODE_ITEMS = [
    ("FEWEST", "Fewest Keys", "Every curve gets the fewest keys on its own frames: keys on original frames, "
     "each key's value within the max error of the original, each segment with its own free handles (broken "
     "tangents). Fast; the spline settings do not apply"),
    ("EDITABLE", "Editable Keys", "Few keys on original samples with ALIGNED handles (smooth tangents you can edit), "
     "broken only at corners and contacts. A few more keys than Fewest Keys"),
    ("AUTO", "Auto Spline", "Spline keys: per-curve knots, and shared knots too unless the per-curve keys show they would "
     "write more; keeps whichever writes fewer keys"),
    ("LATENT", "Shared Keys", "All curves share the same key frames (Mukai's latent spline of the whole pose): "
     "reads like hand-keyed poses in the Dope Sheet"),
    ("PER_CHANNEL", "Per Curve Spline", "Spline keys, every curve its own key frames (knots by CMA-ES)"),
]
SHARE_ITEMS = [
    ("CURVE", "Each Curve", "Every curve gets its own key frames (Shared Keys mode: all curves share theirs)"),
    ("BONE", "Per Bone", "The curves of one bone (or of the object's own transforms) share their key frames: "
     "a bone is keyed on whole poses"),
    ("ALL", "All Curves", "All fitted curves share their key frames, like hand-keyed poses of the whole rig "
     "(with Channels: Selected, the selected curves). With Fewest Keys and the Joints error space, a pose "
     "is keyed only where the joints would leave the max joint error"),
]
TARGET_ITEMS = [
    ("AUTO", "Auto", "The object's action and its shape-key action, whichever are animated"),
    ("OBJECT", "Object", "The object's own action (object transforms, bones, any animated property)"),
    ("SHAPE_KEYS", "Shape Keys", "The action animating the object's shape keys"),
]
ERROR_SPACE_ITEMS = [
    ("PER_CURVE", "Per Curve", "Every curve within its own max error (degrees, scene units, plain values)"),
    ("JOINTS", "Joints", "Armatures: every joint within a distance in cm, as a viewer sees it. Per-curve tolerances "
     "come from the bone lengths (errors add up along each chain), then every original frame is checked "
     "in world space and chains that miss are tightened and refitted"),
]
CONTINUITY_ITEMS = [
    ("C1", "Free Slopes", "Every key gets its own slope, like hand-made Bezier keys (usually the fewest keys)"),
    ("C2", "Smooth", "Keys with continuous curvature (C2 spline): smoothest motion, usually more keys"),
    ("AUTO", "Auto", "Try both, keep whichever writes fewer keys (slower)"),
]


class FitSettings:
    """The Fit Spline settings: inherited by the operator and by the scene's settings group."""

    target: EnumProperty(  # type: ignore[valid-type]
        name="Target",
        description="Which animation of the active object to fit: its own action, its shape keys', or both",
        items=TARGET_ITEMS,
        default="AUTO",
    )
    channels: EnumProperty(  # type: ignore[valid-type]
        name="Channels",
        description="Fit every F-curve of the action, or only the curves selected in the Graph Editor",
        items=CHANNEL_ITEMS,
        default="ALL",
    )
    mode: EnumProperty(  # type: ignore[valid-type]
        name="Mode",
        description="Fewest keys per curve (the default), shared keys on the same frames for all curves "
        "(easy to edit poses), or spline keys with knots placed by the optimiser",
        items=MODE_ITEMS,
        default="FEWEST",
    )
    share_keys: EnumProperty(  # type: ignore[valid-type]
        name="Share Keys",
        description="Which curves are keyed on the same frames, so the result reads like keyed poses in the "
        "Dope Sheet (a few more keys than each curve on its own frames)",
        items=SHARE_ITEMS,
        default="CURVE",
    )
    continuity: EnumProperty(  # type: ignore[valid-type]
        name="Keys",
        description="Smooth spline keys, or keys with their own slopes like hand-made Bezier keys",
        items=CONTINUITY_ITEMS,
        default="C1",
    )
    error_space: EnumProperty(  # type: ignore[valid-type]
        name="Error Space",
        description="Bound each curve's own error, or (armatures) the distance every joint moves in world space",
        items=ERROR_SPACE_ITEMS,
        default="PER_CURVE",
    )
    max_joint_error: FloatProperty(  # type: ignore[valid-type]
        name="Max Joint Error",
        description="Joints error space: the largest distance, in cm (the scene's unit scale honoured), any "
        "bone's head, tail or shell points may move at any original frame",
        default=1.0,
        min=1e-4,
        soft_max=20.0,
        precision=3,
    )
    shell_distance: FloatProperty(  # type: ignore[valid-type]
        name="Shell Distance",
        description="Joints error space: how far from each bone's head, in cm, the points measured along its "
        "three axes sit (like the skin around a bone; larger catches twist errors more strictly)",
        default=3.0,
        min=0.0,
        soft_max=50.0,
        precision=2,
    )
    max_error_rotation: FloatProperty(  # type: ignore[valid-type]
        name="Max Rotation Error",
        description="Largest allowed change of any rotation channel at any original frame, in degrees (Joints error "
        "space: only curves no joint bound covers, such as custom properties; the bones' come from the max joint error)",
        default=0.5,
        min=1e-4,
        soft_max=10.0,
        precision=3,
    )
    max_error_location: FloatProperty(  # type: ignore[valid-type]
        name="Max Location Error",
        description="Largest allowed change of any location channel at any original frame, in scene units (Joints "
        "error space: only curves no joint bound covers; the bones' come from the max joint error)",
        default=0.01,
        min=1e-6,
        soft_max=1.0,
        precision=4,
        subtype="DISTANCE",
    )
    max_error_other: FloatProperty(  # type: ignore[valid-type]
        name="Max Other Error",
        description="Largest allowed change of scale, shape-key and any other channel at any original frame (Joints "
        "error space: only curves no joint bound covers; the bones' come from the max joint error)",
        default=0.01,
        min=1e-6,
        soft_max=1.0,
        precision=4,
    )
    internal_knots: IntProperty(  # type: ignore[valid-type]
        name="Knots",
        description="Number of inner keys to start from (0: automatic, the fewest that meet the max error). "
                    "At most 1000: the optimiser's cost grows with the square of this number",
        default=0,
        min=0,
        max=1000,
        soft_max=200,
    )
    degree: IntProperty(  # type: ignore[valid-type]
        name="Degree",
        description="Spline degree: 3 is smooth cubic motion, 1 is linear between keys",
        default=3,
        min=1,
        max=3,
    )
    population: IntProperty(  # type: ignore[valid-type]
        name="Population",
        description="Candidates per optimiser generation (0: automatic). More explores better, slower",
        default=0,
        min=0,
        max=10000,
        soft_max=500,
    )
    max_iterations: IntProperty(  # type: ignore[valid-type]
        name="Iterations",
        description="Optimiser generations per knot search (0: automatic)",
        default=0,
        min=0,
        max=100000,
        soft_max=500,
    )
    seed: IntProperty(  # type: ignore[valid-type]
        name="Seed",
        description="Random seed of the optimiser: the same seed gives the same keys",
        default=0,
        min=0,
    )
    snap_to_frames: BoolProperty(  # type: ignore[valid-type]
        name="Keys on Whole Frames",
        description="Place every key on a whole frame (may need a few more keys)",
        default=False,
    )
    free_handles: BoolProperty(  # type: ignore[valid-type]
        name="Free Handle Lengths",
        description="After the fit, drop every key that one segment with longer or shorter handles "
        "can replace within the max errors (fewer keys, slower; handles no longer at thirds)",
        default=False,
    )
    keep_original: BoolProperty(  # type: ignore[valid-type]
        name="Keep Original",
        description='Leave the original action untouched and assign a fitted copy named "<action>.fit"',
        default=True,
    )


FIT_SETTINGS = setting_names(FitSettings)


class AnimSignalsFitSettings(FitSettings, bpy.types.PropertyGroup):
    """Fit Spline settings of the scene (the sidebar's values)"""


class AnimSignalsFitResult(bpy.types.PropertyGroup):
    """Numbers of the last Fit Spline run (read-only in the UI)."""

    valid: BoolProperty(default=False)  # type: ignore[valid-type]
    object_name: StringProperty(name="Object")  # type: ignore[valid-type]
    action_name: StringProperty(name="Action", description="The action holding the fitted keys")  # type: ignore[valid-type]
    mode_used: StringProperty(name="Mode", description="Fewest keys (FEWEST), editable keys (EDITABLE), shared keys (LATENT) or per-curve spline keys (PER_CHANNEL)")  # type: ignore[valid-type]
    keyed_frames: IntProperty(name="Keyed Frames", description="Distinct frames that hold a key on any fitted curve")  # type: ignore[valid-type]
    broken_keys: IntProperty(name="Broken Handles", description="Inner keys whose two handles do not point the same way (a corner)")  # type: ignore[valid-type]
    curves: IntProperty(name="Curves", description="Number of F-curves fitted")  # type: ignore[valid-type]
    keys_before: IntProperty(name="Keys Before", description="Keys on the fitted curves before the fit")  # type: ignore[valid-type]
    keys_after: IntProperty(name="Keys After", description="Keys on the fitted curves after the fit")  # type: ignore[valid-type]
    distortion: FloatProperty(  # type: ignore[valid-type]
        name="E_D",
        description="Distortion: 100 x error energy / motion energy (lower is closer to the original; 0 is exact)",
    )
    max_rotation_deg: FloatProperty(name="Max Rotation Error", description="Largest rotation error at any original frame (degrees)")  # type: ignore[valid-type]
    rms_rotation_deg: FloatProperty(name="RMS Rotation Error", description="Root-mean-square rotation error (degrees)")  # type: ignore[valid-type]
    max_location: FloatProperty(name="Max Location Error", description="Largest location error at any original frame", subtype="DISTANCE")  # type: ignore[valid-type]
    rms_location: FloatProperty(name="RMS Location Error", description="Root-mean-square location error", subtype="DISTANCE")  # type: ignore[valid-type]
    max_other: FloatProperty(name="Max Other Error", description="Largest error of scale, shape-key and other curves")  # type: ignore[valid-type]
    rms_other: FloatProperty(name="RMS Other Error", description="Root-mean-square error of scale, shape-key and other curves")  # type: ignore[valid-type]
    joint_error_cm: FloatProperty(  # type: ignore[valid-type]
        name="Max Joint Error",
        description="Armatures: largest world-space distance (cm) between a joint before and after the fit: over sampled "
        "frames (bone heads), or in the Joints error space over every original frame (heads, shell points and tails). "
        "Negative: not an armature",
        default=-1.0,
    )
    within_tolerance: BoolProperty(name="Within Tolerance", description="Every original frame is within the max errors")  # type: ignore[valid-type]
    seconds: FloatProperty(name="Time", description="Seconds the fit took", unit="TIME_ABSOLUTE")  # type: ignore[valid-type]

    def store(self, summary, object_name: str) -> None:
        """Keep a finished fit's numbers (a ``FitSummary``) for the sidebar."""
        self.valid = True
        self.object_name = object_name
        self.action_name = ", ".join(summary.action_names)
        for name in ("mode_used", "curves", "keys_before", "keys_after", "keyed_frames", "broken_keys", "distortion", "max_rotation_deg",
                     "rms_rotation_deg", "max_location", "rms_location", "max_other", "rms_other",
                     "joint_error_cm", "within_tolerance", "seconds"):
            setattr(self, name, getattr(summary, name))


classes = (AnimSignalsFitSettings, AnimSignalsFitResult)

# The tool's fields of ``Scene.anim_signals`` (see operators/scene_settings.py).
SCENE_PROPERTIES = {
    "fit": bpy.props.PointerProperty(type=AnimSignalsFitSettings),
    "last_fit": bpy.props.PointerProperty(type=AnimSignalsFitResult),
}
