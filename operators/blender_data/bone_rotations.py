"""Pose-bone rotations as quaternion arrays: every bone's local rotation per frame, in and out.

Owns reading an armature action as ``(frames, bones, 4)`` quaternions ``(w, x, y, z)`` with the
bones' parents (:func:`read_bone_rotations`: each bone's rotation curves in its own rotation mode,
quaternion, Euler of any order or axis-angle; a bone without curves keeps its current rotation),
finding the channels that are neither rotations nor the root's location (:func:`other_moving_channels`),
posing the bones from quaternions and reading their current pose back
(:class:`BoneRotationWriter`, one ``foreach_get`` / ``foreach_set`` per rotation property) and
writing quaternions per frame back as keys in each bone's mode (:func:`write_rotation_curves`).
The conversions are the core's
(``anim_signals.spatialkeys.rotation_modes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from ...anim_signals.spatialkeys.rotation_modes import (
    EULER_MODES,
    mode_size,
    mode_values_to_quaternions,
    quaternions_to_mode_values,
)
from .actions import fcurves_of_action, find_fcurve, get_action, get_slot, list_fcurves, new_fcurve
from .armatures import bone_hierarchy
from .channels import bone_name_of_path, bone_path, property_of_path
from .fcurves import sample_curves, write_dense_linear

__all__ = [
    "BoneRotationWriter",
    "BoneRotations",
    "other_moving_channels",
    "read_bone_rotations",
    "rotation_property",
    "write_rotation_curves",
]

MOVING = 1e-6
"""A channel whose sampled values span more than this is animated (less: a constant key, e.g. a
scale of 1 keyed on every frame by an importer)."""


def rotation_property(mode: str) -> str:
    """The pose-bone property holding a rotation in ``mode`` (``rotation_euler`` for Euler orders)."""
    if mode == "QUATERNION":
        return "rotation_quaternion"
    if mode == "AXIS_ANGLE":
        return "rotation_axis_angle"
    if mode in EULER_MODES:
        return "rotation_euler"
    raise ValueError(f"unknown rotation mode {mode!r}")


@dataclass
class BoneRotations:
    """An armature action's local bone rotations, frame by frame."""

    names: list[str]
    parents: list[int]
    modes: list[str]
    frames: np.ndarray  # (N,)
    quaternions: np.ndarray  # (N, J, 4), w >= 0
    animated: list[bool] = field(default_factory=list)  # the bone has a curve on its rotation property
    values: list[np.ndarray] = field(default_factory=list)  # per bone (N, size): as read, in its mode


def _current_values(ob: Any, prop: str) -> np.ndarray:
    bones = ob.pose.bones
    size = 4 if prop != "rotation_euler" else 3
    buf = np.empty(len(bones) * size, dtype=np.float32)
    bones.foreach_get(prop, buf)
    return buf.reshape(len(bones), size).astype(np.float64)


TRANSFORMS = ("location", "scale", "rotation_euler", "rotation_quaternion", "rotation_axis_angle")


def _action_curves(ob: Any, action: bpy.types.Action | None) -> list[bpy.types.FCurve]:
    """The curves of ``action`` for ``ob`` (assigned or not; None: the assigned action's)."""
    if action is None or action == get_action(ob):
        return list_fcurves(ob)
    return fcurves_of_action(action, ob)


def _rotation_curves(ob: Any, action: bpy.types.Action | None) -> dict[int, list[tuple[int, Any]]]:
    """Per bone index, its curves on the property its rotation mode uses: (array index, curve)."""
    names, _ = bone_hierarchy(ob)
    index = {n: i for i, n in enumerate(names)}
    bones = ob.pose.bones
    out: dict[int, list[tuple[int, Any]]] = {}
    for fc in _action_curves(ob, action):
        name = bone_name_of_path(fc.data_path)
        if name is None or name not in index:
            continue
        j = index[name]
        mode = bones[j].rotation_mode
        if fc.data_path == bone_path(name, rotation_property(mode)) and 0 <= fc.array_index < mode_size(mode):
            out.setdefault(j, []).append((int(fc.array_index), fc))
    return out


