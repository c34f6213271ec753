"""Operators ``anim_signals.spatial_keyframes_from_action`` and ``anim_signals.compact_action``
(Costa and Esperança, spatial keyframes from motion capture).

Thin: :mod:`.sources` checks and reads (raising :class:`~.sources.SpatialKeyframesInputError`,
nothing changed), :mod:`.building` runs the core stage by stage and then writes. Both are modal in
a window (progress bar, Esc / right-click cancels and leaves everything as it was) and run to the
end through ``execute()`` in scripts and headless.
"""

from __future__ import annotations

import bpy

from ..common import StepwiseOperator
from ..common.polls import has_active_object
from ..common.transaction import current_transaction
from .building import iter_build, write_build
from .properties import BUILD_SETTINGS, BuildSettings
from .sources import BuildPlan, SpatialKeyframesInputError, plan_build

__all__ = ["ANIM_SIGNALS_OT_compact_action", "ANIM_SIGNALS_OT_spatial_keyframes_from_action"]


class _SpatialKeyframesOperator(BuildSettings, StepwiseOperator):
    """What both operators share: the settings, the checks, the stages and writing."""

    SETTINGS = BUILD_SETTINGS
    COMPACT = False
    CANCELLED_TEXT = "Cancelled: nothing changed"
    REMOVED_TEXT = "The armature or its action was removed while working: nothing written"
    INPUT_ERRORS = (SpatialKeyframesInputError,)
    FAILURES = (ValueError, ImportError)

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.spatial_keyframes

    @classmethod
    def poll(cls, context):
        return has_active_object(cls, context)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        for name in ("projection", "selection", "key_mode"):
            layout.prop(self, name)
        layout.prop(self, "ratio" if self.key_mode == "RATIO" else "count")
        layout.prop(self, "optimise")

    def prepare(self, context) -> BuildPlan:
        return plan_build(context.active_object, key_mode=self.key_mode, ratio=self.ratio, count=self.count,
                          selection=self.selection, projection=self.projection, optimise=self.optimise,
                          compact=self.COMPACT)

    def steps(self, plan: BuildPlan):
        return iter_build(plan)

    def finish(self, context, plan: BuildPlan) -> set[str]:
        for message in plan.late_warnings:
            self.report({"WARNING"}, message)  # type: ignore[attr-defined]
        summary = write_build(plan)
        summary.seconds = self.elapsed()
        result = context.scene.anim_signals.last_spatial_keyframes
        current_transaction().keep_fields(result)
        result.store(summary)
        context.scene.anim_signals.pose_space_canvas.shows = "SPATIAL_KEYFRAMES"  # what was built last shows
        self.report({"INFO"}, summary.message())  # type: ignore[attr-defined]
        return {"FINISHED"}


class ANIM_SIGNALS_OT_spatial_keyframes_from_action(_SpatialKeyframesOperator, bpy.types.Operator):
    """Build spatial keyframes from the active armature's action: key poses become markers on a plane, every frame a point of a 2D trajectory, and any point of the plane a pose (stored on the armature)"""

    bl_idname = "anim_signals.spatial_keyframes_from_action"
    bl_label = "Spatial Keyframes from Action"
    bl_options = {"REGISTER", "UNDO"}

    STATUS_TEXT = "Building spatial keyframes... Esc / right-click to cancel"
    CANCELLED_TEXT = "Spatial keyframes cancelled: nothing changed"


class ANIM_SIGNALS_OT_compact_action(_SpatialKeyframesOperator, bpy.types.Operator):
    """Rewrite the active armature's action as key poses + a 2D trajectory and play it back into a new "<action>.skc" action, reporting size and error beside keys interpolated in time (the original is kept)"""

    bl_idname = "anim_signals.compact_action"
    bl_label = "Compact Action"
    bl_options = {"REGISTER", "UNDO"}

    COMPACT = True
    STATUS_TEXT = "Compacting the action... Esc / right-click to cancel"
    CANCELLED_TEXT = "Compaction cancelled: nothing changed"


classes = (ANIM_SIGNALS_OT_spatial_keyframes_from_action, ANIM_SIGNALS_OT_compact_action)
