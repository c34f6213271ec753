"""Channel preparation: curves must be continuous signals before any fitting.

Euler tracks from mocap wrap at +-180 degrees and quaternion tracks flip sign between
equivalent rotations; a spline through such a jump would swing through the whole circle.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["check_finite", "continuous_quaternions", "unwrap_angles"]


def unwrap_angles(values: np.ndarray) -> np.ndarray:
    """Remove 2*pi jumps along the frame axis (radians)."""
    return np.unwrap(np.asarray(values, dtype=float), axis=0)


def continuous_quaternions(quats: np.ndarray) -> np.ndarray:
    """Flip signs so consecutive quaternions (N, 4) lie in the same hemisphere."""
    q = np.array(quats, dtype=float, copy=True)
    if q.shape[0] < 2:
        return q
    dots = np.einsum("ij,ij->i", q[1:], q[:-1])
    flips = np.concatenate([[1.0], np.cumprod(np.where(dots < 0.0, -1.0, 1.0))])
    return q * flips[:, None]


def check_finite(values: np.ndarray, names: Sequence[str] | None = None) -> None:
    """Raise ValueError naming the first channel that holds NaN or infinite values."""
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
