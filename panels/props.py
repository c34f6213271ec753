"""Settings stored on the scene: ``Scene.anim_signals`` (one PropertyGroup for all tools).

``scene.anim_signals.fit`` holds the Fit Spline settings (the same properties, defaults and
tooltips as the operator, so the sidebar and F3 / menu calls agree) and
``scene.anim_signals.last_fit`` the numbers of the last fit, drawn by the sidebar panel.
"""


import bpy
from bpy.props import BoolProperty, FloatProperty, IntProperty, PointerProperty, StringProperty

from ..operators.fit import FIT_SETTINGS, ANIM_SIGNALS_OT_fit_latent_spline


def _fit_settings_annotations() -> dict:
    ops = ANIM_SIGNALS_OT_fit_latent_spline.__annotations__
    return {name: ops[name] for name in FIT_SETTINGS}


# The PropertyGroup reuses the operator's property definitions (built when this module loads).
AnimSignalsFitSettings = type(
    "AnimSignalsFitSettings",
    (bpy.types.PropertyGroup,),
    {"__annotations__": _fit_settings_annotations(), "__doc__": "Fit Spline settings"},
)


class AnimSignalsFitResult(bpy.types.PropertyGroup):
    """Numbers of the last Fit Spline run (read-only in the UI)."""

    valid: BoolProperty(default=False)  # type: ignore[valid-type]
    object_name: StringProperty(name="Object")  # type: ignore[valid-type]
    action_name: StringProperty(name="Action", description="The action holding the fitted keys")  # type: ignore[valid-type]
    mode_used: StringProperty(name="Mode", description="Shared keys (LATENT) or per-curve keys (PER_CHANNEL)")  # type: ignore[valid-type]
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
        description="Armatures: largest world-space distance (cm) between a joint before and after the fit, over sampled frames. Negative: not an armature",
        default=-1.0,
    )
    within_tolerance: BoolProperty(name="Within Tolerance", description="Every original frame is within the max errors")  # type: ignore[valid-type]
    seconds: FloatProperty(name="Time", description="Seconds the fit took", unit="TIME_ABSOLUTE")  # type: ignore[valid-type]


class AnimSignalsSettings(bpy.types.PropertyGroup):
    """Anim Signals settings of the scene."""

    fit: PointerProperty(type=AnimSignalsFitSettings)  # type: ignore[valid-type]
    last_fit: PointerProperty(type=AnimSignalsFitResult)  # type: ignore[valid-type]


classes = (AnimSignalsFitSettings, AnimSignalsFitResult, AnimSignalsSettings)
_register, _unregister = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register()
    bpy.types.Scene.anim_signals = PointerProperty(type=AnimSignalsSettings)  # type: ignore[attr-defined]


def unregister() -> None:
    if hasattr(bpy.types.Scene, "anim_signals"):
        del bpy.types.Scene.anim_signals  # type: ignore[attr-defined]
    _unregister()
