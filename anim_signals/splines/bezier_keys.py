"""Blender's Bezier keys as arrays (:class:`BezierCurve`: one F-curve's keys and handles) and their
evaluation as Blender evaluates them (each segment's x(t) = frame solved for t, handles longer than
their segment shortened as ``BKE_fcurve_correct_bezpart`` does), one curve or many at once
(:func:`evaluate_curves`).

What the fitting modules write and check; :mod:`.bspline` converts splines to these keys,
:mod:`.bezier` edits them (repair, pruning), :mod:`.stored_keys` rounds them as Blender stores them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["BezierCurve", "constant_curve", "evaluate_curves"]


@dataclass(frozen=True)
class BezierCurve:
    """One F-curve's keys as Blender stores them: every array has one row per key.

    Attributes
    ----------
    co : ndarray, shape (k, 2)
        Keys (frame, value).
    handle_left, handle_right : ndarray, shape (k, 2)
        Handle positions (frame, value).
    handle_type : ndarray of str, shape (k,)
        ``'FREE'`` or ``'ALIGNED'``.
    """

    co: np.ndarray  # (k, 2) frame, value
    handle_left: np.ndarray  # (k, 2)
    handle_right: np.ndarray  # (k, 2)
    handle_type: np.ndarray  # (k,) 'FREE' | 'ALIGNED'

    @property
    def n_keys(self) -> int:
        """Number of keys, k."""
        return int(self.co.shape[0])

    def evaluate(self, frames: np.ndarray) -> np.ndarray:
        """Evaluate like Blender: per segment solve x(t) = frame, then y(t); constant outside.

        Parameters
        ----------
        frames : array_like, shape (N,)

        Returns
        -------
        ndarray, shape (N,)
        """
        frames = np.atleast_1d(np.asarray(frames, dtype=float))
        xs, ys = self.co[:, 0], self.co[:, 1]
        if xs.size == 1:
            return np.full(frames.shape, ys[0])
        seg = np.clip(np.searchsorted(xs, frames, side="right") - 1, 0, xs.size - 2)
        y = _segment_values(frames, self.co[seg], self.handle_right[seg], self.handle_left[seg + 1], self.co[seg + 1])
        y = np.where(frames <= xs[0], ys[0], y)
        return np.where(frames >= xs[-1], ys[-1], y)


def _segment_values(frames: np.ndarray, p0: np.ndarray, p1: np.ndarray, p2: np.ndarray, p3: np.ndarray) -> np.ndarray:
    """Blender's value of each Bezier segment (key p0, handles p1 and p2, key p3; each (P, 2)) at the
    frames (P,): x(t) = frame solved for t, then y(t). Point by point, so one curve's points and many
    curves' points together give the same values."""
    x0, x1 = p0[:, 0], p3[:, 0]
    # Handles at 1/3 and 2/3 of the segment make x(t) linear: t = (f - x0) / h. Otherwise
    # x(t) = frame is solved by bisection (x(t) is monotone while each handle's x-extent is
    # within the segment, which Blender enforces by shortening a longer one).
    t = np.clip((frames - x0) / np.where(x1 > x0, x1 - x0, 1.0), 0.0, 1.0)
    h = x1 - x0
    thirds = np.isclose(p1[:, 0] - p0[:, 0], h / 3) & np.isclose(p3[:, 0] - p2[:, 0], h / 3)
    if not thirds.all():
        # Blender (BKE_fcurve_correct_bezpart, 4.2 to 5.0) shortens each handle on its own,
        # only where its x-extent is longer than the whole segment; handles that merely
        # overlap are kept (x(t) stays monotone for x-extents within the segment).
        len1, len2 = np.abs(p1[:, 0] - p0[:, 0]), np.abs(p3[:, 0] - p2[:, 0])
        long1, long2 = (len1 > h)[:, None], (len2 > h)[:, None]
        p1 = np.where(long1, p0 + (p1 - p0) * (h / np.maximum(len1, 1e-300))[:, None], p1)
        p2 = np.where(long2, p3 + (p2 - p3) * (h / np.maximum(len2, 1e-300))[:, None], p2)
        # x(t) - frame as a polynomial in t, relative to the segment's first key (small
        # coefficients), solved by bisection only where the handles are not at thirds
        solve = np.flatnonzero(~thirds)
        q1, q2, x3 = (p1[solve, 0] - x0[solve]), (p2[solve, 0] - x0[solve]), h[solve]
        a, b, c = x3 + 3.0 * (q1 - q2), 3.0 * (q2 - 2.0 * q1), 3.0 * q1
        d = x0[solve] - frames[solve]
        lo, hi = np.zeros(solve.size), np.ones(solve.size)
        mid = np.empty(solve.size)
        below = np.empty(solve.size, dtype=bool)
        for _ in range(12):
            np.add(lo, hi, out=mid)
            mid *= 0.5
            np.less(((a * mid + b) * mid + c) * mid + d, 0.0, out=below)
            np.copyto(lo, mid, where=below)
            np.copyto(hi, mid, where=~below)
        # then Newton inside the bracket (x(t) is monotone there): 2^-12 -> ~1e-13 in 3 steps
        root = 0.5 * (lo + hi)
        for _ in range(3):
            slope = (3.0 * a * root + 2.0 * b) * root + c
            step = (((a * root + b) * root + c) * root + d) / np.where(slope > 0.0, slope, np.inf)
            root = np.clip(root - step, lo, hi)
        t[solve] = root
    return (
        (1 - t) ** 3 * p0[:, 1]
        + 3 * (1 - t) ** 2 * t * p1[:, 1]
        + 3 * (1 - t) * t**2 * p2[:, 1]
        + t**3 * p3[:, 1]
    )


