"""What Make Cyclic, Blend and Compare share on the Blender side: the input error, and actions read
as clips (curves sampled on whole frames and checked; made one continuous motion curve by
``blender_data.channels.continuous_values``)."""

from __future__ import annotations

import bpy
import numpy as np

from ...anim_signals.channels import EULER, QUATERNION
from ...anim_signals.channels import check_finite as _core_check_finite
from ..blender_data.actions import action_frame_range
from ..blender_data.fcurves import sample_curves
from ..common import InputError

__all__ = [
    "MIN_FRAMES",
    "ROTATION_KINDS",
    "MotionInputError",
    "check_finite",
    "find_action",
    "sample_action",
    "spec_kinds",
    "spec_owners",
]

MIN_FRAMES = 4
ROTATION_KINDS = (EULER, QUATERNION)


class MotionInputError(InputError):
    """Bad input for Make Cyclic, Blend or Compare: reported to the user, nothing changed."""


def spec_kinds(specs) -> list[str]:
    """Each channel's kind (``ChannelSpec.kind``)."""
    return [s.kind for s in specs]


def spec_owners(specs, prefix: str = "") -> list[str]:
    """Each channel's owner (bone or ID path), with ``prefix`` to keep owners of several IDs apart."""
    return [prefix + s.owner_path for s in specs]


def check_finite(values: np.ndarray, labels: list[str], verb: str) -> None:
    """Raise MotionInputError ("Cannot <verb> non-finite data: ...") naming the first bad channel."""
    try:
        _core_check_finite(values, labels)
    except ValueError as err:
        raise MotionInputError(f"Cannot {verb} non-finite data: {err}") from err


def find_action(name: str):
    """The action called ``name`` (surrounding spaces ignored); ``None`` for an empty name.

    Raises MotionInputError when there is no such action.
    """
    name = name.strip()
    if not name:
        return None
    action = bpy.data.actions.get(name)
    if action is None:
        raise MotionInputError(f'No action named "{name}"')
    return action


def sample_action(action, fcurves, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``fcurves`` of ``action`` sampled on every whole frame of the action's range.

    Returns
    -------
    frames : ndarray, shape (n_frames,)
    values : ndarray, shape (n_frames, len(fcurves))

    Raises MotionInputError when the range is shorter than MIN_FRAMES or a value is not finite.
    """
    lo, hi = action_frame_range(action, fcurves)
    n = hi - lo + 1
    if n < MIN_FRAMES:
        raise MotionInputError(f'{what} "{action.name}" is too short: {n} frame(s), at least {MIN_FRAMES} are needed')
    frames = np.arange(lo, hi + 1, dtype=np.float64)
    _, values = sample_curves(fcurves, frames)
    check_finite(values, [f'"{action.name}": {fc.data_path}[{fc.array_index}]' for fc in fcurves], "use")
    return frames, values