def read_bone_rotations(ob: Any, frames: Sequence[float] | np.ndarray,
                        action: bpy.types.Action | None = None) -> BoneRotations:
    """Every pose bone's local rotation at ``frames`` from ``action`` (default: the armature's
    assigned action; another one is read without assigning it).

    Each bone is read in its rotation mode (the curves of other rotation properties do not move
    it); a component without a curve, and a bone without any, keep the current value. Raises
    :class:`~.fcurves.KeyframeError` (a ValueError) on keys Blender cannot sample (NaN, stray keys).
    """
    names, parents = bone_hierarchy(ob)
    frames = np.asarray(frames, dtype=np.float64)
    bones = ob.pose.bones
    modes = [pb.rotation_mode for pb in bones]
    current = {prop: _current_values(ob, prop) for prop in ("rotation_quaternion", "rotation_euler",
                                                            "rotation_axis_angle")}
    curves = _rotation_curves(ob, action)
    flat = [(j, i, fc) for j, items in curves.items() for i, fc in items]
    _, sampled = sample_curves([fc for _, _, fc in flat], frames)
    values = {j: np.repeat(current[rotation_property(modes[j])][j][None], len(frames), axis=0) for j in range(len(names))}
    for col, (j, i, _) in enumerate(flat):
        values[j][:, i] = sampled[:, col]
    quats = np.empty((len(frames), len(names), 4))
    for j in range(len(names)):
        quats[:, j] = mode_values_to_quaternions(values[j], modes[j])
    return BoneRotations(names, parents, modes, frames, quats, [j in curves for j in range(len(names))],
                         [values[j] for j in range(len(names))])


def other_moving_channels(ob: Any, frames: Sequence[float] | np.ndarray,
                          action: bpy.types.Action | None = None) -> list[str]:
    """Labels of the action's pose-bone transform channels that move and are neither a bone's
    rotation (in its mode) nor the location of a root bone: scale, location of child bones, and
    the curves of a rotation property the bone's mode does not use. E.g. ``['"B2" scale',
    '"B3" location']``. Other curves (custom properties, object transforms) are not transforms of
    the pose and are not listed. ``action``: as in :func:`read_bone_rotations`."""
    names, parents = bone_hierarchy(ob)
    index = {n: i for i, n in enumerate(names)}
    bones = ob.pose.bones
    suspects: list[tuple[str, Any]] = []
    for fc in _action_curves(ob, action):
        name = bone_name_of_path(fc.data_path)
        if name is None or name not in index:
            continue
        j = index[name]
        prop = property_of_path(fc.data_path)
        if prop not in TRANSFORMS or fc.data_path != bone_path(name, prop):
            continue
        if prop == rotation_property(bones[j].rotation_mode) or (prop == "location" and parents[j] < 0):
            continue
        if prop.startswith("rotation_"):
            prop = f"{prop} (not used in its {bones[j].rotation_mode} mode)"
        suspects.append((f'"{name}" {prop}', fc))
    if not suspects:
        return []
    _, values = sample_curves([fc for _, fc in suspects], np.asarray(frames, dtype=np.float64))
    moving = np.ptp(values, axis=0) > MOVING
    labels: list[str] = []
    for (label, _), m in zip(suspects, moving, strict=True):
        if m and label not in labels:
            labels.append(label)
    return labels