def evaluate_curves(curves: Sequence[BezierCurve], frames: np.ndarray) -> np.ndarray:
    """Every curve's value at every frame, as :meth:`BezierCurve.evaluate` gives them one curve at a
    time, in one pass over all their segments.

    Parameters
    ----------
    curves : sequence of BezierCurve
        M curves (one key or more each).
    frames : array_like, shape (N,)

    Returns
    -------
    ndarray, shape (N, M)

    Examples
    --------
    >>> import numpy as np
    >>> co = np.array([[0.0, 0.0], [3.0, 3.0]])
    >>> line = BezierCurve(co, co - [1.0, 1.0], co + [1.0, 1.0], np.array(["ALIGNED"] * 2))
    >>> evaluate_curves([line, constant_curve(0.0, 5.0)], [1.5, 4.0]).tolist()
    [[1.5, 5.0], [3.0, 5.0]]
    """
    frames = np.atleast_1d(np.asarray(frames, dtype=float))
    out = np.empty((frames.size, len(curves)))
    many = [j for j, c in enumerate(curves) if c.n_keys > 1]
    for j, c in enumerate(curves):
        if c.n_keys == 1:
            out[:, j] = c.co[0, 1]
    if not many:
        return out
    sizes = np.array([curves[j].n_keys for j in many])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    co = np.concatenate([curves[j].co for j in many])
    left = np.concatenate([curves[j].handle_left for j in many])
    right = np.concatenate([curves[j].handle_right for j in many])
    # each (curve, frame) pair's segment, as an index into the keys of every curve together
    at = np.concatenate([offset + np.clip(np.searchsorted(curves[j].co[:, 0], frames, side="right") - 1, 0, size - 2)
                         for j, offset, size in zip(many, offsets, sizes, strict=True)])
    everywhere = np.tile(frames, len(many))
    y = _segment_values(everywhere, co[at], right[at], left[at + 1], co[at + 1]).reshape(len(many), frames.size)
    first, last = co[offsets], co[offsets + sizes - 1]
    y = np.where(frames[None] <= first[:, :1], first[:, 1:], y)
    out[:, many] = np.where(frames[None] >= last[:, :1], last[:, 1:], y).T
    return out


def constant_curve(frame: float, value: float) -> BezierCurve:
    """A single key holding a constant value.

    Parameters
    ----------
    frame : float
    value : float

    Returns
    -------
    BezierCurve
        One FREE key with handles one frame to each side.
    """
    co = np.array([[frame, value]], dtype=float)
    return BezierCurve(co, co - [1.0, 0.0], co + [1.0, 0.0], np.array(["FREE"]))
