"""The knot searches' scoring, compiled with numba: least-squares B-splines for many knot vectors.

:meth:`.knots.KnotProblem.score` fits a B-spline to every candidate knot vector and keeps only
its max error, RMS and per-sample max. On numpy (:func:`.bspline.lsq_batch`) that builds stacked
basis matrices, sparse products and an error field per batch; here each candidate runs alone in
machine code: its spans and basis values (Cox-de Boor, Piegl and Tiller, *The NURBS Book*, A2.2),
the banded normal equations with the same relative ridge, a banded Cholesky solve, and the
residuals reduced as they are made. Candidates are split over threads (the kernel releases the
GIL). The scores equal numpy's up to rounding (``tests/core/test_spline_kernel.py``).

It runs where the segment test runs compiled (:func:`.segment_fit.kernel_location`): in this
process, or, in a process where numba must not load (Blender beside Mesa's LLVM), in the segment
test's worker process (:attr:`.segment_process.WorkerKernel.spline_kernel`). Without numba the
numpy scoring stays; ``ANIM_SIGNALS_KERNEL=numpy`` turns it off with the segment test.
"""

from __future__ import annotations

import numpy as np

from .compiled import THREADS, compile_lazily, pool

__all__ = ["local_refits", "score_candidates", "split_lane_spans", "split_spans"]

# Candidates x samples below this run in the calling thread.
_SPLIT_MIN = 20_000


def _contiguous(array, dtype=np.float64) -> np.ndarray:
    """``array`` as a C-contiguous array of ``dtype`` that numba types as writeable.

    A fit's problem data comes read-only (:class:`.knots.KnotProblem`); numba compiles a function
    apart for read-only arrays, so the forms the warm-up compiled would not serve it. The kernels
    only read these inputs: a read-only view becomes a writeable view of the same memory (a copy
    only where the memory itself cannot be written).
    """
    out = np.ascontiguousarray(array, dtype=dtype)
    if out.flags.writeable:
        return out
    view = out.view()
    try:
        view.flags.writeable = True
    except ValueError:
        return out.copy()
    return view


def _score_one(knots, n_ctrl, tau, latent, basis, target, degree, ridge, n_basis, left, right, inverse, values,
               band, rhs, fitted, per_sample, s):  # pragma: no cover - compiled
    """Fit candidate ``s`` (its knot row, its real control count) and return (max error, RMS);
    its per-sample max goes to ``per_sample[s]`` when that has rows. ``values`` (N, degree + 1)
    keeps each sample's basis values between the two passes."""
    p = degree
    k = n_ctrl
    n = tau.shape[0]
    dims = latent.shape[1]
    band[:k, :] = 0.0
    rhs[:k, :] = 0.0
    # normal equations, the samples in order; Cox-de Boor's denominators are knot differences,
    # the same for every sample of a span: their inverses once per span
    span = p
    _inverses(knots, span, p, inverse)
    for j in range(n):
        x = tau[j]
        moved = False
        while span < k - 1 and x >= knots[span + 1]:
            span += 1
            moved = True
        if moved:
            _inverses(knots, span, p, inverse)
        if p == 3:  # the common case, unrolled (half the time of the loops)
            _cubic_at(knots, span, x, inverse, values, j)
        else:
            _basis_at(knots, span, x, p, left, right, inverse, values, j)
        first = span - p
        if p == 3:
            _cubic_normal_rows(values, j, first, band, rhs, latent, dims)
            continue
        for r in range(p + 1):
            row = first + r
            vr = values[j, r]
            for d in range(p + 1 - r):
                band[row, d] += vr * values[j, r + d]
            for c in range(dims):
                rhs[row, c] += vr * latent[j, c]
    _solve_banded(band, rhs, k, p, dims, ridge, -np.inf)
    # residuals: the spline at each sample (through the basis rows, if any) minus the target
    worst = 0.0
    squares = 0.0
    span = p
    for j in range(n):
        x = tau[j]
        while span < k - 1 and x >= knots[span + 1]:
            span += 1
        first = span - p
        if p == 3 and not n_basis:
            # the common case unrolled: the same sums and errors, in the same order, as below
            sample_worst = 0.0
            for c in range(dims):
                spline = (0.0 + values[j, 0] * rhs[first, c] + values[j, 1] * rhs[first + 1, c]
                          + values[j, 2] * rhs[first + 2, c] + values[j, 3] * rhs[first + 3, c])
                e = abs(spline - target[j, c])
                squares += e * e
                if e > sample_worst:
                    sample_worst = e
        else:
            for c in range(dims):
                spline = 0.0
                for r in range(p + 1):
                    spline += values[j, r] * rhs[first + r, c]
                fitted[c] = spline
            sample_worst, squares = _sample_error(fitted, basis, n_basis, target, j, squares)
        if per_sample.shape[0]:
            per_sample[s, j] = sample_worst
        if sample_worst > worst:
            worst = sample_worst
    return worst, np.sqrt(squares / n)


