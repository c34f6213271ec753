"""Shared by the spatial-keyframe Blender tests: the generated walk keyed on an armature whose bones
use every kind of rotation mode, and reading poses back through Blender. Expected rotations are
converted with scipy (not the extension's conversions)."""

from __future__ import annotations

import bpy
import numpy as np
from _bl_helpers import keyed, new_armature
from scipy.spatial.transform import Rotation

MODES = ("XYZ", "QUATERNION", "ZXY", "AXIS_ANGLE")


def run(op: str, **kwargs):
    return getattr(bpy.ops.anim_signals, op)("EXEC_DEFAULT", **kwargs)


def values_in_mode(matrices: np.ndarray, mode: str) -> np.ndarray:
    """Rotation matrices (N, 3, 3) as a pose bone stores them in ``mode`` (scipy, independent)."""
    rot = Rotation.from_matrix(matrices)
    if mode == "QUATERNION":
        xyzw = rot.as_quat()
        q = np.concatenate([xyzw[:, 3:], xyzw[:, :3]], axis=1)
        return q * np.where(q[:, :1] < 0, -1.0, 1.0)
    if mode == "AXIS_ANGLE":
        rv = rot.as_rotvec()
        angle = np.linalg.norm(rv, axis=1, keepdims=True)
        return np.concatenate([angle, rv / np.maximum(angle, 1e-12)], axis=1)
    ordered = rot.as_euler(mode.lower())
    out = np.empty_like(ordered)
    out[:, ["XYZ".index(a) for a in mode]] = ordered
    return np.unwrap(out, axis=0)


def matrices_of_values(values: np.ndarray, mode: str) -> np.ndarray:
    """The inverse of :func:`values_in_mode` (scipy)."""
    v = np.asarray(values, dtype=float)
    if mode == "QUATERNION":
        return Rotation.from_quat(np.concatenate([v[:, 1:], v[:, :1]], axis=1)).as_matrix()
    if mode == "AXIS_ANGLE":
        axis = v[:, 1:] / np.linalg.norm(v[:, 1:], axis=1, keepdims=True)
        return Rotation.from_rotvec(axis * v[:, :1]).as_matrix()
    return Rotation.from_euler(mode.lower(), v[:, ["XYZ".index(a) for a in mode]]).as_matrix()


def rotation_prop(mode: str) -> str:
    return {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(mode, "rotation_euler")


def make_walk(sk, name: str = "Walker", n_frames: int = 90, *, still: bool = False, seed: int = 0):
    """The core's generated biped keyed on an armature (one key per frame from frame 1), its bones'
    rotation modes cycling through :data:`MODES`, the root travelling forward. Returns the object
    and the expected local rotation matrices (N, J, 3, 3) as Blender stores them (float32 keys)."""
    clip = sk.generated_biped(n_frames, seed=seed)
    if still:
        clip_q = np.repeat(clip.quaternions[:1], n_frames, axis=0)
    else:
        clip_q = clip.quaternions
    heads: list[np.ndarray] = []
    for j, parent in enumerate(clip.parents):
        heads.append((heads[parent] if parent >= 0 else np.zeros(3)) + clip.offsets[j])
    ob = new_armature(name, [(bone, head, head + np.array([0.0, 0.05, 0.0]),
                              clip.names[parent] if parent >= 0 else None, False)
                             for bone, head, parent in zip(clip.names, heads, clip.parents, strict=True)])
    frames = np.arange(1, n_frames + 1, dtype=np.float64)
    mats = Rotation.from_quat(np.concatenate([clip_q[..., 1:], clip_q[..., :1]], axis=-1).reshape(-1, 4)) \
        .as_matrix().reshape(n_frames, -1, 3, 3)
    expected = np.empty_like(mats)
    for j, pb in enumerate(ob.pose.bones):
        mode = MODES[j % len(MODES)]
        pb.rotation_mode = mode
        values = values_in_mode(mats[:, j], mode)
        keyed(pb, rotation_prop(mode), frames, values, id_data=ob)
        expected[:, j] = matrices_of_values(values.astype(np.float32).astype(np.float64), mode)
        if j == 0:
            travel = np.column_stack([np.zeros(n_frames), 0.02 * frames, 0.03 * np.sin(frames / 4.0)])
            keyed(pb, "location", frames, travel, id_data=ob)
    return ob, expected, clip.parents


def pose_matrices(ob) -> np.ndarray:
    """Every pose bone's local rotation as Blender computes it from its mode, (J, 3, 3)."""
    bpy.context.view_layer.update()
    return np.array([np.array(pb.matrix_basis)[:3, :3] for pb in ob.pose.bones])


def quaternions_of(matrices: np.ndarray) -> np.ndarray:
    xyzw = Rotation.from_matrix(matrices.reshape(-1, 3, 3)).as_quat()
    return np.concatenate([xyzw[:, 3:], xyzw[:, :3]], axis=1).reshape(*matrices.shape[:-2], 4)


def bone_state(ob) -> np.ndarray:
    """Every pose bone's location, rotations (all modes) and scale, as stored (float32)."""
    out = []
    for attr, size in (("location", 3), ("rotation_quaternion", 4), ("rotation_euler", 3),
                       ("rotation_axis_angle", 4), ("scale", 3)):
        buf = np.empty(len(ob.pose.bones) * size, dtype=np.float32)
        ob.pose.bones.foreach_get(attr, buf)
        out.append(buf)
    return np.concatenate(out)

