"""Posing with a stored pose space and writing its sequence: a pose-space point or a time of the
time signal becomes shape-key values (meshes) or bone transforms (armatures); a bake keys every
frame of the time signal; resampling re-times the sequence (Cashman and Hormann, section 4.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import bpy
import numpy as np

from ...anim_signals.posespace import PoseSpace, TimeSignal
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
from ..blender_data.shape_keys import set_key_values
from .storage import (
    BAKE_MARK,
    SLIDER_RANGE,
    Binding,
    cached,
    is_space_object,
    load_info,
    load_space,
    space_object,
)

__all__ = [
    "RESAMPLE_MODES",
    "BakeSummary",
    "apply_position",
    "apply_time",
    "bake_frames",
    "bake_space",
    "resample_times",
    "resampled_space",
]


def _pose_values(binding: Binding, space: PoseSpace, weights: np.ndarray) -> np.ndarray:
    """Armature channel values (..., d) from shape coordinates (..., m): decoded, unscaled,
    quaternions normalised."""
    assert binding.channel_scale is not None
    v = space.shape.decode(weights) / binding.channel_scale
    for cols in binding.quat_groups:
        q = v[..., cols]
        norm = np.linalg.norm(q, axis=-1, keepdims=True)
        v[..., cols] = q / np.where(norm > 0.0, norm, 1.0)
    return v


def apply_position(ob, space: PoseSpace, p) -> np.ndarray:
    """Pose the pose-space object at pose-space point ``p`` (x, y): g(p) written as the m component
    shape-key values (meshes, value = g_j(p) / s_j, clipped to the slider range) or as bone
    transforms (armatures, one foreach_set per bone property). Blender blends the vertices itself.
    This is the per-drag update: a handful of floats, well under a millisecond. Returns the
    written values. Raises ValueError when ``ob`` has no pose space."""
    ps = ob if is_space_object(ob) else space_object(ob)
    if ps is None:
        raise ValueError(f'"{getattr(ob, "name", ob)}" has no pose space')
    _, binding = cached(ps)
    w = space.weights_at(np.asarray(p, dtype=float).reshape(2))
    if binding.kind == "MESH":
        values = np.clip(w / binding.scales, -SLIDER_RANGE, SLIDER_RANGE)
        key = ps.data.shape_keys
        assert binding.key_indices is not None
        set_key_values(key, binding.key_indices, values, binding.buffer)
        ps.update_tag(refresh={"DATA"})
        return values
    values = _pose_values(binding, space, w)
    binding.writer.write(ps, values)
    return values


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

    def message(self) -> str:
        return (f'Baked "{self.object_name}": frames {self.frame_start}-{self.frame_end}, {self.curves} curves, '
                f'{self.keys} keys -> action "{self.action_name}"')


def _is_bake(action) -> bool:
    return bool(action is not None and action.get(BAKE_MARK))


def bake_frames(space: PoseSpace) -> np.ndarray:
    """Whole frames covered by the time signal (the frames a bake keys)."""
    frames = space.time.frames
    lo, hi = math.ceil(float(frames[0]) - 1e-6), math.floor(float(frames[-1]) + 1e-6)
    return np.arange(lo, hi + 1, dtype=np.float64)


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
    frames = bake_frames(space)
    if frames.size < 1:
        raise ValueError("The time signal covers no whole frame")
    weights = space.weights_at(space.time.evaluate(frames))  # (N, m)
    info = load_info(ps) or {}
    s = BakeSummary(object_name=ps.name, frame_start=int(frames[0]), frame_end=int(frames[-1]))
    if binding.kind == "MESH":
        key = ps.data.shape_keys
        reason = id_read_only_reason(ps, ps.data, key)
        if reason:
            raise ValueError(reason)
        if getattr(key.animation_data, "use_tweak_mode", False):
            raise ValueError(f'The shape keys of "{ps.name}" are in NLA tweak mode: exit tweak mode first')
        values = np.clip(weights / binding.scales, -SLIDER_RANGE, SLIDER_RANGE)
        old = get_action(key)
        action = new_action(key, f"{ps.name}.bake", keep_previous=not _is_bake(old))
        names = [str(nm) for nm in info.get("key_names", [])]
        for j, name in enumerate(names):
            fc = new_fcurve(key, action, shape_key_value_path(name), 0)
            write_dense_linear(fc, frames, values[:, j])
        s.curves = len(names)
    else:
        reason = id_read_only_reason(ps, ps.data) or tweak_mode_reason(ps)
        if reason:
            raise ValueError(reason)
        values = _pose_values(binding, space, weights)
        old = get_action(ps)
        base = str(info.get("source", {}).get("action", "")) or ps.name
        action = new_action(ps, f"{base}.posespace", keep_previous=not _is_bake(old))
        paths = [str(x) for x in info.get("channel_paths", [])]
        indices = [int(i) for i in info.get("channel_indices", [])]
        for j, (path, index) in enumerate(zip(paths, indices, strict=True)):
            fc = new_fcurve(ps, action, path, index, group=bone_name_of_path(path))
            write_dense_linear(fc, frames, values[:, j])
        s.curves = len(paths)
    action[BAKE_MARK] = ps.name
    set_action_frame_range(action, float(frames[0]), float(frames[-1]), cyclic=False)
    if old is not None and _is_bake(old) and old.users == 0 and old.library is None:
        wanted = old.name
        bpy.data.actions.remove(old)  # a previous bake of this pose space that nothing uses
        action.name = wanted
    s.action_name = action.name
    s.keys = s.curves * int(frames.size)
    if set_scene_range:
        scene.frame_start, scene.frame_end = int(frames[0]), int(frames[-1])
    return s


RESAMPLE_MODES = ("SPEED", "FRAME_COUNT", "FRAME_RATE", "RANGE")


def resample_times(
    time_signal: TimeSignal,
    *,
    mode: str = "SPEED",
    speed: float = 1.0,
    frame_count: int = 0,
    fps_from: float = 24.0,
    fps_to: float = 24.0,
    range_start: float | None = None,
    range_end: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """New frame numbers F' (whole frames from the first frame) and the times tau_i of the current
    time signal they show (Cashman and Hormann, section 4.2): ``SPEED`` plays ``speed`` times as
    fast (0.5: slow motion), ``FRAME_COUNT`` spreads ``frame_count`` frames over the whole range, ``FRAME_RATE`` converts
    ``fps_from`` -> ``fps_to`` (same duration in seconds), ``RANGE`` plays only the frames
    ``range_start``..``range_end`` at ``speed`` (slow down or speed up a part). Raises ValueError."""
    frames = np.asarray(time_signal.frames, dtype=float)
    a, b = float(frames[0]), float(frames[-1])
    if mode == "FRAME_COUNT":
        if frame_count < 2:
            raise ValueError("A resampled sequence needs at least 2 frames")
        taus = np.linspace(a, b, int(frame_count))
        return a + np.arange(taus.size, dtype=float), taus
    if mode == "FRAME_RATE":
        if not (fps_from > 0.0 and fps_to > 0.0):
            raise ValueError("Frame rates must be positive")
        speed, r0, r1 = fps_from / fps_to, a, b
    elif mode == "SPEED":
        r0, r1 = a, b
    elif mode == "RANGE":
        r0 = a if range_start is None else float(range_start)
        r1 = b if range_end is None else float(range_end)
        if not (a <= r0 < r1 <= b):
            raise ValueError(f"The range {r0:g}-{r1:g} must lie inside the frames {a:g}-{b:g} and not be empty")
    else:
        raise ValueError(f"Unknown resample mode {mode!r}: one of {', '.join(RESAMPLE_MODES)}")
    if not (math.isfinite(speed) and speed > 0.0):
        raise ValueError("The speed factor must be positive")
    new_bp = np.array([0.0, r0 - a, r0 - a + (r1 - r0) / speed, r0 - a + (r1 - r0) / speed + (b - r1)])
    old_bp = np.array([a, r0, r1, b])
    count = int(math.floor(new_bp[-1] + 1e-9)) + 1
    if count < 2:
        raise ValueError(f"Resampling leaves {count} frame: slow down less")
    s = np.arange(count, dtype=float)
    taus = np.clip(np.interp(s, new_bp, old_bp), a, b)
    return a + s, taus


def resampled_space(space: PoseSpace, new_frames: np.ndarray, taus: np.ndarray) -> PoseSpace:
    """The same curve and poses with a new time signal: frame F'_i shows psi(tau_i) exactly (the
    monotone reparametrisation now maps F'_i to rho(tau_i)); the curve, g and h are unchanged."""
    new_frames = np.asarray(new_frames, dtype=float)
    params = space.time.rho(np.asarray(taus, dtype=float))
    params = np.maximum.accumulate(params)  # monotone (rounding)
    return replace(space, time=replace(space.time, params=params, frames=new_frames))