def _cubic_normal_rows(values, j, first, band, rhs, latent, dims):  # pragma: no cover - compiled
    """Sample ``j``'s terms of the cubic normal equations (the general loops of :func:`_score_one`,
    unrolled: each entry gets the same products in the same order)."""
    v0 = values[j, 0]
    v1 = values[j, 1]
    v2 = values[j, 2]
    v3 = values[j, 3]
    band[first, 0] += v0 * v0
    band[first, 1] += v0 * v1
    band[first, 2] += v0 * v2
    band[first, 3] += v0 * v3
    band[first + 1, 0] += v1 * v1
    band[first + 1, 1] += v1 * v2
    band[first + 1, 2] += v1 * v3
    band[first + 2, 0] += v2 * v2
    band[first + 2, 1] += v2 * v3
    band[first + 3, 0] += v3 * v3
    for c in range(dims):
        y = latent[j, c]
        rhs[first, c] += v0 * y
        rhs[first + 1, c] += v1 * y
        rhs[first + 2, c] += v2 * y
        rhs[first + 3, c] += v3 * y


def _sample_error(fitted, basis, n_basis, target, row, squares):  # pragma: no cover - compiled
    """One sample's max abs error over the target's columns (the fitted values through the basis rows,
    if any) and ``squares`` plus its squared errors, added in column order."""
    worst = 0.0
    for o in range(target.shape[1]):
        if n_basis:
            value = 0.0
            for c in range(fitted.shape[0]):
                value += fitted[c] * basis[c, o]
        else:
            value = fitted[o]
        e = abs(value - target[row, o])
        squares += e * e
        if e > worst:
            worst = e
    return worst, squares


def _solve_banded(band, rhs, k, p, dims, ridge, floor):  # pragma: no cover - compiled
    """Solve the k banded normal equations (half-bandwidth p, ``band[i, d]`` = A[i, i + d]) for ``dims``
    right-hand sides, in place: ``lsq_batch``'s relative ridge (the mean diagonal times ``ridge`` on every
    diagonal entry), a Cholesky factorisation in ``band`` (``band[i, d]`` becomes L[i + d, i], with each
    pivot at least ``floor``), then L y = rhs and L^T c = y in ``rhs``."""
    diagonal = 0.0
    for i in range(k):
        diagonal += band[i, 0]
    shift = ridge * max(diagonal / k, 1e-300)
    for i in range(k):
        band[i, 0] += shift
    for i in range(k):
        total = band[i, 0]
        for m in range(max(0, i - p), i):
            lim = band[m, i - m]
            total -= lim * lim
        root = np.sqrt(max(total, floor))
        band[i, 0] = root
        for d in range(1, min(p, k - 1 - i) + 1):
            row = i + d
            total = band[i, d]
            for m in range(max(0, row - p), i):
                total -= band[m, row - m] * band[m, i - m]
            band[i, d] = total / root
    for c in range(dims):
        for i in range(k):
            total = rhs[i, c]
            for m in range(max(0, i - p), i):
                total -= band[m, i - m] * rhs[m, c]
            rhs[i, c] = total / band[i, 0]
        for i in range(k - 1, -1, -1):
            total = rhs[i, c]
            for m in range(i + 1, min(k, i + p + 1)):
                total -= band[i, m - i] * rhs[m, c]
            rhs[i, c] = total / band[i, 0]


def _inverses(knots, span, p, inverse):  # pragma: no cover - compiled
    """``inverse[j, r]`` = 1 / (t[span + r + 1] - t[span + 1 - j + r]): A2.2's denominators in span
    ``span`` (none is zero in a non-empty span; a zero one, of an empty span, makes its terms 0)."""
    for j in range(1, p + 1):
        for r in range(j):
            gap = knots[span + r + 1] - knots[span + 1 - j + r]
            inverse[j, r] = 1.0 / gap if gap != 0.0 else 0.0


