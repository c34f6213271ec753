"""Fewest Bezier keys within a max error, per channel: a shortest path over key positions.

Every channel keeps keys on some of its own samples (a key's value is the sample's value), and each
segment between two keys is one Blender Bezier segment whose two handles are chosen for that
segment alone: both slopes and both handle lengths free (FREE handles). Segments are then
independent, and a segment from sample ``i`` to sample ``j`` is *feasible* when some handles keep
every sample strictly between them within the channel's tolerance. The fewest keys are a shortest
path from the first sample to the last over feasible segments, the formulation of bbsolver (a
max-error keyframe reducer for After Effects curves, which runs an exact dynamic programme over all
pairs of positions with a least-squares fit of the four handle parameters per pair).

Two searches over key positions:

* ``FAST`` (the default): from each key, the longest feasible segment, its length found by
  galloping from the channel's last segment length and bisecting; its end is the next key. All
  channels step together (lanes grouped by padded length), so the cost grows linearly with the
  clip. When a segment from a later start always reaches at least as far as one from an earlier
  start, this greedy rule is optimal (a jump game); on mocap it keeps 1-3 % more keys than EXACT.
* ``EXACT``: every pair of samples tested, then a shortest path (bbsolver's search); cubic in the
  clip's length, for short clips, benchmarks and tests.

The segment test is a cascade, cheapest first, over many segments at once:

1. Handles at thirds (Blender's x(t) is then linear, t = u): the two inner control values by least
   squares (a 2 x 2 system per segment).
2. Where that misses: a table of handle-length
   pairs (fractions ``alpha``, ``beta`` of the segment, each at most 1 so Blender keeps the handles
   as they are), least squares each. On mocap this keeps about 20 % fewer keys than thirds.
3. Where all miss and the best pair's RMS is within the limit (least squares has the smallest RMS,
   so a larger one rules the pair out): Lawson's iteratively reweighted least squares, which moves
   that pair's solution towards the minimax (Chebyshev) one (another 5-8 % fewer keys).

A segment is accepted when every sample is within ``ACCEPT_SHARE`` of the tolerance, which leaves
room for Blender storing keys in float32 and solving x(t) = frame in its own way. The result is
checked at the end with :meth:`BezierCurve.evaluate` (Blender's evaluation, handle rescaling
included) on float32-rounded keys; a segment that still misses is replaced by keys on every sample
it spans (not seen on mocap; it keeps the guarantee).

Near-constant channels (half their range within the tolerance) get a single key.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

import numpy as np

from .bspline import BezierCurve

__all__ = ["ACCEPT_SHARE", "HANDLES", "HANDLE_PAIRS", "SEARCHES", "FewestKeys", "fewest_keys", "iter_fewest_keys", "segment_feasible"]

ACCEPT_SHARE = 0.99
SEARCHES = ("FAST", "EXACT")
HANDLES = ("FREE", "EDITABLE")
# EXACT tests every pair of samples: about a minute for 105 frames x 96 curves on 2 cores, over
# ten for 140 frames.
EXACT_MAX_SAMPLES = 200
# Handle lengths as fractions (alpha, beta) of the segment; thirds first. alpha + beta <= 1.
_LENGTHS = (0.05, 0.2, 0.35, 0.5, 0.7, 1.0)
# Handle x-extents as fractions (alpha, beta) of the segment, thirds first, 36 pairs. Each is at
# most the segment, so Blender keeps them as they are (it shortens only a handle longer than the
# segment) and x(t) stays monotone; overlapping handles (alpha + beta > 1) make long eases. On
# mocap: 26 pairs with alpha + beta <= 1 kept 3-4 % more keys, 9 pairs 6 % more.
HANDLE_PAIRS = np.array([(1 / 3, 1 / 3)] + [(a, b) for a in _LENGTHS for b in _LENGTHS if not a == b == 0.35])
LAWSON_ITERATIONS = 12
# Between frames: the midpoint between two samples must stay within the tolerance of their range.
BETWEEN_FRAMES = True
# Editable handles: a key becomes a corner (FREE) where a free first handle reaches this many times
# as far as the aligned one, and at least this many samples further.
CORNER_GAIN = 3.0
CORNER_MIN_SAMPLES = 4
# Longer lengths tried from a key once its search has settled (feasibility is not always monotone).
PROBES = 1
_RIDGE = 1e-9


@dataclass(frozen=True)
class FewestKeys:
    """Per-channel Bezier keys from :func:`fewest_keys`.

    Attributes
    ----------
    curves : list of BezierCurve
        One per channel, FREE handles.
    key_indices : list of ndarray of int
        The samples each channel keeps as keys.
    max_abs_error : ndarray, shape (M,)
        Per channel, over the original samples, as Blender evaluates the float32 keys.
    within_tolerance : bool
        Every sample within its channel's tolerance.
    repaired_segments : int
        Segments that missed in the final check and were keyed on every sample.
    corners : int
        With editable handles: keys left with broken (FREE) handles.
    """

    curves: list[BezierCurve]
    key_indices: list[np.ndarray]
    max_abs_error: np.ndarray
    within_tolerance: bool
    repaired_segments: int = 0
    corners: int = 0

    @property
    def n_keys(self) -> int:
        """Keys over all channels."""
        return int(sum(c.n_keys for c in self.curves))


# --------------------------------------------------------------------------------------------------
# Bezier geometry


def _bernstein(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The four cubic Bernstein polynomials at t."""
    s = 1.0 - t
    st = 3.0 * s * t
    return s * s * s, st * s, st * t, t * t * t


