"""A clip as one multichannel curve, and back.

Eslitzbichler, "Modelling Character Motions on Infinite-Dimensional Manifolds", treats a pose as a
point on the torus of joint angles; on the torus a curve is continuous once Euler tracks are
unwrapped.  Quaternion bones become hemisphere-continuous 4-vectors (a continuous representation
that round-trips by normalising).  Clips of different lengths or frame rates are compared after
resampling to a common number of samples, as the paper does ("scaling them to a common (time)
length").

Channel kinds are the strings :data:`EULER`, :data:`QUATERNION`, :data:`LOCATION` (any other
string: a plain value channel).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..channels import EULER_ORDERS, continuous_quaternions, euler_filter, unwrap_angles

__all__ = ["EULER", "QUATERNION", "LOCATION", "euler_triples", "from_motion_curve", "quaternion_groups", "resample",
           "to_motion_curve"]

EULER = "EULER"
QUATERNION = "QUATERNION"
LOCATION = "LOCATION"


def quaternion_groups(kinds: Sequence[str], owners: Sequence[str] | None = None) -> list[np.ndarray]:
    """Column indices of each complete quaternion (4 QUATERNION channels of one owner, in order).

    Parameters
    ----------
    kinds : sequence of str, length n
        Kind of each channel.
    owners : sequence of str, length n, optional
        Owner of each channel (bone name); without it, consecutive runs of 4 quaternion
        channels form the groups.

    Returns
    -------
    list of ndarray of int, shape (4,)
    """
    idx = [j for j, k in enumerate(kinds) if k == QUATERNION]
    if owners is None:
        return [np.array(idx[i:i + 4]) for i in range(0, len(idx) - len(idx) % 4, 4)]
    by_owner: dict[str, list[int]] = {}
    for j in idx:
        by_owner.setdefault(owners[j], []).append(j)
    return [np.array(cols) for cols in by_owner.values() if len(cols) == 4]


def euler_triples(kinds: Sequence[str], owners: Sequence[str] | None,
                  rotation_modes: Sequence[str | None] | None,
                  indices: Sequence[int] | None = None) -> list[tuple[np.ndarray, str]]:
    """Columns (x, y, z) and rotation order of every complete Euler rotation whose order is known.

    Parameters
    ----------
    kinds : sequence of str, length n
        Kind of each channel.
    owners : sequence of str, length n, or None
        Owner of each channel (bone name); None: no triples.
    rotation_modes : sequence of str or None, length n, or None
        Each channel's owner's rotation mode (e.g. ``'ZXY'``); None: no triples.
    indices : sequence of int, length n, optional
        Each channel's component (F-curve array_index); default: in x, y, z order.

    Returns
    -------
    list of (ndarray of int, shape (3,), str)
    """
    if owners is None or rotation_modes is None:
        return []
    by_owner: dict[str, list[int]] = {}
    for j, k in enumerate(kinds):
        if k == EULER:
            by_owner.setdefault(owners[j], []).append(j)
    out = []
    for cols in by_owner.values():
        mode = rotation_modes[cols[0]]
        if len(cols) == 3 and mode in EULER_ORDERS:
            if indices is not None:
                comps = [int(indices[c]) for c in cols]
                if sorted(comps) != [0, 1, 2]:
                    continue
                cols = [c for _, c in sorted(zip(comps, cols))]
            out.append((np.array(cols), str(mode)))
    return out


def to_motion_curve(values: np.ndarray, kinds: Sequence[str], owners: Sequence[str] | None = None,
                    rotation_modes: Sequence[str | None] | None = None,
                    indices: Sequence[int] | None = None) -> np.ndarray:
    """Channel samples as one continuous curve: Euler columns unwrapped, quaternions sign-continuous.

    With ``owners`` and ``rotation_modes``, complete Euler triples also lose gimbal flips
    (:func:`anim_signals.channels.euler_filter`), which raw mocap has.

    Parameters
    ----------
    values : ndarray, shape (N, n)
        One column per channel; angles in radians.
    kinds : sequence of str, length n
        Kind of each channel (:data:`EULER`, :data:`QUATERNION`, :data:`LOCATION`, other).
    owners : sequence of str, length n, optional
        Owner (bone) of each channel.
    rotation_modes : sequence of str or None, length n, optional
        Each channel's owner's rotation mode, e.g. ``'ZXY'``.
    indices : sequence of int, length n, optional
        Each channel's component (F-curve array_index) when a triple is not stored in x, y, z
        order.

    Returns
    -------
    ndarray, shape (N, n)

    Raises
    ------
    ValueError
        If ``values`` is not (N, len(kinds)).

    Examples
    --------
    >>> import numpy as np
    >>> wrapped = np.array([[3.0], [-3.0]])  # radians, across +-pi
    >>> np.round(to_motion_curve(wrapped, [EULER]), 4).ravel().tolist()
    [3.0, 3.2832]
    """
    curve = np.array(values, dtype=float, copy=True)
    if curve.ndim != 2 or curve.shape[1] != len(kinds):
        raise ValueError(f"values must be (frames, {len(kinds)}), got {curve.shape}")
    triples = euler_triples(kinds, owners, rotation_modes, indices)
    filtered: set[int] = set()
    for cols, order in triples:
        curve[:, cols] = euler_filter(curve[:, cols], order)
        filtered.update(int(c) for c in cols)
    euler = [j for j, k in enumerate(kinds) if k == EULER and j not in filtered]
    if euler:
        curve[:, euler] = unwrap_angles(curve[:, euler])
    for cols in quaternion_groups(kinds, owners):
        curve[:, cols] = continuous_quaternions(curve[:, cols])
    return curve


def from_motion_curve(curve: np.ndarray, kinds: Sequence[str], owners: Sequence[str] | None = None) -> np.ndarray:
    """A (possibly edited) motion curve back to valid channel values: quaternions normalised.

    Euler angles stay unwrapped: Blender plays any angle, and wrapping would add 360 degree jumps.

    Parameters
    ----------
    curve : ndarray, shape (N, n)
    kinds : sequence of str, length n
    owners : sequence of str, length n, optional

    Returns
    -------
    ndarray, shape (N, n)
    """
    out = np.array(curve, dtype=float, copy=True)
    for cols in quaternion_groups(kinds, owners):
        norm = np.linalg.norm(out[:, cols], axis=1, keepdims=True)
        out[:, cols] /= np.where(norm > 0.0, norm, 1.0)
    return out


def resample(values: np.ndarray, n_samples: int) -> np.ndarray:
    """Linear resampling to ``n_samples`` equally spaced samples over the same time span.

    Parameters
    ----------
    values : ndarray, shape (N, n)
    n_samples : int
        At least 2.

    Returns
    -------
    ndarray, shape (n_samples, n)

    Raises
    ------
    ValueError
        If ``n_samples`` < 2.
    """
    values = np.asarray(values, dtype=float)
    n = values.shape[0]
    if n_samples < 2:
        raise ValueError("need at least 2 samples")
    if n == n_samples:
        return values.copy()
    t_old = np.linspace(0.0, 1.0, n)
    t_new = np.linspace(0.0, 1.0, n_samples)
    pos = np.interp(t_new, t_old, np.arange(n, dtype=float))
    i0 = np.clip(np.floor(pos).astype(int), 0, n - 2)
    f = (pos - i0)[:, None]
    return (1.0 - f) * values[i0] + f * values[i0 + 1]