def _cubic_at(knots, span, x, inverse, values, row):  # pragma: no cover - compiled
    """:func:`_basis_at` for degree 3, unrolled."""
    left1 = x - knots[span]
    left2 = x - knots[span - 1]
    left3 = x - knots[span - 2]
    right1 = knots[span + 1] - x
    right2 = knots[span + 2] - x
    right3 = knots[span + 3] - x
    # degree 1
    temp = inverse[1, 0]
    v0 = right1 * temp
    v1 = left1 * temp
    # degree 2
    temp = v0 * inverse[2, 0]
    w0 = right1 * temp
    saved = left2 * temp
    temp = v1 * inverse[2, 1]
    w1 = saved + right2 * temp
    w2 = left1 * temp
    # degree 3
    temp = w0 * inverse[3, 0]
    values[row, 0] = right1 * temp
    saved = left3 * temp
    temp = w1 * inverse[3, 1]
    values[row, 1] = saved + right2 * temp
    saved = left2 * temp
    temp = w2 * inverse[3, 2]
    values[row, 2] = saved + right3 * temp
    values[row, 3] = left1 * temp


def _basis_at(knots, span, x, p, left, right, inverse, values, row):  # pragma: no cover - compiled
    """The p + 1 non-zero basis values at x in span ``span`` into ``values[row]`` (The NURBS Book, A2.2)."""
    values[row, 0] = 1.0
    for j in range(1, p + 1):
        left[j] = x - knots[span + 1 - j]
        right[j] = knots[span + j] - x
        saved = 0.0
        for r in range(j):
            temp = values[row, r] * inverse[j, r]
            values[row, r] = saved + right[r + 1] * temp
            saved = left[j - r] * temp
        values[row, j] = saved


def _score_rows(knots, n_ctrl, tau, latent, lane, basis, target, degree, ridge, first, step, max_error, rms,
                per_sample):  # pragma: no cover - compiled
    """Candidates first, first + step, ... (without the GIL: threads run them side by side)."""
    count = knots.shape[0]
    p = degree
    most = 1
    for s in range(first, count, step):
        if n_ctrl[s] > most:
            most = n_ctrl[s]
    dims = latent.shape[2]
    n_basis = basis.shape[0] > 0
    left = np.empty(p + 1)
    right = np.empty(p + 1)
    inverse = np.empty((p + 1, p + 1))
    values = np.empty((tau.shape[0], p + 1))
    band = np.empty((most, p + 1))
    rhs = np.empty((most, dims))
    fitted = np.empty(dims)
    for s in range(first, count, step):
        c = lane[s]
        worst, root = _score_one(knots[s], n_ctrl[s], tau, latent[c], basis, target[c], degree, ridge, n_basis,
                                 left, right, inverse, values, band, rhs, fitted, per_sample, s)
        max_error[s] = worst
        rms[s] = root


def _refit_one(knots, n_sub, free_lo, n_free, fixed, s0, s1, tau, latent, basis, target, degree, ridge, n_basis,
               left, right, inverse, values, kept, band, rhs, fitted, out, offset):  # pragma: no cover - compiled
    """One local refit of :func:`.local.score_replacements`: the freed control points' least squares
    on samples ``s0:s1`` with the kept ones fixed, and (max error, sum of squared errors) there; or,
    where ``out`` has rows, the refitted spline's values into ``out[offset:offset + s1 - s0]``."""
    p = degree
    dims = latent.shape[1]
    count = s1 - s0
    band[:n_free, :] = 0.0
    rhs[:n_free, :] = 0.0
    # each sample's span in the piece (largest i with knots[i] <= x, kept within [p, n_sub - 1])
    span = p
    known = -1
    for j in range(count):
        x = tau[s0 + j]
        while span < n_sub - 1 and x >= knots[span + 1]:
            span += 1
        if span != known:
            _inverses(knots, span, p, inverse)
            known = span
        if p == 3:
            _cubic_at(knots, span, x, inverse, values, j)
        else:
            _basis_at(knots, span, x, p, left, right, inverse, values, j)
        first = span - p
        for c in range(dims):
            total = 0.0
            for r in range(p + 1):
                total += values[j, r] * fixed[first + r, c]
            kept[j, c] = latent[s0 + j, c] - total  # the residual the freed points fit
        lo = first - free_lo
        for r in range(p + 1):
            row = lo + r
            if row < 0 or row >= n_free:
                continue
            vr = values[j, r]
            for d in range(p + 1 - r):
                if row + d < n_free:
                    band[row, d] += vr * values[j, r + d]
            for c in range(dims):
                rhs[row, c] += vr * kept[j, c]
    if n_free > 0:
        _solve_banded(band, rhs, n_free, p, dims, ridge, 1e-300)
    worst = 0.0
    squares = 0.0
    span = p
    for j in range(count):
        x = tau[s0 + j]
        while span < n_sub - 1 and x >= knots[span + 1]:
            span += 1
        lo = span - p - free_lo
        for c in range(dims):
            # the spline: the data minus what the freed points leave unfitted
            spline = latent[s0 + j, c] - kept[j, c]
            for r in range(p + 1):
                row = lo + r
                if 0 <= row < n_free:
                    spline += values[j, r] * rhs[row, c]
            fitted[c] = spline
        if out.shape[0]:
            for c in range(dims):
                out[offset + j, c] = fitted[c]
            continue
        sample_worst, squares = _sample_error(fitted, basis, n_basis, target, s0 + j, squares)
        if sample_worst > worst:
            worst = sample_worst
    return worst, squares