def _inverse_x(u: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Bezier parameter t with x(t) = u for x-controls (0, alpha, 1 - beta, 1); broadcasting.

    x(t) is non-decreasing for alpha, beta in [0, 1] (overlapping handles included). Bisection to ~1e-12.
    """
    u, alpha, beta = np.broadcast_arrays(u, alpha, beta)
    lo, hi = np.zeros(u.shape), np.ones(u.shape)
    q1, q2 = alpha, 1.0 - beta
    for _ in range(42):
        mid = 0.5 * (lo + hi)
        s = 1.0 - mid
        x = 3.0 * s * s * mid * q1 + 3.0 * s * mid * mid * q2 + mid * mid * mid
        below = x < u
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


_INVERSE_SAMPLES = 4097


@functools.lru_cache(maxsize=1)
def _inverse_tables() -> np.ndarray:
    """t(u) of every handle pair on an even u grid, shape (G, _INVERSE_SAMPLES), for interpolation."""
    u = np.linspace(0.0, 1.0, _INVERSE_SAMPLES)
    table = _inverse_x(u[None, :], HANDLE_PAIRS[:, :1], HANDLE_PAIRS[:, 1:])
    table.setflags(write=False)
    return table


def _parameters(u: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Bezier parameters t (n, P, Lp) at positions u (n, Lp) for handle pairs (P,) or (n, P).

    Thirds are exact (t = u); other pairs interpolate the inverse table (error ~1e-8 in t).
    """
    rows = np.asarray(pairs)
    if rows.ndim == 1 and rows.size == 1 and rows[0] == 0:
        return u[:, None, :]
    table = _inverse_tables()
    pos = np.clip(u, 0.0, 1.0) * (_INVERSE_SAMPLES - 1)
    k = np.minimum(pos.astype(int), _INVERSE_SAMPLES - 2)
    frac = pos - k
    if rows.ndim == 1:
        rows = np.broadcast_to(rows, (u.shape[0], rows.size))
    g = rows[:, :, None]
    t = table[g, k[:, None, :]] * (1.0 - frac[:, None, :]) + table[g, k[:, None, :] + 1] * frac[:, None, :]
    return np.where(g == 0, u[:, None, :], t)


# --------------------------------------------------------------------------------------------------
# many segments at once


def _solve2(g11, g12, g22, r1, r2):
    det = g11 * g22 - g12 * g12
    det = np.where(np.abs(det) > 1e-300, det, 1e-300)
    return (g22 * r1 - g12 * r2) / det, (g11 * r2 - g12 * r1) / det


@dataclass
class _Segments:
    """n segments, padded to a common number Lp of interior points: the samples between the keys
    and, with the between-frames guard, the midpoints between consecutive samples."""

    y0: np.ndarray  # (n,) first key's value
    y1: np.ndarray  # (n,) last key's value
    inner: np.ndarray  # (n, Lp) target value at each interior point (0 where padded)
    u: np.ndarray  # (n, Lp) interior positions in (0, 1) (0.5 where padded)
    mask: np.ndarray  # (n, Lp) 1.0 at real points, 0.0 at padding
    inv_scale: np.ndarray  # (n, Lp) 1 / (the point's allowance in limits): 1 at samples, 0 at padding
    limit: np.ndarray  # (n,) accepted max error at a sample
    span: np.ndarray  # (n,) frames from the first key to the last
    slope: np.ndarray  # (n,) the first key's handle slope (value per frame) when fixed, else NaN

    def take(self, rows: np.ndarray) -> _Segments:
        return _Segments(self.y0[rows], self.y1[rows], self.inner[rows], self.u[rows], self.mask[rows],
                         self.inv_scale[rows], self.limit[rows], self.span[rows], self.slope[rows])

    @property
    def weight(self) -> np.ndarray:
        """Least-squares weight of each point: 1 / allowance^2 (0 at padding)."""
        return self.inv_scale * self.inv_scale

    def fixed_c1(self, alpha: np.ndarray) -> np.ndarray:
        """The first handle's value where its slope is fixed (NaN elsewhere), for handle lengths alpha."""
        return self.y0[:, None] + alpha * (self.span * self.slope)[:, None]


def _fit_pairs(seg: _Segments, pairs: np.ndarray, weights: np.ndarray | None = None, basis=None):
    """Weighted least-squares inner control values of every segment for every handle pair.

    Parameters
    ----------
    seg : _Segments
        n segments.
    pairs : ndarray of int, shape (P,) or (n, P)
        Handle pairs (indices into HANDLE_PAIRS).
    weights : ndarray, shape (n, P, Lp), optional
        Sample weights (Lawson); the padding mask is applied on top.
    basis : tuple of 4 ndarray, shape (n, P, Lp), optional
        The Bernstein values of these segments and pairs, when already known.

    Returns
    -------
    c1, c2 : ndarray, shape (n, P)
    residual : ndarray, shape (n, P, Lp)
        Sample minus curve (0 at padding).
    """
    b0, b1, b2, b3 = _bernstein(_parameters(seg.u, pairs)) if basis is None else basis
    y0, y1 = seg.y0[:, None, None], seg.y1[:, None, None]
    w = seg.weight[:, None, :] if weights is None else weights * seg.weight[:, None, :]
    r0 = (seg.inner[:, None, :] - b0 * y0 - b3 * y1) * seg.mask[:, None, :]
    wb1, wb2 = w * b1, w * b2
    g11 = np.einsum("npl,npl->np", wb1, b1)
    g12 = np.einsum("npl,npl->np", wb1, b2)
    g22 = np.einsum("npl,npl->np", wb2, b2)
    r1 = np.einsum("npl,npl->np", wb1, r0)
    r2 = np.einsum("npl,npl->np", wb2, r0)
    # A tiny ridge towards the straight line's control values keeps one-sample segments solvable.
    ab = HANDLE_PAIRS[pairs]
    ya, yb = seg.y0[:, None], seg.y1[:, None]
    lin1 = ya + ab[..., 0] * (yb - ya)
    lin2 = ya + (1.0 - ab[..., 1]) * (yb - ya)
    lam = _RIDGE * (g11 + g22 + 1e-300)
    c1, c2 = _solve2(g11 + lam, g12, g22 + lam, r1 + lam * lin1, r2 + lam * lin2)
    fixed = np.isfinite(seg.slope)
    if fixed.any():
        # An ALIGNED key: the first handle's slope is the previous segment's; only c2 is free.
        c1_fixed = seg.fixed_c1(np.broadcast_to(ab[..., 0], c1.shape))
        c2_fixed = (r2 - c1_fixed * g12 + lam * lin2) / (g22 + lam)
        c1 = np.where(fixed[:, None], c1_fixed, c1)
        c2 = np.where(fixed[:, None], c2_fixed, c2)
    residual = (r0 - b1 * c1[..., None] - b2 * c2[..., None]) * seg.mask[:, None, :]
    return c1, c2, residual


@dataclass
class _SegmentFit:
    ok: np.ndarray  # (n,) bool
    pair: np.ndarray  # (n,) int, index into HANDLE_PAIRS
    c1: np.ndarray  # (n,)
    c2: np.ndarray  # (n,)
    error: np.ndarray  # (n,) max abs residual


def _fit_segments(seg: _Segments) -> _SegmentFit:
    """The cascade for n segments: thirds, then the handle pairs, then Lawson on the best pair."""
    n = seg.y0.size
    out = _SegmentFit(np.zeros(n, bool), np.zeros(n, int), seg.y0 + (seg.y1 - seg.y0) / 3.0,
                      seg.y0 + 2.0 * (seg.y1 - seg.y0) / 3.0, np.full(n, np.inf))
    empty = seg.mask.sum(axis=1) == 0
    out.error[empty] = 0.0
    out.ok[empty] = True
    aligned = empty & np.isfinite(seg.slope)  # no sample inside: any handles pass; keep the slope
    out.c1[aligned] = seg.fixed_c1(np.array([1 / 3]))[aligned, 0]
    if seg.inner.shape[1] == 0 or empty.all():
        return out

    def keep(rows, pair, c1, c2, err):
        better = err < out.error[rows]
        r = rows[better]
        out.pair[r], out.c1[r], out.c2[r], out.error[r] = pair[better], c1[better], c2[better], err[better]
        out.ok[r] = out.error[r] <= seg.limit[r]

    rows = np.flatnonzero(~empty)
    sub = seg.take(rows)
    c1, c2, res = _fit_pairs(sub, np.array([0]))
    keep(rows, np.zeros(rows.size, int), c1[:, 0], c2[:, 0], np.abs(res[:, 0] * sub.inv_scale).max(axis=-1))
    rows = rows[~out.ok[rows]]
    if rows.size and len(HANDLE_PAIRS) > 1:
        pairs = np.arange(1, len(HANDLE_PAIRS))
        sub = seg.take(rows)
        c1, c2, res = _fit_pairs(sub, pairs)
        res *= sub.inv_scale[:, None, :]  # in units of each point's allowance
        err = np.abs(res).max(axis=-1)
        best = np.argmin(err, axis=1)
        take = np.arange(rows.size)
        keep(rows, pairs[best], c1[take, best], c2[take, best], err[take, best])
        res_best = res[take, best]
        rms = np.sqrt(np.einsum("nl,nl->n", res_best, res_best) / sub.mask.sum(axis=1))
        # Least squares has the smallest RMS, and minimax's RMS is at most its max: an RMS above the
        # limit means no handle values of this pair can pass, so Lawson is not tried there.
        rows = rows[(~out.ok[rows]) & (rms <= sub.limit)]
    else:
        rows = rows[~out.ok[rows]]
    if rows.size and LAWSON_ITERATIONS:
        # Lawson: w <- w |r|, which converges to the minimax solution of a linear problem.
        _lawson(seg.take(rows), rows, out)
    return out


def _lawson(seg: _Segments, rows: np.ndarray, out: _SegmentFit) -> None:
    """Lawson's reweighting, w <- w |r|, from least squares towards the minimax solution of each
    segment's best handle pair; ``out`` keeps the best found (``rows`` index it)."""
    pair = out.pair[rows]
    _, b1, b2, _ = basis = _bernstein(_parameters(seg.u, pair[:, None])[:, 0])
    r0 = (seg.inner - basis[0] * seg.y0[:, None] - basis[3] * seg.y1[:, None]) * seg.mask
    ab = HANDLE_PAIRS[pair]
    lin1 = seg.y0 + ab[:, 0] * (seg.y1 - seg.y0)
    lin2 = seg.y0 + (1.0 - ab[:, 1]) * (seg.y1 - seg.y0)
    limit, mask, inv = seg.limit, seg.mask, seg.inv_scale
    fixed = np.isfinite(seg.slope)
    c1_fixed = np.where(fixed, seg.fixed_c1(ab[:, :1])[:, 0], 0.0)
    weights = mask.copy()  # Lawson's weights on the residuals in units of each point's allowance
    for _ in range(LAWSON_ITERATIONS):
        lsq = weights * inv * inv
        wb1, wb2 = lsq * b1, lsq * b2
        g11 = np.einsum("nl,nl->n", wb1, b1)
        g12 = np.einsum("nl,nl->n", wb1, b2)
        g22 = np.einsum("nl,nl->n", wb2, b2)
        lam = _RIDGE * (g11 + g22 + 1e-300)
        r2 = np.einsum("nl,nl->n", wb2, r0) + lam * lin2
        c1, c2 = _solve2(g11 + lam, g12, g22 + lam, np.einsum("nl,nl->n", wb1, r0) + lam * lin1, r2)
        c2 = np.where(fixed, (r2 - c1_fixed * g12) / (g22 + lam), c2)
        c1 = np.where(fixed, c1_fixed, c1)
        res = (r0 - b1 * c1[:, None] - b2 * c2[:, None]) * inv
        err = np.abs(res).max(axis=1)
        better = err < out.error[rows]
        r = rows[better]
        out.c1[r], out.c2[r], out.error[r] = c1[better], c2[better], err[better]
        out.ok[r] = err[better] <= limit[better]
        # For any weights, the weighted least-squares RMS is at most the minimax error: once it
        # passes the limit, no handle values of this pair can, and the segment is given up.
        lower = np.sqrt(np.einsum("nl,nl->n", weights * res, res) / np.sum(weights, axis=1))
        live = (err > limit) & (lower <= limit)
        if not live.any():
            break
        if not live.all():
            rows, b1, b2, r0, lin1, lin2, limit, mask, inv, weights, res, fixed, c1_fixed = (
                a[live] for a in (rows, b1, b2, r0, lin1, lin2, limit, mask, inv, weights, res, fixed, c1_fixed))
        weights = weights * np.abs(res) + 1e-300 * mask
        weights /= weights.max(axis=1, keepdims=True)


def _segments(frames, columns, chan, start, length, limit, pad: int | None = None, slope=None) -> _Segments:
    """Segments of the channels ``chan`` (n,) from sample ``start`` (n,) over ``length`` (n,) samples;
    ``slope`` (n,): the first key's fixed handle slope, NaN (or None for all) where free.

    The interior points are the samples strictly between the keys and, with ``BETWEEN_FRAMES``,
    the midpoint between each two consecutive samples, whose target is the midpoint of the cubic
    through the four samples around it (the quadratic through three at the clip's ends) and whose allowance is the
    limit plus a quarter of the two samples' difference plus how far that cubic's midpoint is from their
    mean: the curve may not swing out between frames (a spike the Graph Editor and motion blur
    show) beyond what the samples suggest."""
    lp = int(length.max()) - 1 if pad is None else pad
    lp = max(lp, 0)
    m = np.arange(1, lp + 1)
    idx = start[:, None] + m
    mask = m[None, :] < length[:, None]
    idx = np.where(mask, idx, start[:, None])
    end = start + length
    x0, x1 = frames[start], frames[end]
    span = (x1 - x0)[:, None]
    u = np.where(mask, (frames[idx] - x0[:, None]) / span, 0.5)
    inner = np.where(mask, columns[chan[:, None], idx], 0.0)
    inv = mask.astype(float)
    if BETWEEN_FRAMES:
        k = np.arange(lp + 1)
        mid_mask = k[None, :] < length[:, None]
        a = np.where(mid_mask, start[:, None] + k, start[:, None])
        b = np.where(mid_mask, a + 1, a)
        rows = chan[:, None]
        ya, yb = columns[rows, a], columns[rows, b]
        last = columns.shape[1] - 1
        # the midpoint of the cubic through four samples (exact for cubics); the mean at the ends
        before, after = np.maximum(a - 1, 0), np.minimum(b + 1, last)
        y_before, y_after = columns[rows, before], columns[rows, after]
        target = (9.0 * (ya + yb) - y_before - y_after) / 16.0
        # at the clip's ends the quadratic through three samples
        first, final = a < 1, b + 1 > last
        target = np.where(first & ~final, (3.0 * ya + 6.0 * yb - y_after) / 8.0, target)
        target = np.where(final & ~first, (6.0 * ya + 3.0 * yb - y_before) / 8.0, target)
        target = np.where(first & final, 0.5 * (ya + yb), target)
        mid_u = np.where(mid_mask, (0.5 * (frames[a] + frames[b]) - x0[:, None]) / span, 0.5)
        # (what the two estimates disagree by is allowed too: at a corner the cubic is no guide)
        spread = 0.25 * np.abs(yb - ya) + np.abs(target - 0.5 * (ya + yb))
        allowance = 1.0 + spread / np.asarray(limit, dtype=float)[:, None]
        inner = np.concatenate([inner, np.where(mid_mask, target, 0.0)], axis=1)
        u = np.concatenate([u, mid_u], axis=1)
        inv = np.concatenate([inv, np.where(mid_mask, 1.0 / allowance, 0.0)], axis=1)
        mask = np.concatenate([mask, mid_mask], axis=1)
    slope = np.full(start.size, np.nan) if slope is None else np.asarray(slope, dtype=float)
    return _Segments(columns[chan, start], columns[chan, end], inner, u, mask.astype(float), inv, limit, x1 - x0,
                     slope)


def segment_feasible(
    frames: np.ndarray, values: np.ndarray, tolerance: float
) -> tuple[bool, BezierCurve]:
    """Whether one Bezier segment from the first sample to the last keeps every sample within tolerance.

    The test the search runs (thirds, handle pairs, Lawson), for a single segment: a reference for
    tests and a tool for scripts.

    Parameters
    ----------
    frames, values : ndarray, shape (L + 1,)
        Samples; the segment's keys are the first and the last.
    tolerance : float
        Max absolute error at the interior samples (the search accepts ``ACCEPT_SHARE`` of it).

    Returns
    -------
    feasible : bool
    curve : BezierCurve
        The two-key segment found (the least-error one when not feasible).

    Examples
    --------
    >>> x = np.arange(11.0)
    >>> ok, curve = segment_feasible(x, (x / 10) ** 3, 1e-6)
    >>> ok, curve.n_keys
    (True, 2)
    """
    frames = np.asarray(frames, dtype=float)
    values = np.asarray(values, dtype=float)
    n = frames.size
    seg = _segments(frames, values[None, :], np.array([0]), np.array([0]), np.array([n - 1]),
                    np.array([tolerance * ACCEPT_SHARE]))
    fit = _fit_segments(seg)
    return bool(fit.ok[0]), _segment_curve(frames[0], frames[-1], values[0], values[-1], fit, 0)


def _segment_curve(x0, x1, y0, y1, fit: _SegmentFit, row: int) -> BezierCurve:
    h = x1 - x0
    alpha, beta = HANDLE_PAIRS[fit.pair[row]]
    co = np.array([[x0, y0], [x1, y1]])
    hr = np.array([x0 + alpha * h, fit.c1[row]])
    hl = np.array([x1 - beta * h, fit.c2[row]])
    left = np.vstack([2 * co[0] - hr, hl])
    right = np.vstack([hr, 2 * co[1] - hl])
    return BezierCurve(co, left, right, np.array(["FREE", "FREE"]))


# --------------------------------------------------------------------------------------------------
# the search


Progress = Callable[[float], "bool | None"]


def iter_fewest_keys(
    values: np.ndarray,
    frames: np.ndarray,
    tolerance: np.ndarray | Sequence[float] | float,
    *,
    search: str = "FAST",
    handles: str = "FREE",
    groups: np.ndarray | Sequence[int] | None = None,
) -> Generator[float, None, FewestKeys]:
    """Generator form of :func:`fewest_keys`: yields progress in [0, 1], returns the result.

    Stopping early (not stepping it again) leaves nothing changed; a modal operator steps it on
    timer events.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    frames = np.asarray(frames, dtype=float)
    n, m = values.shape
    if frames.shape != (n,):
        raise ValueError(f"frames must have shape ({n},), got {frames.shape}")
    if n < 1 or m < 1:
        raise ValueError("nothing to fit: no samples or no channels")
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(frames))):
        raise ValueError("values and frames must be finite (no NaN or infinity)")
    if n > 1 and np.any(np.diff(frames) <= 0):
        raise ValueError("frames must be strictly increasing")
    tol = np.broadcast_to(np.asarray(tolerance, dtype=float), (m,)).copy()
    if np.any(~np.isfinite(tol)) or np.any(tol <= 0):
        raise ValueError("tolerances must be positive and finite")

    search = str(search).upper()
    handles = str(handles).upper()
    if handles not in HANDLES:
        raise ValueError(f"handles must be one of {HANDLES}, got {handles!r}")
    if handles == "EDITABLE" and search == "EXACT":
        raise ValueError("editable handles chain each key's slope to the previous segment: use search='FAST'")
    if search not in SEARCHES:
        raise ValueError(f"search must be one of {SEARCHES}, got {search!r}")
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != (m,):
            raise ValueError(f"groups must have one label per channel, shape ({m},), got {groups.shape}")
        if search == "EXACT":
            raise ValueError("shared key frames (groups) are searched with search='FAST'")
    if search == "EXACT" and n > EXACT_MAX_SAMPLES:
        raise ValueError(f"search='EXACT' tests every pair of samples: at most {EXACT_MAX_SAMPLES} samples, "
                         f"got {n} (use search='FAST')")
    half_range = (values.max(axis=0) - values.min(axis=0)) / 2.0
    constant = half_range <= tol * ACCEPT_SHARE
    moving = np.flatnonzero(~constant)
    limit = tol * ACCEPT_SHARE
    chosen: list[_Chosen] = []
    if n > 1 and moving.size:
        if search == "EXACT":
            feasible = yield from _all_pairs(frames, values, limit, moving)
            paths = {c: _shortest_path(feasible[lane]) for lane, c in enumerate(moving)}
            chosen = _refit(frames, values, [paths.get(c, np.array([0])) for c in range(m)], moving, limit)
        else:
            labels = np.arange(moving.size) if groups is None else np.unique(groups[moving], return_inverse=True)[1]
            chosen = yield from _greedy(frames, values, limit, moving, handles == "EDITABLE", labels)
    yield 0.97
    curves = [_constant_curve(frames, values[:, c]) for c in range(m)]
    for lane, c in enumerate(moving):
        if n > 1:
            curves[c] = _curve(frames, values[:, c], chosen[lane], handles == "EDITABLE")
    keys = [np.asarray(chosen[list(moving).index(c)].keys) if c in moving and n > 1 else np.array([0])
            for c in range(m)]
    corners = sum(int(np.count_nonzero(ch.broken)) for ch in chosen)
    curves, repaired, errors = _check_and_repair(frames, values, tol, curves, keys)
    yield 1.0
    return FewestKeys(curves, keys, errors, bool(np.all(errors <= tol)), repaired, corners)


def fewest_keys(
    values: np.ndarray,
    frames: np.ndarray,
    tolerance: np.ndarray | Sequence[float] | float,
    *,
    search: str = "FAST",
    handles: str = "FREE",
    groups: np.ndarray | Sequence[int] | None = None,
    progress: Progress | None = None,
) -> FewestKeys:
    """The fewest FREE-handle Bezier keys per channel that keep every sample within tolerance.

    Parameters
    ----------
    values : ndarray, shape (N, M) or (N,)
        Samples of M channels at N frames, in the channels' own units.
    frames : ndarray, shape (N,)
        Strictly increasing sample frames.
    tolerance : float or array_like, shape (M,)
        Max absolute error per channel, at every sample.
    search : {'FAST', 'EXACT'}
        ``'FAST'``: from each key, the longest feasible segment (found by galloping and bisection),
        vectorised across channels; linear in the clip's length. ``'EXACT'``: every pair of samples
        tested and a shortest path over the feasible ones, bbsolver's search (the fewest keys this
        segment test allows; cubic in the clip's length, at most ``EXACT_MAX_SAMPLES`` samples:
        about a minute for 105 frames x 96 curves).
    handles : {'FREE', 'EDITABLE'}
        ``'FREE'``: every key's two handles independent (broken tangents; the fewest keys).
        ``'EDITABLE'``: ALIGNED handles, each segment starting with the slope the previous one ended
        with, FREE only at detected corners (where a free start reaches ``CORNER_GAIN`` times as
        far); for animators who will edit the keys. FAST search only.
    groups : array_like of int, shape (M,), optional
        Channels with the same label share their key frames (for example all channels of a bone,
        or all channels: keyed poses that read like hand keys in the Dope Sheet): a segment is
        taken only where it passes for every moving channel of the group; each channel keeps its
        own handles. Near-constant channels keep their single key. FAST search only.
    progress : callable, optional
        Called with a fraction in [0, 1]; returning True cancels (:class:`.latent.FitCancelled`).

    Returns
    -------
    FewestKeys

    Raises
    ------
    ValueError
        On shapes that do not match, NaN or infinite values, frames not increasing, tolerances not
        positive.

    Examples
    --------
    >>> frames = np.arange(100.0)
    >>> fit = fewest_keys(np.sin(frames / 15.0), frames, 1e-3)
    >>> fit.within_tolerance, fit.n_keys < 10
    (True, True)
    """
    from .latent import FitCancelled

    gen = iter_fewest_keys(values, frames, tolerance, search=search, handles=handles, groups=groups)
    try:
        while True:
            p = next(gen)
            if progress is not None and progress(p):
                raise FitCancelled("cancelled")
    except StopIteration as stop:
        return stop.value


def _all_pairs(frames, values, limit, moving) -> Generator[float, None, np.ndarray]:
    """Feasibility of every segment (i, j) of the moving channels, shape (len(moving), N, N)."""
    n = values.shape[0]
    feasible = np.zeros((moving.size, n, n), bool)
    lane = np.repeat(np.arange(moving.size), n - 1)
    start = np.tile(np.arange(n - 1), moving.size)
    columns = values.T
    for length in range(1, n):
        rows = np.flatnonzero(start + length <= n - 1)
        c, st = moving[lane[rows]], start[rows]
        fit = _fit_segments(_segments(frames, columns, c, st, np.full(rows.size, length), limit[c]))
        feasible[lane[rows], st, st + length] = fit.ok
        yield 0.95 * length / max(n - 1, 1)
    return feasible


def _shortest_path(feasible: np.ndarray) -> np.ndarray:
    """Fewest keys from sample 0 to N - 1 over feasible segments (dynamic programme over a DAG)."""
    n = feasible.shape[0]
    dist = np.full(n, np.iinfo(np.int64).max // 2)
    prev = np.zeros(n, int)
    dist[0] = 0
    for j in range(1, n):
        starts = np.flatnonzero(feasible[:j, j])
        best = starts[np.argmin(dist[starts])]
        dist[j], prev[j] = dist[best] + 1, best
    path = [n - 1]
    while path[-1] != 0:
        path.append(int(prev[path[-1]]))
    return np.array(path[::-1])


@dataclass
class _Chosen:
    """One channel's keys (sample indices) and, per segment, its handle pair and inner control
    values; per key whether its two handles may differ (a corner)."""

    keys: list[int]
    pair: list[int]
    c1: list[float]
    c2: list[float]
    broken: list[bool]


def _greedy(frames, values, limit, moving, editable: bool, group_of: np.ndarray) -> Generator[float, None, list[_Chosen]]:
    """From each key the longest feasible segment, every channel at once: the next key is its end.

    The search runs per *unit*: a group of channels that share their key frames (``group_of``
    labels the moving channels; one channel per group when keys are not shared). A length passes
    for a unit when it passes for every channel in it. Per unit a search state: ``lo`` a length
    known feasible, ``hi`` one known infeasible (0: none yet). The length tried is the last
    segment's length first, then doubled until one fails, then bisected; once settled, ``PROBES``
    longer lengths (twice the failed one) are tried, and the search grows on from one that passes.
    Segments are grouped by padded length (powers of two), so padding costs at most 2x.

    With ``editable``, every unit has a twin: one whose first handles keep the slopes the previous
    segments ended with (ALIGNED keys) and one free. The free one is taken, and the key marked a
    corner, only where it reaches at least ``CORNER_GAIN`` times as far (and ``CORNER_MIN_SAMPLES``
    samples further).
    """
    n = values.shape[0]
    columns = values.T
    width = moving.size
    groups = int(group_of.max()) + 1
    variants = 2 if editable else 1
    units = groups * variants
    lanes = width * variants
    chan = np.tile(moving, variants)
    unit_of = np.concatenate([group_of + v * groups for v in range(variants)])
    members = [np.flatnonzero(group_of == g) for g in range(groups)]
    key = np.zeros(units, int)
    lo = np.ones(units, int)
    hi = np.zeros(units, int)
    guess = np.full(units, 8)
    trial = np.minimum(guess, n - 1)
    probing = np.zeros(units, bool)
    probes_left = np.full(units, PROBES)
    slope = np.full(lanes, np.nan)  # only the aligned lanes (the first ``width``) ever hold one
    best = np.zeros((3, lanes))  # pair, c1, c2 of each lane's fit at its unit's length lo
    searching = np.ones(units, bool)
    chosen = [_Chosen([0], [], [], [], [False]) for _ in range(width)]
    while searching.any():
        rows = np.flatnonzero(searching[unit_of])  # lanes
        lengths = trial[unit_of[rows]]
        ok = np.zeros(rows.size, bool)
        bucket = np.ceil(np.log2(np.maximum(lengths - 1, 1))).astype(int)
        fits = np.zeros((3, rows.size))
        for b in np.unique(bucket):
            sel = np.flatnonzero(bucket == b)
            r = rows[sel]
            seg = _segments(frames, columns, chan[r], key[unit_of[r]], lengths[sel], limit[chan[r]],
                            pad=int(2**b), slope=slope[r])
            found = _fit_segments(seg)
            ok[sel] = found.ok
            fits[:, sel] = found.pair, found.c1, found.c2
        tested = np.flatnonzero(searching)
        misses = np.bincount(unit_of[rows][~ok], minlength=units)
        unit_ok = misses[tested] == 0
        lengths_u = trial[tested]
        passed = tested[unit_ok]
        lane_pass = np.isin(unit_of[rows], passed)
        best[:, rows[lane_pass]] = fits[:, lane_pass]
        probe = probing[tested]
        lo[passed] = lengths_u[unit_ok]
        failed = tested[~unit_ok & ~probe]
        hi[failed] = lengths_u[~unit_ok & ~probe]
        hi[tested[unit_ok & probe]] = 0  # a longer segment past an infeasible one: keep growing from it
        probing[tested] = False
        room = n - 1 - key[tested]
        settled = (lo[tested] == room) | ((hi[tested] > 0) & (hi[tested] - lo[tested] <= 1)) | (probe & ~unit_ok)
        # Feasibility is not always monotone in the length (long eases): before settling, one probe
        # further out per key.
        ask = settled & ~probe & (lo[tested] < room) & (probes_left[tested] > 0)
        probes_left[tested[ask]] -= 1
        probing[tested[ask]] = True
        trial[tested[ask]] = np.minimum(room[ask], 2 * hi[tested[ask]] + 2)
        searching[tested[settled & ~ask]] = False
        for unit in np.flatnonzero(~searching[:groups] & (key[:groups] < n - 1)):
            if editable and searching[unit + groups]:
                continue  # its free twin has not settled yet
            taken = unit
            first = not np.isfinite(slope[members[unit][0]])
            corner = False
            if editable:
                twin = unit + groups
                corner = (not first and lo[twin] >= CORNER_GAIN * lo[unit]
                          and lo[twin] >= lo[unit] + CORNER_MIN_SAMPLES)
                if corner or first:
                    taken = twin
            length = int(lo[taken])
            start = key[unit]
            if length == 1:  # never tested (one step always passes): fit it now
                lanes_t = members[unit] + (taken // groups) * width
                one = _fit_segments(_segments(frames, columns, chan[lanes_t], np.full(lanes_t.size, start),
                                              np.ones(lanes_t.size, int), limit[chan[lanes_t]], slope=slope[lanes_t]))
                best[:, lanes_t] = one.pair, one.c1, one.c2
            for j in members[unit]:
                lane = j + (taken // groups) * width
                settled_fit = best[:, lane].copy()
                chosen[j].broken[-1] = bool(corner)
                _settle(chosen[j], start, length, settled_fit)
                if editable:
                    end = start + length
                    beta = HANDLE_PAIRS[int(settled_fit[0]), 1]
                    slope[j] = (columns[chan[j], end] - settled_fit[2]) / (beta * (frames[end] - frames[start]))
            for twin in range(unit, units, groups):
                key[twin] += length
                guess[twin] = max(length, 2)
                lo[twin], hi[twin] = 1, 0
                probes_left[twin] = PROBES
                searching[twin] = key[twin] < n - 1
        nxt_units = np.flatnonzero(searching & ~probing)
        room = n - 1 - key[nxt_units]
        fresh = (lo[nxt_units] == 1) & (hi[nxt_units] == 0)
        grow = hi[nxt_units] == 0
        nxt = np.where(grow, np.minimum(lo[nxt_units] * 2, room), (lo[nxt_units] + hi[nxt_units]) // 2)
        nxt = np.where(fresh, np.minimum(guess[nxt_units], room), nxt)
        trial[nxt_units] = np.maximum(nxt, 1)
        yield 0.95 * float(np.mean(key[:groups])) / max(n - 1, 1)
    return chosen


def _settle(chosen: _Chosen, start: int, length: int, fit: np.ndarray) -> None:
    chosen.keys.append(int(start + length))
    chosen.pair.append(int(fit[0]))
    chosen.c1.append(float(fit[1]))
    chosen.c2.append(float(fit[2]))
    chosen.broken.append(False)


def _refit(frames, values, keys: list[np.ndarray], moving, limit) -> list[_Chosen]:
    """Handles for given keys (free at every key): each segment fitted by the cascade."""
    columns = values.T
    out = [_Chosen(list(map(int, keys[c])), [0] * (keys[c].size - 1), [0.0] * (keys[c].size - 1),
                   [0.0] * (keys[c].size - 1), [False] * keys[c].size) for c in moving]
    segs = [(lane, s, int(a), int(b)) for lane, c in enumerate(moving)
            for s, (a, b) in enumerate(zip(keys[c][:-1], keys[c][1:]))]
    by_length: dict[int, list[tuple[int, int, int, int]]] = {}
    for seg in segs:
        by_length.setdefault(seg[3] - seg[2], []).append(seg)
    for length, group in by_length.items():
        lane = np.array([g[0] for g in group])
        start = np.array([g[2] for g in group])
        fit = _fit_segments(_segments(frames, columns, moving[lane], start, np.full(lane.size, length),
                                      limit[moving[lane]]))
        for row, (ln, s_idx, _, _) in enumerate(group):
            out[ln].pair[s_idx] = int(fit.pair[row])
            out[ln].c1[s_idx] = float(fit.c1[row])
            out[ln].c2[s_idx] = float(fit.c2[row])
    return out


def _curve(frames, column, chosen: _Chosen, editable: bool) -> BezierCurve:
    """The Bezier keys of one channel from its chosen segments."""
    k = np.asarray(chosen.keys)
    co = np.column_stack([frames[k], column[k]])
    left = np.empty_like(co)
    right = np.empty_like(co)
    h = np.diff(co[:, 0])
    ab = HANDLE_PAIRS[np.asarray(chosen.pair, dtype=int)]
    right[:-1, 0] = co[:-1, 0] + ab[:, 0] * h
    right[:-1, 1] = chosen.c1
    left[1:, 0] = co[1:, 0] - ab[:, 1] * h
    left[1:, 1] = chosen.c2
    left[0] = 2 * co[0] - right[0]
    right[-1] = 2 * co[-1] - left[-1]
    free = np.asarray(chosen.broken) | (not editable)
    return BezierCurve(co, left, right, np.where(free, "FREE", "ALIGNED"))


def _constant_curve(frames, column) -> BezierCurve:
    mid = 0.5 * (column.max() + column.min())
    co = np.array([[frames[0], mid]])
    return BezierCurve(co, co - [1.0, 0.0], co + [1.0, 0.0], np.array(["FREE"]))


def _as_stored(curve: BezierCurve) -> BezierCurve:
    """The curve as Blender keeps it: float32 keys and handles."""
    def f32(a):
        return a.astype(np.float32).astype(float)
    return BezierCurve(f32(curve.co), f32(curve.handle_left), f32(curve.handle_right), curve.handle_type)


def _check_and_repair(frames, values, tol, curves, keys):
    """Key every sample of a segment that misses under Blender's evaluation of the float32 keys.

    Returns the curves, the number of segments repaired and each channel's max error."""
    repaired = 0
    out = list(curves)
    errors = np.zeros(len(curves))
    for ch, curve in enumerate(curves):
        err = np.abs(_as_stored(curve).evaluate(frames) - values[:, ch])
        errors[ch] = err.max()
        if errors[ch] <= tol[ch]:
            continue
        k = keys[ch]
        bad = np.flatnonzero(err > tol[ch])
        seg = np.unique(np.clip(np.searchsorted(k, bad, side="right") - 1, 0, max(k.size - 2, 0)))
        repaired += seg.size
        new_keys = set(k.tolist())
        for s in seg:
            new_keys.update(range(int(k[s]), int(k[min(s + 1, k.size - 1)]) + 1))
        if k.size == 1:
            new_keys = set(range(frames.size))
        keys[ch] = np.array(sorted(new_keys))
        out[ch] = _linear_where_dense(frames, values[:, ch], keys[ch], curve)
        errors[ch] = np.abs(_as_stored(out[ch]).evaluate(frames) - values[:, ch]).max()
    return out, repaired, errors


