"""Fewest Keys' keys as Blender stores them: float32 keys and handles, checked and repaired.

Blender keeps an F-curve's keys and handles in float32; a segment that held in float64 can miss by a
hair once stored (tolerances near float32's resolution: far from zero, or handle frames in the
thousands). :func:`check_and_repair` evaluates the stored curves at every sample, as Blender does,
and keys every sample of a segment that still misses.
"""

from __future__ import annotations

import numpy as np

from .bezier_keys import BezierCurve

__all__ = ["as_stored", "check_and_repair"]


def as_stored(curve: BezierCurve) -> BezierCurve:
    """The curve as Blender keeps it: its keys and handles rounded to float32.

    Parameters
    ----------
    curve : BezierCurve
        Keys and handles in float64 (frames, values).

    Returns
    -------
    BezierCurve
        The same keys and handle types, every coordinate rounded to the nearest float32.

    Examples
    --------
    >>> co = np.array([[1500.0, 1.0 + 1e-9]])
    >>> stored = as_stored(BezierCurve(co, co - [1.0, 0.0], co + [1.0, 0.0], np.array(["FREE"])))
    >>> float(stored.co[0, 1])  # the hair below float32's resolution near 1 is gone
    1.0
    """
    def f32(a):
        return a.astype(np.float32).astype(float)
    return BezierCurve(f32(curve.co), f32(curve.handle_left), f32(curve.handle_right), curve.handle_type)


def check_and_repair(frames, values, tol, curves, keys, fitted=None):
    """Key every sample of a segment that misses under Blender's evaluation of the float32 keys.

    Parameters
    ----------
    frames : ndarray, shape (N,)
        Sample frames, increasing.
    values : ndarray, shape (N, M)
        The samples of M channels.
    tol : ndarray, shape (M,)
        Each channel's max error, in its units.
    curves : list of BezierCurve, length M
        The fitted curves (float64).
    keys : list of ndarray of int, length M
        The samples each curve keys; updated in place where segments are repaired.
    fitted : ndarray, shape (N, M), optional
        The stored curves' values at the frames, when already evaluated (then updated in place).

    Returns
    -------
    curves : list of BezierCurve
        The curves, a missing segment keyed at every sample with straight handles between.
    repaired : int
        Segments repaired.
    errors : ndarray, shape (M,)
        Each channel's max error once stored.
    fitted : ndarray, shape (N, M)
        The stored curves at the frames.

    Examples
    --------
    A straight line between two keys where the samples bend: the one segment is keyed densely.

    >>> frames = np.arange(5.0); values = (frames ** 2)[:, None]
    >>> co = np.array([[0.0, 0.0], [4.0, 16.0]])
    >>> line = BezierCurve(co, co - [1.0, 4.0], co + [1.0, 4.0], np.array(["FREE", "FREE"]))
    >>> curves, repaired, errors, _ = check_and_repair(frames, values, np.array([0.1]), [line], [np.array([0, 4])])
    >>> repaired, curves[0].n_keys, float(errors[0])
    (1, 5, 0.0)
    """
    repaired = 0
    out = list(curves)
    errors = np.zeros(len(curves))
    known = fitted is not None
    fitted = np.empty((frames.size, len(curves))) if fitted is None else fitted
    for ch, curve in enumerate(curves):
        if not known:
            fitted[:, ch] = as_stored(curve).evaluate(frames)
        err = np.abs(fitted[:, ch] - values[:, ch])
        errors[ch] = err.max()
        if errors[ch] <= tol[ch]:
            continue
        k = keys[ch]
        bad = np.flatnonzero(err > tol[ch])
        seg = np.clip(np.searchsorted(k, bad, side="right") - 1, 0, max(k.size - 2, 0))
        # a key whose own value misses (off its sample) takes the sample's: both its segments go dense
        off = np.flatnonzero(np.abs(curve.co[:, 1] - values[k, ch]) > tol[ch]) if curve.n_keys == k.size else []
        seg = np.unique(np.clip(np.concatenate([seg, np.asarray(off) - 1, off]), 0, max(k.size - 2, 0)).astype(int))
        repaired += seg.size
        new_keys = set(k.tolist())
        for s in seg:
            new_keys.update(range(int(k[s]), int(k[min(s + 1, k.size - 1)]) + 1))
        if k.size == 1:
            new_keys = set(range(frames.size))
        keys[ch] = np.array(sorted(new_keys))
        out[ch] = _linear_where_dense(frames, values[:, ch], keys[ch], curve, tol[ch])
        fitted[:, ch] = as_stored(out[ch]).evaluate(frames)
        errors[ch] = np.abs(fitted[:, ch] - values[:, ch]).max()
    return out, repaired, errors, fitted


def _linear_where_dense(frames, y, k, old: BezierCurve, tol: float) -> BezierCurve:
    """Keys k with straight-line handles on one-sample segments, the old handles elsewhere (an old
    key keeps its value where it is within ``tol`` of its sample; the others take the sample's)."""
    co = np.column_stack([frames[k], y[k]])
    n = k.size
    old_frames = old.co[:, 0]
    # where each new key sits among the old keys (-1: not an old key)
    pos = np.clip(np.searchsorted(old_frames, co[:, 0] - 1e-9 * (1.0 + np.abs(co[:, 0]))), 0, old.n_keys - 1)
    pos = np.where(np.isclose(old_frames[pos], co[:, 0]), pos, -1)
    kept_value = old.co[np.maximum(pos, 0), 1]
    co[:, 1] = np.where((pos >= 0) & (np.abs(kept_value - co[:, 1]) <= tol), kept_value, co[:, 1])
    left = np.empty_like(co)
    right = np.empty_like(co)
    if n > 1:
        # a segment between two keys that were neighbours in the old curve keeps its handles
        same = (pos >= 0) & (co[:, 1] == kept_value)
        kept = same[:-1] & same[1:] & (pos[1:] == pos[:-1] + 1)
        right[:-1] = np.where(kept[:, None], old.handle_right[np.maximum(pos[:-1], 0)], co[:-1] + (co[1:] - co[:-1]) / 3.0)
        left[1:] = np.where(kept[:, None], old.handle_left[np.maximum(pos[1:], 0)], co[1:] - (co[1:] - co[:-1]) / 3.0)
        right[-1] = 2 * co[-1] - left[-1]
        left[0] = 2 * co[0] - right[0]
    else:
        left[0], right[0] = co[0] - [1.0, 0.0], co[0] + [1.0, 0.0]
    return BezierCurve(co, left, right, np.full(n, "FREE"))
