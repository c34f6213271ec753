"""Blender-native Bezier keys: segments with free handle lengths.

A cubic B-spline written as Bezier keys puts every handle at a third of its segment: one key
carries a value and a slope. A Blender key can do more: the two handle lengths of a segment
are free, which lets one segment ease in and out over a long stretch. :func:`prune_keys` uses that
freedom after the spline fit: it removes a key whenever one segment with re-chosen handle
lengths (the slopes of the neighbouring keys kept, so the curve stays smooth) still keeps every
original sample within tolerance.
"""

from __future__ import annotations

import numpy as np

from .bezier_keys import BezierCurve

__all__ = ["broken_handles", "hermite_keys", "insert_keys", "prune_keys", "repair_keys", "segment_values"]

# Handle lengths tried, as fractions of the segment: a + b <= 1 so Blender never rescales them.
_STEPS = np.arange(1, 12) / 12.0
_ALPHA, _BETA = np.meshgrid(_STEPS, _STEPS, indexing="ij")
_PAIRS = (_ALPHA + _BETA) <= 1.0 + 1e-12
GRID_A = _ALPHA[_PAIRS]
GRID_B = _BETA[_PAIRS]


def broken_handles(curve: BezierCurve, *, angle_deg: float = 0.5) -> int:
    """Inner keys whose two handles do not point the same way (a corner an animator sees).

    Parameters
    ----------
    curve : BezierCurve
    angle_deg : float
        Handles within this angle of a straight line through the key count as aligned. The
        angle is taken in the curve's own (frame, value) units, as the Graph Editor shows them at
        an equal scale.

    Returns
    -------
    int
        Broken keys, the first and the last key not counted.

    Examples
    --------
    >>> co = np.array([[0.0, 0.0], [10.0, 1.0], [20.0, 0.0]])
    >>> left = co - [[3.0, 0.0], [3.0, 0.3], [3.0, 0.0]]
    >>> right = co + [[3.0, 0.0], [3.0, -0.3], [3.0, 0.0]]
    >>> broken_handles(BezierCurve(co, left, right, np.array(["FREE"] * 3)))
    1
    """
    if curve.n_keys < 3:
        return 0
    into = curve.co[1:-1] - curve.handle_left[1:-1]
    out = curve.handle_right[1:-1] - curve.co[1:-1]
    cross = into[:, 0] * out[:, 1] - into[:, 1] * out[:, 0]
    dot = np.einsum("ij,ij->i", into, out)
    angle = np.degrees(np.abs(np.arctan2(cross, dot)))
    return int(np.count_nonzero(angle > angle_deg))


