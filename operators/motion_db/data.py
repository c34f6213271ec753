"""Blender data the motion database reads and writes beyond the shared data layer (``bridge``):
the scene's frame rate, a signature of actions (to know when a cached database is stale) and
setting a pose by channel name on an object (shape-key values or pose-bone rotations)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..blender_data.actions import fcurves_of_action
from ..blender_data.armatures import PoseWriter
from ..blender_data.fcurves import count_keys
from ..blender_data.named_channels import parse_pose_channel
from ..blender_data.shape_keys import set_key_values_by_name
from .properties import SHAPE_KEYS

__all__ = ["NamedPoseWriter", "actions_signature", "scene_fps"]


def scene_fps(scene) -> float:
    """The scene's frame rate (frames per second, ``fps / fps_base``)."""
    return float(scene.render.fps) / float(scene.render.fps_base or 1.0)


def actions_signature(actions) -> tuple:
    """What changes when an action is edited: per action its name, curve count, key count and range."""
    sig = []
    for a in actions:
        fcs = fcurves_of_action(a)
        sig.append((a.name, len(fcs), count_keys(fcs), tuple(a.frame_range)))
    return tuple(sig)


class NamedPoseWriter:
    """Sets a pose given by database channel names on an object, without keying it.

    ``kind`` SHAPE_KEYS: the names are shape-key names; ARMATURE: pose-bone channel paths such as
    ``pose.bones["B"].rotation_euler[0]``.
    """

    def __init__(self, kind: str, names: Sequence[str]):
        self.kind = kind
        self.names = list(names)
        self._pose_writer: Any = None

    def write(self, ob, values: np.ndarray) -> None:
        """Set ``values`` (one per name) on ``ob``."""
        if self.kind == SHAPE_KEYS:
            set_key_values_by_name(ob, self.names, values)
            return
        if self._pose_writer is None:
            parsed = [parse_pose_channel(n) for n in self.names]
            self._pose_writer = PoseWriter(ob, [p for p, _ in parsed], [i for _, i in parsed])
        self._pose_writer.write(ob, values)
