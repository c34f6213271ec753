"""Posing with a stored pose space and writing its sequence: a pose-space point or a time of the
time signal becomes shape-key values (meshes), decoded vertex positions (meshes in the
deformation-gradient shape space) or bone transforms (armatures); a bake keys every whole frame of
the time signal (gradient space: a PC2 point cache played by a Mesh Cache modifier). The values
come from the core (``anim_signals.posespace.controls`` and ``.retime``); this module only writes
them.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np

from ...anim_signals.posespace import PoseSpace, bake_frames, channel_values, key_values
from ..blender_data.actions import (
    get_action,
    id_read_only_reason,
    new_action,
    new_fcurve,
    set_action_frame_range,
    tweak_mode_reason,
)
from ..blender_data.channels import bone_name_of_path, shape_key_value_path
from ..blender_data.fcurves import write_dense_linear
from ..blender_data.meshes import (
    mesh_vertices,
    point_cache_path,
    set_mesh_cache,
    set_mesh_vertices,
    write_point_cache,
)
from ..blender_data.shape_keys import set_key_values
from ..common.transaction import current_transaction
from .storage import (
    BAKE_MARK,
    PROP,
    SLIDER_RANGE,
    Binding,
    cached,
    is_space_object,
    load_info,
    load_space,
    space_object,
)

__all__ = [
    "MAX_SEQUENCE_FRAMES",
    "BakeSummary",
    "apply_position",
    "apply_time",
    "bake_refusal",
    "bake_space",
    "read_posed_vertices",
    "restore_posed_vertices",
]

CACHE_MODIFIER = "Pose Space Bake"  # the Mesh Cache modifier playing a gradient-space bake
MAX_SEQUENCE_FRAMES = 1_000_000
"""Frames a baked, resampled or sketched sequence may have: one key per frame and component, so
the bake's keys (and memory) grow with it; a million frames is over ten hours at 24 fps."""


def _pose_values(binding: Binding, space: PoseSpace, weights: np.ndarray) -> np.ndarray:
    """Armature channel values (..., d) of shape coordinates (..., m)."""
    assert binding.channel_scale is not None
    return channel_values(space.shape, weights, binding.channel_scale, binding.quat_groups)


def apply_position(ob, space: PoseSpace, p) -> np.ndarray:
    """Pose the pose-space object at pose-space point ``p`` (x, y): g(p) written as the m component
    shape-key values (meshes, value = g_j(p) / s_j, clipped to the slider range) or as bone
    transforms (armatures, one foreach_set per bone property). Blender blends the vertices itself.
    This is the per-drag update: a handful of floats, well under a millisecond. Gradient-space
    meshes: the decoded vertex positions written to the mesh (one factorised solve). Returns the
    written values (gradient space: the shape coordinates). Raises ValueError when ``ob`` has no pose space."""
    ps = ob if is_space_object(ob) else space_object(ob)
    if ps is None:
        raise ValueError(f'"{getattr(ob, "name", ob)}" has no pose space')
    _, binding = cached(ps)
    w = space.weights_at(np.asarray(p, dtype=float).reshape(2))
    if binding.is_gradient:  # one Poisson solve (factorised once per model): a few ms at 5k vertices
        vertices = binding.gradient_rows().decode(space.shape.decode(w))
        if not np.all(np.isfinite(vertices)):
            raise ValueError(f'The pose space of "{ps.name}" gives non-finite vertices here: rebuild it')
        set_mesh_vertices(ps.data, vertices)
        return w
    if binding.kind == "MESH":
        values = key_values(w, binding.scales, SLIDER_RANGE)
        key = ps.data.shape_keys
        assert binding.key_indices is not None
        set_key_values(key, binding.key_indices, values, binding.buffer)
        ps.update_tag(refresh={"DATA"})
        return values
    values = _pose_values(binding, space, w)
    binding.writer.write(ps, values)
    return values


