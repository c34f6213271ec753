"""3D Viewport sidebar, tab "Signals": the Motion Database panel (import Live Link Face CSV, build the
database, reconstruct the active action, live mode with the per-frame time). Draws and calls operators."""

import bpy

from ..operators import motion_db_ops as ops


class ANIM_SIGNALS_PT_motion_db(bpy.types.Panel):
    """Rebuild or denoise motion frame by frame from a database of actions"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Signals"
    bl_label = "Motion Database"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        s = ops.db_settings(context.scene)
        if s is None:
            layout.label(text="Anim Signals settings are not registered", icon="ERROR")
            return
        layout.operator(ops.ANIM_SIGNALS_OT_import_live_link_csv.bl_idname, text="Import Live Link CSV", icon="IMPORT")

        box = layout.box()
        box.label(text="Database", icon="ASSET_MANAGER")
        box.prop(s, "kind")
        box.prop(s, "build_actions")
        op = box.operator(ops.ANIM_SIGNALS_OT_build_motion_database.bl_idname, text="Build", icon="FILE_REFRESH")
        op.kind = s.kind
        op.actions = s.build_actions
        if len(s.actions):
            col = box.column(align=True)
            col.label(text=f"{len(s.actions)} clips, {s.n_frames} frames, {s.n_channels} channels")
            for item in list(s.actions)[:8]:
                col.label(text=item.name, icon="ACTION" if bpy.data.actions.get(item.name) else "ERROR")
            if len(s.actions) > 8:
                col.label(text=f"... {len(s.actions) - 8} more")
        else:
            box.label(text="No database yet", icon="INFO")

        box = layout.box()
        box.label(text="Reconstruct", icon="MOD_SMOOTH")
        col = box.column()
        for name in ("input_channels", "drop_eyes", "output"):
            col.prop(s, name)
        sub = col.column(align=True)
        for name in ("k", "window", "paths"):
            sub.prop(s, name)
        sub = col.column(align=True)
        sub.prop(s, "a")
        sub.prop(s, "b")
        col.prop(s, "stay")
        row = box.row()
        row.scale_y = 1.3
        op = row.operator(ops.ANIM_SIGNALS_OT_reconstruct_motion.bl_idname, icon="PLAY")
        for name in ops.RECONSTRUCT_SETTINGS:
            setattr(op, name, getattr(s, name))
        if s.last_action:
            col = box.column(align=True)
            col.label(text=f"Last: {s.last_action}")
            col.label(text=f"{s.last_frames} frames, {s.last_ms:.2f} ms/frame, best path {s.last_best_length:.1f}")

        box = layout.box()
        running = ops.live_state(context.scene) is not None
        box.label(text="Live", icon="REC" if running else "TIME")
        op = box.operator(ops.ANIM_SIGNALS_OT_motion_db_live.bl_idname,
                          text="Stop Live" if running else "Start Live", depress=running)
        op.action = "TOGGLE"
        for name in ops.RECONSTRUCT_SETTINGS:
            if name != "output":
                setattr(op, name, getattr(s, name))
        op.output = s.output
        if running:
            box.label(text=f"{s.live_object}: {s.live_ms:.2f} ms/frame, best path {s.live_best_length}")


classes = (ANIM_SIGNALS_PT_motion_db,)
register, unregister = bpy.utils.register_classes_factory(classes)
