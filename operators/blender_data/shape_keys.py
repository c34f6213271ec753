"""Shape keys: their curves, coordinates and values, and blending them as Blender does.

Owns the shape-key datablock (Key) side of a mesh: which key values are animated
(:func:`shape_key_fcurves`, :func:`shape_keys_animated`), the key blocks' coordinates
(:func:`read_key_block_coords`), the mesh's shape-key animation as a frame matrix
(:func:`read_shape_key_matrix`), and writing keys and values (:func:`write_shape_key_basis`,
:func:`set_key_values`, :func:`set_key_values_by_name`; the values as they were:
:func:`read_key_values`, :func:`restore_key_values`). Coordinates and values go through
``foreach_get`` / ``foreach_set``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import bpy
import numpy as np

from .actions import list_fcurves, new_action, new_fcurve
from .channels import is_shape_key_value_path, shape_key_name_of_path, shape_key_value_path
from .fcurves import sample_curves, write_dense_linear
from .frames import evaluation_scene, visiting_frames


def shape_key_fcurves(key: bpy.types.Key) -> dict[str, bpy.types.FCurve]:
    """Shape-key name -> the F-curve animating its value (through the Key's action and slot)."""
    out: dict[str, bpy.types.FCurve] = {}
    for fc in list_fcurves(key):
        name = shape_key_name_of_path(fc.data_path)
        if name is not None:
            out[name] = fc
    return out


def _has_driven_values(key: bpy.types.Key) -> bool:
    adt = key.animation_data
    return bool(adt is not None and any(is_shape_key_value_path(d.data_path) for d in adt.drivers))


def shape_keys_animated(ob: bpy.types.Object) -> bool:
    """The object's mesh has shape keys whose values are animated (action curves or drivers)."""
    key = getattr(getattr(ob, "data", None), "shape_keys", None)
    if key is None or len(key.key_blocks) < 2:
        return False
    return bool(shape_key_fcurves(key)) or _has_driven_values(key)


def key_block_names(ob: Any) -> list[str]:
    """The names of the object's shape keys, in order (empty without shape keys)."""
    key = getattr(getattr(ob, "data", None), "shape_keys", None)
    return [kb.name for kb in key.key_blocks] if key is not None else []


def reference_key_name(ob: Any) -> str | None:
    """The name of the object's reference shape key (its "Basis", the rest pose), None without shape keys."""
    key = getattr(getattr(ob, "data", None), "shape_keys", None)
    return key.reference_key.name if key is not None and key.reference_key is not None else None


def read_key_block_coords(key: bpy.types.Key, names: Sequence[str] | None = None) -> np.ndarray:
    """Coordinates of shape keys (all, or the named ones in that order): (keys, vertices, 3) float64."""
    blocks = key.key_blocks
    chosen = list(blocks) if names is None else [blocks[n] for n in names]
    if not chosen:
        return np.empty((0, 0, 3))
    n_vert = len(chosen[0].data)
    buf = np.empty(3 * n_vert, dtype=np.float32)
    out = np.empty((len(chosen), n_vert, 3))
    for i, kb in enumerate(chosen):
        kb.data.foreach_get("co", buf)
        out[i] = buf.reshape(n_vert, 3)
    return out


def shape_key_coords(ob: Any, names: Sequence[str]) -> np.ndarray:
    """Coordinates of the object's named shape keys, in that order: (keys, vertices, 3) float64.
    Raises KeyError for a name the object has no shape key of."""
    key = getattr(getattr(ob, "data", None), "shape_keys", None)
    if key is None:
        raise KeyError(f'"{ob.name}" has no shape keys')
    for name in names:
        if key.key_blocks.get(name) is None:
            raise KeyError(f'"{ob.name}" has no shape key "{name}"')
    return read_key_block_coords(key, list(names))


def _vertex_group_weights(ob: bpy.types.Object, name: str, n_vertices: int) -> np.ndarray:
    """(V,) weights of the vertex group ``name`` (0 outside it; all 1 when there is no such group,
    which Blender ignores). Blender has no bulk access to vertex weights: one pass over the
    vertices, made only when a key uses a vertex group."""
    vg = ob.vertex_groups.get(name)
    if vg is None:
        return np.ones(n_vertices)
    weights = np.zeros(n_vertices)
    gi = vg.index
    mesh: Any = ob.data
    for v in mesh.vertices:
        for g in v.groups:
            if g.group == gi:
                weights[v.index] = g.weight
    return weights


def _key_values(scene: bpy.types.Scene, ob: bpy.types.Object, key: bpy.types.Key, frames: np.ndarray) -> np.ndarray:
    """The key blocks' values at ``frames``: (n, K). From the Key's F-curves, or, when any value is
    driven or the Key has NLA tracks, the depsgraph's evaluated values frame by frame (``ob``, the
    Key's object, in a :func:`.frames.evaluation_scene` of its own)."""
    blocks = list(key.key_blocks)
    adt = key.animation_data
    out = np.empty((frames.size, len(blocks)))
    if not (_has_driven_values(key) or (adt is not None and len(adt.nla_tracks) > 0)):
        curves = shape_key_fcurves(key)
        for j, kb in enumerate(blocks):
            fc = curves.get(kb.name)
            out[:, j] = kb.value if fc is None else sample_curves([fc], frames)[1][:, 0]
        return out
    buf = np.empty(len(blocks), dtype=np.float32)
    with evaluation_scene(scene, [ob]) as where, visiting_frames(where) as go_to:
        for i, f in enumerate(frames.tolist()):
            key_eval: Any = key.evaluated_get(go_to(f))
            key_eval.key_blocks.foreach_get("value", buf)
            out[i] = buf
    return out


def read_shape_key_matrix(scene: bpy.types.Scene, ob: bpy.types.Object, frames: Sequence[float] | np.ndarray) -> np.ndarray:
    """Shape-key animation as a frame matrix: the vertex positions blended from the key blocks per
    frame, before modifiers.

    Relative keys as Blender blends them: reference + sum of value x (key - its relative key),
    values clamped to each key's slider range, muted keys skipped, vertex-group weights applied.
    Values come from the Key's F-curves; when any value is driven (or the Key has NLA tracks) they
    are the depsgraph's evaluated values, frame by frame.

    Returns
    -------
    np.ndarray
        Z (len(frames), 3 V), rows x0 y0 z0 x1 ... (row size 3).

    Raises
    ------
    ValueError
        No shape keys to blend, or absolute keys (evaluation time).
    """
    key = getattr(ob.data, "shape_keys", None)
    if key is None or len(key.key_blocks) < 2:
        raise ValueError(f'"{ob.name}" has no shape keys to blend')
    if not key.use_relative:
        raise ValueError(f'"{ob.name}" uses absolute shape keys (evaluation time): use the Mesh source instead')
    blocks = list(key.key_blocks)
    names = [kb.name for kb in blocks]
    coords = read_key_block_coords(key)  # (K, V, 3)
    n_vert = coords.shape[1]
    frames_arr = np.asarray(frames, dtype=np.float64)
    values = _key_values(scene, ob, key, frames_arr)  # (n, K)
    ref = key.reference_key.name
    z = np.repeat(coords[names.index(ref)].reshape(1, -1), frames_arr.size, axis=0)
    for j, kb in enumerate(blocks):
        if kb.name == ref or kb.mute:
            continue
        rel = kb.relative_key.name if kb.relative_key is not None else ref
        delta = coords[j] - coords[names.index(rel)]
        if kb.vertex_group:
            delta = delta * _vertex_group_weights(ob, kb.vertex_group, n_vert)[:, None]
        w = np.clip(values[:, j], kb.slider_min, kb.slider_max)
        if np.any(w != 0.0):
            z += w[:, None] * delta.reshape(1, -1)
    return z


def write_shape_key_basis(ob: bpy.types.Object, basis: np.ndarray, keys: Sequence[tuple[str, np.ndarray]], *,
                          slider_min: float = -10.0, slider_max: float = 10.0) -> None:
    """Replace the mesh's shape keys: vertex positions and a "Basis" key = ``basis`` (V, 3), then one
    relative key per ``(name, coords (V, 3))`` with value 0 and the given slider range."""
    mesh: Any = ob.data
    n_vert = len(mesh.vertices)
    basis = np.ascontiguousarray(basis, dtype=np.float64).reshape(n_vert, 3)
    if mesh.shape_keys is not None:
        ob.shape_key_clear()
    mesh.vertices.foreach_set("co", basis.astype(np.float32).ravel())
    mesh.update()
    ob.shape_key_add(name="Basis", from_mix=False)
    for name, coords in keys:
        kb = ob.shape_key_add(name=name, from_mix=False)
        kb.data.foreach_set("co", np.ascontiguousarray(coords, dtype=np.float32).reshape(-1))
        kb.slider_min = slider_min
        kb.slider_max = slider_max
        kb.value = 0.0
    mesh.shape_keys.use_relative = True
    mesh.update()


def set_key_values(key: bpy.types.Key, indices: np.ndarray, values: np.ndarray, buffer: np.ndarray | None = None) -> None:
    """Set the values of the key blocks at ``indices`` (others unchanged) with one foreach_get /
    foreach_set, and tag the Key for re-evaluation. ``buffer``: a float32 array of len(key_blocks)
    to reuse."""
    blocks = key.key_blocks
    buf = buffer if buffer is not None else np.empty(len(blocks), dtype=np.float32)
    blocks.foreach_get("value", buf)
    buf[indices] = values
    blocks.foreach_set("value", buf)
    key.update_tag()


def set_key_values_by_name(ob: Any, names: Sequence[str], values: np.ndarray) -> None:
    """Set the named shape-key values of ``ob`` ((len(names),) values; names it lacks are ignored)
    in one foreach_set, and tag its mesh."""
    key = ob.data.shape_keys
    index = {kb.name: i for i, kb in enumerate(key.key_blocks)}
    cols = [j for j, n in enumerate(names) if n in index]
    idx = np.array([index[names[j]] for j in cols], dtype=np.int64)
    set_key_values(key, idx, np.asarray(values, dtype=np.float64)[cols].astype(np.float32))
    ob.data.update_tag()


def read_key_values(ob: Any) -> np.ndarray | None:
    """The values of the object's shape keys as they are now ((key blocks,) float32, in order);
    None without shape keys."""
    key = getattr(getattr(ob, "data", None), "shape_keys", None)
    if key is None:
        return None
    values = np.empty(len(key.key_blocks), dtype=np.float32)
    key.key_blocks.foreach_get("value", values)
    return values


def restore_key_values(ob: Any, values: np.ndarray | None) -> None:
    """Write back :func:`read_key_values` (skipped when the number of shape keys changed) and tag
    the Key and ``ob``."""
    key = getattr(getattr(ob, "data", None), "shape_keys", None)
    if key is not None and values is not None and len(values) == len(key.key_blocks):
        key.key_blocks.foreach_set("value", values)
        key.update_tag()  # foreach_set tags nothing by itself
    ob.update_tag()


def write_frame_shape_keys(ob: bpy.types.Object, basis: np.ndarray, frames: np.ndarray, frame_numbers: Sequence[int], *,
                           prefix: str = "frame", action_name: str | None = None) -> bpy.types.Action:
    """Vertex animation as shape keys: a "Basis" = ``basis`` (V, 3) and one key per frame
    ``"<prefix>.<frame:04d>"`` holding ``frames[i]`` (n, V, 3), its value keyed 1 on its frame and
    0 on the neighbouring frames (linear), so each frame shows its shape exactly and frames in
    between blend the two nearest. Replaces the mesh's shape keys; returns the new action on the
    shape keys (``action_name``, default ``"<object>.frames"``)."""
    numbers = [int(f) for f in frame_numbers]
    if len(numbers) != len(frames):
        raise ValueError(f"{len(numbers)} frame numbers for {len(frames)} frames")
    names = [f"{prefix}.{f:04d}" for f in numbers]
    write_shape_key_basis(ob, basis, list(zip(names, frames, strict=True)), slider_min=0.0, slider_max=1.0)
    key: Any = ob.data.shape_keys  # type: ignore[union-attr]
    action = new_action(key, action_name or f"{ob.name}.frames", keep_previous=False)
    for i, name in enumerate(names):
        nearby = [j for j in (i - 1, i, i + 1) if 0 <= j < len(numbers)]
        fc = new_fcurve(key, action, shape_key_value_path(name), 0)
        write_dense_linear(fc, np.array([numbers[j] for j in nearby], dtype=np.float64),
                           np.array([1.0 if j == i else 0.0 for j in nearby]))
    return action