def read_posed_vertices(ob) -> np.ndarray | None:
    """What posing a gradient-space pose-space object overwrites (its vertex positions, (V, 3)), so a
    cancelled drag can put them back; None for other objects (their keys / bones are kept instead)."""
    if ob is None or ob.type != "MESH" or not is_space_object(ob) or ob[PROP].get("shape_space") != "GRADIENT":
        return None
    return mesh_vertices(ob.data)


def restore_posed_vertices(ob, vertices: np.ndarray | None) -> None:
    """Put back what :func:`read_posed_vertices` read (nothing when it read nothing)."""
    if vertices is not None and len(ob.data.vertices) == len(vertices):
        set_mesh_vertices(ob.data, vertices)


def apply_time(ob, space: PoseSpace, t: float) -> np.ndarray:
    """Pose the object at time ``t`` of the time signal: :func:`apply_position` at f(t)."""
    p = space.time.evaluate(np.array([float(t)]))[0]
    return apply_position(ob, space, p)


@dataclass
class BakeSummary:
    """What a bake wrote: the action, its frames, curves and keys."""

    object_name: str = ""
    action_name: str = ""
    frame_start: int = 0
    frame_end: int = 0
    curves: int = 0
    keys: int = 0
    seconds: float = 0.0
    cache_path: str = ""  # gradient space: the PC2 file written instead of keys
    cache_in_temp: bool = False  # the .blend is not saved: the cache went to the temp folder

    def message(self) -> str:
        if self.cache_path:
            where = ("; the .blend is not saved, so the cache is in the temp folder: save the .blend and bake again "
                     "to keep it beside the .blend") if self.cache_in_temp else ""
            return (f'Baked "{self.object_name}": frames {self.frame_start}-{self.frame_end} -> point cache '
                    f'"{self.cache_path}" (Mesh Cache modifier "{CACHE_MODIFIER}"){where}')
        return (f'Baked "{self.object_name}": frames {self.frame_start}-{self.frame_end}, {self.curves} curves, '
                f'{self.keys} keys -> action "{self.action_name}"')


def _is_bake(action) -> bool:
    return bool(action is not None and action.get(BAKE_MARK))


def bake_refusal(ps) -> str | None:
    """Why the pose-space object ``ps`` cannot be baked now (read-only data, NLA tweak mode), or None.
    Checked before anything is written, so an operator that bakes after storing a model can refuse
    first."""
    if ps.type == "MESH" and str(ps[PROP].get("shape_space", "VERTEX")) == "GRADIENT":  # no shape keys
        return id_read_only_reason(ps, ps.data)
    if ps.type == "MESH":
        key = ps.data.shape_keys
        reason = id_read_only_reason(ps, ps.data, key)
        if reason is None and getattr(getattr(key, "animation_data", None), "use_tweak_mode", False):
            reason = f'The shape keys of "{ps.name}" are in NLA tweak mode: exit tweak mode first'
        return reason
    return id_read_only_reason(ps, ps.data) or tweak_mode_reason(ps)


def _check_finite(values: np.ndarray, frames: np.ndarray, ps) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        raise ValueError(f'The pose space of "{ps.name}" gives non-finite values at frame {frames[row]:g}: rebuild it')