def insert_keys(curve: BezierCurve, frames: np.ndarray) -> BezierCurve:
    """The same curve with keys added at ``frames``: each segment split exactly (de Casteljau).

    Blender's evaluation of the result equals the input's at every frame: a new key lies on the
    curve, its handles are the split's (collinear, ALIGNED), and the neighbouring keys' handles
    are shortened to the part of the segment they now span. Frames that are keys already, or
    outside the keyed range, are skipped, and so are frames where a split handle would be longer
    than its new segment (Blender would shorten it and change the curve; only possible where the
    x-handles are not at thirds, so never on spline keys).

    Parameters
    ----------
    curve : BezierCurve
    frames : array_like, shape (F,)

    Returns
    -------
    BezierCurve

    Examples
    --------
    >>> co = np.array([[0.0, 0.0], [30.0, 1.0]])
    >>> c = BezierCurve(co, co - [10.0, 0.0], co + [[10.0, 0.0], [10.0, 0.0]], np.array(["FREE"] * 2))
    >>> split = insert_keys(c, [12.0])
    >>> split.n_keys, bool(np.allclose(split.evaluate(np.arange(31.0)), c.evaluate(np.arange(31.0))))
    (3, True)
    """
    frames = np.unique(np.asarray(frames, dtype=float))
    xs = curve.co[:, 0]
    frames = frames[(frames > xs[0]) & (frames < xs[-1]) & ~np.isin(frames, xs)]
    if curve.n_keys < 2 or frames.size == 0:
        return curve
    co, left, right = list(curve.co), list(curve.handle_left), list(curve.handle_right)
    types = list(curve.handle_type)
    for f in frames[::-1]:  # from the end: earlier indices stay valid
        k = int(np.searchsorted(np.asarray([c[0] for c in co]), f, side="right") - 1)
        p0, p1, p2, p3 = co[k], right[k], left[k + 1], co[k + 1]
        h = p3[0] - p0[0]
        # Blender's correction first (a handle longer than the segment is shortened), as evaluate does
        len1, len2 = abs(p1[0] - p0[0]), abs(p3[0] - p2[0])
        if len1 > h:
            p1 = p0 + (p1 - p0) * h / len1
        if len2 > h:
            p2 = p3 + (p2 - p3) * h / len2
        lo, hi = 0.0, 1.0
        for _ in range(60):
            t = 0.5 * (lo + hi)
            u = 1.0 - t
            x = u**3 * p0[0] + 3 * u * u * t * p1[0] + 3 * u * t * t * p2[0] + t**3 * p3[0]
            lo, hi = (t, hi) if x < f else (lo, t)
        t = 0.5 * (lo + hi)
        a = p0 + (p1 - p0) * t
        b = p1 + (p2 - p1) * t
        c = p2 + (p3 - p2) * t
        d = a + (b - a) * t
        e = b + (c - b) * t
        mid = d + (e - d) * t
        mid = np.array([f, mid[1]])  # exactly on the frame
        if a[0] - p0[0] > f - p0[0] + 1e-9 or p3[0] - c[0] > p3[0] - f + 1e-9 \
                or f - d[0] > f - p0[0] + 1e-9 or e[0] - f > p3[0] - f + 1e-9:
            continue  # Blender would shorten a handle longer than its new segment: not exact
        right[k], left[k + 1] = a, c
        co.insert(k + 1, mid)
        left.insert(k + 1, d)
        right.insert(k + 1, e)
        types.insert(k + 1, "ALIGNED")
    return BezierCurve(np.array(co), np.array(left), np.array(right), np.array(types))


def segment_values(
    x0: float,
    y0: float,
    x1: float,
    y1: float,
    slope0: float,
    slope1: float,
    a: np.ndarray,
    b: np.ndarray,
    frames: np.ndarray,
) -> np.ndarray:
    """Values of one Bezier segment for many handle-length pairs, at given frames.

    Handles: (x0 + a, y0 + a*slope0) and (x1 - b, y1 - b*slope1). x(t) is monotone for
    a, b >= 0, a + b <= x1 - x0, so x(t) = frame is solved by bisection like Blender's root
    finder would (to ~1e-7 of the segment).

    Parameters
    ----------
    x0, y0, x1, y1 : float
        The segment's keys (frame, value).
    slope0, slope1 : float
        Slopes (value per frame) of the right handle of key 0 and the left handle of key 1.
    a, b : ndarray, shape (P,)
        Handle x-extents in frames, one pair per candidate.
    frames : ndarray, shape (F,)
        Frames in [x0, x1] to evaluate at.

    Returns
    -------
    ndarray, shape (P, F)
        Values of each candidate segment at each frame.
    """
    a = np.asarray(a, dtype=float)[:, None]
    b = np.asarray(b, dtype=float)[:, None]
    f = np.asarray(frames, dtype=float)[None, :]
    px = (x0, x0 + a, x1 - b, x1)
    lo = np.zeros(np.broadcast_shapes(a.shape, f.shape))
    hi = np.ones_like(lo)
    for _ in range(26):
        t = 0.5 * (lo + hi)
        u = 1 - t
        xt = u**3 * px[0] + 3 * u * u * t * px[1] + 3 * u * t * t * px[2] + t**3 * px[3]
        below = xt < f
        lo = np.where(below, t, lo)
        hi = np.where(below, hi, t)
    t = 0.5 * (lo + hi)
    u = 1 - t
    p1 = y0 + a * slope0
    p2 = y1 - b * slope1
    return u**3 * y0 + 3 * u * u * t * p1 + 3 * u * t * t * p2 + t**3 * y1