def _refit_rows(sub_knots, n_sub, free_lo, n_free, fixed, s0, s1, tau, latent, latent_lane, basis, target,
                target_lane, degree, ridge, first, step, local_max, local_sq, out, offsets):  # pragma: no cover - compiled
    """Local refits first, first + step, ... (without the GIL: threads run them side by side)."""
    count = sub_knots.shape[0]
    p = degree
    most_samples = 1
    most_free = 1
    for s in range(first, count, step):
        most_samples = max(most_samples, s1[s] - s0[s])
        most_free = max(most_free, n_free[s])
    dims = latent.shape[2]
    n_basis = basis.shape[0] > 0
    left = np.empty(p + 1)
    right = np.empty(p + 1)
    inverse = np.empty((p + 1, p + 1))
    values = np.empty((most_samples, p + 1))
    kept = np.empty((most_samples, dims))
    band = np.empty((most_free, p + 1))
    rhs = np.empty((most_free, dims))
    fitted = np.empty(dims)
    for s in range(first, count, step):
        if s1[s] <= s0[s]:
            local_max[s] = 0.0
            local_sq[s] = 0.0
            continue
        worst, squares = _refit_one(sub_knots[s], n_sub[s], free_lo[s], n_free[s], fixed[s], s0[s], s1[s], tau,
                                    latent[latent_lane[s]], basis, target[target_lane[s]], degree, ridge, n_basis,
                                    left, right, inverse, values, kept, band, rhs, fitted, out, offsets[s])
        local_max[s] = worst
        local_sq[s] = squares


def _split_spans(internal, tau, grid, per_sample, min_gap, fraction, feasible, out):  # pragma: no cover - compiled
    """:func:`.tolerance._insert_knots` for one lane: writes the grown knots to ``out`` (sorted) and
    returns their count, or -1 where no span can be split."""
    n_int = internal.shape[0]
    n = tau.shape[0]
    spans = n_int + 1
    breaks = np.empty(spans + 1)
    breaks[0] = 0.0
    breaks[1:spans] = internal
    breaks[spans] = 1.0
    # each span's worst sample (the first one reaching the span's max), spans in order
    worst_err = np.full(spans, -1.0)
    worst_at = np.zeros(spans, np.int64)
    span = 0
    for j in range(n):
        while span < spans - 1 and tau[j] >= breaks[span + 1]:
            span += 1
        if per_sample[j] > worst_err[span]:
            worst_err[span] = per_sample[j]
            worst_at[span] = j
    if grid.shape[0] == 0:
        return -1
    err = np.empty(spans)
    knot = np.empty(spans)
    count = 0
    last = grid.shape[0] - 1
    for i in range(spans):
        if not worst_err[i] > feasible:  # no sample, or within tolerance
            continue
        lo = breaks[i]
        hi = breaks[i + 1]
        pos = 0.5 * (tau[worst_at[i]] + 0.5 * (lo + hi))
        first_in = np.searchsorted(grid, lo + min_gap, side="left")
        last_in = np.searchsorted(grid, hi - min_gap, side="right") - 1
        if first_in > last_in:
            continue
        right = min(max(np.searchsorted(grid, pos), first_in), last_in)
        left = min(max(right - 1, first_in), last_in)
        near_left = abs(pos - grid[min(max(left, 0), last)]) <= abs(grid[min(max(right, 0), last)] - pos)
        pick = min(max(left if near_left else right, 0), last)
        err[count] = worst_err[i]
        knot[count] = grid[pick]
        count += 1
    if count == 0:
        return -1
    # worst spans first (ties: the later knot first), a share of them
    by_knot = np.argsort(-knot[:count], kind="mergesort")
    order = by_knot[np.argsort(-err[:count][by_knot], kind="mergesort")]
    take = max(1, int(np.ceil(count * fraction)))
    out[:n_int] = internal
    for t in range(take):
        out[n_int + t] = knot[order[t]]
    out[:n_int + take] = np.sort(out[:n_int + take])
    return n_int + take


