"""The motion database's k-NN index: built once, saved beside the .blend, loaded on open or first use.

An index answers "the k database frames nearest to this query" over the query's channels (the
core's ``anim_signals.motiondb.knn``: exact kd-tree or flat scan, approximate HNSW or IVF, with the
recall measured when it is built). Building one for a large database takes minutes, so it is kept:

- **where**: ``<blend folder>/<blend name>_motiondb/knn-<hash>.asknn`` beside the saved .blend (found
  again when the file is opened, moved along with it), or, for an unsaved .blend and one whose
  folder cannot be written (a linked library's, a read-only share), in the extension's user folder
  (``motiondb/``), shared by every file;
- **which**: the file is named by the content hash of the database's frames, the query columns and
  the index settings (``index_store.content_hash``), so a changed clip, channel set or setting finds
  no file and a new index is built; the loader checks the file's header, version, hash and
  checksums too (``index_store.load_index``): a truncated, corrupt or foreign file is reported,
  deleted and rebuilt, never used;
- **when**: the Build operator builds (or loads) the index over every channel; a reconstruction or
  the live mode whose query uses other channels builds (or loads) that one on first use. Built
  indexes are written at the end of the operator that built them (atomically, by the core), never
  by a cancelled one. Loaded ones stay in memory for the session (:data:`SESSION_INDEXES`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np

from ...anim_signals.motiondb import MotionDatabase, knn
from ...anim_signals.motiondb import index_store as store
from ..blender_data.files import blend_path, cache_folder, sidecar_folder, writable_folder
from ..common.handlers import install_handlers, remove_handlers
from ..common.progress import run_blocking
from ..common.threaded import iter_in_thread
from .database import MotionDBError, stored_database

__all__ = [
    "INDEX_EXT",
    "INDEX_SUFFIX",
    "DatabaseIndex",
    "clear_index_files",
    "clear_session",
    "ensure_index",
    "find_index",
    "index_files",
    "index_options",
    "iter_index",
    "load_scene_indexes",
    "record_index",
    "register_handlers",
    "save_beside",
    "save_index_file",
    "unregister_handlers",
]

INDEX_SUFFIX = "_motiondb"
INDEX_EXT = ".asknn"  # the core's name: index_store.index_path
CACHE_NAME = "motiondb"
SESSION_INDEXES = 4
CACHE_FILES = 16
"""Index files kept in the shared cache folder (unsaved .blend files): the least recently written go
first, so the folder does not grow without bound."""
"""Indexes kept in memory for the session (the oldest goes first): at a million frames one HNSW
index is a few hundred megabytes."""


@dataclass
class DatabaseIndex:
    """A k-NN index of a motion database over some of its columns, and where it came from."""

    key: str  # content hash: frames, query columns, index settings
    index: Any  # the core index (``knn``): .backend, .recall, .nbytes, .search, .describe()
    n_channels: int  # query columns it searches
    status: str  # "LOADED" (from ``path``) or "BUILT" (this session)
    path: str = ""  # its file ('' while a built index is not yet saved)
    note: str = ""  # why it was rebuilt, a fallback taken (shown with it)
    seconds: float = 0.0  # time to load or build it
    session_only: bool = False  # an exact fallback for want of faiss here: never saved under the key

    @property
    def megabytes(self) -> float:
        """Size on disk when saved, else in memory."""
        if self.path and os.path.isfile(self.path):
            return os.path.getsize(self.path) / 1e6
        return float(getattr(self.index, "nbytes", 0)) / 1e6


# content hash -> index in memory, this session
_SESSION: dict[str, DatabaseIndex] = {}
# (id(db), columns, options) -> (db, content hash): the hash reads every frame, once per database
_KEYS: dict[tuple, tuple[MotionDatabase, str]] = {}
# scene name -> content hashes of the indexes it used this session (saved beside the .blend on save)
_USED: dict[str, set[str]] = {}
# content hash -> why its file was refused (found on open, told when the index is built again)
_REFUSED: dict[str, list[str]] = {}


def index_options(record: Any, n_frames: int, **overrides: Any) -> knn.IndexOptions:
    """The index settings of the scene's database record (``scene.anim_signals.motion_db``) for a
    database of ``n_frames``: the backend, the recall target and the sidebar's K (the recall is
    measured, and an approximate index's search effort tuned, at K neighbours; an operator run with
    another K uses the same index, which answers any k). ``overrides``: fields to replace (the
    Build operator's own backend and recall target)."""
    fields: dict[str, Any] = {"backend": str(record.backend), "recall_target": float(record.recall_target),
                              "k": max(1, min(int(record.k), int(n_frames)))}
    fields.update(overrides)
    return knn.IndexOptions(**fields)


def _key(db: MotionDatabase, cols: np.ndarray, options: knn.IndexOptions) -> str:
    lookup = (id(db), tuple(int(c) for c in cols), options)
    hit = _KEYS.get(lookup)
    if hit is not None and hit[0] is db:
        return hit[1]
    key = store.content_hash(db, cols, options)
    if len(_KEYS) >= 4 * SESSION_INDEXES:
        _KEYS.pop(next(iter(_KEYS)))
    _KEYS[lookup] = (db, key)
    return key


def _file_name(key: str) -> str:
    return store.index_path("", key).name


def index_files(key: str) -> list[str]:
    """Where an index file with content hash ``key`` may be: beside the .blend, then the cache."""
    folders = [f for f in (sidecar_folder(INDEX_SUFFIX), cache_folder(CACHE_NAME)) if f]
    return [os.path.join(f, _file_name(key)) for f in folders]


def _target_file(key: str) -> str:
    """Where a new index file goes: beside the saved .blend when that folder can be written, else
    the cache folder."""
    folder = sidecar_folder(INDEX_SUFFIX)
    if not folder or not writable_folder(folder) or _blend_is_library_file():
        folder = cache_folder(CACHE_NAME)
    return os.path.join(folder, _file_name(key))


def _blend_is_library_file() -> bool:
    """The open .blend is itself read-only on disk (opened from a read-only share)."""
    path = blend_path()
    return bool(path) and os.path.exists(path) and not os.access(path, os.W_OK)


def _remember(entry: DatabaseIndex) -> DatabaseIndex:
    _SESSION.pop(entry.key, None)
    while len(_SESSION) >= SESSION_INDEXES:
        _SESSION.pop(next(iter(_SESSION)))
    _SESSION[entry.key] = entry
    return entry


def find_index(db: MotionDatabase, cols: np.ndarray, options: knn.IndexOptions) -> tuple[DatabaseIndex | None, str, list[str]]:
    """The index for ``db``'s columns ``cols`` with ``options``: from memory or from its file.

    Returns ``(index or None, content hash, notes)``; the notes tell of files found unusable
    (truncated, corrupt, foreign, another version or hash): those are deleted (they are ours and
    would be refused every time) and the caller builds a new index.
    """
    key = _key(db, cols, options)
    hit = _SESSION.get(key)
    if hit is not None:
        return hit, key, []
    notes = []
    for path in index_files(key):
        if not os.path.isfile(path):
            continue
        t0 = time.perf_counter()
        try:
            index = store.load_index(path, key, db.query_points(np.asarray(cols, dtype=int)))
        except store.IndexFileError as err:
            if knn.import_faiss()[0] is None and "faiss" in err.reason:
                # a good approximate index this Blender cannot read: kept for one that can
                notes.append(f"index file {path} needs faiss ({err.reason}): exact search this session")
                _REFUSED.setdefault(key, []).append(notes[-1])
                continue
            notes.append(f"index file {path} is unusable ({err.reason}): rebuilt")
            _REFUSED.setdefault(key, []).append(notes[-1])
            try:
                os.remove(path)
            except OSError:
                pass
            continue
        except knn.IndexTooLarge as err:
            raise MotionDBError(f"the k-NN index does not fit in memory: {err}") from err
        entry = DatabaseIndex(key, index, int(len(cols)), "LOADED", path, note=str(getattr(index, "message", "") or ""),
                              seconds=time.perf_counter() - t0)
        return _remember(entry), key, notes
    return None, key, notes


def _build(points: np.ndarray, options: knn.IndexOptions, *, progress) -> Any:
    return knn.build_index(points, options=options, progress=progress)


def iter_index(db: MotionDatabase, cols: np.ndarray, options: knn.IndexOptions) -> Generator[float, None, DatabaseIndex]:
    """The index for ``db``'s columns ``cols``: from memory, from its file, or built (in a worker
    thread, yielding progress in [0, 1]; closing the generator stops the build). A built index is
    not saved here: :func:`save_index_file` at the end of the operator."""
    entry, key, _notes = find_index(db, cols, options)
    if entry is not None:
        _REFUSED.pop(key, None)
        return entry
    notes = _REFUSED.pop(key, [])
    t0 = time.perf_counter()
    points = db.query_points(np.asarray(cols, dtype=int))
    try:
        index = yield from iter_in_thread(_build, points, options)
    except MemoryError as err:
        raise MotionDBError(f"the k-NN index does not fit in memory: {err}") from err
    fallback = getattr(index, "message", "") or ""
    note = "; ".join([*notes, fallback] if fallback else notes)
    # Without faiss an asked-for approximate index (or AUTO's) falls back to exact search: that
    # fallback says nothing about the data, so it is not saved under the key of what was asked.
    session_only = (knn.import_faiss()[0] is None and options.backend in ("AUTO", "HNSW", "IVF")
                    and getattr(index, "backend", "") in ("KDTREE", "FLAT") and bool(fallback))
    entry = DatabaseIndex(key, index, int(len(cols)), "BUILT", note=note, seconds=time.perf_counter() - t0,
                          session_only=session_only)
    return _remember(entry)


def save_index_file(entry: DatabaseIndex, path: str = "") -> str:
    """Write a built index to its file (``path``, default beside the .blend or in the cache; the
    core writes atomically: a temporary file renamed). Returns the path; raises OSError."""
    path = path or _target_file(entry.key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    store.save_index(entry.index, path, entry.key)
    if not entry.path or not os.path.isfile(entry.path):
        entry.path = path
    if _in_cache(path):
        _prune_cache(keep=path)
    return path


def _prune_cache(keep: str) -> None:
    """Delete the oldest index files of the cache folder beyond :data:`CACHE_FILES` (never ``keep``
    or one in use this session)."""
    folder = cache_folder(CACHE_NAME)
    in_use = {e.path for e in _SESSION.values()} | {keep}
    files = [os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(INDEX_EXT)]
    files.sort(key=lambda f: os.path.getmtime(f), reverse=True)
    for old in files[CACHE_FILES:]:
        if old not in in_use:
            try:
                os.remove(old)
            except OSError:
                pass


def ensure_index(scene: Any, db: MotionDatabase, cols: np.ndarray) -> tuple[DatabaseIndex, list[str]]:
    """The index for the scene's database ``db`` over ``cols`` with the scene's settings, loaded or
    built now (blocking, with the window's progress bar: the live mode), saved when built, and
    recorded on the scene. Returns it and messages for the user (a rebuilt file, a fallback, a
    failed save)."""
    entry = run_blocking(iter_index(db, cols, index_options(scene.anim_signals.motion_db, db.n_frames)))
    return entry, finish_index(scene, entry)


def finish_index(scene: Any, entry: DatabaseIndex) -> list[str]:
    """Save ``entry`` when it was built and has no file yet, and record it on the scene (what the
    sidebar shows). Returns messages for the user: its note, a failed save."""
    messages = [entry.note] if entry.note else []
    if entry.session_only:
        messages.append("the exact fallback index is kept for this session only (not saved)")
    elif entry.status == "BUILT" and not (entry.path and os.path.isfile(entry.path)):
        try:
            save_index_file(entry)
        except OSError as err:
            messages.append(f"the k-NN index could not be saved ({err}): it is rebuilt next session")
    record_index(scene, entry)
    return messages


def record_index(scene: Any, entry: DatabaseIndex) -> None:
    """Show ``entry`` in the scene's sidebar: backend, measured recall, size, file, loaded or built."""
    _USED.setdefault(scene.name, set()).add(entry.key)
    if getattr(scene, "library", None) is not None:
        return  # a linked scene's properties cannot be written (its index is still used)
    index = entry.index
    recall = getattr(index, "recall", None)  # None: not measured (an approximate kd-tree)
    scene.anim_signals.motion_db.store_index(
        entry.status, describe(index), 0.0 if recall is None else float(recall), entry.megabytes, entry.path,
        entry.n_channels, entry.note)


def describe(index: Any) -> str:
    """The index's backend and the settings it was built with, short (``HNSW (faiss, M 32, efSearch 256)``)."""
    settings = dict(getattr(index, "settings", {}) or {})
    parts = [str(settings.pop("impl", "") or "")]
    parts += [f"{k} {v}" for k, v in settings.items() if v not in (0, 0.0, "", None)]
    parts = [p for p in parts if p]
    backend = str(getattr(index, "backend", "?"))
    return f"{backend} ({', '.join(parts)})" if parts else backend


def database_columns(db: MotionDatabase, channels: Sequence[str] | None = None) -> np.ndarray:
    """Column indices of ``channels`` (every channel when None)."""
    if channels is None:
        return np.arange(len(db.channels))
    cols, _ = db.columns(list(channels))
    return cols


def save_beside(blend: str, scene: Any | None = None) -> list[str]:
    """Write the indexes the scene uses beside ``blend`` (``<blend name>_motiondb/``), skipping
    those already there: after saving the .blend under a new name (the command line's output, a
    Save As). Returns the paths written."""
    scenes: list[Any] = [scene] if scene is not None else list(bpy.data.scenes)
    folder = sidecar_folder(INDEX_SUFFIX, blend)
    if not folder or not writable_folder(folder):
        return []
    written = []
    for sc in scenes:
        for entry in _scene_entries(sc):
            if entry.session_only:
                continue
            path = os.path.join(folder, _file_name(entry.key))
            if os.path.isfile(path):
                if _in_cache(entry.path):  # the same index is beside it already: no second copy kept
                    os.remove(entry.path)
                    entry.path = path
                continue
            if _in_cache(entry.path):  # the file of an unsaved .blend now belongs to a saved one: moved
                try:
                    os.makedirs(folder, exist_ok=True)
                    os.replace(entry.path, path)
                    if sc.anim_signals.motion_db.index_path == entry.path:
                        sc.anim_signals.motion_db.index_path = path  # what the sidebar shows
                    entry.path = path
                    written.append(path)
                    continue
                except OSError:
                    pass  # another file system: written again below
            save_index_file(entry, path)
            entry.path = path
            written.append(path)
    return written


def _in_cache(path: str) -> bool:
    return bool(path) and os.path.isfile(path) and os.path.dirname(os.path.abspath(path)) == cache_folder(CACHE_NAME)


def _scene_entries(scene: Any) -> list[DatabaseIndex]:
    """The indexes in memory that ``scene`` used this session."""
    return [_SESSION[k] for k in _USED.get(scene.name, ()) if k in _SESSION]


def clear_index_files(scene: Any) -> tuple[int, float, list[str]]:
    """Delete the scene's index files: every ``*.asknn`` beside the .blend and the cache files of
    the indexes this session used for the scene; forget them in memory. Returns (files, megabytes,
    folders)."""
    paths: set[str] = set()
    folder = sidecar_folder(INDEX_SUFFIX)
    if folder and os.path.isdir(folder):
        paths.update(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(INDEX_EXT))
    for entry in _scene_entries(scene):
        paths.update(p for p in index_files(entry.key) if os.path.isfile(p))
        _SESSION.pop(entry.key, None)
    _USED.pop(scene.name, None)
    if scene.anim_signals.motion_db.index_path and os.path.isfile(scene.anim_signals.motion_db.index_path):
        if os.path.basename(scene.anim_signals.motion_db.index_path).endswith(INDEX_EXT):
            paths.add(scene.anim_signals.motion_db.index_path)
    count, size, where = 0, 0.0, set()
    for p in sorted(paths):
        try:
            bytes_ = os.path.getsize(p)
            os.remove(p)
        except OSError:
            continue
        count, size = count + 1, size + bytes_ / 1e6
        where.add(os.path.dirname(p))
    if folder and os.path.isdir(folder) and not os.listdir(folder):
        os.rmdir(folder)
    scene.anim_signals.motion_db.forget_index()
    return count, size, sorted(where)


def load_scene_indexes() -> list[str]:
    """Load (never build) the every-channel index of each scene's database from its file: on file
    open. Returns messages (files found unusable: they are rebuilt on first use)."""
    messages = []
    scenes: list[Any] = list(bpy.data.scenes)
    for scene in scenes:
        record = scene.anim_signals.motion_db
        if not len(record.actions):
            continue
        try:
            db = stored_database(scene)
        except MotionDBError as err:
            messages.append(f"{scene.name}: {err}")
            continue
        entry, _key_, notes = find_index(db, database_columns(db), index_options(record, db.n_frames))
        messages += notes
        if entry is not None:
            record_index(scene, entry)
    return messages


def clear_session() -> None:
    """Forget every index in memory (they are loaded again from their files on demand)."""
    _SESSION.clear()
    _KEYS.clear()
    _USED.clear()
    _REFUSED.clear()


@bpy.app.handlers.persistent
def _on_load_post(*_args) -> None:
    """A file was opened: the indexes of the previous file are not this one's; load each scene's
    every-channel index from its file (never build: that waits for first use)."""
    _USED.clear()
    for scene in bpy.data.scenes:
        if hasattr(scene, "anim_signals") and scene.library is None:
            scene.anim_signals.motion_db.forget_index()
    try:
        for message in load_scene_indexes():
            print(f"Anim Signals: motion database index: {message}")
    except (OSError, ValueError) as err:  # never stop a file from opening
        print(f"Anim Signals: motion database index not loaded: {err}")


@bpy.app.handlers.persistent
def _on_save_post(*_args) -> None:
    """The .blend was saved (a first save, a Save As): the indexes its scenes use go beside it too."""
    path = blend_path()
    if not path:
        return
    try:
        save_beside(path)
    except OSError as err:
        print(f"Anim Signals: motion database index not saved beside {path}: {err}")


_HANDLERS = ((bpy.app.handlers.load_post, _on_load_post), (bpy.app.handlers.save_post, _on_save_post))


def register_handlers() -> None:
    install_handlers(_HANDLERS)


def unregister_handlers() -> None:
    remove_handlers(_HANDLERS)
    clear_session()