def _best_merge(
    curve_co: np.ndarray,
    slope: np.ndarray,
    j: int,
    frames: np.ndarray,
    values: np.ndarray,
    tol: float,
) -> tuple[float, float, float]:
    """Worst error / tol over the samples of keys j-1..j+1 if key j goes, and the handles."""
    x0, y0 = curve_co[j - 1]
    x1, y1 = curve_co[j + 1]
    inside = (frames > x0) & (frames < x1)
    h = x1 - x0
    if not inside.any():
        return 0.0, h / 3, h / 3
    vals = segment_values(x0, y0, x1, y1, slope[j - 1], slope[j + 1], GRID_A * h, GRID_B * h, frames[inside])
    worst = np.abs(vals - values[inside][None, :]).max(axis=1) / tol
    i = int(np.argmin(worst))
    return float(worst[i]), float(GRID_A[i] * h), float(GRID_B[i] * h)


def _slopes(curve: BezierCurve) -> np.ndarray:
    """Each key's slope, from whichever handle has x-extent."""
    dx_r = curve.handle_right[:, 0] - curve.co[:, 0]
    dx_l = curve.co[:, 0] - curve.handle_left[:, 0]
    right = np.divide(curve.handle_right[:, 1] - curve.co[:, 1], dx_r, out=np.zeros(len(dx_r)), where=dx_r > 0)
    left = np.divide(curve.co[:, 1] - curve.handle_left[:, 1], dx_l, out=np.zeros(len(dx_l)), where=dx_l > 0)
    return np.where(dx_r > 0, right, left)


def prune_keys(curve: BezierCurve, frames: np.ndarray, values: np.ndarray, tol: float) -> BezierCurve:
    """Remove keys while one free-handle segment keeps every sample within tolerance.

    Only ALIGNED (smooth) keys are candidates and their neighbours keep their slopes, so the
    curve stays C1 where it was. Greedy: always the removal with the smallest worst error.

    Parameters
    ----------
    curve : BezierCurve
        Keys to prune (their samples must be within ``tol`` to begin with).
    frames : ndarray, shape (N,)
        Original sample frames.
    values : ndarray, shape (N,)
        Original samples, in the channel's units.
    tol : float
        Max abs error allowed at every sample, in the channel's units.

    Returns
    -------
    BezierCurve
        The kept keys, with re-chosen handle lengths next to every removed key.
    """
    n = curve.n_keys
    if n <= 2:
        return curve
    frames = np.asarray(frames, dtype=float)
    values = np.asarray(values, dtype=float)
    co = curve.co.copy()
    hl = curve.handle_left.copy()
    hr = curve.handle_right.copy()
    types = curve.handle_type.copy()
    slope = _slopes(curve)
    alive = list(range(n))
    smooth = types == "ALIGNED"
    # candidate score per key position in `alive`
    cache: dict[tuple[int, int, int], tuple[float, float, float]] = {}

    def score(pos: int) -> tuple[float, float, float]:
        left, key, right = alive[pos - 1], alive[pos], alive[pos + 1]
        token = (left, key, right)
        if token not in cache:
            if not smooth[key]:
                cache[token] = (np.inf, 0.0, 0.0)
            else:
                sub = np.array([co[left], co[key], co[right]])
                cache[token] = _best_merge(sub, slope[[left, key, right]], 1, frames, values, tol)
        return cache[token]

    while len(alive) > 2:
        scores = [score(p) for p in range(1, len(alive) - 1)]
        best = int(np.argmin([s[0] for s in scores]))
        worst, a, b = scores[best]
        if worst > 1.0:
            break
        pos = best + 1
        left, right = alive[pos - 1], alive[pos + 1]
        hr[left] = co[left] + [a, a * slope[left]]
        hl[right] = co[right] - [b, b * slope[right]]
        del alive[pos]
    keep = np.array(alive)
    return BezierCurve(co[keep], hl[keep], hr[keep], types[keep])


