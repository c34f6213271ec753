"""Motion Database operators: ``anim_signals.import_live_link_csv``, ``anim_signals.build_motion_database``,
``anim_signals.clear_motion_db_index``, ``anim_signals.save_motion_db_index``,
``anim_signals.reconstruct_motion`` and the live mode
``anim_signals.motion_db_live``.

Thin: the import, the database, its k-NN index, the reconstruction and the live mode are
:mod:`.livelink_import`, :mod:`.database`, :mod:`.index`, :mod:`.reconstruct` and :mod:`.live`.
A build or a reconstruction writes nothing (no database record, no index file, no action) until it
has finished, so a cancelled or failed one leaves the user's data and the disk untouched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..common import SettingsOperator, StepwiseOperator, as_keywords, transactional
from ..common.menus import add_to_menus, remove_from_menus
from ..common.polls import has_active_object
from ..common.text import parse_names
from .database import MotionDBError, build_database, candidate_actions, store_database
from .index import (
    DatabaseIndex,
    clear_index_files,
    database_columns,
    finish_index,
    index_options,
    iter_index,
    save_beside,
)
from .live import live_state, start_live, stop_live
from .livelink_import import LiveLinkImportError, import_live_link
from .properties import (
    INDEX_SETTINGS,
    KIND_ITEMS,
    OUTPUT_ITEMS,
    QUERY_SETTINGS,
    RECONSTRUCT_SETTINGS,
    SHAPE_KEYS,
    IndexSettings,
    ReconstructSettings,
)
from .reconstruct import QueryPlan, iter_reconstruct, plan_query, query_refusal, write_reconstruction

__all__ = [
    "ANIM_SIGNALS_OT_build_motion_database",
    "ANIM_SIGNALS_OT_clear_motion_db_index",
    "ANIM_SIGNALS_OT_save_motion_db_index",
    "ANIM_SIGNALS_OT_import_live_link_csv",
    "ANIM_SIGNALS_OT_motion_db_live",
    "ANIM_SIGNALS_OT_reconstruct_motion",
]


class ANIM_SIGNALS_OT_import_live_link_csv(bpy.types.Operator):
    """Import a Live Link Face CSV recording (ARKit blendshapes) as shape-key animation on the active mesh with ARKit-named shape keys, or on a generated face"""

    bl_idname = "anim_signals.import_live_link_csv"
    bl_label = "Import Live Link Face CSV"
    bl_options = {"REGISTER", "UNDO"}

    filepath: StringProperty(name="File", description="The Live Link Face CSV file", subtype="FILE_PATH", default="")  # type: ignore[valid-type]
    filter_glob: StringProperty(default="*.csv", options={"HIDDEN"})  # type: ignore[valid-type]
    frame_start: IntProperty(name="Start Frame", description="Scene frame of the recording's first frame", default=1)  # type: ignore[valid-type]
    set_frame_range: BoolProperty(name="Set Frame Range", description="Set the scene's frame range to the recording", default=True)  # type: ignore[valid-type]
    max_gap: FloatProperty(  # type: ignore[valid-type]
        name="Max Gap", description="Gaps (dropped frames, lost tracking) longer than this are reported (seconds); all gaps are filled linearly",
        default=0.25, min=0.0, unit="TIME_ABSOLUTE",
    )

    @transactional
    def execute(self, context):
        try:
            s = import_live_link(context, self.filepath, frame_start=self.frame_start,
                                 set_frame_range=self.set_frame_range, max_gap=self.max_gap)
        except LiveLinkImportError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for m in s.messages[1:]:
            self.report({"WARNING"}, m)
        self.report({"INFO"}, f'{s.messages[0]} -> "{s.action_name}" on "{s.object_name}"')
        return {"FINISHED"}

    def invoke(self, context, event):
        if context.window is None or bpy.app.background:
            return self.execute(context)
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}


@dataclass
class BuildPlan:
    """A checked build: the core database from the actions, and what to record."""

    db: Any
    kind: str
    actions: list
    object_name: str
    options: Any  # the index's knn.IndexOptions
    warnings: list[str] = field(default_factory=list)
    index: DatabaseIndex | None = None  # set by the steps


def _index_text(entry: DatabaseIndex, record) -> str:
    where = os.path.basename(os.path.dirname(entry.path)) if entry.path else "not saved"
    return (f"k-NN index {record.index_backend}, recall {record.index_recall:.3f}, {record.index_mb:.1f} MB, "
            f"{entry.status.lower()} ({entry.seconds:.2f} s; {where})")


class ANIM_SIGNALS_OT_build_motion_database(IndexSettings, StepwiseOperator, bpy.types.Operator):
    """Build the scene's motion database from actions (shape-key or armature actions) and its k-NN index (loaded from its file when the clips and settings are unchanged, else built and saved beside the .blend): the actions stay the truth"""

    bl_idname = "anim_signals.build_motion_database"
    bl_label = "Build Motion Database"
    bl_options = {"REGISTER", "UNDO"}

    SETTINGS = INDEX_SETTINGS
    STATUS_TEXT = "Building the motion database index... Esc / right-click to cancel"
    CANCELLED_TEXT = "Motion database build cancelled: nothing changed, no index file written"
    REMOVED_TEXT = "A database action was removed during the build: nothing changed"
    FAILED_PREFIX = "Motion database build failed: "
    INPUT_ERRORS = (MotionDBError,)
    FAILURES = (ValueError, MotionDBError)

    kind: EnumProperty(name="Kind", description="Which actions make the database", items=KIND_ITEMS, default=SHAPE_KEYS)  # type: ignore[valid-type]
    actions: StringProperty(  # type: ignore[valid-type]
        name="Actions",
        description='Comma-separated action names (empty: every action of this kind in the file, except "*.reconstructed" results)',
        default="",
    )

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.motion_db

    def prepare(self, context) -> BuildPlan:
        actions = candidate_actions(self.kind, parse_names(self.actions))
        db, warnings = build_database(actions, self.kind)
        ob = context.active_object
        options = index_options(context.scene.anim_signals.motion_db, db.n_frames, backend=self.backend,
                                recall_target=float(self.recall_target))
        return BuildPlan(db, self.kind, actions, ob.name if ob is not None else "", options, warnings)

    def steps(self, plan: BuildPlan):
        plan.index = yield from iter_index(plan.db, database_columns(plan.db), plan.options)

    def finish(self, context, plan: BuildPlan) -> set[str]:
        scene = context.scene
        assert plan.index is not None
        record = scene.anim_signals.motion_db
        record.backend, record.recall_target = self.backend, self.recall_target  # the index's settings
        store_database(scene, plan.db, plan.kind, plan.actions, plan.object_name)
        for message in finish_index(scene, plan.index):
            self.report({"WARNING"}, message)
        if (state := live_state(scene)) is not None:
            state.stale = True  # the live mode takes the new database on its next frame
        db = plan.db
        self.report({"INFO"}, f"Motion database: {db.n_clips} clip(s), {db.n_frames} frames, {len(db.channels)} channels; "
                              f"{_index_text(plan.index, record)} ({self.elapsed():.2f} s)")
        return {"FINISHED"}


