"""Pose Space: a deforming sequence (mesh or armature) as time, pose and shape signals on a 2D
canvas (Cashman and Hormann, "A continuous, editable representation for deforming mesh sequences
with separate signals for time, pose and shape"; core: ``anim_signals.posespace``; panels:
``panels/pose_space.py``, the canvas drawing ``panels/pose_space_canvas_draw.py``).

- :mod:`.properties`: the build / resample / bake settings (one definition for operators and
  sidebar), the canvas settings, the last build's and bake's numbers.
- :mod:`.sources`: checking the active object, choosing and reading its frames.
- :mod:`.building`: the frames through the core, the result stored on Blender data.
- :mod:`.storage`: the model on the object (ID properties, shape keys) and its cache.
- :mod:`.posing`: a pose-space point or time as shape-key values / bone transforms; bake.
- :mod:`.operators`: ``anim_signals.build_pose_space``, ``.pose_space_resample``, ``.pose_space_bake``.
- :mod:`.canvas_state`: the canvas's runtime state (views, cursors; not saved) and geometry.
- :mod:`.canvas_tools`: navigate, edit time, pin and sketch (drags on the canvas).
- :mod:`.canvas_view`: zoom, pan, frame all, the press dispatcher and its keymap, Save PNG.

For scripts (docs/pose_space.md)::

    from bl_ext.user_default.anim_signals.operators import pose_space as psd
    ps_ob, space, summary = psd.build(ob, exact=True)
    psd.apply_position(ps_ob, space, space.positions[3])
"""

from . import canvas_state, canvas_tools, canvas_view, operators, properties
from .building import BuildSummary, build, iter_build, write_build
from .posing import BakeSummary, apply_position, apply_time, bake_space
from .sources import BuildPlan, PoseSpaceInputError, build_plan
from .storage import (
    PoseSpaceDataError,
    load_info,
    load_space,
    save_space,
    space_info,
    space_object,
    space_stamp,
)

__all__ = [
    "BakeSummary",
    "BuildPlan",
    "BuildSummary",
    "PoseSpaceDataError",
    "PoseSpaceInputError",
    "apply_position",
    "apply_time",
    "bake_space",
    "build",
    "build_plan",
    "iter_build",
    "load_info",
    "load_space",
    "save_space",
    "space_info",
    "space_object",
    "space_stamp",
    "write_build",
]

PROPERTY_CLASSES = properties.classes
SCENE_PROPERTIES = properties.SCENE_PROPERTIES
WINDOW_PROPERTIES: dict = {}
OPERATOR_CLASSES = operators.classes + canvas_tools.classes + canvas_view.classes


def register() -> None:
    """After the classes are registered: the canvas's keymap and its state reset on file load."""
    canvas_state.register()
    canvas_view.add_keymaps()


def unregister() -> None:
    canvas_view.remove_keymaps()
    canvas_state.unregister()
