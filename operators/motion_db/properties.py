"""Motion Database settings, the scene's database record and last results, and the live mode's state.

- :class:`ReconstructSettings`: the reconstruction settings, one definition inherited by the
  reconstruct and live operators and by the scene's group (the sidebar's values).
- :class:`IndexSettings`: the k-NN index settings (backend, recall target), inherited by the build
  operator and the scene's group.
- :class:`AnimSignalsMotionDB` (``scene.anim_signals.motion_db``, saved in the .blend): those
  settings, the build settings, the database record (action names, kind, channel names: the source
  actions are the truth), the k-NN index in use (backend, measured recall, size, file, loaded or
  built) and the numbers of the last reconstruction.
- :class:`AnimSignalsMotionDBLive` (``window_manager.anim_signals.motion_db_live``, runtime only,
  never saved): whether the live mode runs, the object it drives and its last frame's numbers.
"""

from __future__ import annotations

import json
from typing import Any

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from ..blender_data.named_channels import DB_ARMATURE, DB_SHAPE_KEYS
from ..common.settings import setting_names

__all__ = [
    "ARMATURE",
    "BACKEND_ITEMS",
    "INDEX_SETTINGS",
    "KIND_ITEMS",
    "OUTPUT_ITEMS",
    "QUERY_SETTINGS",
    "RECONSTRUCT_SETTINGS",
    "SHAPE_KEYS",
    "AnimSignalsMotionDB",
    "AnimSignalsMotionDBAction",
    "AnimSignalsMotionDBLive",
    "IndexSettings",
    "ReconstructSettings",
]

SHAPE_KEYS, ARMATURE = DB_SHAPE_KEYS, DB_ARMATURE

KIND_ITEMS = [
    (SHAPE_KEYS, "Shape Keys", "Shape-key actions (facial blendshapes such as ARKit's 52)"),
    (ARMATURE, "Armature", "Armature actions (pose-bone rotations; BVH imports)"),
]
OUTPUT_ITEMS = [
    ("BEST_PATH", "Best Path", "The last frame of the best path through the database (exact database poses)"),
    ("SYNTHESIS", "Synthesis", "The weighted geometric median of the best paths' frames (smoother)"),
]

BACKEND_ITEMS = [
    ("AUTO", "Auto", "Chosen from the database size and the recall target: exact search for small databases, an "
                     "approximate faiss index for large ones, whose recall is measured when it is built (exact "
                     "search instead when it misses the target)"),
    ("KDTREE", "Exact (kd-tree)", "Exact nearest neighbours by a kd-tree (scipy cKDTree): quick to build, fast up to "
                                  "tens of thousands of frames, slow per frame at a million"),
    ("FLAT", "Exact (flat scan)", "Exact nearest neighbours by comparing the query with every frame (faiss, or "
                                  "numpy without it): nothing to build, time per frame grows with the database"),
    ("HNSW", "Approximate (HNSW)", "A graph of nearby frames (faiss HNSW): fast per frame, slow to build; on motion "
                                   "data it can miss many true neighbours: its recall is measured when it is built"),
    ("IVF", "Approximate (IVF)", "Frames bucketed by k-means, only the buckets nearest the query searched (faiss "
                                 "inverted file): fast per frame at a million frames; its recall is measured when it "
                                 "is built"),
]


class IndexSettings:
    """The k-NN index settings: inherited by the build operator and the scene's group. Changing one
    makes the next use build a new index (the index file is keyed by them)."""

    backend: EnumProperty(  # type: ignore[valid-type]
        name="Search", description="How the k nearest database frames of each query frame are found",
        items=BACKEND_ITEMS, default="AUTO",
    )
    recall_target: FloatProperty(  # type: ignore[valid-type]
        name="Recall Target",
        description="Share of the true k nearest neighbours an approximate index must find (measured on the "
                    "database's own frames when the index is built); Auto takes exact search when no "
                    "approximate index reaches it",
        default=0.95, min=0.5, max=1.0, precision=3,
    )


INDEX_SETTINGS = setting_names(IndexSettings)


