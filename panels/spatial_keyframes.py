"""3D Viewport sidebar, tab "Signals": the Spatial Keyframes panel (build from the active armature's
action, compact the action, the stored model's numbers and the last compaction's comparison).

Reads ``scene.anim_signals.spatial_keyframes`` / ``.last_spatial_keyframes`` and the model stored
on the object (owned by ``operators/spatial_keyframes``); only draws and calls the operators. The
markers and the trajectory are drawn on the pose-space canvas; the canvas tools' buttons (navigate,
add / remove a marker, Frame All, Save PNG, and Record / Play Back once their operators are
registered) sit under the model's numbers.
"""

from __future__ import annotations

import bpy

from ..operators.pose_space.canvas_view import (
    ANIM_SIGNALS_OT_pose_space_save_png,
    ANIM_SIGNALS_OT_pose_space_view_all,
)
from ..operators.spatial_keyframes.canvas_tools import (
    ANIM_SIGNALS_OT_spatial_keyframes_add_marker,
    ANIM_SIGNALS_OT_spatial_keyframes_navigate,
    ANIM_SIGNALS_OT_spatial_keyframes_remove_marker,
)
from ..operators.spatial_keyframes.operators import (
    ANIM_SIGNALS_OT_compact_action,
    ANIM_SIGNALS_OT_spatial_keyframes_from_action,
)
from ..operators.spatial_keyframes.properties import BUILD_SETTINGS
from ..operators.spatial_keyframes.recording import (
    ANIM_SIGNALS_OT_spatial_keyframes_play_back,
    ANIM_SIGNALS_OT_spatial_keyframes_record,
)
from ..operators.spatial_keyframes.storage import model_info
from .common import settings_button, split_layout
from .pose_space import draw_canvas_switch


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
        if info is not None:
            draw_canvas_tools(layout, context.scene.anim_signals.pose_space_canvas, s, ob)
        self.draw_comparison(layout, context.scene.anim_signals.last_spatial_keyframes, ob.name)

    @staticmethod
    def draw_model(layout, info, name: str) -> None:
        if info is None:
            layout.label(text=f'"{name}" has no spatial keyframes', icon="INFO")
            return
        col = layout.box().column(align=True)
        col.label(text=f'From "{info["action"]}" ({info["frame_start"]}\u2013{info["frame_end"]})', icon="ACTION")
        col.label(text=f"Markers {info['markers']}   Frames {info['frames']}   Joints {info['joints']}")
        if info["edited"]:  # a line of its own: the sidebar's default width cuts a longer one
            col.label(text="Markers edited on the canvas", icon="GREASEPENCIL")
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


def draw_canvas_tools(layout, settings, sk_settings, ob) -> None:
    """The canvas's switch and tools for the armature's spatial keyframes (``settings``: the
    canvas's, ``sk_settings``: the spatial keyframes' for Record's frames), with a short help."""
    draw_canvas_switch(layout, settings, ob)
    col = layout.column(align=True)
    row = col.row(align=True)
    row.operator(ANIM_SIGNALS_OT_spatial_keyframes_navigate.bl_idname, text="Navigate", icon="ORIENTATION_CURSOR")
    row.operator(ANIM_SIGNALS_OT_spatial_keyframes_add_marker.bl_idname, text="Add Marker", icon="ADD")
    row = col.row(align=True)
    row.operator(ANIM_SIGNALS_OT_spatial_keyframes_remove_marker.bl_idname, text="Remove Marker", icon="REMOVE")
    row.operator(ANIM_SIGNALS_OT_pose_space_view_all.bl_idname, text="Frame All", icon="FULLSCREEN_ENTER")
    row = col.row(align=True)
    row.operator(ANIM_SIGNALS_OT_spatial_keyframes_record.bl_idname, text="Record", icon="REC")
    row.operator(ANIM_SIGNALS_OT_spatial_keyframes_play_back.bl_idname, text="Play Back", icon="PLAY")
    col.prop(sk_settings, "record_frames")
    row = layout.row(align=True)
    op = row.operator(ANIM_SIGNALS_OT_pose_space_save_png.bl_idname, text="Save PNG", icon="IMAGE_DATA")
    op.filepath = settings.png_path
    row.prop(settings, "png_path", text="")
    layout.prop(settings, "height")
    col = layout.box().column(align=True)
    col.scale_y = 0.8
    col.label(text="Drag on the canvas:", icon="MOUSE_LMB_DRAG")
    col.label(text="diamond: move marker")
    col.label(text="elsewhere: pose the rig")
    col.label(text="Shift: record, wheel: zoom, MMB: pan")


classes = (ANIM_SIGNALS_PT_spatial_keyframes,)
register, unregister = bpy.utils.register_classes_factory(classes)
