"""Meshes: evaluated geometry over time, mesh caches, and objects made for results.

Owns reading a mesh's evaluated vertices frame by frame (:func:`mesh_sequence_rows`: Mesh Cache
PC2 / MDD, Mesh Sequence Cache / Alembic, cloth, any modifier), the frame range a Mesh Cache
modifier plays (:func:`mesh_cache_frame_range`, with the core's PC2 / MDD readers), a mesh copy of
the evaluated geometry (:func:`evaluated_mesh_copy`) or of the mesh data
(:func:`mesh_copy_without_shape_keys`), and objects for results: a face mesh with shape keys
(:func:`new_face_object`), live duplicates (:func:`live_duplicate`), plain copies
(:func:`new_object_copy`) and giving an object other mesh data (:func:`replace_mesh`). Vertex
positions are read with ``foreach_get``.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from typing import Any

import bpy
import numpy as np

from ...anim_signals.meshio import read_mdd, read_pc2
from .frames import visiting_frames
from .shape_keys import write_shape_key_basis

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
    advance; the current frame is restored when done or when the generator is closed.

    Raises
    ------
    TopologyChangeError
        Naming the first frame whose vertex or face count differs from the first frame's.
    """
    first: tuple[float, int, int] | None = None
    buf = np.empty(0, dtype=np.float32)
    with visiting_frames(scene) as go_to:
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
        path = bpy.path.abspath(path)
        samples = read_pc2(path)[0] if cache_format == "PC2" else read_mdd(path)[0]
    except (OSError, ValueError):
        return None
    return int(samples.shape[0]) or None


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
