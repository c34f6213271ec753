"""Dope Sheet sidebar, tab "Signals": Loop (Make Cyclic), Blend and Compare panels.

Reads ``scene.anim_signals.loop / .blend / .compare`` and the last results (``last_loop``,
``last_blend``, ``last_compare``, ``compare_results``), owned by ``operators/loop_blend_compare``;
only draws and calls the operators.
"""

from __future__ import annotations

from typing import Any

import bpy

from ..operators.loop_blend_compare.operators import (
    ANIM_SIGNALS_OT_blend_actions,
    ANIM_SIGNALS_OT_compare_actions,
    ANIM_SIGNALS_OT_make_cyclic,
)
from ..operators.loop_blend_compare.properties import BLEND_SETTINGS, COMPARE_SETTINGS, LOOP_SETTINGS
from .common import settings_button, split_layout


class _DopeSheetSignalsPanel:
    """The Dope Sheet sidebar's "Signals" tab."""

    bl_space_type: Any = "DOPESHEET_EDITOR"  # the Literal types of fake-bpy-module
    bl_region_type: Any = "UI"
    bl_category = "Signals"


def draw_loop_result(layout, r) -> None:
    """The last Make Cyclic run's numbers (``scene.anim_signals.last_loop``), if any."""
    if not r.valid:
        return
    box = layout.box()
    col = box.column(align=True)
    col.label(text=f"Last loop: {r.object_name}", icon="CHECKMARK" if r.converged else "ERROR")
    col.label(text=f"Action: {r.action_name}")
    found = " (found)" if r.auto_range else ""
    col.label(text=f"Frames {r.frame_start}\u2013{r.frame_end}{found}, {r.curves} curves")
    col.label(text=f"Seam pose: {r.pose_before_deg:.3g}\u00b0 \u2192 {r.pose_after_deg:.3g}\u00b0")
    col.label(text=f"Seam velocity: {r.velocity_before_deg:.3g} \u2192 {r.velocity_after_deg:.3g} \u00b0/frame")
    if r.pose_before_loc or r.pose_after_loc:
        col.label(text=f"Seam location: {r.pose_before_loc:.3g} \u2192 {r.pose_after_loc:.3g}")
    if r.joint_pose_before_cm >= 0.0:
        col.label(text=f"Joints: {r.joint_pose_before_cm:.3g} \u2192 {r.joint_pose_after_cm:.3g} cm")
        col.label(text=f"Joint velocity: {r.joint_velocity_before_cm:.3g} \u2192 {r.joint_velocity_after_cm:.3g} cm/frame")
    col.label(text=f"RMS change: {r.rms_deviation_deg:.3g}\u00b0")
    if r.travel_channels:
        col.label(text=f"Travel channels: {r.travel_channels}")
    col.label(text=f"Time: {r.seconds:.2f} s")


def draw_blend_result(layout, r) -> None:
    """What the last Blend Actions run made (``scene.anim_signals.last_blend``), if anything."""
    if not r.valid:
        return
    box = layout.box()
    col = box.column(align=True)
    col.label(text="Last blend:", icon="CHECKMARK")
    for name in r.action_names.split(", "):
        col.label(text=name, icon="ACTION")
    col.label(text=f"{r.channels} channels, {'cyclic' if r.closed else 'open'}")
    if r.missing_in_a or r.missing_in_b:
        col.label(text=f"Left out: {r.missing_in_b} only in A, {r.missing_in_a} only in B", icon="INFO")
    if r.assigned_to:
        col.label(text=f"Assigned to {r.assigned_to}")
    col.label(text=f"Time: {r.seconds:.2f} s")


UNITS_PER_CHAR = 0.35  # UI units a character of the row's numbers takes (7 px, with room to spare)


def _distance_text(item) -> str:
    """A compared action's distance to the reference ('' for the reference itself or none)."""
    return "" if item.distance < 0.0 or item.is_reference else f"{item.distance:.2g}"


def numbers_text(item) -> str:
    """A Compare list row's numbers: its cluster and distance to the reference."""
    return f"#{item.cluster} {_distance_text(item)}".rstrip()


def numbers_units(text: str) -> float:
    """UI units wide enough for a row's numbers, so they are never cut (the name takes the rest)."""
    return UNITS_PER_CHAR * len(text) + 0.5


