"""Spatial Keyframes: the key poses of an armature action as markers on a plane, a 2D trajectory of
every frame, and an RBF that poses the rig from any point of the plane (Costa and Esperança,
"Enhancing Spatial Keyframe Animations with Motion Capture", after Igarashi et al.'s spatial
keyframing; core: ``anim_signals.spatialkeys``; panel: ``panels/spatial_keyframes.py``).

- :mod:`.properties`: the settings (one definition for the operators and the sidebar) and the
  last run's numbers with its comparison.
- :mod:`.sources`: checking the active armature and reading its bones' rotations.
- :mod:`.building`: the core's stages, the model stored, the compacted action written.
- :mod:`.storage`: the model on the object (ID properties) and its cache (RBF, bone writer).
- :mod:`.posing`: :func:`pose_from_point`, what the canvas's cursor will call.
- :mod:`.operators`: ``anim_signals.spatial_keyframes_from_action``, ``anim_signals.compact_action``.
- :mod:`.recording`: ``anim_signals.spatial_keyframes_record`` (a drag or stroke becomes a new
  action ``"<action>.sk"``) and ``anim_signals.spatial_keyframes_play_back`` (``"<action>.skc"``).
- :mod:`.canvas_tools`: the canvas's tools (navigate, move / add / remove a marker) and its press
  handler.

For scripts::

    from bl_ext.user_default.anim_signals.operators import spatial_keyframes as skf
    bpy.ops.anim_signals.spatial_keyframes_from_action(projection="TSNE", key_mode="COUNT", count=12)
    skf.pose_from_point(ob, skf.load_model(ob).clip.markers[3])   # the 4th key pose
"""

from ..pose_space.canvas_state import SPATIAL_KEYFRAMES, CanvasSource, add_canvas_source, remove_canvas_source
from . import canvas_tools, operators, properties, recording
from .building import BuildSummary, iter_build, write_build
from .posing import pose_at_marker, pose_from_point
from .sources import BuildPlan, SpatialKeyframesInputError, plan_build
from .storage import PROP, LoadedModel, ModelDataError, load_model, model_info, shown_model

__all__ = [
    "PROP",
    "BuildPlan",
    "BuildSummary",
    "LoadedModel",
    "ModelDataError",
    "SpatialKeyframesInputError",
    "iter_build",
    "load_model",
    "model_info",
    "plan_build",
    "pose_at_marker",
    "pose_from_point",
    "write_build",
]

PROPERTY_CLASSES = properties.classes
SCENE_PROPERTIES = properties.SCENE_PROPERTIES
WINDOW_PROPERTIES: dict = {}
OPERATOR_CLASSES = operators.classes + canvas_tools.classes + recording.classes


def register() -> None:
    """After the classes: the pose-space canvas learns to show spatial keyframes."""
    add_canvas_source(CanvasSource(SPATIAL_KEYFRAMES, "Spatial Keyframes", shown_model, press=canvas_tools.canvas_press,
                                   title="Spatial keyframes"))


def unregister() -> None:
    remove_canvas_source(SPATIAL_KEYFRAMES)
