"""Operators ``anim_signals.make_cyclic``, ``anim_signals.blend_actions`` and
``anim_signals.compare_actions``, and their menu entries.

Thin: :mod:`.loop`, :mod:`.blend` and :mod:`.compare` read and check the Blender data, the core
computes, the same modules write the result. Nothing is written before the computation has
finished, and every run is one transaction (``common.transaction``): a run that fails while
writing takes back what it wrote, so a refused, failed or cancelled run leaves the user's data
untouched.
"""

from __future__ import annotations

import time

import bpy

from ..blender_data.fcurves import KeyframeError
from ..common import SettingsOperator, StepwiseOperator, current_transaction, transactional
from ..common.menus import add_to_menus, remove_from_menus
from ..common.polls import has_animated_object
from .blend import plan_blend, run_blend, write_blend
from .clips import MotionInputError
from .compare import ComparePlan, finish_compare, iter_compare, keep_compare_results, plan_compare
from .loop import plan_loop, run_loop, write_loop
from .properties import (
    BLEND_SETTINGS,
    COMPARE_SETTINGS,
    LOOP_SETTINGS,
    BlendSettings,
    CompareSettings,
    LoopSettings,
)

__all__ = ["ANIM_SIGNALS_OT_blend_actions", "ANIM_SIGNALS_OT_compare_actions", "ANIM_SIGNALS_OT_make_cyclic"]


class ANIM_SIGNALS_OT_make_cyclic(LoopSettings, SettingsOperator, bpy.types.Operator):
    """Make the active object's animation loop seamlessly: the clip is projected onto the closest cyclic motion (same start pose, length and travel), keys on every frame, Cycles modifiers added"""

    bl_idname = "anim_signals.make_cyclic"
    bl_label = "Make Cyclic"
    bl_options = {"REGISTER", "UNDO"}

    SETTINGS = LOOP_SETTINGS

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.loop

    @classmethod
    def poll(cls, context):
        return has_animated_object(cls, context)

    @transactional
    def execute(self, context):
        t0 = time.perf_counter()
        try:
            plan = plan_loop(
                context.active_object,
                range_mode=self.range_mode,
                frame_start=self.frame_start,
                frame_end=self.frame_end,
                min_period=self.min_period,
                max_period=self.max_period,
                travel=self.travel,
            )
            result = run_loop(plan, velocity_window=self.velocity_window)
            summary = write_loop(plan, result, add_cycles=self.add_cycles, keep_original=self.keep_original,
                                 scene=context.scene)
        except (MotionInputError, KeyframeError) as err:
            self.report({"ERROR"}, f"{err} (nothing changed)" if isinstance(err, KeyframeError) else str(err))
            return {"CANCELLED"}  # @transactional takes back anything written
        for message in plan.warnings:
            self.report({"WARNING"}, message)
        summary.seconds = time.perf_counter() - t0
        current_transaction().keep_fields(context.scene.anim_signals.last_loop)
        context.scene.anim_signals.last_loop.store(summary)
        self.report({"INFO"} if summary.converged else {"WARNING"}, summary.message())
        return {"FINISHED"}