def bake_space(ob, space: PoseSpace | None = None, scene=None, *, set_scene_range: bool = False) -> BakeSummary:
    """Keyframes for every whole frame of the time signal: the component shape-key values of the
    pose-space object (a new action on its shape keys) or the bone transforms (a new action
    ``"<source action>.posespace"`` assigned to the armature; the original keeps a fake user).
    LINEAR keys, so each frame is exactly psi(frame). ``space`` None: the stored one. Raises
    ValueError (no pose space, read-only data, NLA tweak mode)."""
    scene = scene or bpy.context.scene
    ps = space_object(ob)
    if ps is None:
        raise ValueError(f'"{getattr(ob, "name", ob)}" has no pose space: build one first')
    space = space if space is not None else load_space(ps)
    assert space is not None
    _, binding = cached(ps)
    reason = bake_refusal(ps)
    if reason:
        raise ValueError(reason)
    frames = bake_frames(space)
    if frames.size < 1:
        raise ValueError("The time signal covers no whole frame")
    if frames.size > MAX_SEQUENCE_FRAMES:
        raise ValueError(f"The time signal covers {frames.size} frames: a bake writes at most {MAX_SEQUENCE_FRAMES}")
    weights = space.weights_at(space.time.evaluate(frames))  # (N, m)
    info = load_info(ps) or {}
    s = BakeSummary(object_name=ps.name, frame_start=int(frames[0]), frame_end=int(frames[-1]))
    tx = current_transaction()
    if set_scene_range:
        tx.keep(scene, "frame_start", "frame_end")
    if binding.is_gradient:
        _bake_point_cache(ps, space, binding, frames, weights, s)
    elif binding.kind == "MESH":
        key = ps.data.shape_keys
        values = key_values(weights, binding.scales, SLIDER_RANGE)
        _check_finite(values, frames, ps)
        old = get_action(key)
        tx.keep_action(key)
        action = new_action(key, f"{ps.name}.bake", keep_previous=not _is_bake(old))
        names = [str(nm) for nm in info.get("key_names", [])]
        for j, name in enumerate(names):
            fc = new_fcurve(key, action, shape_key_value_path(name), 0)
            write_dense_linear(fc, frames, values[:, j])
        s.curves = len(names)
    else:
        values = _pose_values(binding, space, weights)
        _check_finite(values, frames, ps)
        old = get_action(ps)
        tx.keep_action(ps)
        base = str(info.get("source", {}).get("action", "")) or ps.name
        action = new_action(ps, f"{base}.posespace", keep_previous=not _is_bake(old))
        paths = [str(x) for x in info.get("channel_paths", [])]
        indices = [int(i) for i in info.get("channel_indices", [])]
        for j, (path, index) in enumerate(zip(paths, indices, strict=True)):
            fc = new_fcurve(ps, action, path, index, group=bone_name_of_path(path))
            write_dense_linear(fc, frames, values[:, j])
        s.curves = len(paths)
    if binding.is_gradient:
        if set_scene_range:
            scene.frame_start, scene.frame_end = int(frames[0]), int(frames[-1])
        return s
    action[BAKE_MARK] = ps.name
    set_action_frame_range(action, float(frames[0]), float(frames[-1]), cyclic=False)
    if set_scene_range:
        scene.frame_start, scene.frame_end = int(frames[0]), int(frames[-1])
    # Last, as a rollback cannot bring a removed action back: the previous bake of this pose space
    # that nothing uses any more.
    if old is not None and _is_bake(old) and old.users == 0 and old.library is None:
        wanted = old.name
        bpy.data.actions.remove(old)
        action.name = wanted
    s.action_name = action.name
    s.keys = s.curves * int(frames.size)
    return s


def _bake_point_cache(ps, space: PoseSpace, binding: Binding, frames: np.ndarray, weights: np.ndarray,
                      summary: BakeSummary) -> None:
    """A gradient-space bake: every frame decoded to vertex positions, written as a PC2 file (beside
    the .blend, else the temp folder) that a Mesh Cache modifier first in the stack plays. A failed
    operator puts the previous file back (or removes the new one)."""
    vertices = binding.gradient_rows().decode(space.shape.decode(weights))
    _check_finite(vertices.reshape(len(frames), -1), frames, ps)
    path, stored, beside_blend = point_cache_path(f"{ps.name}.bake")
    previous = write_point_cache(path, vertices, float(frames[0]), keep_previous=True)
    tx = current_transaction()
    tx.keep_file(path, previous)
    mod = ps.modifiers.get(CACHE_MODIFIER)
    if mod is None:
        tx.on_rollback(lambda: _remove_modifier(ps, CACHE_MODIFIER))
    else:
        tx.keep(mod, "filepath", "frame_start")
    set_mesh_cache(ps, stored, float(frames[0]), name=CACHE_MODIFIER)
    summary.cache_path = stored
    summary.cache_in_temp = not beside_blend
    summary.curves = 0
    summary.keys = 0


def _remove_modifier(ob, name: str) -> None:
    mod = ob.modifiers.get(name)
    if mod is not None:
        ob.modifiers.remove(mod)