def hermite_keys(frames: np.ndarray, values: np.ndarray, slopes: np.ndarray) -> BezierCurve:
    """Keys with given values and slopes, handles at a third of each neighbouring segment.

    Parameters
    ----------
    frames : ndarray, shape (K,)
        Strictly increasing key frames.
    values : ndarray, shape (K,)
        Key values.
    slopes : ndarray, shape (K,)
        Slopes (value per frame) at the keys.

    Returns
    -------
    BezierCurve
        K ALIGNED keys: each segment is the cubic Hermite interpolant of its two keys.

    Examples
    --------
    >>> import numpy as np
    >>> keys = hermite_keys(np.array([0.0, 3.0]), np.array([0.0, 3.0]), np.array([1.0, 1.0]))
    >>> keys.handle_right[0].tolist(), keys.evaluate([1.5]).tolist()
    ([1.0, 1.0], [1.5])
    """
    frames = np.asarray(frames, dtype=float)
    values = np.asarray(values, dtype=float)
    slopes = np.asarray(slopes, dtype=float)
    h = np.diff(frames)
    h_left = np.concatenate([h[:1], h]) if h.size else np.ones(1)
    h_right = np.concatenate([h, h[-1:]]) if h.size else np.ones(1)
    co = np.column_stack([frames, values])
    hl = np.column_stack([frames - h_left / 3, values - h_left / 3 * slopes])
    hr = np.column_stack([frames + h_right / 3, values + h_right / 3 * slopes])
    return BezierCurve(co, hl, hr, np.full(frames.size, "ALIGNED"))


def _hermite_slopes_at(curve: BezierCurve, x: np.ndarray) -> np.ndarray:
    """dy/dx of a thirds-handle curve at x (the derivative of the cubic Bezier in t over h)."""
    xs = curve.co[:, 0]
    seg = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, xs.size - 2)
    x0, x1 = xs[seg], xs[seg + 1]
    h = x1 - x0
    t = (x - x0) / h
    p0, p1 = curve.co[seg, 1], curve.handle_right[seg, 1]
    p2, p3 = curve.handle_left[seg + 1, 1], curve.co[seg + 1, 1]
    dy_dt = 3 * (1 - t) ** 2 * (p1 - p0) + 6 * (1 - t) * t * (p2 - p1) + 3 * t**2 * (p3 - p2)
    return dy_dt / h