class ANIM_SIGNALS_OT_blend_actions(BlendSettings, SettingsOperator, bpy.types.Operator):
    """Blend two actions along the shortest path between them on the motion manifold (time-aligned), into new actions"""

    bl_idname = "anim_signals.blend_actions"
    bl_label = "Blend Actions"
    bl_options = {"REGISTER", "UNDO"}

    SETTINGS = BLEND_SETTINGS

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.blend

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop_search(self, "action_a", bpy.data, "actions")
        layout.prop_search(self, "action_b", bpy.data, "actions")
        row = layout.row()
        row.enabled = self.count == 0
        row.prop(self, "weight")
        layout.prop(self, "count")
        layout.prop(self, "cyclic")
        layout.prop(self, "align")
        layout.prop(self, "assign")

    @transactional
    def execute(self, context):
        t0 = time.perf_counter()
        try:
            plan = plan_blend(
                context.active_object,
                self.action_a,
                self.action_b,
                weight=self.weight,
                count=self.count,
                cyclic=self.cyclic,
                assign=self.assign,
            )
            results = run_blend(plan, align=self.align)
            summary = write_blend(plan, results, align=self.align)
        except (MotionInputError, KeyframeError) as err:
            self.report({"ERROR"}, f"{err} (nothing changed)" if isinstance(err, KeyframeError) else str(err))
            return {"CANCELLED"}  # @transactional takes back anything written
        for message in plan.warnings:
            self.report({"WARNING"}, message)
        summary.seconds = time.perf_counter() - t0
        current_transaction().keep_fields(context.scene.anim_signals.last_blend)
        context.scene.anim_signals.last_blend.store(summary)
        for message in summary.warnings:
            self.report({"WARNING"}, message)
        self.report({"INFO"}, summary.message())
        return {"FINISHED"}

    def invoke(self, context, event):
        """The sidebar's settings, then a dialog to pick the actions when either is missing."""
        self.fill_settings(context)
        if (not self.action_a or not self.action_b) and context.window is not None and not bpy.app.background:
            return context.window_manager.invoke_props_dialog(self)
        return self.execute(context)


class ANIM_SIGNALS_OT_compare_actions(CompareSettings, StepwiseOperator, bpy.types.Operator):
    """Measure how alike actions are (distances on the motion manifold), cluster them, label each action with its cluster and draw a dendrogram"""

    bl_idname = "anim_signals.compare_actions"
    bl_label = "Compare Actions"
    bl_options = {"REGISTER", "UNDO"}

    SETTINGS = COMPARE_SETTINGS
    STATUS_TEXT = "Comparing actions... Esc / right-click to cancel"
    CANCELLED_TEXT = "Compare cancelled: nothing changed"
    REMOVED_TEXT = "An action was removed while comparing: nothing written"
    FAILED_PREFIX = "Compare failed: "
    INPUT_ERRORS = (MotionInputError,)
    FAILURES = (ValueError, MotionInputError)

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.compare

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        for name in COMPARE_SETTINGS:
            layout.prop(self, name)

    def prepare(self, context) -> ComparePlan:
        return plan_compare(
            context.active_object,
            context.scene,
            actions=self.actions,
            features=self.features,
            n_samples=self.n_samples,
            image_path=self.image_path,
        )

    def steps(self, plan: ComparePlan):
        return iter_compare(plan, metric=self.metric, cyclic=self.cyclic, n_samples=self.n_samples)

    def finish(self, context, plan: ComparePlan) -> set[str]:
        summary = finish_compare(plan, n_clusters=self.n_clusters, metric=self.metric)
        summary.seconds = self.elapsed()
        root = context.scene.anim_signals
        keep_compare_results(root)
        root.last_compare.store(summary, root.compare_results)
        root.compare_index = 0
        for message in summary.warnings:
            self.report({"WARNING"}, message)
        self.report({"INFO"}, summary.message())
        return {"FINISHED"}


def menu_func(self, context):
    layout = self.layout
    layout.separator()
    layout.operator(ANIM_SIGNALS_OT_make_cyclic.bl_idname, text="Make Cyclic (Anim Signals)")
    layout.operator(ANIM_SIGNALS_OT_blend_actions.bl_idname, text="Blend Actions (Anim Signals)...")
    layout.operator(ANIM_SIGNALS_OT_compare_actions.bl_idname, text="Compare Actions (Anim Signals)")


MENUS = ("DOPESHEET_MT_key", "GRAPH_MT_key")
classes = (ANIM_SIGNALS_OT_make_cyclic, ANIM_SIGNALS_OT_blend_actions, ANIM_SIGNALS_OT_compare_actions)


def add_menus() -> None:
    add_to_menus(MENUS, menu_func)


def remove_menus() -> None:
    remove_from_menus(MENUS, menu_func)