def draw_compare_result(layout, root) -> None:
    """The last comparison (``root.last_compare``) and its rows (``root.compare_results``), if any."""
    r = root.last_compare
    if not r.valid:
        return
    box = layout.box()
    col = box.column(align=True)
    col.label(text=f"{r.actions} actions, {r.clusters} clusters ({r.metric.lower()})", icon="CHECKMARK")
    if r.reference:
        # the reference's name on a line of its own: after "Nearest to" a long name was cut
        col.label(text="Nearest to")
        col.label(text=r.reference, icon="LAYER_ACTIVE")
        for part in r.nearest.split(", "):
            if part:
                col.label(text=part, icon="DOT")
    box.template_list("ANIM_SIGNALS_UL_compare_results", "", root, "compare_results", root, "compare_index", rows=4)
    col = box.column(align=True)
    if 0 <= root.compare_index < len(root.compare_results):
        # the selected row's whole name on a line of its own (the row may cut it), its numbers below
        item = root.compare_results[root.compare_index]
        col.label(text=item.action_name, icon="LAYER_ACTIVE" if item.is_reference else "ACTION")
        distance = "" if item.distance < 0.0 or item.is_reference else f"{item.distance:.3g}"
        col.label(text=f"Cluster #{item.cluster}" + (f", distance {distance}" if distance else ""))
    if r.image_name:
        col.label(text=f'Dendrogram: image "{r.image_name}"', icon="IMAGE_DATA")
    if r.image_path:
        col.label(text=r.image_path, icon="FILE_IMAGE")
    col.label(text=f"Time: {r.seconds:.2f} s")


class ANIM_SIGNALS_PT_loop(_DopeSheetSignalsPanel, bpy.types.Panel):
    """Make the active object's animation loop seamlessly"""

    bl_label = "Loop"

    def draw(self, context):
        layout = split_layout(self.layout)
        root = context.scene.anim_signals
        s = root.loop
        col = layout.column()
        col.prop(s, "range_mode")
        if s.range_mode == "CUSTOM":
            sub = col.column(align=True)
            sub.prop(s, "frame_start", text="Frame Start")
            sub.prop(s, "frame_end", text="End")
        elif s.range_mode == "AUTO":
            sub = col.column(align=True)
            sub.prop(s, "min_period", text="Period Min")
            sub.prop(s, "max_period", text="Max")
        col.prop(s, "travel")
        col.prop(s, "velocity_window")
        layout.prop(s, "add_cycles")
        layout.prop(s, "keep_original")
        settings_button(layout, ANIM_SIGNALS_OT_make_cyclic.bl_idname, s, LOOP_SETTINGS, text="Make Cyclic", icon="FILE_REFRESH")
        draw_loop_result(layout, root.last_loop)


class ANIM_SIGNALS_PT_blend(_DopeSheetSignalsPanel, bpy.types.Panel):
    """Blend two actions along the motion manifold"""

    bl_label = "Blend"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = split_layout(self.layout)
        root = context.scene.anim_signals
        s = root.blend
        col = layout.column()
        col.prop_search(s, "action_a", bpy.data, "actions")
        col.prop_search(s, "action_b", bpy.data, "actions")
        row = col.row()
        row.enabled = s.count == 0
        row.prop(s, "weight")
        col.prop(s, "count")
        col.prop(s, "cyclic")
        layout.prop(s, "align")
        layout.prop(s, "assign")
        button = layout.column()
        button.enabled = bool(s.action_a and s.action_b)
        settings_button(button, ANIM_SIGNALS_OT_blend_actions.bl_idname, s, BLEND_SETTINGS, text="Blend", icon="IPO_EASE_IN_OUT")
        draw_blend_result(layout, root.last_blend)


class ANIM_SIGNALS_UL_compare_results(bpy.types.UIList):
    """Compared actions: cluster and distance to the active object's action"""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0, flt_flag=0):
        # the numbers get the width their text needs and the name all the rest (a fixed share cut
        # both: names at 16 characters and distances to "0.0..." in the default sidebar, issue 16);
        # the selected row's whole name is shown under the list
        # (only the reference row has an icon: an action icon on every row took a name's 3 characters)
        row = layout.row(align=True)
        row.label(text=item.action_name, icon="LAYER_ACTIVE" if item.is_reference else "NONE")
        text = numbers_text(item)
        numbers = row.row(align=True)
        numbers.alignment = "RIGHT"
        numbers.ui_units_x = numbers_units(text)
        numbers.label(text=text)


class ANIM_SIGNALS_PT_compare(_DopeSheetSignalsPanel, bpy.types.Panel):
    """Compare and cluster actions"""

    bl_label = "Compare"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = split_layout(self.layout)
        root = context.scene.anim_signals
        s = root.compare
        col = layout.column()
        for name in COMPARE_SETTINGS:
            col.prop(s, name)
        settings_button(layout, ANIM_SIGNALS_OT_compare_actions.bl_idname, s, COMPARE_SETTINGS, text="Compare",
                        icon="OUTLINER_OB_GROUP_INSTANCE")
        draw_compare_result(layout, root)


classes = (ANIM_SIGNALS_PT_loop, ANIM_SIGNALS_PT_blend, ANIM_SIGNALS_UL_compare_results, ANIM_SIGNALS_PT_compare)
register, unregister = bpy.utils.register_classes_factory(classes)
