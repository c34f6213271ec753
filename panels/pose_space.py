"""3D Viewport sidebar, tab "Signals": the pose-space canvas and its controls.

``ANIM_SIGNALS_PT_pose_space_canvas`` is headerless, so it always sits at the top of the tab, and
only reserves the canvas area (the gpu layer of :mod:`.pose_space_canvas_draw` draws into it).
``ANIM_SIGNALS_PT_pose_space`` holds the buttons and the active pose space's numbers. Reads
``scene.anim_signals.pose_space`` / ``.pose_space_resample`` / ``.pose_space_canvas`` (owned by
``operators/pose_space``); panels only draw state and call operators.
"""

from __future__ import annotations

import bpy

from ..operators.pose_space.canvas_state import CATEGORY, canvas_kinds, canvas_units, shown_on_canvas
from ..operators.pose_space.canvas_tools import (
    ANIM_SIGNALS_OT_pose_space_edit_time,
    ANIM_SIGNALS_OT_pose_space_navigate,
    ANIM_SIGNALS_OT_pose_space_pin,
    ANIM_SIGNALS_OT_pose_space_sketch,
)
from ..operators.pose_space.canvas_view import (
    ANIM_SIGNALS_OT_pose_space_save_png,
    ANIM_SIGNALS_OT_pose_space_view_all,
)
from ..operators.pose_space.operators import (
    ANIM_SIGNALS_OT_build_pose_space,
    ANIM_SIGNALS_OT_pose_space_bake,
    ANIM_SIGNALS_OT_pose_space_resample,
)
from ..operators.pose_space.properties import BUILD_SETTINGS, RESAMPLE_SETTINGS
from ..operators.pose_space.storage import space_info, space_of
from . import pose_space_canvas_draw
from .common import split_layout


class ANIM_SIGNALS_PT_pose_space_canvas(bpy.types.Panel):
    """The pose-space canvas (drawn by the gpu layer over the space this panel reserves)"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = CATEGORY
    bl_label = "Pose Space Canvas"
    bl_options = {"HIDE_HEADER"}
    bl_order = 0

    @classmethod
    def poll(cls, context):
        return shown_on_canvas(context)[1] is not None

    def draw(self, context):
        col = self.layout.column()
        col.scale_y = float(canvas_units(context))
        col.label(text="")  # reserved: the canvas is drawn here


class ANIM_SIGNALS_PT_pose_space(bpy.types.Panel):
    """Build, edit and bake the pose space (time, pose and shape signals) of the active object"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = CATEGORY
    bl_label = "Pose Space"
    bl_order = 1

    def draw(self, context):
        layout = self.layout
        ob = context.active_object
        if ob is None:
            layout.label(text="Select a mesh or armature", icon="INFO")
            return
        root = context.scene.anim_signals
        space = space_of(ob)
        self.draw_settings(layout, root.pose_space, BUILD_SETTINGS, "pose_space", "Build Settings")
        row = layout.row()
        row.scale_y = 1.3
        row.operator(ANIM_SIGNALS_OT_build_pose_space.bl_idname,
                     text="Rebuild Pose Space" if space else "Build Pose Space", icon="MOD_DATA_TRANSFER")
        if space is None:
            layout.label(text=f'"{ob.name}" has no pose space', icon="INFO")
            return
        self.draw_numbers(layout, space_info(ob))

        s = root.pose_space_canvas
        draw_canvas_switch(layout, s, ob)
        col = layout.column(align=True)
        row = col.row(align=True)
        row.operator(ANIM_SIGNALS_OT_pose_space_navigate.bl_idname, text="Navigate", icon="ORIENTATION_CURSOR")
        row.operator(ANIM_SIGNALS_OT_pose_space_edit_time.bl_idname, text="Edit Time", icon="IPO_BEZIER")
        row = col.row(align=True)
        row.operator(ANIM_SIGNALS_OT_pose_space_pin.bl_idname, text="Pin", icon="PINNED")
        op = row.operator(ANIM_SIGNALS_OT_pose_space_sketch.bl_idname, text="Sketch", icon="GREASEPENCIL")
        op.frames = s.sketch_frames
        row = col.row(align=True)
        op = row.operator(ANIM_SIGNALS_OT_pose_space_pin.bl_idname, text="Clear Pins", icon="UNPINNED")
        op.clear = True
        op.frame = -1
        row.operator(ANIM_SIGNALS_OT_pose_space_view_all.bl_idname, text="Frame All", icon="FULLSCREEN_ENTER")
        layout.prop(s, "sketch_frames")

        self.draw_settings(layout, root.pose_space_resample, RESAMPLE_SETTINGS, "pose_space_resample",
                           "Resample Settings")
        row = layout.row(align=True)
        row.operator(ANIM_SIGNALS_OT_pose_space_bake.bl_idname, text="Bake", icon="KEYINGSET")
        row.operator(ANIM_SIGNALS_OT_pose_space_resample.bl_idname, text="Resample", icon="TIME")

        row = layout.row(align=True)
        op = row.operator(ANIM_SIGNALS_OT_pose_space_save_png.bl_idname, text="Save PNG", icon="IMAGE_DATA")
        op.filepath = s.png_path
        row.prop(s, "png_path", text="")
        layout.prop(s, "height")
        box = layout.box()
        col = box.column(align=True)
        col.scale_y = 0.8
        col.label(text="Drag on the canvas:", icon="MOUSE_LMB_DRAG")
        col.label(text="square: edit time, dot: pin frame")
        col.label(text="elsewhere: pose the character")
        col.label(text="Shift: sketch, wheel: zoom, MMB: pan")

    @staticmethod
    def draw_settings(layout, settings, names, group: str, title: str) -> None:
        """A collapsed sub-layout with the settings the build / resample operators start from."""
        header, body = layout.panel(f"anim_signals_{group}_settings", default_closed=True)
        header.label(text=title)
        if body is not None:
            split_layout(body)
            for name in names:
                body.prop(settings, name)

    @staticmethod
    def draw_numbers(layout, info) -> None:
        if not info:
            return
        box = layout.box()
        col = box.column(align=True)
        col.label(text=info["object"], icon="OUTLINER_OB_ARMATURE" if info["kind"] == "ARMATURE" else "OUTLINER_OB_MESH")
        col.label(text=f"n {info['n']}   k {info['k']}   l {info['l']}   m {info['m']}")
        col.label(text=f"Frames {info['frame_first']:g}\u2013{info['frame_last']:g}")
        unit = "\u00b0" if info["kind"] == "ARMATURE" else ""
        col.label(text=f"Error: RMS {info['error_rms']:.3g}{unit}, max {info['error_max']:.3g}{unit}")
        if info["pins"]:
            col.label(text=f"Pins: {info['pins']}", icon="PINNED")


def draw_canvas_switch(layout, settings, ob) -> None:
    """The Canvas switch (Pose Space / Spatial Keyframes), only when ``ob`` has both."""
    if len(canvas_kinds(ob)) > 1:
        layout.row().prop(settings, "shows", expand=True)


classes = (ANIM_SIGNALS_PT_pose_space_canvas, ANIM_SIGNALS_PT_pose_space)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    """The panels, then the canvas's draw handler."""
    _register_classes()
    pose_space_canvas_draw.register()


def unregister() -> None:
    pose_space_canvas_draw.unregister()
    _unregister_classes()
