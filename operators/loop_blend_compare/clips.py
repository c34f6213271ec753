"""What Make Cyclic, Blend and Compare share on the Blender side: the input error, and actions read
as clips (curves sampled on whole frames and checked; made one continuous motion curve by
``blender_data.channels.continuous_values``)."""

from __future__ import annotations

import bpy
import numpy as np

from ...anim_signals.channels import EULER, QUATERNION
from ...anim_signals.channels import check_finite as _core_check_finite
from ..blender_data.actions import action_frame_range
from ..blender_data.fcurves import KeyframeError, check_sampled_span, sample_curves
from ..common import InputError

__all__ = [
    "MIN_FRAMES",
    "ROTATION_KINDS",
    "MotionInputError",
    "check_finite",
    "find_action",
    "frame_range",
    "sample_action",
    "sample_frames",
    "shared_frames_note",
    "spec_kinds",
    "spec_owners",
    "whole_frames",
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
        hint = ""
        if any("," in a.name for a in bpy.data.actions):
            hint = ' (a name holding a comma goes in double quotes: "Walk, fast", Run)'
        raise MotionInputError(f'No action named "{name}"{hint}')
    return action


def shared_frames_note(fcurves, n_frames: int) -> str:
    """' (its K keys share those frames)' when the curves have more keys than the ``n_frames``
    frames they span (several keys on one frame), else ''."""
    per_curve = max((len(fc.keyframe_points) for fc in fcurves), default=0)
    return f" (a curve has {per_curve} keys on those frames: keys sharing a frame count once)" if per_curve > n_frames else ""


def frame_range(action, fcurves) -> tuple[int, int]:
    """:func:`~..blender_data.actions.action_frame_range`, its refusals as MotionInputError."""
    try:
        return action_frame_range(action, fcurves)
    except KeyframeError as err:
        raise MotionInputError(str(err)) from err


def whole_frames(fcurves, lo: int, hi: int) -> np.ndarray:
    """The whole frames ``lo``..``hi`` to sample ``fcurves`` on, refused (MotionInputError naming
    the stray key or the range) before they are made when they are far more than the keys
    (``blender_data.fcurves.check_sampled_span``)."""
    try:
        check_sampled_span(fcurves, lo, hi)
    except KeyframeError as err:
        raise MotionInputError(str(err)) from err
    return np.arange(lo, hi + 1, dtype=np.float64)


def sample_frames(fcurves, frames: np.ndarray) -> np.ndarray:
    """:func:`~..blender_data.fcurves.sample_curves` on ``frames`` (the values, (N, M)), its
    refusals (keys at non-finite frames or values, a stray key far from the others) as
    MotionInputError."""
    try:
        return sample_curves(fcurves, frames)[1]
    except KeyframeError as err:
        raise MotionInputError(str(err)) from err


def sample_action(action, fcurves, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``fcurves`` of ``action`` sampled on every whole frame of the action's range.

    Returns
    -------
    frames : ndarray, shape (n_frames,)
    values : ndarray, shape (n_frames, len(fcurves))

    Raises MotionInputError when the range is shorter than MIN_FRAMES, holds far more frames than
    keys (a stray key, see ``blender_data.fcurves.check_sampled_span``) or a value is not finite.
    """
    lo, hi = frame_range(action, fcurves)
    n = hi - lo + 1
    if n < MIN_FRAMES:
        raise MotionInputError(f'{what} "{action.name}" is too short: {n} frame(s), at least {MIN_FRAMES} are needed'
                               + shared_frames_note(fcurves, n))
    frames = whole_frames(fcurves, lo, hi)
    values = sample_frames(fcurves, frames)
    check_finite(values, [f'"{action.name}": {fc.data_path}[{fc.array_index}]' for fc in fcurves], "use")
    return frames, values
