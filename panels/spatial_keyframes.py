"""3D Viewport sidebar, tab "Signals": the Spatial Keyframes panel (build from the active armature's
action, compact the action, the stored model's numbers and the last compaction's comparison).

Reads ``scene.anim_signals.spatial_keyframes`` / ``.last_spatial_keyframes`` and the model stored
on the object (owned by ``operators/spatial_keyframes``); only draws and calls the operators. The
markers and the trajectory will be drawn on the pose-space canvas (next step).
"""

from __future__ import annotations

import bpy

from ..operators.spatial_keyframes.operators import (
    ANIM_SIGNALS_OT_compact_action,
    ANIM_SIGNALS_OT_spatial_keyframes_from_action,
)
from ..operators.spatial_keyframes.properties import BUILD_SETTINGS
from ..operators.spatial_keyframes.storage import model_info
from .common import settings_button, split_layout


class ANIM_SIGNALS_PT_spatial_keyframes(bpy.types.Panel):
    """Key poses of the active armature's action as markers on a plane; any point of the plane is a pose"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Signals"
    bl_label = "Spatial Keyframes"
    bl_options = {"DEFAULT_CLOSED"}
    bl_order = 10  # after the pose-space panels (0, 1) and the other tools of the tab

    def draw(self, context):
        layout = split_layout(self.layout)
        ob = context.active_object
        if ob is None or ob.type != "ARMATURE":
            layout.label(text="Select an animated armature", icon="INFO")
            return
        s = context.scene.anim_signals.spatial_keyframes
        for name in ("projection", "selection", "key_mode"):
            layout.prop(s, name)
        layout.prop(s, "ratio" if s.key_mode == "RATIO" else "count")
        layout.prop(s, "optimise")
        info = model_info(ob)
        settings_button(layout, ANIM_SIGNALS_OT_spatial_keyframes_from_action.bl_idname, s, BUILD_SETTINGS,
                        text="Rebuild Spatial Keyframes" if info else "Build Spatial Keyframes", icon="PIVOT_MEDIAN")
        settings_button(layout, ANIM_SIGNALS_OT_compact_action.bl_idname, s, BUILD_SETTINGS,
                        text="Compact Action", icon="ACTION")
        self.draw_model(layout, info, ob.name)
        self.draw_comparison(layout, context.scene.anim_signals.last_spatial_keyframes, ob.name)

    @staticmethod
    def draw_model(layout, info, name: str) -> None:
        if info is None:
            layout.label(text=f'"{name}" has no spatial keyframes', icon="INFO")
            return
        col = layout.box().column(align=True)
        col.label(text=f'From "{info["action"]}" ({info["frame_start"]}\u2013{info["frame_end"]})', icon="ACTION")
        col.label(text=f"Markers {info['markers']}   Frames {info['frames']}   Joints {info['joints']}")
        opt = ", optimised" if info["optimised"] else ""
        col.label(text=f"{info['projection'].upper()}, {info['selection']} keys{opt}")
        col.label(text=f"Error {info['error']:.4g} per frame per joint")

    @staticmethod
    def draw_comparison(layout, result, name: str) -> None:
        if not result.valid or not result.compacted or result.object_name != name:
            return
        col = layout.box().column(align=True)
        col.label(text="Compacted into:", icon="CHECKMARK")
        col.label(text=result.written_action, icon="ACTION")  # a line of its own: long names stay whole
        col.label(text=f"Size {result.size:.0f} ({100 * result.size_ratio:.1f} %)")
        for row in result.schemes:
            col.label(text=f"{row.scheme} ({row.kind.lower()}): {row.error:.4g}")


classes = (ANIM_SIGNALS_PT_spatial_keyframes,)
register, unregister = bpy.utils.register_classes_factory(classes)
