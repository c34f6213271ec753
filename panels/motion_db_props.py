"""Settings and state of the motion database (``scene.anim_signals.motion_db``).

The database is a list of action names (the source actions are the truth), their kind and channel
names; the reconstruction settings reuse the operator's property definitions; ``last_*`` are the
numbers of the last reconstruction and ``live_*`` those of the live mode, drawn by the sidebar.
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

from ..operators.motion_db_ops import (
    KIND_ITEMS,
    RECONSTRUCT_SETTINGS,
    ANIM_SIGNALS_OT_reconstruct_motion,
)


class AnimSignalsMotionDBAction(bpy.types.PropertyGroup):
    """One source action of the motion database (``name`` is the action's name)."""


def _annotations() -> dict:
    ops: dict = {}
    for cls in reversed(ANIM_SIGNALS_OT_reconstruct_motion.__mro__):
        ops.update(getattr(cls, "__annotations__", {}))
    out = {name: ops[name] for name in RECONSTRUCT_SETTINGS}
    out.update(
        kind=EnumProperty(name="Kind", description="Which actions the database holds", items=KIND_ITEMS),
        build_actions=StringProperty(
            name="Actions",
            description='Comma-separated actions for Build (empty: every action of the kind, except "*.reconstructed")',
            default="",
        ),
        actions=CollectionProperty(type=AnimSignalsMotionDBAction),
        channels_json=StringProperty(name="Channels", description="The database's channel names (JSON list)"),
        n_channels=IntProperty(name="Channels", description="Channels per database frame"),
        n_frames=IntProperty(name="Frames", description="Frames in the database"),
        object_name=StringProperty(name="Object", description="The object active when the database was built"),
        last_action=StringProperty(name="Reconstructed", description="The action written by the last reconstruction"),
        last_frames=IntProperty(name="Frames", description="Frames of the last reconstruction"),
        last_ms=FloatProperty(name="Time per Frame", description="Mean milliseconds per frame of the last reconstruction"),
        last_best_length=FloatProperty(name="Best Path Length", description="Mean length of the best path (frames)"),
        last_query_channels=IntProperty(name="Query Channels", description="Channels the last query used"),
        live=BoolProperty(name="Live", description="Live reconstruction is running (this session)", default=False),
        live_object=StringProperty(name="Live Object", description="The duplicate the live mode drives"),
        live_ms=FloatProperty(name="Live Time", description="Milliseconds the last live frame took"),
        live_best_length=IntProperty(name="Live Best Path", description="Length of the best path at the last live frame"),
    )
    return out


AnimSignalsMotionDB = type(
    "AnimSignalsMotionDB", (bpy.types.PropertyGroup,),
    {"__annotations__": _annotations(), "__doc__": "Motion database of the scene and its settings"},
)

classes = (AnimSignalsMotionDBAction, AnimSignalsMotionDB)