def _split_lanes(flat, offsets, tau, grid, per_sample, min_gap, fraction, feasible, out, out_offsets, counts, first,
                 step):  # pragma: no cover - compiled
    """:func:`_split_spans` for lanes first, first + step, ...: lane k's knots are
    ``flat[offsets[k]:offsets[k + 1]]``, its grown knots go to ``out`` from ``out_offsets[k]`` and
    their count (-1: none can split) to ``counts[k]`` (without the GIL: threads run them side by side)."""
    for k in range(first, offsets.shape[0] - 1, step):
        counts[k] = _split_spans(flat[offsets[k]:offsets[k + 1]], tau, grid, per_sample[k], min_gap, fraction,
                                 feasible, out[out_offsets[k]:out_offsets[k + 1]])


compile_lazily(globals(), ("_sample_error", "_solve_banded", "_inverses", "_cubic_at", "_basis_at", "_cubic_normal_rows", "_score_one",
                           "_score_rows", "_refit_one", "_refit_rows", "_split_spans", "_split_lanes"))


def split_spans(internal, tau, grid, per_sample, min_gap: float, fraction: float, feasible: float):
    """One insertion step of the tolerance search (:func:`.tolerance._insert_knots`, compiled): new
    knots in the worst spans whose samples break the tolerance, or None where none can split.

    Parameters
    ----------
    internal : ndarray, shape (K,)
        A lane's sorted internal knots in (0, 1).
    tau, grid : ndarray
        Sorted sample parameters, and the positions a knot may take (the samples or whole frames).
    per_sample : ndarray, shape (N,)
        The lane's max error per sample, in tolerance units.
    min_gap : float
        Closest allowed distance of a new knot to a span's ends.
    fraction : float
        Share of the offending spans split (the worst first; at least one).
    feasible : float
        The error a sample may reach.

    Returns
    -------
    ndarray or None
        The grown knots, sorted.
    """
    internal = _contiguous(internal, dtype=np.float64)
    out = np.empty(internal.size * 2 + 1)
    count = _split_spans(internal, _contiguous(tau, dtype=np.float64),
                         _contiguous(grid, dtype=np.float64),
                         _contiguous(per_sample, dtype=np.float64), float(min_gap), float(fraction),
                         float(feasible), out)
    return None if count < 0 else out[:count].copy()


