"""3D Viewport sidebar, tab "Signals": the pose-space canvas and its controls.

``ANIM_SIGNALS_PT_pose_space_canvas`` is headerless, so it always sits at the top of the tab, and
only reserves the canvas area (the gpu layer of :mod:`..operators.pose_space_canvas` draws into it).
``ANIM_SIGNALS_PT_pose_space`` holds the buttons and the active pose space's numbers. Panels only
draw state and call operators.
"""

import bpy

from ..operators import pose_space as data
from ..operators import pose_space_canvas as canvas_ops
from ..operators import pose_space_ops  # the setting names of build / resample


def _settings(context):
    return getattr(getattr(context.scene, "anim_signals", None), "pose_space_canvas", None)


def _has_operator(idname: str) -> bool:
    module, name = idname.split(".")
    return hasattr(bpy.types, f"{module.upper()}_OT_{name}")


class ANIM_SIGNALS_PT_pose_space_canvas(bpy.types.Panel):
    """The pose-space canvas (drawn by the gpu layer over the space this panel reserves)"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = canvas_ops.CATEGORY
    bl_label = "Pose Space Canvas"
    bl_options = {"HIDE_HEADER"}
    bl_order = 0

    @classmethod
    def poll(cls, context):
        return canvas_ops.space_of(context.active_object) is not None

    def draw(self, context):
        col = self.layout.column()
        col.scale_y = float(canvas_ops.canvas_units(context))
        col.label(text="")  # reserved: the canvas is drawn here


class ANIM_SIGNALS_PT_pose_space(bpy.types.Panel):
    """Build, edit and bake the pose space (time, pose and shape signals) of the active object"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = canvas_ops.CATEGORY
    bl_label = "Pose Space"
    bl_order = 1

    def draw(self, context):
        layout = self.layout
        ob = context.active_object
        if ob is None:
            layout.label(text="Select a mesh or armature", icon="INFO")
            return
        space = canvas_ops.space_of(ob)
        if _has_operator("anim_signals.build_pose_space"):
            self.draw_settings(layout, context, "pose_space", "BUILD_SETTINGS", "Build Settings")
            row = layout.row()
            row.scale_y = 1.3
            row.operator("anim_signals.build_pose_space", text="Rebuild Pose Space" if space else "Build Pose Space",
                         icon="MOD_DATA_TRANSFER")
        if space is None:
            layout.label(text=f'"{ob.name}" has no pose space', icon="INFO")
            return
        self.draw_numbers(layout, data.space_info(ob))

        s = _settings(context)
        col = layout.column(align=True)
        row = col.row(align=True)
        row.operator(canvas_ops.ANIM_SIGNALS_OT_pose_space_navigate.bl_idname, text="Navigate", icon="ORIENTATION_CURSOR")
        row.operator(canvas_ops.ANIM_SIGNALS_OT_pose_space_edit_time.bl_idname, text="Edit Time", icon="IPO_BEZIER")
        row = col.row(align=True)
        row.operator(canvas_ops.ANIM_SIGNALS_OT_pose_space_pin.bl_idname, text="Pin", icon="PINNED")
        op = row.operator(canvas_ops.ANIM_SIGNALS_OT_pose_space_sketch.bl_idname, text="Sketch", icon="GREASEPENCIL")
        if s is not None:
            op.frames = s.sketch_frames
        row = col.row(align=True)
        op = row.operator(canvas_ops.ANIM_SIGNALS_OT_pose_space_pin.bl_idname, text="Clear Pins", icon="UNPINNED")
        op.clear = True
        op.frame = -1
        row.operator(canvas_ops.ANIM_SIGNALS_OT_pose_space_view_all.bl_idname, text="Frame All", icon="FULLSCREEN_ENTER")
        if s is not None:
            layout.prop(s, "sketch_frames")

        if _has_operator("anim_signals.pose_space_resample"):
            self.draw_settings(layout, context, "pose_space_resample", "RESAMPLE_SETTINGS", "Resample Settings")
        row = layout.row(align=True)
        for idname, text, icon in (("anim_signals.pose_space_bake", "Bake", "KEYINGSET"),
                                   ("anim_signals.pose_space_resample", "Resample", "TIME")):
            if _has_operator(idname):
                row.operator(idname, text=text, icon=icon)

        row = layout.row(align=True)
        op = row.operator(canvas_ops.ANIM_SIGNALS_OT_pose_space_save_png.bl_idname, text="Save PNG", icon="IMAGE_DATA")
        if s is not None:
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
    def draw_settings(layout, context, group: str, names_attr: str, title: str) -> None:
        """A collapsed sub-layout with the settings the build / resample operators start from."""
        settings = getattr(getattr(context.scene, "anim_signals", None), group, None)
        names = getattr(pose_space_ops, names_attr, ())
        if settings is None or not names:
            return
        header, body = layout.panel(f"anim_signals_{group}_settings", default_closed=True)
        header.label(text=title)
        if body is not None:
            body.use_property_split = True
            body.use_property_decorate = False
            for name in names:
                if name in settings.bl_rna.properties:
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


classes = (ANIM_SIGNALS_PT_pose_space_canvas, ANIM_SIGNALS_PT_pose_space)
register, unregister = bpy.utils.register_classes_factory(classes)
