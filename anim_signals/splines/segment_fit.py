"""One Bezier segment between two samples: can its handles keep every sample in between within a
limit? The test Fewest Keys (:mod:`.key_reduction`) runs for many segments at once.

A segment's keys are two samples (their values kept); its two handles are free: both slopes and
both x-extents (fractions ``alpha``, ``beta`` of the segment, each at most 1 so Blender keeps them
as they are). The test is a cascade, cheapest first:

1. Handles at thirds (Blender's x(t) is then linear, t = u): the two inner control values by least
   squares (a 2 x 2 system per segment).
2. Where that misses: a table of handle-length pairs (:data:`HANDLE_PAIRS`), least squares each.
   On mocap this keeps about 20 % fewer keys than thirds.
3. Where all miss and the best pair's RMS is within the limit (least squares has the smallest RMS,
   so a larger one rules the pair out): Lawson's iteratively reweighted least squares, which moves
   that pair's solution towards the minimax (Chebyshev) one (another 5-8 % fewer keys).
4. Where asked (``refine``), compiled only, and the segment missed by at most :data:`REFINE_GATE`
   times its limit: the handle lengths refined between the table's, a pattern search over
   (alpha, beta) around the best pair with Lawson at each point (:mod:`.segment_kernel`). The
   max error is sharp in the lengths (0.05 off a table pair can halve it): Fewest Keys asks for
   it at the end of each key's search and keeps 4-7 % fewer keys.

With :data:`BETWEEN_FRAMES`, the midpoints between consecutive samples are tested too (see
:func:`build_segments`), so the curve does not spike between frames. A fixed first slope (an
ALIGNED key, Editable Keys) leaves one inner control value free.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
import warnings
from dataclasses import dataclass

import numpy as np

from .bezier_keys import BezierCurve

__all__ = [
    "ACCEPT_SHARE",
    "BETWEEN_FRAMES",
    "HANDLE_PAIRS",
    "LAWSON_ITERATIONS",
    "REFINE_GATE",
    "SegmentFit",
    "Segments",
    "build_segments",
    "compiled_kernel",
    "fit_segments",
    "kernel_location",
    "fit_segments_of",
    "inverse_x",
    "segment_curve",
    "search_channels_of",
    "search_state",
    "segment_feasible",
]

# A segment passes when every sample is within this share of the tolerance: room for Blender's
# float32 keys and its own x(t) = frame solve.
ACCEPT_SHARE = 0.99
_LENGTHS = (0.05, 0.2, 0.35, 0.5, 0.7, 1.0)
# Handle x-extents as fractions (alpha, beta) of the segment, thirds first, 36 pairs. Each is at
# most the segment, so Blender keeps them as they are (it shortens only a handle longer than the
# segment) and x(t) stays monotone; overlapping handles (alpha + beta > 1) make long eases. On
# mocap: 26 pairs with alpha + beta <= 1 kept 3-4 % more keys, 9 pairs 6 % more.
HANDLE_PAIRS = np.array([(1 / 3, 1 / 3)] + [(a, b) for a in _LENGTHS for b in _LENGTHS if not a == b == 0.35])
LAWSON_ITERATIONS = 12
# Where asked (Fewest Keys asks at the end of each key's search), the compiled test refines the
# handle lengths of a segment that the table misses by at most this many times its limit (0: never).
# Fewer keys than without (1,500 x 306 clip / sexy_01_000): 1.5 -> 3.7 / 2.6 %, 2.0 -> 4.1 / 3.4 %
# (7 % more time than 1.5), 3.0 -> 4.1 / 3.6 %. The numpy cascade does not refine (a fallback: a
# few % more keys).
REFINE_GATE = 2.0
# Between frames: the midpoint between two samples must stay within the tolerance of their range
# (the whole compiled search tests a key's lengths at the samples first and the midpoints once the
# key settles: segment_kernel._search_unit).
BETWEEN_FRAMES = True
# The compiled whole search (Fewest Keys, FREE handles, keys shared or not) lets a key's value sit off
# its sample within the limit, a third unknown of each segment's minimax fit (the end sample one
# more point; the next segment starts from that value). On neutral_16_000 at 0.5 deg / 0.01 a
# greedy search with exact minimax per handle pair kept 324 keys this way against 334 on the
# samples (3 % fewer). The Python search (Editable Keys, a pose check, the numpy fallback) keeps the
# samples' values.
FREE_KEY_VALUES = True
_RIDGE = 1e-9


# --------------------------------------------------------------------------------------------------
# Bezier geometry


def _bernstein(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The four cubic Bernstein polynomials at t."""
    s = 1.0 - t
    st = 3.0 * s * t
    return s * s * s, st * s, st * t, t * t * t


