"""3D Viewport sidebar, tab "Signals": the Deformation Transfer panel (source and target, method,
example pairs or markers, frames, output, the Transfer button, the last transfer's numbers).

Reads ``scene.anim_signals.transfer`` / ``.last_transfer`` (owned by
``operators/deformation_transfer``); only draws and calls the operators.
"""

from __future__ import annotations

import bpy

from ..operators.common.settings import draw_frame_range
from ..operators.deformation_transfer.operators import (
    ANIM_SIGNALS_OT_transfer_add_marker_pair,
    ANIM_SIGNALS_OT_transfer_deformation,
    ANIM_SIGNALS_OT_transfer_example_pairs,
)
from ..operators.deformation_transfer.properties import MARKER_SETTINGS, TRANSFER_SETTINGS
from .common import settings_button, split_layout


class ANIM_SIGNALS_UL_transfer_pairs(bpy.types.UIList):
    """Example pairs: a source shape key and the target's key showing the same pose"""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0, flt_flag=0):
        row = layout.row(align=True)
        row.prop(item, "name", text="", emboss=False, icon="SHAPEKEY_DATA")
        row.label(text="", icon="FORWARD")
        row.prop(item, "target_key", text="", emboss=False)


class ANIM_SIGNALS_PT_deformation_transfer(bpy.types.Panel):
    """Move a mesh animation onto another mesh, by example poses or marker vertices"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Signals"
    bl_label = "Deformation Transfer"
    bl_options = {"DEFAULT_CLOSED"}
    bl_order = 3  # after the pose-space panels and the motion database

    def draw(self, context):
        layout = split_layout(self.layout)
        root = context.scene.anim_signals
        s = root.transfer
        col = layout.column()
        col.prop_search(s, "source", bpy.data, "objects")
        col.prop_search(s, "target", bpy.data, "objects")
        if not (s.source and s.target):
            col.label(text="Empty: selected \u2192 active", icon="INFO")
        layout.prop(s, "method")
        if s.method == "EXAMPLES":
            layout.prop(s, "space")
            self.draw_pairs(layout.box(), s)
        else:
            self.draw_markers(layout.box(), s)
        col = layout.column()
        draw_frame_range(col, s)
        col.prop(s, "output")
        col.prop(s, "write_to")
        settings_button(layout, ANIM_SIGNALS_OT_transfer_deformation.bl_idname, s, TRANSFER_SETTINGS,
                        text="Transfer", icon="MOD_DATA_TRANSFER")
        self.draw_result(layout, root.last_transfer)

    @staticmethod
    def draw_pairs(box, s) -> None:
        box.label(text="Example Pairs (shape keys)", icon="SHAPEKEY_DATA")
        row = box.row()
        row.template_list("ANIM_SIGNALS_UL_transfer_pairs", "", s, "pairs", s, "pair_index", rows=3)
        col = row.column(align=True)
        for action, icon in (("ADD", "ADD"), ("REMOVE", "REMOVE"), ("CLEAR", "X")):
            op = col.operator(ANIM_SIGNALS_OT_transfer_example_pairs.bl_idname, text="", icon=icon)
            op.action = action
        op = box.operator(ANIM_SIGNALS_OT_transfer_example_pairs.bl_idname, text="Match Names", icon="LINKED")
        op.action = "MATCH"
        if not len(s.pairs):
            box.label(text="Empty: keys named alike on both", icon="INFO")

    @staticmethod
    def draw_markers(box, s) -> None:
        box.label(text="Markers", icon="VERTEXSEL")
        box.prop(s, "marker_source")
        if s.marker_source == "FILE":
            box.prop(s, "markers_file")
        else:
            box.prop(s, "marker_prefix")
            op = box.operator(ANIM_SIGNALS_OT_transfer_add_marker_pair.bl_idname, icon="ADD")
            for name in MARKER_SETTINGS:
                setattr(op, name, getattr(s, name))
        box.prop(s, "translation")

    @staticmethod
    def draw_result(layout, r) -> None:
        if not r.valid:
            return
        box = layout.box()
        box.use_property_split = False
        col = box.column(align=True)
        col.label(text=f"Last: {r.object_name}", icon="CHECKMARK")
        col.label(text=f"From {r.source_object} onto {r.target_object}")
        how = f"Examples ({r.space.lower()}), {r.examples} pairs" if r.method == "EXAMPLES" else f"Correspondence, {r.markers} markers"
        col.label(text=how)
        out = "PC2 cache" if r.output == "PC2" else "shape keys"
        col.label(text=f"Frames {r.frame_start}\u2013{r.frame_end} ({r.frames}) as {out}")
        col.label(text=f"Vertices: {r.source_vertices} \u2192 {r.target_vertices}")
        if r.method == "EXAMPLES":
            col.label(text=f"Fit error: mean {r.fit_error_mean:.3g}, max {r.fit_error_max:.3g} "
                           f"({100.0 * r.fit_error_relative:.2g} %)")
        col.label(text=f"{r.solve_ms_per_frame:.1f} ms/frame, setup {r.setup_seconds:.2f} s")
        col.label(text=f"Time: {r.seconds:.2f} s")


classes = (ANIM_SIGNALS_UL_transfer_pairs, ANIM_SIGNALS_PT_deformation_transfer)
register, unregister = bpy.utils.register_classes_factory(classes)