class ReconstructSettings:
    """The reconstruction settings: inherited by the reconstruct and live operators and the scene's group."""

    input_channels: StringProperty(  # type: ignore[valid-type]
        name="Input Channels",
        description='"ALL", or comma-separated channel names used as the query (the others are rebuilt)',
        default="ALL",
    )
    drop_eyes: BoolProperty(  # type: ignore[valid-type]
        name="Drop Eyes", description="Leave the eye channels out of the query (rebuilt from the rest of the face)", default=False,
    )
    output: EnumProperty(name="Output", description="What each frame becomes", items=OUTPUT_ITEMS, default="SYNTHESIS")  # type: ignore[valid-type]
    k: IntProperty(name="Neighbours (K)", description="Nearest database frames per query frame", default=256, min=1, soft_max=1024)  # type: ignore[valid-type]
    window: IntProperty(name="Window (T)", description="Query frames a path can span", default=32, min=1, soft_max=128)  # type: ignore[valid-type]
    paths: IntProperty(name="Paths (I)", description="Best paths the synthesis blends", default=50, min=1, soft_max=256)  # type: ignore[valid-type]
    a: IntProperty(name="Min Step (a)", description="A path's next database frame is at least a frames on (1: strictly forward)", default=1, min=0, soft_max=4)  # type: ignore[valid-type]
    b: IntProperty(name="Max Step (b)", description="... and at most b frames on (2: the database may play up to twice as fast)", default=2, min=0, soft_max=8)  # type: ignore[valid-type]
    stay: FloatProperty(name="Stay", description="Cost discount for continuing the previous best path (0: none)", default=0.0, min=0.0, max=0.99)  # type: ignore[valid-type]


RECONSTRUCT_SETTINGS = setting_names(ReconstructSettings)
# The settings that shape the query (all but ``output``): the keywords of ``reconstruct.plan_query``.
QUERY_SETTINGS = tuple(name for name in RECONSTRUCT_SETTINGS if name != "output")


class AnimSignalsMotionDBAction(bpy.types.PropertyGroup):
    """One source action of the motion database (``name`` is the action's name)."""


