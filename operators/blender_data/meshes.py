"""Meshes: evaluated geometry over time, mesh caches, and objects made for results.

Owns reading a mesh's evaluated vertices frame by frame (:func:`mesh_sequence_rows`: Mesh Cache
PC2 / MDD, Mesh Sequence Cache / Alembic, cloth, any modifier), the frame range a Mesh Cache
modifier plays (:func:`mesh_cache_frame_range`, with the core's PC2 / MDD readers), a mesh copy of
the evaluated geometry (:func:`evaluated_mesh_copy`) or of the mesh data
(:func:`mesh_copy_without_shape_keys`), and objects for results: a face mesh with shape keys
(:func:`new_face_object`), live duplicates (:func:`live_duplicate`), plain copies
(:func:`new_object_copy`) and giving an object other mesh data (:func:`replace_mesh`); a mesh as
arrays (:func:`mesh_vertices`, :func:`mesh_triangles`, :func:`rest_vertices`,
:func:`evaluated_counts`), a result object remade on every run (:func:`mesh_result_object`), and
vertex animation written as a PC2 point cache played by a Mesh Cache modifier
(:func:`point_cache_path`, :func:`write_point_cache`, :func:`set_mesh_cache`). Vertex positions
are read with ``foreach_get``.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Generator, Sequence
from typing import Any

import bpy
import numpy as np

from ...anim_signals.meshio import read_cache_header, write_pc2
from .actions import get_action
from .frames import evaluation_scene, visiting_frames
from .shape_keys import read_key_block_coords, write_shape_key_basis
from .vertex_groups import sync_edit_mode

CACHE_MODIFIERS = ("MESH_CACHE", "MESH_SEQUENCE_CACHE")
"""Modifier types that play vertex animation from files."""


class TopologyChangeError(ValueError):
    """The evaluated mesh has another vertex (or face) count at ``frame`` than at ``first_frame``."""

    def __init__(self, frame: float, count: int, first_frame: float, first_count: int, what: str = "vertices"):
        self.frame, self.count, self.first_frame, self.first_count = frame, count, first_frame, first_count
        super().__init__(
            f"the mesh topology changes over time: frame {frame:g} has {count} {what}, "
            f"frame {first_frame:g} has {first_count}"
        )


def mesh_sequence_rows(scene: bpy.types.Scene, ob: bpy.types.Object,
                       frames: Sequence[float] | np.ndarray) -> Generator[np.ndarray, None, None]:
    """The evaluated mesh's vertex positions (object space, after every modifier), frame by frame.

    A generator yielding one row (3 V,) float64 per frame (x0 y0 z0 x1 ...), so a modal operator
    can step it. Frames are visited in the given (increasing) order, so simulations such as cloth
    advance; the current frame is restored when done or when the generator is closed. The object is
    evaluated in a :func:`.frames.evaluation_scene` of its own (in the user's scene when it simulates).

    Raises
    ------
    TopologyChangeError
        Naming the first frame whose vertex or face count differs from the first frame's.
    """
    first: tuple[float, int, int] | None = None
    buf = np.empty(0, dtype=np.float32)
    with evaluation_scene(scene, [ob]) as where, visiting_frames(where) as go_to:
        for f in [float(x) for x in frames]:
            ob_eval: Any = ob.evaluated_get(go_to(f))
            temporary = ob_eval.type != "MESH"
            me: Any = ob_eval.to_mesh() if temporary else ob_eval.data
            try:
                n_vert, n_face = len(me.vertices), len(me.polygons)
                if first is None:
                    first = (f, n_vert, n_face)
                    buf = np.empty(3 * n_vert, dtype=np.float32)
                elif n_vert != first[1]:
                    raise TopologyChangeError(f, n_vert, first[0], first[1])
                elif n_face != first[2]:
                    raise TopologyChangeError(f, n_face, first[0], first[2], "faces")
                me.vertices.foreach_get("co", buf)
            finally:
                if temporary:
                    ob_eval.to_mesh_clear()
            yield buf.astype(np.float64)


def _cache_samples(path: str, cache_format: str) -> int | None:
    """Number of samples in a PC2 or MDD point-cache file (None when it cannot be read)."""
    if cache_format not in ("PC2", "MDD"):
        return None
    try:
        header = read_cache_header(bpy.path.abspath(path), cache_format)
    except (OSError, ValueError):
        return None
    if header.actual_bytes < header.expected_bytes:
        return None  # truncated: the tools refuse it with their own message
    return header.n_samples


def mesh_cache_frame_range(ob: bpy.types.Object) -> tuple[int, int] | None:
    """Scene frames covered by the object's first visible Mesh Cache modifier, or None.

    PC2 / MDD sample counts come from the file (time mode Frame, play mode Scene); None when there
    is no such modifier, it uses another timing, or its file cannot be read.
    """
    for mod in getattr(ob, "modifiers", []):
        if mod.type != "MESH_CACHE" or not mod.show_viewport:
            continue
        if mod.time_mode != "FRAME" or mod.play_mode != "SCENE":
            return None
        samples = _cache_samples(mod.filepath, mod.cache_format)
        if not samples or mod.frame_scale <= 0.0:
            return None
        lo = math.ceil(mod.frame_start - 1e-6)
        hi = math.floor(mod.frame_start + (samples - 1) / mod.frame_scale + 1e-6)
        return (int(lo), int(hi)) if hi >= lo else None
    return None


def evaluated_mesh_copy(scene: bpy.types.Scene, ob: bpy.types.Object, frame: float, name: str) -> bpy.types.Mesh:
    """A new mesh datablock ``name`` holding the object's evaluated geometry (every modifier
    applied, no shape keys) at ``frame``; the scene frame is restored."""
    with visiting_frames(scene) as go_to:
        depsgraph = go_to(float(frame))
        ob_eval: Any = ob.evaluated_get(depsgraph)
        mesh: Any = bpy.data.meshes.new_from_object(ob_eval, preserve_all_data_layers=True, depsgraph=depsgraph)
    mesh.name = name
    return mesh


def mesh_copy_without_shape_keys(ob: bpy.types.Object, name: str) -> bpy.types.Mesh:
    """A copy of the mesh of ``ob`` named ``name``, its copied shape keys removed outright (no orphan Key)."""
    data: Any = ob.data
    mesh = data.copy()
    mesh.name = name
    if mesh.shape_keys is not None:
        bpy.data.batch_remove([mesh.shape_keys])
    return mesh


def new_face_object(name: str, vertices: np.ndarray, faces: Sequence[Sequence[int]],
                    shape_keys: Sequence[tuple[str, np.ndarray]], collection: Any = None) -> bpy.types.Object:
    """A mesh object ``name`` (linked to ``collection`` or the scene's) with vertices (V, 3), the
    given faces, a Basis and the relative ``(name, coords (V, 3))`` shape keys (slider range 0..1)."""
    mesh: Any = bpy.data.meshes.new(name)
    mesh.from_pydata(np.asarray(vertices, dtype=np.float64).tolist(), [], [tuple(f) for f in faces])
    mesh.update()
    ob: Any = bpy.data.objects.new(name, mesh)
    scene: Any = bpy.context.scene
    (collection or scene.collection).objects.link(ob)
    write_shape_key_basis(ob, vertices, shape_keys, slider_min=0.0, slider_max=1.0)
    return ob


def live_duplicate(ob: Any, name: str) -> bpy.types.Object:
    """A copy of ``ob`` named ``name`` for showing a live result.

    Meshes get their own mesh (and shape keys), armatures share the armature data; no animation
    (values are set directly); linked to ``ob``'s collections. An existing local object of that
    name is reused when it has ``ob``'s type.
    """
    dup: Any = bpy.data.objects.get(name)
    if dup is not None and (dup.type != ob.type or dup.library is not None):
        dup = None
    if dup is None:
        dup = ob.copy()
        dup.name = name
        if ob.type == "MESH":
            dup.data = ob.data.copy()
        scene: Any = bpy.context.scene
        for coll in ob.users_collection or [scene.collection]:
            coll.objects.link(dup)
    dup.animation_data_clear()
    key = getattr(getattr(dup, "data", None), "shape_keys", None)
    if key is not None and key.animation_data is not None:
        key.animation_data_clear()
    return dup


def new_object_copy(ob: bpy.types.Object, name: str, scene: bpy.types.Scene,
                    drop_properties: tuple[str, ...] = ()) -> bpy.types.Object:
    """A copy of ``ob`` named ``name`` without animation data and without the ID properties
    ``drop_properties``, linked to the local collections of ``ob`` (else the scene's collection)."""
    copy: Any = ob.copy()
    copy.name = name
    for key in list(copy.keys()):
        if key in drop_properties:
            del copy[key]
    copy.animation_data_clear()
    colls = [c for c in ob.users_collection if c.library is None] or [scene.collection]
    for c in colls:
        c.objects.link(copy)
    return copy


def replace_mesh(ob: bpy.types.Object, mesh: bpy.types.Mesh) -> None:
    """Give ``ob`` the mesh data ``mesh``: its old mesh is removed when nothing else uses it, and
    the object keeps no shape keys."""
    old: Any = ob.data
    ob.data = mesh
    if old is not None and old != mesh and old.users == 0:
        bpy.data.meshes.remove(old)
    if mesh.shape_keys is not None:
        ob.shape_key_clear()


# ------------------------------------------------------------------------------------------------
# A mesh as arrays
# ------------------------------------------------------------------------------------------------


def mesh_vertices(mesh: bpy.types.Mesh) -> np.ndarray:
    """The mesh's vertex positions (V, 3) float64, as stored (no shape keys, no modifiers)."""
    buf = np.empty(3 * len(mesh.vertices), dtype=np.float32)
    mesh.vertices.foreach_get("co", buf)
    return buf.reshape(-1, 3).astype(np.float64)


def mesh_triangles(mesh: bpy.types.Mesh) -> np.ndarray:
    """The mesh's faces as triangles (F, 3) int64: Blender's own triangulation (loop triangles),
    so quads and n-gons split as the viewport draws them; vertex indices are the mesh's."""
    mesh.calc_loop_triangles()
    buf = np.empty(3 * len(mesh.loop_triangles), dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", buf)
    return buf.reshape(-1, 3).astype(np.int64)


def rest_vertices(ob: bpy.types.Object) -> np.ndarray:
    """The rest pose of a mesh object (V, 3) float64: its reference shape key ("Basis") when it has
    shape keys, else its mesh's vertex positions; before modifiers, in object space. Edit Mode
    changes are synced first."""
    sync_edit_mode(ob)
    mesh: Any = ob.data
    key = mesh.shape_keys
    if key is not None and key.reference_key is not None:
        return read_key_block_coords(key, [key.reference_key.name])[0]
    return mesh_vertices(mesh)


def evaluated_triangles(ob: bpy.types.Object) -> np.ndarray:
    """The triangles (F, 3) int64 of the object's evaluated mesh (every modifier) at the current frame."""
    ob_eval: Any = ob.evaluated_get(bpy.context.evaluated_depsgraph_get())
    me: Any = ob_eval.to_mesh()
    try:
        return mesh_triangles(me)
    finally:
        ob_eval.to_mesh_clear()


def set_mesh_vertices(mesh: bpy.types.Mesh, coords: np.ndarray) -> None:
    """Overwrite the mesh's vertex positions with ``coords`` (V, 3) and tag it for redraw."""
    mesh.vertices.foreach_set("co", np.ascontiguousarray(coords, dtype=np.float32).reshape(-1))
    mesh.update()


def evaluated_counts(ob: bpy.types.Object) -> tuple[int, int]:
    """Vertex and face counts of the object's evaluated mesh (every modifier) at the current frame."""
    ob_eval: Any = ob.evaluated_get(bpy.context.evaluated_depsgraph_get())
    temporary = ob_eval.type != "MESH"
    me: Any = ob_eval.to_mesh() if temporary else ob_eval.data
    try:
        return len(me.vertices), len(me.polygons)
    finally:
        if temporary:
            ob_eval.to_mesh_clear()


# ------------------------------------------------------------------------------------------------
# Result objects and point caches
# ------------------------------------------------------------------------------------------------


def mesh_result_object(template: bpy.types.Object, name: str, scene: bpy.types.Scene, marker: str,
                       info: dict[str, Any]) -> bpy.types.Object:
    """A mesh object ``name`` for a result computed on the mesh of ``template``, remade on every run.

    An existing local mesh object ``name`` carrying the ID property ``marker`` (an earlier result)
    is reused: it loses its modifiers, animation and shape keys (with their action when nothing
    else uses it). Otherwise a copy of ``template`` (see :func:`new_object_copy`; Blender picks a
    free name when ``name`` is taken), not selected. Either way it gets a fresh copy of the template's mesh
    without shape keys (materials, UVs and vertex groups kept) and no modifiers, and ``info`` (plain
    values) as its ID property ``marker``.
    """
    ob: Any = bpy.data.objects.get(name)
    if ob is not None and (ob.library is not None or ob.type != "MESH" or marker not in ob.keys()):
        ob = None
    old_action = None
    if ob is not None:
        key = ob.data.shape_keys if ob.data is not None else None
        old_action = get_action(key) if key is not None else None
        if key is not None:
            ob.shape_key_clear()
        ob.animation_data_clear()
    else:
        ob = new_object_copy(template, name, scene, drop_properties=(marker,))
        try:
            ob.select_set(False)  # a copy of a selected object starts selected: the selection stays the user's
        except RuntimeError:  # pragma: no cover - not in the view layer
            pass
    mesh = mesh_copy_without_shape_keys(template, name)
    replace_mesh(ob, mesh)
    mesh.name = ob.name  # the old mesh of that name is gone now
    for mod in list(ob.modifiers):
        ob.modifiers.remove(mod)
    if old_action is not None and old_action.users == 0 and old_action.library is None:
        bpy.data.actions.remove(old_action)
    ob[marker] = dict(info)
    return ob


def point_cache_path(name: str) -> tuple[str, str, bool]:
    """Where a point cache for the result ``name`` goes: beside the .blend when it is saved
    (``<blend>_<name>.pc2``, stored as a ``//`` relative path), else in the temp folder.

    Returns
    -------
    path : str
        Absolute file path to write.
    stored : str
        The path to give the Mesh Cache modifier (relative to the .blend when saved).
    beside_blend : bool
        False when the .blend is unsaved (the cache is in the temp folder).
    """
    clean = bpy.path.clean_name(name)
    if bpy.data.filepath:
        folder, blend = os.path.split(bpy.data.filepath)
        filename = f"{os.path.splitext(blend)[0]}_{clean}.pc2"
        return os.path.join(folder, filename), "//" + filename, True
    path = os.path.join(tempfile.gettempdir(), "anim_signals", f"{clean}.pc2")
    return path, path, False


def write_point_cache(path: str, frames: np.ndarray, frame_start: float, *, keep_previous: bool = False) -> str | None:
    """Write vertex positions (n, V, 3) as a PC2 file whose first sample is scene frame
    ``frame_start``; written to a temporary file first, so a failed write leaves any earlier file
    as it was. Raises OSError.

    With ``keep_previous`` an earlier file at ``path`` is moved to ``<path>.previous`` (returned;
    None when there was none) instead of being replaced, so the caller can put it back if a later
    step fails, or delete it once everything succeeded.
    """
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    partial = path + ".partial"
    previous = None
    try:
        write_pc2(partial, np.asarray(frames), start=float(frame_start), rate=1.0)
        if keep_previous and os.path.exists(path):
            previous = path + ".previous"
            os.replace(path, previous)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return previous


def set_mesh_cache(ob: bpy.types.Object, filepath: str, frame_start: float, *, name: str = "Mesh Cache") -> Any:
    """Play a PC2 file on ``ob``: its Mesh Cache modifier ``name`` (added when missing), first in
    the stack, overwriting the vertex positions, sample 0 at scene frame ``frame_start``, one
    sample per frame, axes as stored."""
    mod: Any = ob.modifiers.get(name)
    if mod is None or mod.type != "MESH_CACHE":
        mod = ob.modifiers.new(name, "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = filepath
    mod.time_mode = "FRAME"
    mod.play_mode = "SCENE"
    mod.frame_start = float(frame_start)
    mod.frame_scale = 1.0
    mod.deform_mode = "OVERWRITE"
    mod.interpolation = "LINEAR"
    mod.forward_axis, mod.up_axis = "POS_Y", "POS_Z"
    index = list(ob.modifiers).index(mod)
    if index:
        ob.modifiers.move(index, 0)
    return mod
