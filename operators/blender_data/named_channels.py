"""Named channels: actions as tables of channels with stable names, for the motion database.

A database action is either shape-key values (channel name: the shape key's name) or pose-bone
rotations (channel name: ``'pose.bones["B"].rotation_euler[0]'``; locations and scales are other
units and left out). This module owns those names (:func:`pose_channel_name`,
:func:`parse_pose_channel`), telling which kind an action is (:func:`action_kind`), and reading an
action's named channels on whole frames / writing them as a new baked action
(:func:`read_named_channels`, :func:`write_named_channels`), a digest of their keys that any edit
changes (:func:`channels_signature`), and setting a pose given by channel
names on an object without keying it (:class:`NamedPoseWriter`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

import bpy
import numpy as np

from .actions import action_frame_range, fcurves_of_action, new_action, new_fcurve
from .armatures import PoseWriter
from .channels import (
    bone_name_of_path,
    is_shape_key_value_path,
    property_of_path,
    shape_key_name_of_path,
    shape_key_value_path,
)
from .fcurves import curves_digest, sample_curves, write_dense_linear
from .shape_keys import set_key_values_by_name

DB_SHAPE_KEYS = "SHAPE_KEYS"
DB_ARMATURE = "ARMATURE"

_ROTATIONS = ("rotation_euler", "rotation_quaternion")
_POSE_CHANNEL = re.compile(r"^(.*)\[(\d+)\]$")


def pose_channel_name(data_path: str, index: int) -> str:
    """``('pose.bones["Hips"].rotation_euler', 2)`` -> ``'pose.bones["Hips"].rotation_euler[2]'``."""
    return f"{data_path}[{int(index)}]"


def parse_pose_channel(name: str) -> tuple[str, int]:
    """``'pose.bones["Hips"].rotation_euler[2]'`` -> ``('pose.bones["Hips"].rotation_euler', 2)``.

    Raises ValueError for a name without a trailing ``[index]``.
    """
    m = _POSE_CHANNEL.match(name)
    if m is None:
        raise ValueError(f"not a pose channel name: {name!r}")
    return m.group(1), int(m.group(2))


def _is_bone_rotation_path(data_path: str) -> bool:
    return bone_name_of_path(data_path) is not None and property_of_path(data_path) in _ROTATIONS


def action_kind(action: bpy.types.Action) -> str | None:
    """DB_SHAPE_KEYS when the action animates shape-key values, DB_ARMATURE when it animates
    pose-bone rotations, else None (slotted actions: by the curves of the slot read, see
    :func:`.actions.fcurves_of_action`)."""
    fcs = fcurves_of_action(action)
    if any(is_shape_key_value_path(fc.data_path) for fc in fcs):
        return DB_SHAPE_KEYS
    if any(_is_bone_rotation_path(fc.data_path) for fc in fcs):
        return DB_ARMATURE
    return None


def named_channel_curves(action: bpy.types.Action, kind: str, id_data: Any = None) -> dict[str, bpy.types.FCurve]:
    """Channel name -> F-curve of ``action`` for a ``kind`` (DB_SHAPE_KEYS or DB_ARMATURE), in the
    action's order; curves without keys are skipped. ``id_data`` picks the slot read (see
    :func:`.actions.action_slot_for`)."""
    out: dict[str, bpy.types.FCurve] = {}
    for fc in fcurves_of_action(action, id_data):
        if not len(fc.keyframe_points):
            continue
        if kind == DB_SHAPE_KEYS:
            name = shape_key_name_of_path(fc.data_path)
            if name is not None:
                out[name] = fc
        elif _is_bone_rotation_path(fc.data_path):
            out[pose_channel_name(fc.data_path, fc.array_index)] = fc
    return out


def channels_signature(actions: Iterable[bpy.types.Action], kind: str) -> str:
    """A digest of everything that decides the named channels' values: per action its name, and per
    channel its name, muting and :func:`~.fcurves.curves_digest` (keys, handles, interpolation,
    extrapolation, modifiers). Any edit of a key changes it, not only a changed key count or frame
    range; one ``foreach_get`` per key property (about 10 ms per million keys), no sampling."""
    digest = hashlib.blake2b(digest_size=16)
    for action in actions:
        digest.update(f"\x00{action.name}".encode())
        for name, fc in named_channel_curves(action, kind).items():
            digest.update(f"\x01{name}|{fc.mute}|{curves_digest([fc])}".encode())
    return digest.hexdigest()


def read_named_channels(action: bpy.types.Action, kind: str, names: Sequence[str] | None = None,
                        id_data: Any = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The action's named channels sampled on every whole frame of its range.

    Returns ``(frames (n,), values (n, d), names)``; ``names`` picks and orders the channels (those
    the action lacks are left out of the returned names); nothing found gives empty arrays.
    """
    curves = named_channel_curves(action, kind, id_data)
    chosen = list(curves) if names is None else [n for n in names if n in curves]
    if not chosen:
        return np.empty(0), np.empty((0, 0)), []
    fcs = [curves[n] for n in chosen]
    lo, hi = action_frame_range(action, fcs)
    frames = np.arange(lo, hi + 1, dtype=np.float64)
    _, values = sample_curves(fcs, frames)
    return frames, values, chosen


def write_named_channels(id_data: Any, action_name: str, kind: str, frames: np.ndarray, values: np.ndarray,
                         names: Sequence[str]) -> bpy.types.Action:
    """A new action ``action_name`` assigned to ``id_data`` (the Key for DB_SHAPE_KEYS, the armature
    object for DB_ARMATURE) with one LINEAR key per frame and channel ((n,) frames, (n, d) values
    for the d ``names``). The action assigned before keeps a fake user."""
    values = np.asarray(values, dtype=np.float64).reshape(len(frames), len(names))
    action = new_action(id_data, action_name, keep_previous=True)
    for j, name in enumerate(names):
        if kind == DB_SHAPE_KEYS:
            fc = new_fcurve(id_data, action, shape_key_value_path(name), 0)
        else:
            path, index = parse_pose_channel(name)
            fc = new_fcurve(id_data, action, path, index, group=bone_name_of_path(path))
        write_dense_linear(fc, frames, values[:, j])
    return action


class NamedPoseWriter:
    """Sets a pose given by channel names on an object, without keying it.

    ``kind`` DB_SHAPE_KEYS: the names are shape-key names; DB_ARMATURE: pose-bone channel names
    such as ``pose.bones["B"].rotation_euler[0]`` (see :func:`pose_channel_name`).
    """

    def __init__(self, kind: str, names: Sequence[str]):
        self.kind = kind
        self.names = list(names)
        self._pose_writer: Any = None

    def write(self, ob: Any, values: np.ndarray) -> None:
        """Set ``values`` (one per name) on ``ob``."""
        if self.kind == DB_SHAPE_KEYS:
            set_key_values_by_name(ob, self.names, values)
            return
        if self._pose_writer is None:
            parsed = [parse_pose_channel(n) for n in self.names]
            self._pose_writer = PoseWriter(ob, [p for p, _ in parsed], [i for _, i in parsed])
        self._pose_writer.write(ob, values)
