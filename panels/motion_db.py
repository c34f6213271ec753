"""3D Viewport sidebar, tab "Signals": the Motion Database panel (import Live Link Face CSV, build the
database and its k-NN index (backend, measured recall, size, file, loaded or built), reconstruct the
active action, live mode with the per-frame time).

Reads ``scene.anim_signals.motion_db`` and ``window_manager.anim_signals.motion_db_live`` (owned by
``operators/motion_db``); only draws and calls the operators.
"""

from __future__ import annotations

import bpy

from ..operators.common import as_keywords
from ..operators.motion_db.live import live_state
from ..operators.motion_db.operators import (
    ANIM_SIGNALS_OT_build_motion_database,
    ANIM_SIGNALS_OT_clear_motion_db_index,
    ANIM_SIGNALS_OT_import_live_link_csv,
    ANIM_SIGNALS_OT_motion_db_live,
    ANIM_SIGNALS_OT_reconstruct_motion,
)
from ..operators.motion_db.properties import INDEX_SETTINGS, RECONSTRUCT_SETTINGS
from .common import settings_button, split_layout

# Source actions listed by name under the database's numbers.
LISTED_ACTIONS = 8


class ANIM_SIGNALS_PT_motion_db(bpy.types.Panel):
    """Rebuild or denoise motion frame by frame from a database of actions"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Signals"
    bl_label = "Motion Database"
    bl_options = {"DEFAULT_CLOSED"}
    bl_order = 2  # after the pose-space canvas (0) and its controls (1), which belong together

    def draw(self, context):
        layout = split_layout(self.layout)
        s = context.scene.anim_signals.motion_db
        layout.operator(ANIM_SIGNALS_OT_import_live_link_csv.bl_idname, text="Import Live Link CSV", icon="IMPORT")
        self._draw_database(layout.box(), s)
        self._draw_reconstruct(layout.box(), s)
        self._draw_live(layout.box(), context, s)

    @staticmethod
    def _draw_database(box, s) -> None:
        box.label(text="Database", icon="ASSET_MANAGER")
        box.prop(s, "kind")
        box.prop(s, "build_actions")
        col = box.column(align=True)
        for name in INDEX_SETTINGS:
            col.prop(s, name)
        op = box.operator(ANIM_SIGNALS_OT_build_motion_database.bl_idname, text="Build", icon="FILE_REFRESH")
        op.kind = s.kind
        op.actions = s.build_actions
        for name in INDEX_SETTINGS:
            setattr(op, name, getattr(s, name))
        if not len(s.actions):
            box.label(text="No database yet", icon="INFO")
            return
        col = box.column(align=True)
        col.label(text=f"{len(s.actions)} clips, {s.n_frames} frames, {s.n_channels} channels")
        for item in list(s.actions)[:LISTED_ACTIONS]:
            col.label(text=item.name, icon="ACTION" if bpy.data.actions.get(item.name) else "ERROR")
        if len(s.actions) > LISTED_ACTIONS:
            col.label(text=f"... {len(s.actions) - LISTED_ACTIONS} more")
        ANIM_SIGNALS_PT_motion_db._draw_index(box.column(align=True), s)

    @staticmethod
    def _draw_index(col, s) -> None:
        if s.index_status == "NONE":
            col.label(text="Index: loaded or built on first use", icon="INFO")
            col.operator(ANIM_SIGNALS_OT_clear_motion_db_index.bl_idname, icon="TRASH")
            return
        status = "loaded from file" if s.index_status == "LOADED" else "built"
        col.label(text=f"Index: {s.index_backend}", icon="VIEWZOOM")
        col.label(text=f"Recall {s.index_recall:.3f}, {s.index_mb:.1f} MB, {status}")
        col.label(text=f"{s.index_channels} query channels")
        where = bpy.path.relpath(s.index_path) if s.index_path else "not saved"
        col.label(text=f"File: {where}", icon="FILE")
        if s.index_note:
            col.label(text=s.index_note, icon="ERROR")
        col.operator(ANIM_SIGNALS_OT_clear_motion_db_index.bl_idname, icon="TRASH")

    @staticmethod
    def _draw_reconstruct(box, s) -> None:
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
        settings_button(box, ANIM_SIGNALS_OT_reconstruct_motion.bl_idname, s, RECONSTRUCT_SETTINGS,
                        text=ANIM_SIGNALS_OT_reconstruct_motion.bl_label, icon="PLAY")
        if s.last_action:
            col = box.column(align=True)
            col.label(text=f"Last: {s.last_action}")
            col.label(text=f"{s.last_frames} frames, {s.last_ms:.2f} ms/frame, best path {s.last_best_length:.1f}")

    @staticmethod
    def _draw_live(box, context, s) -> None:
        running = live_state(context.scene) is not None
        box.label(text="Live", icon="REC" if running else "TIME")
        op = box.operator(ANIM_SIGNALS_OT_motion_db_live.bl_idname,
                          text="Stop Live" if running else "Start Live", depress=running)
        op.action = "TOGGLE"
        for name, value in as_keywords(s, RECONSTRUCT_SETTINGS).items():
            setattr(op, name, value)
        if running:
            live = context.window_manager.anim_signals.motion_db_live
            box.label(text=f"{live.object_name}: {live.ms:.2f} ms/frame, best path {live.best_length}")


classes = (ANIM_SIGNALS_PT_motion_db,)
register, unregister = bpy.utils.register_classes_factory(classes)
