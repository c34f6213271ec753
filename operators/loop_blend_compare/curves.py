"""Array helpers of Make Cyclic, Blend and Compare on motion curves: numpy only, no bpy.

A motion curve is an ``(n_frames, n_channels)`` float array of one clip (Euler tracks unwrapped,
quaternion tracks sign-continuous); ``kinds`` names each channel's kind (``"EULER"``,
``"QUATERNION"``, ``"LOCATION"``, ...) and ``owners`` the bone or ID each channel belongs to.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...anim_signals.manifolds import (
    EULER,
    LOCATION,
    QUATERNION,
    median_frame_change,
    quaternion_groups,
    seam_jump,
)

__all__ = [
    "STILL_SPAN",
    "finite_max",
    "finite_rms",
    "harmonise",
    "joint_seam",
    "location_mask",
    "moving_channels",
    "nearly_closed",
    "rotation_degrees",
]

# A channel counts as moving when its samples span more than this (float32 keys: ~1e-7 relative).
STILL_SPAN = 1e-6


def moving_channels(values: np.ndarray) -> np.ndarray:
    """Which channels of ``values`` (n_frames, n_channels) move: a bool array (n_channels,)."""
    if not values.shape[0]:
        return np.zeros(values.shape[1], dtype=bool)
    return np.ptp(values, axis=0) > STILL_SPAN


def harmonise(curve: np.ndarray, reference: np.ndarray, kinds: Sequence[str], owners: Sequence[str]) -> np.ndarray:
    """``curve`` moved next to ``reference`` (same channels, any lengths): the same poses, comparable numbers.

    Euler channels are shifted by whole turns towards the reference's mean; each quaternion track
    is flipped to the reference's hemisphere.

    Parameters
    ----------
    curve, reference : ndarray, shape (n_frames, n_channels) and (m_frames, n_channels)
    kinds, owners : sequence of str, length n_channels

    Returns
    -------
    ndarray, shape (n_frames, n_channels)
        A new array; ``curve`` is not changed.

    Examples
    --------
    >>> ref = np.array([[0.1], [0.2]])
    >>> harmonise(ref + 2 * np.pi, ref, ["EULER"], ["a"]).round(6).tolist()
    [[0.1], [0.2]]
    """
    out = np.array(curve, dtype=float, copy=True)
    for j, k in enumerate(kinds):
        if k == EULER:
            turns = np.round((float(np.mean(reference[:, j])) - float(np.mean(out[:, j]))) / (2.0 * np.pi))
            out[:, j] += 2.0 * np.pi * turns
    for cols in quaternion_groups(kinds, owners):
        if float(np.dot(out[:, cols].mean(axis=0), reference[:, cols].mean(axis=0))) < 0.0:
            out[:, cols] *= -1.0
    return out


def rotation_degrees(values: np.ndarray, kinds: Sequence[str]) -> np.ndarray:
    """Per-channel rotation amounts (n_channels,) in degrees; NaN for channels that are not rotations.

    Euler channels are angles in radians; a quaternion component change e is about 2e radians.
    """
    out = np.full(len(kinds), np.nan)
    for j, k in enumerate(kinds):
        if k == EULER:
            out[j] = math.degrees(float(values[j]))
        elif k == QUATERNION:
            out[j] = math.degrees(2.0 * float(values[j]))
    return out


def finite_max(values: np.ndarray) -> float:
    """The largest finite value (0.0 when there is none)."""
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else 0.0


def finite_rms(values: np.ndarray) -> float:
    """The root mean square of the finite values (0.0 when there is none)."""
    finite = values[np.isfinite(values)]
    return float(np.sqrt(np.mean(finite * finite))) if finite.size else 0.0


def location_mask(kinds: Sequence[str]) -> np.ndarray:
    """Which channels are locations: a bool array (n_channels,)."""
    return np.array([k == LOCATION for k in kinds], dtype=bool)


def nearly_closed(curve: np.ndarray, travel: Sequence[int]) -> bool:
    """Whether the clip ends close to where it starts.

    Every channel's seam jump must be within three median frame-to-frame changes plus 1 % of its
    range; ``travel`` channels (column indices) are measured net of their travel over the clip.
    """
    jump = seam_jump(curve, travel=travel)
    med, _ = median_frame_change(curve)
    allowed = 3.0 * np.asarray(med) + 0.01 * np.ptp(curve, axis=0) + 1e-6
    return bool(np.all(np.asarray(jump.pose) <= allowed))


def joint_seam(heads: np.ndarray, roots: Sequence[int] | None) -> tuple[float, float]:
    """The seam jump of joints as a loop over frames lo..hi plays.

    Parameters
    ----------
    heads : ndarray, shape (4, n_joints, 3)
        Joint positions at frames lo, lo + 1, hi - 1 and hi (z up).
    roots : sequence of int or None
        Root joints whose mean horizontal displacement from lo to hi is the travel over one cycle
        (``None``: the loop plays in place).

    Returns
    -------
    pose, velocity : float
        The largest joint distance ``|h(hi) - h(lo) - d|`` (d: the travel) and the largest change
        of a joint's step across the seam ``|(h(hi) - h(hi-1)) - (h(lo+1) - h(lo))|``, in the
        units of ``heads``.
    """
    offset = np.zeros(3)
    if roots is not None:
        offset = (heads[3, list(roots)] - heads[0, list(roots)]).mean(axis=0)
        offset[2] = 0.0
    pose = np.linalg.norm(heads[3] - heads[0] - offset, axis=-1).max()
    velocity = np.linalg.norm((heads[3] - heads[2]) - (heads[1] - heads[0]), axis=-1).max()
    return float(pose), float(velocity)