class ANIM_SIGNALS_OT_clear_motion_db_index(bpy.types.Operator):
    """Delete the motion database's k-NN index files (beside the .blend, and this session's in the cache folder): the next build or reconstruction builds the index again"""

    bl_idname = "anim_signals.clear_motion_db_index"
    bl_label = "Clear Index Files"
    bl_options = {"REGISTER"}

    def execute(self, context):
        count, megabytes, folders = clear_index_files(context.scene)
        if not count:
            self.report({"INFO"}, "No motion database index file to delete")
        else:
            self.report({"INFO"}, f"Deleted {count} index file(s), {megabytes:.1f} MB, from {', '.join(folders)}")
        return {"FINISHED"}


class ANIM_SIGNALS_OT_save_motion_db_index(bpy.types.Operator):
    """Write the k-NN indexes this scene's motion database uses beside a .blend (its "<name>_motiondb" folder), for a copy of the file saved elsewhere (scripts, the command line); Save and Save As do it by themselves"""

    bl_idname = "anim_signals.save_motion_db_index"
    bl_label = "Save Index Beside"
    bl_options = {"REGISTER"}

    filepath: StringProperty(name="Blend File", description="The .blend the index goes beside (empty: the open file)", subtype="FILE_PATH", default="")  # type: ignore[valid-type]

    def execute(self, context):
        path = bpy.path.abspath(self.filepath) if self.filepath else bpy.data.filepath
        if not path:
            self.report({"ERROR"}, "The file is not saved: give the .blend the index goes beside")
            return {"CANCELLED"}
        if not len(context.scene.anim_signals.motion_db.actions):
            self.report({"ERROR"}, "No motion database in this scene: build one first")
            return {"CANCELLED"}
        try:
            written = save_beside(path, context.scene)
        except OSError as err:
            self.report({"ERROR"}, f"The index could not be written beside {path}: {err}")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Wrote {len(written)} index file(s) beside {os.path.basename(path)}"
                    if written else "The index files are already beside the file (or none is in memory)")
        return {"FINISHED"}


