"""Temporal keyframe baselines (Costa and Esperança §3.1 and §5.1 (b)).

Reconstruct every frame from key poses with time as the parameter:

- ``"linear"``: Euler angles (``xyz``, unwrapped across the keys) interpolated linearly;
- ``"hermite"``: Euler angles by a cubic Hermite curve whose tangents at the keys are
  Catmull-Rom finite differences of the neighbouring keys (scipy ``CubicHermiteSpline``; the
  compressed clip stores no tangents, so they must come from the keys);
- ``"slerp"``: quaternion slerp per joint (scipy ``Slerp``);
- ``"rbf"``: the back-projection RBF of :mod:`~anim_signals.spatialkeys.backprojection` in one
  dimension (time), log-space blend. With Igarashi's kernel ``phi(r) = r`` and a linear
  polynomial a 1D RBF is the piecewise-linear interpolant, so this is a geodesic-like
  interpolation in the log space about the keys' mean, close to slerp (as in the seed's Table 1).

Frames before the first key or after the last hold that key's pose.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.interpolate import CubicHermiteSpline
from scipy.spatial.transform import Rotation, Slerp

from .backprojection import fit_rotation_rbf
from .rotations import as_matrices

__all__ = ["TEMPORAL_SCHEMES", "interpolate_temporal"]

TEMPORAL_SCHEMES: tuple[str, ...] = ("linear", "hermite", "slerp", "rbf")


def _euler(m: np.ndarray) -> np.ndarray:
    k, j = m.shape[:2]
    e = Rotation.from_matrix(m.reshape(-1, 3, 3)).as_euler("xyz").reshape(k, j, 3)
    return np.unwrap(e, axis=0)


def _from_euler(e: np.ndarray) -> np.ndarray:
    return Rotation.from_euler("xyz", e.reshape(-1, 3)).as_matrix().reshape(*e.shape[:-1], 3, 3)


def _catmull_rom(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    dy = np.zeros_like(y)
    if len(t) > 2:
        dy[1:-1] = (y[2:] - y[:-2]) / (t[2:] - t[:-2])[:, None, None]
    dy[0] = (y[1] - y[0]) / (t[1] - t[0])
    dy[-1] = (y[-1] - y[-2]) / (t[-1] - t[-2])
    return dy


def interpolate_temporal(scheme: str, key_frames: ArrayLike, key_rotations: ArrayLike,
                         frames: ArrayLike) -> np.ndarray:
    """Reconstruct poses at ``frames`` from key poses at ``key_frames`` with a temporal scheme.

    Parameters
    ----------
    scheme : {'linear', 'hermite', 'slerp', 'rbf'}
    key_frames : array_like, shape (M,)
        Increasing frame numbers (times) of the keys.
    key_rotations : array_like, shape (M, J, 4) or (M, J, 3, 3)
    frames : array_like, shape (N,)
        Frame numbers to reconstruct.

    Returns
    -------
    ndarray, shape (N, J, 3, 3)
        Rotation matrices; exact at the keys.

    Raises
    ------
    ValueError
        On an unknown scheme, fewer than 2 keys or non-increasing key frames.

    Examples
    --------
    >>> q = np.zeros((2, 1, 4)); q[:, 0, 0] = np.cos([0.0, 0.5]); q[:, 0, 3] = np.sin([0.0, 0.5])
    >>> r = interpolate_temporal("slerp", [0, 10], q, [5])
    >>> round(float(np.arctan2(r[0, 0, 1, 0], r[0, 0, 0, 0])), 12)  # half of 1 rad about z
    0.5
    """
    t = np.asarray(key_frames, dtype=float)
    m = as_matrices(key_rotations)
    x = np.clip(np.asarray(frames, dtype=float), t[0] if len(t) else 0.0, t[-1] if len(t) else 0.0)
    if len(t) < 2 or np.any(np.diff(t) <= 0) or len(m) != len(t):
        raise ValueError("need at least 2 keys at increasing frames, one pose per key")
    scheme = scheme.lower()
    if scheme == "linear":
        e = _euler(m)
        idx = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 2)
        u = ((x - t[idx]) / (t[idx + 1] - t[idx]))[:, None, None]
        return _from_euler(e[idx] + u * (e[idx + 1] - e[idx]))
    if scheme == "hermite":
        e = _euler(m)
        return _from_euler(CubicHermiteSpline(t, e, _catmull_rom(t, e), axis=0)(x))
    if scheme == "slerp":
        out = np.empty((len(x), m.shape[1], 3, 3))
        for j in range(m.shape[1]):
            out[:, j] = Slerp(t, Rotation.from_matrix(m[:, j]))(x).as_matrix()
        return out
    if scheme == "rbf":
        return fit_rotation_rbf(t, m, blend="log").evaluate(x[:, None])
    raise ValueError(f"unknown temporal scheme {scheme!r}; expected one of {', '.join(TEMPORAL_SCHEMES)}")