class AnimSignalsMotionDB(ReconstructSettings, IndexSettings, bpy.types.PropertyGroup):
    """Motion database of the scene and its settings"""

    kind: EnumProperty(name="Kind", description="Which actions the database holds", items=KIND_ITEMS)  # type: ignore[valid-type]
    build_actions: StringProperty(  # type: ignore[valid-type]
        name="Actions",
        description='Comma-separated actions for Build (empty: every action of the kind, except "*.reconstructed")',
        default="",
    )
    actions: CollectionProperty(type=AnimSignalsMotionDBAction)  # type: ignore[valid-type]
    channels_json: StringProperty(name="Channels", description="The database's channel names (JSON list)")  # type: ignore[valid-type]
    n_channels: IntProperty(name="Channels", description="Channels per database frame")  # type: ignore[valid-type]
    n_frames: IntProperty(name="Frames", description="Frames in the database")  # type: ignore[valid-type]
    object_name: StringProperty(name="Object", description="The object active when the database was built")  # type: ignore[valid-type]
    last_action: StringProperty(name="Reconstructed", description="The action written by the last reconstruction")  # type: ignore[valid-type]
    last_frames: IntProperty(name="Frames", description="Frames of the last reconstruction")  # type: ignore[valid-type]
    last_ms: FloatProperty(name="Time per Frame", description="Mean milliseconds per frame of the last reconstruction")  # type: ignore[valid-type]
    last_best_length: FloatProperty(name="Best Path Length", description="Mean length of the best path (frames)")  # type: ignore[valid-type]
    last_query_channels: IntProperty(name="Query Channels", description="Channels the last query used")  # type: ignore[valid-type]
    # The k-NN index last used (operators/motion_db/index.py): what the sidebar shows.
    index_status: EnumProperty(  # type: ignore[valid-type]
        name="Index", description="Whether the k-NN index in use was loaded from its file or built",
        items=[("NONE", "None", "No index in use yet: built or loaded on first use"),
               ("LOADED", "Loaded", "Loaded from its file (same clips, same settings)"),
               ("BUILT", "Built", "Built in this session and saved")],
        default="NONE",
    )
    index_backend: StringProperty(name="Backend", description="The search the index in use does")  # type: ignore[valid-type]
    index_recall: FloatProperty(  # type: ignore[valid-type]
        name="Recall", description="Measured recall of the index in use: the share of the true k nearest neighbours "
                                   "it finds (1 for exact search)", default=0.0, precision=3,
    )
    index_mb: FloatProperty(name="Index Size", description="Size of the index file (megabytes)", default=0.0)  # type: ignore[valid-type]
    index_path: StringProperty(name="Index File", description="Where the index in use is stored", subtype="FILE_PATH")  # type: ignore[valid-type]
    index_channels: IntProperty(name="Index Channels", description="Query channels the index in use searches")  # type: ignore[valid-type]
    index_note: StringProperty(name="Index Note", description="Why the index was rebuilt, or a fallback taken")  # type: ignore[valid-type]

    def channel_names(self) -> list[str]:
        """The database's channel names, in database order."""
        return json.loads(self.channels_json or "[]")

    def store(self, db: Any, kind: str, object_name: str = "") -> None:
        """Record a built database (a core ``MotionDatabase``): its clips' action names, kind and channels."""
        self.actions.clear()
        for name in db.clip_names:
            self.actions.add().name = name
        self.kind = kind
        self.channels_json = json.dumps(list(db.channels))
        self.n_channels = len(db.channels)
        self.n_frames = db.n_frames
        self.object_name = object_name

    def store_result(self, action_name: str, frames: int, ms_per_frame: float, best_length: float,
                     query_channels: int) -> None:
        """Keep the last reconstruction's numbers for the sidebar: the action written, its frames, the
        mean milliseconds per query frame, the mean best-path length (frames) and the query's channels."""
        self.last_action = action_name
        self.last_frames = int(frames)
        self.last_ms = float(ms_per_frame)
        self.last_best_length = float(best_length)
        self.last_query_channels = int(query_channels)

    def store_index(self, status: str, backend: str, recall: float, megabytes: float, path: str, channels: int,
                    note: str = "") -> None:
        """Keep what the sidebar shows of the k-NN index in use."""
        self.index_status = status
        self.index_backend = backend
        self.index_recall = float(recall)
        self.index_mb = float(megabytes)
        self.index_path = path
        self.index_channels = int(channels)
        self.index_note = note

    def forget_index(self) -> None:
        """No index in use (a file load, a cleared index)."""
        self.store_index("NONE", "", 0.0, 0.0, "", 0)


class AnimSignalsMotionDBLive(bpy.types.PropertyGroup):
    """The live reconstruction of this session (runtime only, never saved)"""

    running: BoolProperty(name="Live", description="Live reconstruction is running (this session)", default=False)  # type: ignore[valid-type]
    object_name: StringProperty(name="Live Object", description="The duplicate the live mode drives")  # type: ignore[valid-type]
    ms: FloatProperty(name="Live Time", description="Milliseconds the last live frame took")  # type: ignore[valid-type]
    best_length: IntProperty(name="Live Best Path", description="Length of the best path at the last live frame")  # type: ignore[valid-type]

    def start(self, object_name: str) -> None:
        """The live mode now drives ``object_name``."""
        self.running = True
        self.object_name = object_name

    def store_frame(self, ms: float, best_length: int) -> None:
        """Keep the numbers of the last live frame."""
        self.ms = ms
        self.best_length = best_length

    def stop(self) -> None:
        self.running = False


classes = (AnimSignalsMotionDBAction, AnimSignalsMotionDB, AnimSignalsMotionDBLive)

# The tool's fields of ``Scene.anim_signals`` and ``WindowManager.anim_signals`` (see operators/scene_settings.py).
SCENE_PROPERTIES = {"motion_db": PointerProperty(type=AnimSignalsMotionDB)}
WINDOW_PROPERTIES = {"motion_db_live": PointerProperty(type=AnimSignalsMotionDBLive)}