def inverse_x(u: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Bezier parameter t with x(t) = u for x-controls (0, alpha, 1 - beta, 1); broadcasting.

    x(t) is non-decreasing for alpha, beta in [0, 1] (overlapping handles included). Bisection to a
    bracket of 2^-20, then Newton steps kept inside it: ~1e-15.
    """
    u, alpha, beta = np.broadcast_arrays(u, alpha, beta)
    lo, hi = np.zeros(u.shape), np.ones(u.shape)
    q1, q2 = alpha, 1.0 - beta
    for _ in range(20):
        mid = 0.5 * (lo + hi)
        s = 1.0 - mid
        x = 3.0 * s * s * mid * q1 + 3.0 * s * mid * mid * q2 + mid * mid * mid
        below = x < u
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    t = 0.5 * (lo + hi)
    for _ in range(3):
        s = 1.0 - t
        x = 3.0 * s * s * t * q1 + 3.0 * s * t * t * q2 + t * t * t
        slope = 3.0 * s * s * q1 + 6.0 * s * t * (q2 - q1) + 3.0 * t * t * (1.0 - q2)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(slope > 0, (x - u) / slope, 0.0)
        t = np.clip(t - step, lo, hi)
    return t


_INVERSE_SAMPLES = 4097


@functools.lru_cache(maxsize=1)
def _inverse_tables() -> np.ndarray:
    """t(u) of every handle pair on an even u grid, shape (G, _INVERSE_SAMPLES), for interpolation."""
    u = np.linspace(0.0, 1.0, _INVERSE_SAMPLES)
    table = inverse_x(u[None, :], HANDLE_PAIRS[:, :1], HANDLE_PAIRS[:, 1:])
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
class Segments:
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

    def take(self, rows: np.ndarray) -> Segments:
        return Segments(self.y0[rows], self.y1[rows], self.inner[rows], self.u[rows], self.mask[rows],
                         self.inv_scale[rows], self.limit[rows], self.span[rows], self.slope[rows])

    @property
    def weight(self) -> np.ndarray:
        """Least-squares weight of each point: 1 / allowance^2 (0 at padding)."""
        return self.inv_scale * self.inv_scale

    def fixed_c1(self, alpha: np.ndarray) -> np.ndarray:
        """The first handle's value where its slope is fixed (NaN elsewhere), for handle lengths alpha."""
        return self.y0[:, None] + alpha * (self.span * self.slope)[:, None]


def _fit_pairs(seg: Segments, pairs: np.ndarray, weights: np.ndarray | None = None, basis=None):
    """Weighted least-squares inner control values of every segment for every handle pair.

    Parameters
    ----------
    seg : Segments
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
class SegmentFit:
    ok: np.ndarray  # (n,) bool
    pair: np.ndarray  # (n,) int, index into HANDLE_PAIRS: the table's best pair
    c1: np.ndarray  # (n,)
    c2: np.ndarray  # (n,)
    error: np.ndarray  # (n,) max abs residual
    alpha: np.ndarray  # (n,) the handle lengths found, fractions of the segment: the pair's unless refined
    beta: np.ndarray  # (n,)


def fit_segments(seg: Segments) -> SegmentFit:
    """The cascade for n segments: thirds, then the handle pairs, then Lawson on the best pair
    (numpy; the handle lengths are the table's, not refined)."""
    out = _fit_segments(seg)
    out.alpha, out.beta = HANDLE_PAIRS[out.pair, 0], HANDLE_PAIRS[out.pair, 1]
    return out


def _fit_segments(seg: Segments) -> SegmentFit:
    n = seg.y0.size
    out = SegmentFit(np.zeros(n, bool), np.zeros(n, int), seg.y0 + (seg.y1 - seg.y0) / 3.0,
                      seg.y0 + 2.0 * (seg.y1 - seg.y0) / 3.0, np.full(n, np.inf), np.zeros(n), np.zeros(n))
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


def _lawson(seg: Segments, rows: np.ndarray, out: SegmentFit) -> None:
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


def build_segments(frames, columns, chan, start, length, limit, pad: int | None = None, slope=None) -> Segments:
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
    return Segments(columns[chan, start], columns[chan, end], inner, u, mask.astype(float), inv, limit, x1 - x0,
                     slope)


_KERNEL_LOCK = threading.Lock()


def _kernel():
    """The compiled cascade, or None (numpy): made once, even when a fit and the warm-up
    (:func:`.key_reduction.warm_up`, in a thread) ask for it at the same time."""
    with _KERNEL_LOCK:
        return _make_kernel()


@functools.lru_cache(maxsize=1)
def _make_kernel():
    """The compiled cascade, or None (numpy).

    In this process (:mod:`.segment_kernel`) where numba may run; in a worker process
    (:mod:`.segment_process`) where another LLVM is loaded (Linux with Mesa's OpenGL: Blender's UI);
    None without numba. ``ANIM_SIGNALS_KERNEL``: ``numpy``, ``local`` or ``process`` forces one.
    """
    choice = os.environ.get("ANIM_SIGNALS_KERNEL", "").strip().lower()
    if choice == "numpy":
        return None
    from . import segment_process

    if choice == "process" or (choice != "local" and segment_process.foreign_llvm_loaded()):
        # (numba is not imported here: importing it loads llvmlite's LLVM next to the other one)
        python = segment_process.python_executable()
        if importlib.util.find_spec("numba") is None or python is None:
            return None
        return segment_process.WorkerKernel(python)
    try:
        from . import segment_kernel
    except Exception:  # noqa: BLE001 - numba missing, or an install it cannot load: numpy runs instead
        return None
    return segment_kernel.fit_segment_batch


def kernel_location() -> str:
    """Where the segment test runs: ``'process'`` (compiled, in this process), ``'worker'`` (compiled,
    in a child process) or ``'numpy'``."""
    kernel = _kernel()
    if kernel is None or KERNEL_FAILURE:
        return "numpy"
    return "process" if _in_process(kernel) else "worker"


def _in_process(kernel) -> bool:
    return getattr(kernel, "__module__", "") == f"{__package__}.segment_kernel"


# Why the compiled kernel was given up in this process (empty while it works).
KERNEL_FAILURE: list[str] = []


def compiled_kernel() -> bool:
    """Whether the segment test runs compiled (numba) rather than on numpy arrays."""
    return _kernel() is not None and not KERNEL_FAILURE


def fit_segments_of(frames, columns, chan, start, length, limit, slope=None, refine=None,
                    start_lengths=None, warm_decides=None) -> SegmentFit:
    """The cascade for segments given by channel (row of ``columns``), first sample and length.

    ``refine`` (bool, or bool per segment): refine the handle lengths of segments the cascade
    misses by at most :data:`REFINE_GATE` times their limit (compiled kernel only); with
    ``start_lengths`` (alpha, beta), each (n,), NaN where none, a refined segment tries and refines
    those handle lengths first (the ones that held one sample shorter) and runs the cascade only
    where they fail (with ``warm_decides`` (n,) true, only where they miss by more than the gate:
    :func:`.segment_kernel._search_unit`'s units of one channel).

    Compiled when numba is there (:mod:`.segment_kernel`: no padding, segments in parallel
    threads), else :func:`build_segments` and :func:`fit_segments` with padding to powers of two.
    """
    chan, start, length = (np.asarray(a, dtype=np.int64) for a in (chan, start, length))
    limit = np.asarray(limit, dtype=float)
    slope = np.full(chan.size, np.nan) if slope is None else np.asarray(slope, dtype=float)
    kernel = _kernel()
    if kernel is not None and not KERNEL_FAILURE:
        try:
            gate = None if refine is None else np.where(np.broadcast_to(refine, chan.shape), REFINE_GATE, 0.0)
            sa, sb = (None, None) if start_lengths is None else start_lengths
            ok, pair, alpha, beta, c1, c2, error = kernel(
                frames, columns, chan, start, length, limit, slope, HANDLE_PAIRS, _inverse_tables(), BETWEEN_FRAMES,
                LAWSON_ITERATIONS, _RIDGE, gate, sa, sb, *(() if warm_decides is None else (warm_decides,)))
            return SegmentFit(ok, pair, c1, c2, error, alpha, beta)
        except Exception as exc:  # noqa: BLE001 - a compiler that fails here: the numpy cascade gives the same
            KERNEL_FAILURE.append(f"{type(exc).__name__}: {exc}")
            warnings.warn(f"Fewest Keys: the compiled segment test failed ({KERNEL_FAILURE[0]}); "
                          "running the numpy one (5-8x slower)", RuntimeWarning, stacklevel=2)
    out = SegmentFit(*(np.zeros(chan.size, t) for t in (bool, int, float, float, float, float, float)))
    bucket = np.ceil(np.log2(np.maximum(length - 1, 1))).astype(int)
    for b in np.unique(bucket):
        sel = np.flatnonzero(bucket == b)
        found = fit_segments(build_segments(frames, columns, chan[sel], start[sel], length[sel], limit[sel],
                                            pad=int(2**b), slope=slope[sel]))
        out.ok[sel], out.pair[sel], out.c1[sel], out.c2[sel], out.error[sel] = (
            found.ok, found.pair, found.c1, found.c2, found.error)
    out.alpha, out.beta = HANDLE_PAIRS[out.pair, 0], HANDLE_PAIRS[out.pair, 1]
    return out


def search_channels_of(frames, columns, chan, limit, refine: bool, probes: int, first_length: int, units=None,
                       start=None, stop_at=None, editable=None, done=None, cancel=None):
    """:func:`.fast_search.greedy`'s search with FREE handles, run whole in compiled code
    (:func:`.search_kernel.search_channels`, in this process or the worker): each channel its own
    keys, or with ``units`` (offsets into ``chan``) channels sharing their key frames unit by unit;
    ``start`` and ``stop_at`` go on from where a search stopped and stop at a sample
    (:func:`search_state`). With ``editable`` ``(corner_gain, corner_min_samples)``, Editable Keys'
    search (keys on their samples, handles refined never; ``start`` with each channel's slope, and
    a fourth array returned: the corner keys). ``done`` and ``cancel`` as that function takes them
    (in this process only: the worker's search ignores them).

    Keys may sit off their samples (:data:`FREE_KEY_VALUES`) in the FREE search. Returns ``(counts, keys, fits)`` as
    that function does (fits' fifth row each segment's end value), or None where the search must run in
    Python: no compiled kernel, a kernel without a whole search (a stand-in), or one that failed
    (then recorded, warned about once, and the numpy cascade runs from here on).
    """
    kernel = _kernel()
    if kernel is None or KERNEL_FAILURE:
        return None
    search = getattr(kernel, "search", None)  # the worker's
    extra = {}
    if search is None and _in_process(kernel):
        from .search_kernel import search_channels as search

        extra = {"done": done, "cancel": cancel}
    if search is None:
        return None
    try:
        return search(frames, columns, np.asarray(chan, dtype=np.int64), np.asarray(limit, dtype=float),
                      HANDLE_PAIRS, _inverse_tables(), BETWEEN_FRAMES, LAWSON_ITERATIONS, _RIDGE,
                      REFINE_GATE if refine and editable is None else 0.0, probes, first_length,
                      FREE_KEY_VALUES and editable is None, units, start, stop_at, editable, **extra)
    except Exception as exc:  # noqa: BLE001 - as in fit_segments_of: the Python search on numpy runs instead
        KERNEL_FAILURE.append(f"{type(exc).__name__}: {exc}")
        warnings.warn(f"Fewest Keys: the compiled segment test failed ({KERNEL_FAILURE[0]}); "
                      "running the numpy one (5-8x slower)", RuntimeWarning, stacklevel=2)
        return None


def search_state(counts, keys, fits, units=None):
    """Where the searches of a :func:`.search_kernel.search_channels` result stopped, as its next
    ``start``: each unit's last key, each channel's last segment fit (alpha, beta, c1, c2, end
    value; (k, 5)) and the unit's last segment length (at least 2, the first length the search tries
    next). ``units`` as given to the search. A unit whose search had already reached the last sample
    (one key, no segment) goes on with nothing to do: its fit is NaN."""
    counts = np.asarray(counts, dtype=np.int64)
    k = counts.size
    bounds = np.arange(k + 1) if units is None else np.asarray(units, dtype=np.int64)
    key_end = np.cumsum(counts)
    last_key = keys[key_end - 1]
    before_last = keys[np.maximum(key_end - 2, 0)]
    first = bounds[:-1]
    fit_end = key_end - np.arange(1, k + 1)  # one past each channel's last segment in ``fits``
    last_fit = np.full((k, 5), np.nan)
    moved = counts > 1
    last_fit[moved] = fits[:, fit_end[moved] - 1].T
    return last_key[first], last_fit, np.maximum(last_key[first] - before_last[first], 2)


def segment_feasible(
    frames: np.ndarray, values: np.ndarray, tolerance: float
) -> tuple[bool, BezierCurve]:
    """Whether one Bezier segment from the first sample to the last keeps every sample within tolerance.

    The test the search runs (thirds, handle pairs, Lawson; compiled, the refinement of the handle
    lengths too), for a single segment: a reference for tests and a tool for scripts.

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
    fit = fit_segments_of(frames, values[None, :], np.array([0]), np.array([0]), np.array([n - 1]),
                          np.array([tolerance * ACCEPT_SHARE]), refine=REFINE_GATE > 0)
    return bool(fit.ok[0]), segment_curve(frames[0], frames[-1], values[0], values[-1], fit, 0)


def segment_values(frames, columns, chan, start: int, length: int, fit: SegmentFit) -> np.ndarray:
    """The fitted segments of channels ``chan`` (rows of ``columns``), all from sample ``start`` over
    ``length`` samples, at the samples in between: (length - 1, len(chan)).

    Evaluated as Blender evaluates a Bezier segment, from the handle lengths and inner values of
    ``fit`` (one row per channel): x(t) = the frame is solved to machine precision (a few bisection
    steps, then Newton kept in the bracket; 52 bisection steps took 4x as long). Compiled where the
    segment test is (:func:`.segment_kernel.bezier_values`: the pose check of keys shared by all
    curves calls this for every length it tries, 1.8 ms a call on 306 curves in numpy).
    """
    a, b = int(start), int(start) + int(length)
    compiled = _compiled_values()
    if compiled is not None:
        try:
            return compiled(frames[a:b + 1], columns[chan, a], columns[chan, b], fit.alpha, fit.beta, fit.c1, fit.c2)
        except Exception as exc:  # noqa: BLE001 - as in fit_segments_of: numpy gives the same values
            KERNEL_FAILURE.append(f"{type(exc).__name__}: {exc}")
            warnings.warn(f"Fewest Keys: the compiled segment test failed ({KERNEL_FAILURE[0]}); "
                          "running the numpy one (5-8x slower)", RuntimeWarning, stacklevel=2)
    x0, x1 = frames[a], frames[b]
    u = ((frames[a + 1:b] - x0) / (x1 - x0))[None, :]
    q1 = np.asarray(fit.alpha, dtype=float)[:, None]
    q2 = 1.0 - np.asarray(fit.beta, dtype=float)[:, None]
    lo = np.zeros((q1.shape[0], u.shape[1]))
    hi = np.ones_like(lo)
    # x(t) is monotone for handles within the segment
    for _ in range(8):
        t = 0.5 * (lo + hi)
        s = 1.0 - t
        below = 3.0 * s * s * t * q1 + 3.0 * s * t * t * q2 + t * t * t < u
        lo = np.where(below, t, lo)
        hi = np.where(below, hi, t)
    t = 0.5 * (lo + hi)
    for _ in range(60):
        s = 1.0 - t
        d = 3.0 * s * s * t * q1 + 3.0 * s * t * t * q2 + t * t * t - u
        lo = np.where(d < 0.0, t, lo)
        hi = np.where(d > 0.0, t, hi)
        # x is in [0, 1]: a residual of a rounding error is as close as float64 gets (a handle pair
        # with a flat inflection, slope 0, leaves t itself less determined)
        done = (np.abs(d) <= 2.5e-16) | (hi - lo <= 1e-15)
        if done.all():
            break
        slope = 3.0 * s * s * q1 + 6.0 * s * t * (q2 - q1) + 3.0 * t * t * (1.0 - q2)
        with np.errstate(divide="ignore", invalid="ignore"):
            nt = t - d / slope
        nt = np.where((nt > lo) & (nt < hi), nt, 0.5 * (lo + hi))
        t = np.where(done, t, nt)
    s = 1.0 - t
    y0 = columns[chan, a][:, None]
    y1 = columns[chan, b][:, None]
    c1 = np.asarray(fit.c1, dtype=float)[:, None]
    c2 = np.asarray(fit.c2, dtype=float)[:, None]
    return (s * s * s * y0 + 3.0 * s * s * t * c1 + 3.0 * s * t * t * c2 + t * t * t * y1).T


def _compiled_values():
    """:func:`.segment_kernel.bezier_values` in this process or the worker's, or None (numpy)."""
    kernel = _kernel()
    if kernel is None or KERNEL_FAILURE:
        return None
    values = getattr(kernel, "bezier_values", None)  # the worker's
    if values is None and _in_process(kernel):
        from .segment_kernel import bezier_values as values
    return values


def segment_curve(x0, x1, y0, y1, fit: SegmentFit, row: int) -> BezierCurve:
    h = x1 - x0
    alpha, beta = fit.alpha[row], fit.beta[row]
    co = np.array([[x0, y0], [x1, y1]])
    hr = np.array([x0 + alpha * h, fit.c1[row]])
    hl = np.array([x1 - beta * h, fit.c2[row]])
    left = np.vstack([2 * co[0] - hr, hl])
    right = np.vstack([hr, 2 * co[1] - hl])
    return BezierCurve(co, left, right, np.array(["FREE", "FREE"]))