def split_lane_spans(internals, tau, grid, per_sample, min_gap: float, fraction: float, feasible: float):
    """:func:`split_spans` for several lanes: ``internals`` a list of K lanes' knots, ``per_sample``
    (K, N) their max error per sample; a list of the grown knots (None where none can split).

    Examples
    --------
    >>> tau = np.linspace(0.0, 1.0, 11)
    >>> grown = split_lane_spans([np.zeros(0), np.array([0.5])], tau, tau, np.array([[2.0] * 11, [0.5] * 11]),
    ...                          0.01, 0.25, 1.0)
    >>> grown[0].size, grown[1] is None
    (1, True)
    """
    tau = _contiguous(tau, dtype=np.float64)
    grid = _contiguous(grid, dtype=np.float64)
    per_sample = _contiguous(per_sample, dtype=np.float64)
    count = len(internals)
    if per_sample.shape != (count, tau.size):
        raise ValueError(f"per_sample must have one row of {tau.size} samples per lane, got shape {per_sample.shape}")
    if count == 0:
        return []
    # every lane in one compiled call (one call per lane cost as much in dispatch as in work)
    sizes = np.array([np.size(internal) for internal in internals], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    out_offsets = np.concatenate([[0], np.cumsum(2 * sizes + 1)]).astype(np.int64)
    flat = np.concatenate([np.asarray(internal, dtype=np.float64).ravel() for internal in internals])
    out = np.empty(int(out_offsets[-1]))
    counts = np.empty(count, dtype=np.int64)
    args = (flat, offsets, tau, grid, per_sample, float(min_gap), float(fraction), float(feasible), out, out_offsets,
            counts)
    parts = THREADS if count > 1 and count * tau.size >= _SPLIT_MIN else 1
    if parts == 1:
        _split_lanes(*args, 0, 1)
    else:
        jobs = [pool().submit(_split_lanes, *args, first, parts) for first in range(1, parts)]
        _split_lanes(*args, 0, parts)
        for job in jobs:
            job.result()
    return [None if counts[k] < 0 else out[out_offsets[k]:out_offsets[k] + counts[k]].copy() for k in range(count)]


def score_candidates(knots, n_ctrl, tau, latent, lanes, basis, target, degree: int, ridge: float,
                     samples: bool = False):
    """Max error, RMS and (with ``samples``) per-sample max of least-squares B-splines.

    Parameters
    ----------
    knots : ndarray, shape (S, nk)
        Clamped knot vectors on [0, 1], padded past 1 (:func:`.bspline.pad_knot_vectors`).
    n_ctrl : ndarray of int, shape (S,)
        Each row's real control-point count.
    tau : ndarray, shape (N,)
        Sorted sample parameters in [0, 1].
    latent : ndarray, shape (C, N, L)
        What the splines are fitted to, per lane.
    lanes : ndarray of int, shape (S,)
        The lane of each candidate.
    basis : ndarray, shape (L, M), or None
        Rows mapping the fitted latent values to the target's M columns (None: the target is the
        latent data itself, M = L).
    target : ndarray, shape (C, N, M)
        What the errors are measured against.
    degree : int
        Spline degree.
    ridge : float
        Relative Tikhonov term (:func:`.bspline.lsq_batch`'s).
    samples : bool
        Also return the per-sample max over the columns.

    Returns
    -------
    max_error, rms : ndarray, shape (S,)
        Max abs error over samples and columns; sqrt of the mean over samples of the squared
        error's sum over columns.
    per_sample : ndarray, shape (S, N), or None

    Raises
    ------
    IndexError
        When a candidate's lane is not one of the C lanes.

    Examples
    --------
    >>> tau = np.linspace(0.0, 1.0, 11)
    >>> data = (3.0 * tau**3 - tau)[None, :, None]  # a cubic: one span fits it exactly
    >>> knots = np.array([[0.0, 0, 0, 0, 1, 1, 1, 1]])
    >>> mx, rms, _ = score_candidates(knots, np.array([4]), tau, data, np.array([0]), None, data, 3, 1e-10)
    >>> bool(mx[0] < 1e-6)
    True
    """
    knots = _contiguous(knots, dtype=np.float64)
    n_ctrl = _contiguous(n_ctrl, dtype=np.int64)
    tau = _contiguous(tau, dtype=np.float64)
    latent = _contiguous(latent, dtype=np.float64)
    target = _contiguous(target, dtype=np.float64)
    lanes = _contiguous(lanes, dtype=np.int64)
    basis = np.zeros((0, 0)) if basis is None else _contiguous(basis, dtype=np.float64)
    count = knots.shape[0]
    if lanes.shape != (count,) or (count and not (0 <= lanes.min() and lanes.max() < latent.shape[0])):
        raise IndexError(f"every candidate needs a lane in 0..{latent.shape[0] - 1}, got {lanes}")
    max_error = np.zeros(count)
    rms = np.zeros(count)
    per_sample = np.zeros((count, tau.size) if samples else (0, 0))
    args = (knots, n_ctrl, tau, latent, lanes, basis, target, int(degree), float(ridge))
    parts = THREADS if count > 1 and count * tau.size >= _SPLIT_MIN else 1
    if parts == 1:
        _score_rows(*args, 0, 1, max_error, rms, per_sample)
    else:
        jobs = [pool().submit(_score_rows, *args, first, parts, max_error, rms, per_sample) for first in range(1, parts)]
        _score_rows(*args, 0, parts, max_error, rms, per_sample)
        for job in jobs:
            job.result()
    return max_error, rms, per_sample if samples else None


def local_refits(sub_knots, n_sub, free_lo, n_free, fixed, s0, s1, tau, latent, lanes, basis, target, degree: int,
                 ridge: float, values: bool = False):
    """Max error and sum of squared errors of local least-squares refits (:mod:`.local`, compiled).

    Refit s frees control points ``free_lo[s] : free_lo[s] + n_free[s]`` of a piece of knot vector,
    keeps the others at ``fixed[s]`` and fits samples ``s0[s]:s1[s]`` of its lane.

    Parameters
    ----------
    sub_knots : ndarray, shape (S, W)
        Each refit's piece of knot vector, padded past its end with values above every sample.
    n_sub : ndarray of int, shape (S,)
        Control points of each piece.
    free_lo, n_free : ndarray of int, shape (S,)
        First freed control point (in the piece) and how many.
    fixed : ndarray, shape (S, P, L)
        The kept control points (0 where freed), P >= n_sub.
    s0, s1 : ndarray of int, shape (S,)
        The refitted samples.
    tau : ndarray, shape (N,)
        Sorted sample parameters in [0, 1].
    latent : ndarray, shape (C, N, L)
        What the splines fit, per lane (C = 1: shared by every lane).
    lanes : ndarray of int, shape (S,)
        Each refit's lane.
    basis : ndarray, shape (L, M), or None
        Rows mapping latent values to the target's columns (None: M = L).
    target : ndarray, shape (C', N, M)
        What the errors are measured against (C' = 1: shared).
    degree : int
        Spline degree.
    ridge : float
        Relative Tikhonov term of the normal equations.
    values : bool
        Return the refitted splines' values instead of their errors (for a caller that maps them
        through a big ``basis`` with a matrix product).

    Returns
    -------
    local_max, local_sq : ndarray, shape (S,)
        Max abs error and sum of squared errors over each refit's samples (0 without samples).
    fitted : ndarray, shape (sum(s1 - s0), L)
        With ``values``, instead: each refit's spline at its samples, the refits one after another.

    Raises
    ------
    IndexError
        When a refit's lane is not one of the lanes.

    Examples
    --------
    >>> tau = np.linspace(0.0, 1.0, 11)
    >>> data = (3.0 * tau**3 - tau)[None, :, None]
    >>> knots = np.array([[0.0, 0, 0, 0, 1, 1, 1, 1]])  # one cubic span, every control point freed
    >>> mx, sq = local_refits(knots, np.array([4]), np.array([0]), np.array([4]), np.zeros((1, 4, 1)),
    ...                       np.array([0]), np.array([11]), tau, data, np.array([0]), None, data, 3, 1e-10)
    >>> bool(mx[0] < 1e-6)
    True
    """
    count = len(sub_knots)
    lanes = _contiguous(lanes, dtype=np.int64)
    latent = _contiguous(latent, dtype=np.float64)
    target = _contiguous(target, dtype=np.float64)
    for data in (latent, target):
        if data.shape[0] > 1 and count and not (0 <= lanes.min() and lanes.max() < data.shape[0]):
            raise IndexError(f"every refit needs a lane in 0..{data.shape[0] - 1}, got {lanes}")
    latent_lane = lanes if latent.shape[0] > 1 else np.zeros(count, np.int64)
    target_lane = lanes if target.shape[0] > 1 else np.zeros(count, np.int64)
    n_sub, free_lo, n_free, s0, s1 = (_contiguous(a, dtype=np.int64) for a in (n_sub, free_lo, n_free, s0, s1))
    counts = np.maximum(s1 - s0, 0)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if count else np.zeros(0, np.int64)
    pairs = int(counts.sum())
    out = np.empty((pairs, latent.shape[2]) if values else (0, 0))
    local_max = np.zeros(count)
    local_sq = np.zeros(count)
    args = (_contiguous(sub_knots, dtype=np.float64), n_sub, free_lo, n_free,
            _contiguous(fixed, dtype=np.float64), s0, s1, _contiguous(tau, dtype=np.float64), latent,
            latent_lane, np.zeros((0, 0)) if basis is None else _contiguous(basis, dtype=np.float64), target,
            target_lane, int(degree), float(ridge))
    parts = THREADS if count > 1 and pairs >= _SPLIT_MIN else 1
    if parts == 1:
        _refit_rows(*args, 0, 1, local_max, local_sq, out, offsets)
    else:
        jobs = [pool().submit(_refit_rows, *args, first, parts, local_max, local_sq, out, offsets)
                for first in range(1, parts)]
        _refit_rows(*args, 0, parts, local_max, local_sq, out, offsets)
        for job in jobs:
            job.result()
    return out if values else (local_max, local_sq)