def _linear_where_dense(frames, y, k, old: BezierCurve) -> BezierCurve:
    """Keys k with straight-line handles on one-sample segments, the old handles elsewhere."""
    co = np.column_stack([frames[k], y[k]])
    old_frames = old.co[:, 0]
    left = np.empty_like(co)
    right = np.empty_like(co)
    for idx in range(k.size):
        nxt = idx + 1 < k.size
        prv = idx > 0
        pos = np.flatnonzero(np.isclose(old_frames, co[idx, 0]))
        if nxt:
            if pos.size and pos[0] + 1 < old.n_keys and np.isclose(old_frames[pos[0] + 1], co[idx + 1, 0]):
                right[idx] = old.handle_right[pos[0]]
            else:
                right[idx] = co[idx] + (co[idx + 1] - co[idx]) / 3.0
        if prv:
            if pos.size and pos[0] > 0 and np.isclose(old_frames[pos[0] - 1], co[idx - 1, 0]):
                left[idx] = old.handle_left[pos[0]]
            else:
                left[idx] = co[idx] - (co[idx] - co[idx - 1]) / 3.0
        if not nxt:
            right[idx] = 2 * co[idx] - left[idx]
        if not prv:
            left[idx] = 2 * co[idx] - right[idx]
    return BezierCurve(co, left, right, np.full(k.size, "FREE"))