def _nearest(xs: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Index of the nearest of the sorted xs for each x."""
    i = np.clip(np.searchsorted(xs, x), 1, max(xs.size - 1, 1))
    lo = np.clip(i - 1, 0, xs.size - 1)
    hi = np.clip(i, 0, xs.size - 1)
    return np.where(np.abs(x - xs[lo]) <= np.abs(xs[hi] - x), lo, hi)


def repair_keys(curve: BezierCurve, frames: np.ndarray, values: np.ndarray, tol: float) -> BezierCurve:
    """Add keys on the samples that break the tolerance, until none does.

    A new key takes the sample's value and the curve's slope there, so only its two
    neighbouring segments change; the worst case is a key on every sample (exact). Needs
    thirds handles (a spline's keys); smooth keys keep their slopes.

    Parameters
    ----------
    curve : BezierCurve
        Keys with handles at a third of each segment.
    frames : ndarray, shape (N,)
        Original sample frames.
    values : ndarray, shape (N,)
        Original samples, in the channel's units.
    tol : float
        Max abs error allowed at every sample, in the channel's units.

    Returns
    -------
    BezierCurve
        ``curve`` itself when every sample is within ``tol``, otherwise the repaired keys.
    """
    frames = np.asarray(frames, dtype=float)
    values = np.asarray(values, dtype=float)
    got = curve.evaluate(frames)
    for _ in range(frames.size):
        bad = np.abs(got - values) > tol
        if not bad.any() or curve.n_keys < 2:
            return curve
        before = curve
        xs = curve.co[:, 0]
        # "on a key" within float32 resolution: Blender stores frames as float32, and a second
        # key a hair away from the first would collapse onto it there
        nearest = _nearest(xs, frames)
        on_key = np.abs(xs[nearest] - frames) <= 1e-3
        new_x = frames[bad & ~on_key]
        if new_x.size == 0:  # only keys are off: put those back on their samples
            co_vals = curve.co[:, 1].copy()
            co_vals[nearest[bad]] = values[bad]
            curve = _rebuilt(before, xs, co_vals, _slopes(curve))
            _update_changed(got, frames, before, curve)
            continue
        # Anchor keys on the neighbouring samples take the curve's own value and slope, which
        # splits its cubic without changing it: the fix stays between the neighbours instead of
        # bending a long segment and breaking samples further away.
        idx = np.flatnonzero(np.isin(frames, new_x))
        near = np.unique(np.concatenate([idx - 1, idx + 1]).clip(0, frames.size - 1))
        anchors = frames[near]
        anchors = anchors[~on_key[near] & ~np.isin(anchors, new_x)]
        new_v = np.concatenate([np.interp(new_x, frames, values), curve.evaluate(anchors)])
        new_x = np.concatenate([new_x, anchors])
        slopes_new = _hermite_slopes_at(curve, new_x)
        all_x = np.concatenate([xs, new_x])
        order = np.argsort(all_x)
        curve = _rebuilt(
            before,
            all_x[order],
            np.concatenate([curve.co[:, 1], new_v])[order],
            np.concatenate([_slopes(curve), slopes_new])[order],
        )
        _update_changed(got, frames, before, curve)
    return curve


def _rebuilt(before: BezierCurve, frames: np.ndarray, values: np.ndarray, slopes: np.ndarray) -> BezierCurve:
    """:func:`hermite_keys` of the given keys, where a key of ``before`` whose value and both
    neighbours are the same keeps its handles and handle type as they were: recomputed from its
    slope, they would differ in the last bit (and a corner's two slopes would become one), and the
    segments between such keys are exactly the same."""
    after = hermite_keys(frames, values, slopes)
    old_x, old_y = before.co[:, 0], before.co[:, 1]
    n_old, n_new = old_x.size, frames.size
    at = np.searchsorted(old_x, frames).clip(0, n_old - 1)
    same = (old_x[at] == frames) & (old_y[at] == values)
    left_same = np.ones(n_new, dtype=bool)
    right_same = np.ones(n_new, dtype=bool)
    left_same[1:] = (at[1:] > 0) & same[:-1] & (at[:-1] == at[1:] - 1)
    left_same[0] = at[0] == 0
    right_same[:-1] = (at[:-1] < n_old - 1) & same[1:] & (at[1:] == at[:-1] + 1)
    right_same[-1] = at[-1] == n_old - 1
    keep = same & left_same & right_same
    after.handle_left[keep] = before.handle_left[at[keep]]
    after.handle_right[keep] = before.handle_right[at[keep]]
    types = np.where(keep, np.asarray(before.handle_type)[at], after.handle_type)
    return BezierCurve(after.co, after.handle_left, after.handle_right, types)


def _update_changed(got: np.ndarray, frames: np.ndarray, before: BezierCurve, after: BezierCurve) -> None:
    """Evaluate ``after`` again (into ``got``, in place) at the frames of the segments that differ
    from ``before``'s: those next to a key that is new or whose position or handles changed. A
    repair changes a few segments of a long curve; the rest keep their values."""
    xs = after.co[:, 0]
    if after.n_keys < 2 or before.n_keys < 2:
        got[:] = after.evaluate(frames)
        return
    same_at = np.searchsorted(before.co[:, 0], xs).clip(0, before.n_keys - 1)
    touched = ~((before.co[same_at] == after.co).all(axis=1)
                & (before.handle_left[same_at] == after.handle_left).all(axis=1)
                & (before.handle_right[same_at] == after.handle_right).all(axis=1))
    seg = np.clip(np.searchsorted(xs, frames, side="right") - 1, 0, xs.size - 2)
    changed = touched[seg] | touched[seg + 1]
    if changed.any():
        got[changed] = after.evaluate(frames[changed])
