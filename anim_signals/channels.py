"""Channel preparation: curves must be continuous signals before any fitting.

Euler tracks from mocap wrap at +-180 degrees and quaternion tracks flip sign between
equivalent rotations; a spline through such a jump would swing through the whole circle.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["EULER_ORDERS", "check_finite", "continuous_quaternions", "euler_filter", "unwrap_angles"]

# Blender's Euler rotation modes.
EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def unwrap_angles(values: np.ndarray) -> np.ndarray:
    """Remove 2*pi jumps along the frame axis.

    Parameters
    ----------
    values : ndarray, shape (N,) or (N, M)
        Angles in radians, frames along axis 0.

    Returns
    -------
    ndarray, same shape
        Angles shifted by whole turns so consecutive frames differ by at most pi.
    """
    return np.unwrap(np.asarray(values, dtype=float), axis=0)


def euler_filter(angles: np.ndarray, order: str) -> np.ndarray:
    """Euler triples made continuous: 2*pi wraps *and* gimbal flips removed.

    Every Tait-Bryan rotation has a second Euler triple: first and last angle + pi, middle angle
    pi - middle.  Mocap exporters switch between the two (jumps of up to 180 degrees on all three
    channels at once); like Blender's Discontinuity (Euler) Filter, each frame takes the triple
    closest to the previous frame, each angle shifted by whole turns.

    Parameters
    ----------
    angles : ndarray, shape (N, 3)
        Rotation angles (x, y, z) in radians, one row per frame.
    order : str
        Blender rotation mode, one of :data:`EULER_ORDERS` (e.g. ``'XYZ'``).

    Returns
    -------
    ndarray, shape (N, 3)
        The same rotations, continuous from frame to frame (the first frame unchanged).

    Raises
    ------
    ValueError
        If ``angles`` is not (N, 3) or ``order`` is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> flipped = np.array([[0.1, 0.2, 0.3], [0.1 + np.pi, np.pi - 0.2, 0.3 + np.pi]])
    >>> np.round(euler_filter(flipped, "XYZ"), 6).tolist()
    [[0.1, 0.2, 0.3], [0.1, 0.2, 0.3]]
    """
    a = np.array(angles, dtype=float, copy=True)
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"Euler angles must be (frames, 3), got {a.shape}")
    if order not in EULER_ORDERS:
        raise ValueError(f"unknown Euler order {order!r}")
    axes = ["XYZ".index(ax) for ax in order]
    two_pi = 2.0 * np.pi
    for k in range(1, a.shape[0]):
        prev = a[k - 1]
        cand = a[k].copy()
        alt = cand.copy()
        alt[axes[0]] += np.pi
        alt[axes[1]] = np.pi - alt[axes[1]]
        alt[axes[2]] += np.pi
        cand += two_pi * np.round((prev - cand) / two_pi)
        alt += two_pi * np.round((prev - alt) / two_pi)
        a[k] = alt if np.sum((alt - prev) ** 2) < np.sum((cand - prev) ** 2) - 1e-12 else cand
    return a


def continuous_quaternions(quats: np.ndarray) -> np.ndarray:
    """Flip signs so consecutive quaternions lie in the same hemisphere.

    Parameters
    ----------
    quats : ndarray, shape (N, 4)
        Quaternions (w, x, y, z), one row per frame.

    Returns
    -------
    ndarray, shape (N, 4)
        The same rotations with ``q[k] . q[k-1] >= 0`` (the first frame unchanged).
    """
    q = np.array(quats, dtype=float, copy=True)
    if q.shape[0] < 2:
        return q
    dots = np.einsum("ij,ij->i", q[1:], q[:-1])
    flips = np.concatenate([[1.0], np.cumprod(np.where(dots < 0.0, -1.0, 1.0))])
    return q * flips[:, None]


def check_finite(values: np.ndarray, names: Sequence[str] | None = None) -> None:
    """Raise ValueError naming the first channel that holds NaN or infinite values.

    Parameters
    ----------
    values : ndarray, shape (N,) or (N, M)
        Samples, one column per channel.
    names : sequence of str, optional
        Channel names for the message (default ``'channel <index>'``).

    Raises
    ------
    ValueError
        If any sample is NaN or infinite: the message names the channel, value and sample.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    bad = ~np.isfinite(values)
    if not bad.any():
        return
    col = int(np.argmax(bad.any(axis=0)))
    row = int(np.argmax(bad[:, col]))
    name = names[col] if names is not None and col < len(names) else f"channel {col}"
    raise ValueError(f"{name} has a non-finite value ({values[row, col]}) at sample {row}")