class ANIM_SIGNALS_OT_reconstruct_motion(ReconstructSettings, StepwiseOperator, bpy.types.Operator):
    """Rebuild the active object's action from the motion database (denoise, or fill in missing channels): a new action "<action>.reconstructed"""

    bl_idname = "anim_signals.reconstruct_motion"
    bl_label = "Reconstruct Motion"
    bl_options = {"REGISTER", "UNDO"}

    SETTINGS = RECONSTRUCT_SETTINGS
    STATUS_TEXT = "Reconstructing... Esc / right-click to cancel"
    CANCELLED_TEXT = "Reconstruction cancelled: nothing changed"
    REMOVED_TEXT = "The query's data was removed during the reconstruction: nothing written"
    FAILED_PREFIX = "Reconstruction failed: "
    INPUT_ERRORS = (MotionDBError,)
    FAILURES = (ValueError, MotionDBError)

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.motion_db

    @classmethod
    def poll(cls, context):
        return has_active_object(cls, context)

    def prepare(self, context) -> QueryPlan:
        plan = plan_query(context, **as_keywords(self, QUERY_SETTINGS))
        if not plan.frames.size:
            raise MotionDBError("The query action has no frames")
        if (reason := query_refusal(context.active_object, plan.id_data)) is not None:
            raise MotionDBError(reason)
        return plan

    def steps(self, plan: QueryPlan):
        return iter_reconstruct(plan, self.output)

    def finish(self, context, plan: QueryPlan) -> set[str]:
        assert plan.index is not None
        for message in finish_index(context.scene, plan.index):  # saves an index built by this run
            self.report({"WARNING"}, message)
        name = write_reconstruction(context.scene, plan, self.output)
        record = context.scene.anim_signals.motion_db
        self.report({"INFO"}, f'"{name}": {plan.frames.size} frames from {len(plan.query_channels)} of '
                              f"{len(plan.db.channels)} channels, {record.last_ms:.2f} ms per frame; "
                              f"{_index_text(plan.index, record)}")
        return {"FINISHED"}


class ANIM_SIGNALS_OT_motion_db_live(ReconstructSettings, SettingsOperator, bpy.types.Operator):
    """Toggle live reconstruction: while the timeline plays, every frame of the active object's action is rebuilt from the motion database onto a duplicate "<name>.live\""""

    bl_idname = "anim_signals.motion_db_live"
    bl_label = "Live Reconstruction"
    bl_options = {"REGISTER"}

    SETTINGS = RECONSTRUCT_SETTINGS

    action: EnumProperty(  # type: ignore[valid-type]
        name="Action", items=[("TOGGLE", "Toggle", ""), ("START", "Start", ""), ("STOP", "Stop", "")], default="TOGGLE",
    )
    output: EnumProperty(name="Output", description="What each frame becomes", items=OUTPUT_ITEMS, default="BEST_PATH")  # type: ignore[valid-type]

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.motion_db

    @transactional  # a start that fails after making the duplicate removes it
    def execute(self, context):
        running = live_state(context.scene) is not None
        if self.action == "STOP" or (self.action == "TOGGLE" and running):
            stop_live(context.scene)
            self.report({"INFO"}, "Live reconstruction off")
            return {"FINISHED"}
        if running:
            stop_live(context.scene)
        try:
            state = start_live(context, self.output, **as_keywords(self, QUERY_SETTINGS))
        except (MotionDBError, ValueError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for m in state.plan.warnings:
            self.report({"WARNING"}, m)
        self.report({"INFO"}, f'Live reconstruction on: "{state.duplicate_name}" follows the timeline')
        return {"FINISHED"}


def menu_import(self, context):
    self.layout.operator(ANIM_SIGNALS_OT_import_live_link_csv.bl_idname, text="Live Link Face CSV (.csv) (Anim Signals)")


MENUS = ("TOPBAR_MT_file_import",)
classes = (
    ANIM_SIGNALS_OT_import_live_link_csv,
    ANIM_SIGNALS_OT_build_motion_database,
    ANIM_SIGNALS_OT_clear_motion_db_index,
    ANIM_SIGNALS_OT_save_motion_db_index,
    ANIM_SIGNALS_OT_reconstruct_motion,
    ANIM_SIGNALS_OT_motion_db_live,
)


def add_menus() -> None:
    add_to_menus(MENUS, menu_import)


def remove_menus() -> None:
    remove_from_menus(MENUS, menu_import)