class BoneRotationWriter:
    """Poses an armature's bones from quaternions, fast enough for dragging a cursor.

    Built once for the bone names of a model (a missing bone raises ValueError); :meth:`write` then
    converts each bone's quaternion into its rotation mode, near the value it has now (no Euler
    turn, flip or quaternion sign jump while dragging), with one ``foreach_get`` / ``foreach_set``
    per rotation property.
    """

    def __init__(self, ob: Any, names: Sequence[str]):
        bone_names, _ = bone_hierarchy(ob)
        where = {n: i for i, n in enumerate(bone_names)}
        missing = [n for n in names if n not in where]
        if missing:
            raise ValueError(f'"{ob.name}" has no bone {", ".join(repr(n) for n in missing[:3])}')
        self.n_bones = len(bone_names)
        modes = [ob.pose.bones[where[n]].rotation_mode for n in names]
        # (property, mode) -> (model joint indices, pose-bone indices)
        groups: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
        for j, (name, mode) in enumerate(zip(names, modes, strict=True)):
            cols, rows = groups.setdefault((rotation_property(mode), mode), ([], []))
            cols.append(j)
            rows.append(where[name])
        self.groups = {k: (np.array(c, dtype=np.int64), np.array(r, dtype=np.int64)) for k, (c, r) in groups.items()}
        self.modes = modes

    def read(self, ob: Any) -> np.ndarray:
        """The bones' rotations now, as unit quaternions ``(J, 4)`` (``w >= 0``) in the constructor's
        bone order, each read in its rotation mode (one ``foreach_get`` per rotation property)."""
        bones = ob.pose.bones
        if len(bones) != self.n_bones:
            raise ValueError(f'"{ob.name}" has {len(bones)} bones, the model was bound to {self.n_bones}')
        out = np.empty((len(self.modes), 4))
        values: dict[str, np.ndarray] = {}
        for (prop, mode), (cols, rows) in self.groups.items():
            if prop not in values:
                values[prop] = _current_values(ob, prop)
            out[cols] = mode_values_to_quaternions(values[prop][rows], mode)
        return out

    def write(self, ob: Any, quaternions: np.ndarray) -> None:
        """Set the bones' rotations to ``quaternions`` ((J, 4), the constructor's bone order) and tag ``ob``."""
        q = np.asarray(quaternions, dtype=np.float64).reshape(-1, 4)
        bones = ob.pose.bones
        if len(bones) != self.n_bones:
            raise ValueError(f'"{ob.name}" has {len(bones)} bones, the model was bound to {self.n_bones}')
        buffers: dict[str, np.ndarray] = {}
        for (prop, mode), (cols, rows) in self.groups.items():
            size = mode_size(mode)
            if prop not in buffers:
                buffers[prop] = np.empty(len(bones) * size, dtype=np.float32)
                bones.foreach_get(prop, buffers[prop])
            buf = buffers[prop].reshape(-1, size)
            buf[rows] = quaternions_to_mode_values(q[cols], mode, reference=buf[rows].astype(np.float64))
        for prop, buf in buffers.items():
            bones.foreach_set(prop, buf)
        ob.update_tag()


def write_rotation_curves(ob: Any, action: bpy.types.Action, rotations: BoneRotations,
                          quaternions: np.ndarray) -> int:
    """Key every animated bone's rotation (``rotations.animated``) on ``rotations.frames`` from
    ``quaternions`` ((N, J, 4)), in the bone's mode, one LINEAR key per frame, each
    frame nearest the values read (``rotations.values``). The action must be assigned to ``ob``
    (its slot's curves on 4.4+); missing curves are created. Returns the number of curves written."""
    slot = get_slot(ob)
    frames = rotations.frames
    written = 0
    for j, name in enumerate(rotations.names):
        if not rotations.animated[j]:
            continue
        mode = rotations.modes[j]
        prop = rotation_property(mode)
        # frame by frame near the values read (same Euler branch and quaternion sign as the
        # original curves, so the written curves overlay them in the Graph Editor)
        values = quaternions_to_mode_values(quaternions[:, j], mode, reference=rotations.values[j])
        path = bone_path(name, prop)
        for i in range(mode_size(mode)):
            fc = find_fcurve(action, slot, path, i) or new_fcurve(ob, action, path, i, group=name)
            write_dense_linear(fc, frames, values[:, i])
            written += 1
    return written
