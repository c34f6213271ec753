"""Local least-squares refits: what a knot removal or a knot move costs, without a fit of the whole clip.

A B-spline's basis is local: changing the knots between two breaks changes only the basis
functions whose support holds them. So the effect of removing (or moving) a few knots is scored by
refitting only the control points whose support meets a window of spans around the change (``margin``
spans on each side), with every other control point kept from the lane's current global fit and the
samples under the freed supports as data. The result is a *patchwork* spline on the new knot vector:
equal to the current fit outside the window and a least-squares refit inside it, so its max error is
exact (the window's refit errors, and the current errors outside it). Its cost is the window's
samples, not the clip's: every knot of every lane can be scored in one round at the price of a few
global fits. A global least-squares fit of the new knots differs from the patchwork by a
geometrically decaying amount outside the window, so accepted changes are still confirmed with one
global fit per batch (:mod:`.tolerance`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .bspline import banded_cholesky_batch, cox_de_boor
from .knots import _SCORER_FAILURE, COMPILED_BASIS_MAX, compiled_spline_kernel

__all__ = ["LaneFit", "LocalScores", "lane_fit", "score_replacements"]

# Candidates are scored in chunks of at most this many (candidate, sample) pairs, and at most
# PAIR_CHUNK_ELEMENTS pairs x channels (a pair holds ~30 floats besides its channels' errors).
PAIR_CHUNK = 400_000
PAIR_CHUNK_ELEMENTS = 4_000_000
# Relative Tikhonov term of the local normal equations (as in bspline.lsq_batch).
LOCAL_RIDGE = 1e-10


@dataclass
class LaneFit:
    """A lane's current global least-squares fit, which local refits start from.

    Attributes
    ----------
    knots : ndarray, shape (K + D + 1,)
        Full clamped knot vector on [0, 1].
    ctrl : ndarray, shape (K, L)
        Control points (latent space for a PCA lane).
    worst : ndarray, shape (N,)
        Per sample, max abs error over the lane's channels, in tolerance units.
    sq : ndarray, shape (N,)
        Per sample, squared error norm over the lane's channels.
    """

    knots: np.ndarray
    ctrl: np.ndarray
    worst: np.ndarray
    sq: np.ndarray

    def __post_init__(self) -> None:
        self.max_error = float(self.worst.max()) if self.worst.size else 0.0
        # max of the errors before / after each sample, and the running squared error
        self.prefix_max = np.concatenate([[0.0], np.maximum.accumulate(self.worst)])
        self.suffix_max = np.concatenate([np.maximum.accumulate(self.worst[::-1])[::-1], [0.0]])
        self.cum_sq = np.concatenate([[0.0], np.cumsum(self.sq)])


def lane_fit(knots: np.ndarray, ctrl: np.ndarray, err: np.ndarray) -> LaneFit:
    """A :class:`LaneFit` from a knot vector, its control points and its error field (N, M)."""
    return LaneFit(knots, ctrl, np.abs(err).max(axis=1), (err**2).sum(axis=1))


def _fit_of(fits: Sequence[LaneFit | None], lane: int) -> LaneFit:
    fit = fits[lane]
    if fit is None:
        raise ValueError(f"lane {lane} has candidates but no current fit")
    return fit


class LocalScores(NamedTuple):
    """Errors of the patchwork splines of S candidate changes, in tolerance units."""

    max_error: np.ndarray  # (S,) max over every sample of the lane
    rms: np.ndarray  # (S,) sqrt(mean over samples of the squared error norm)
    changed: np.ndarray  # (S, 2) x-interval where the spline changes
    depends: np.ndarray  # (S, 2) x-interval of the control points the refit reads


class _Geometry(NamedTuple):
    sub_knots: np.ndarray  # (S, W) each candidate's piece of its new knot vector (padded)
    n_sub: np.ndarray  # (S,) control points of the piece
    free_lo: np.ndarray  # (S,) first freed control point, in the piece
    n_free: np.ndarray  # (S,)
    fixed: np.ndarray  # (S, n_sub_max, L) kept control points (0 where freed)
    s0: np.ndarray  # (S,) first sample refitted
    s1: np.ndarray  # (S,) one past the last
    changed: np.ndarray  # (S, 2)
    depends: np.ndarray  # (S, 2)


def _geometry(
    fits: Sequence[LaneFit | None],
    tau: np.ndarray,
    degree: int,
    multiplicity: int,
    lanes: np.ndarray,
    first: np.ndarray,
    stop: np.ndarray,
    moved: np.ndarray,
    n_moved: np.ndarray,
    margin: int,
) -> _Geometry:
    """Where each candidate's refit works: its piece of knot vector, freed and kept control points, samples.

    Candidate s replaces the distinct internal knots ``first[s]:stop[s]`` of lane ``lanes[s]`` by
    ``moved[s, :n_moved[s]]`` (kept strictly between the knots around them).
    """
    d, m = degree, multiplicity
    s_count = lanes.size
    used = np.unique(lanes)  # only these lanes' fits are read (the others may have none)
    used_fits = [_fit_of(fits, c) for c in used]
    slot = np.zeros(int(used.max()) + 1, dtype=int)
    slot[used] = np.arange(used.size)
    knot_len = np.zeros(slot.size, dtype=int)
    knot_len[used] = [f.knots.size for f in used_fits]
    knot_off = np.zeros(slot.size, dtype=int)
    knot_off[used] = np.concatenate([[0], np.cumsum(knot_len[used])[:-1]])
    flat_knots = np.concatenate([f.knots for f in used_fits])
    ctrl_off = knot_off - slot * (d + 1)  # K = len(knots) - D - 1 per lane
    flat_ctrl = np.concatenate([f.ctrl for f in used_fits])
    n_int = (knot_len[lanes] - 2 * (d + 1)) // m  # distinct internal knots per lane
    # breaks: 0, the distinct internal knots, 1; breaks[j] sits at full position D + 1 + (j - 1) m
    def brk(j: np.ndarray) -> np.ndarray:
        j = np.clip(j, 0, n_int + 1)
        pos = np.where(j == 0, 0, np.where(j > n_int, knot_len[lanes] - 1, d + 1 + (j - 1) * m))
        return flat_knots[knot_off[lanes] + pos]

    x_lo = brk(first - margin)
    x_hi = brk(stop + 1 + margin)
    p0 = d + 1 + first * m  # replaced full positions [p0, p1) of the old vector
    p1 = d + 1 + stop * m
    shift = (p1 - p0) - m * n_moved  # old index = new index + shift, right of the change
    k_new = knot_len[lanes] - d - 1 - shift
    # freed control points (new indices): support meets (x_lo, x_hi); both ends are old breaks
    f0 = np.empty(s_count, dtype=int)
    f1 = np.empty(s_count, dtype=int)
    for c in used:
        sel = lanes == c
        f0[sel] = np.searchsorted(fits[c].knots, x_lo[sel], side="right") - (d + 1)
        f1[sel] = np.searchsorted(fits[c].knots, x_hi[sel], side="left") - shift[sel]
    f0 = np.maximum(f0, 0)
    f1 = np.minimum(f1, k_new)
    a = np.maximum(f0 - d, 0)
    b = np.minimum(f1 + d, k_new)
    n_sub = b - a
    width = int((n_sub + d + 1).max())
    # the piece of the new knot vector, new positions a .. b + D, read from the old vector and moved
    q = a[:, None] + np.arange(width)
    valid = q < (b + d + 1)[:, None]
    from_moved = (q >= p0[:, None]) & (q < (p0 + m * n_moved)[:, None])
    old_q = np.where(q < p0[:, None], q, q + shift[:, None])
    old_q = np.clip(old_q, 0, (knot_len[lanes] - 1)[:, None])
    sub = flat_knots[knot_off[lanes][:, None] + old_q]
    if moved.size:
        mi = np.clip((q - p0[:, None]) // m, 0, moved.shape[1] - 1)
        sub = np.where(from_moved, np.take_along_axis(moved, mi, axis=1), sub)
    sub = np.where(valid, sub, 1.5)  # past the piece: beyond every sample, still sorted
    # kept control points, mapped to the old vector
    n_sub_max = int(n_sub.max())
    g = a[:, None] + np.arange(n_sub_max)
    keep = (g < f0[:, None]) | ((g >= f1[:, None]) & (g < b[:, None]))
    old_g = np.clip(np.where(g < f0[:, None], g, g + shift[:, None]), 0, None)
    old_g = np.minimum(old_g, (knot_len[lanes] - d - 2)[:, None])
    fixed = flat_ctrl[ctrl_off[lanes][:, None] + old_g] * keep[..., None]
    # samples under the freed supports: new positions f0 .. f1 + D
    lo_x = np.take_along_axis(sub, (f0 - a)[:, None], axis=1)[:, 0]
    hi_x = np.take_along_axis(sub, np.minimum(f1 + d - a, width - 1)[:, None], axis=1)[:, 0]
    s0 = np.searchsorted(tau, lo_x, side="left")
    s1 = np.where(hi_x >= tau[-1], tau.size, np.searchsorted(tau, hi_x, side="left"))
    dep_lo = sub[:, 0]
    dep_hi = np.take_along_axis(sub, (n_sub + d)[:, None], axis=1)[:, 0]
    return _Geometry(
        sub, n_sub, f0 - a, f1 - f0, fixed, s0, s1,
        np.column_stack([lo_x, hi_x]), np.column_stack([dep_lo, dep_hi]),
    )


def _refit_chunk(
    geo: _Geometry,
    idx: np.ndarray,
    tau: np.ndarray,
    latent: np.ndarray,
    target: np.ndarray,
    basis: np.ndarray | None,
    lanes: np.ndarray,
    degree: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Max abs error and sum of squared errors over the refitted samples of candidates ``idx``."""
    d = degree
    s_count = idx.size
    counts = geo.s1[idx] - geo.s0[idx]
    starts = np.concatenate([[0], np.cumsum(counts)])
    n_pairs = int(starts[-1])
    cand = np.repeat(np.arange(s_count), counts)
    sample = geo.s0[idx][cand] + (np.arange(n_pairs) - starts[:-1][cand])
    x = tau[sample]
    sub = geo.sub_knots[idx]
    width = sub.shape[1]
    # each pair's span in its own piece: one searchsorted over the pieces laid end to end
    row_shift = 2.0 * np.arange(s_count)
    pos = np.searchsorted((sub + row_shift[:, None]).ravel(), x + row_shift[cand], side="right") - 1
    span = np.clip(pos - cand * width, d, geo.n_sub[idx][cand] - 1)
    vals = cox_de_boor(sub.ravel(), cand * width + span, x, d)  # (P, D + 1)
    first_ctrl = span - d
    n_lat = latent.shape[-1]
    fixed = geo.fixed[idx]
    n_sub_max = fixed.shape[1]
    flat_fixed = fixed.reshape(-1, n_lat)
    kept = np.zeros((n_pairs, n_lat))
    for r in range(d + 1):
        kept += vals[:, r, None] * flat_fixed[cand * n_sub_max + first_ctrl + r]
    lane_of_pair = lanes[idx][cand]
    data = latent[0][sample] if latent.shape[0] == 1 else latent[lane_of_pair, sample]
    resid = data - kept
    # normal equations of the freed control points, dense per candidate (they are few)
    n_free = geo.n_free[idx]
    nf = max(int(n_free.max()), 1)
    free_idx = first_ctrl[:, None] + np.arange(d + 1) - geo.free_lo[idx][cand][:, None]  # (P, D + 1)
    is_free = (free_idx >= 0) & (free_idx < n_free[cand][:, None])
    free_idx = np.where(is_free, free_idx, 0)
    w = vals * is_free
    width = d + 1  # freed control points are consecutive: their normal matrix is banded
    band = np.zeros((s_count * nf, width))
    rhs = np.zeros((s_count * nf, n_lat))
    base = cand * nf
    for r1 in range(d + 1):
        row = base + free_idx[:, r1]
        for r2 in range(r1, d + 1):
            band[:, r2 - r1] += np.bincount(row, weights=w[:, r1] * w[:, r2], minlength=band.shape[0])
        for col in range(n_lat):
            rhs[:, col] += np.bincount(row, weights=w[:, r1] * resid[:, col], minlength=rhs.shape[0])
    band = band.reshape(s_count, nf, width)
    unused = np.arange(nf)[None, :] >= n_free[:, None]
    scale = np.maximum(band[:, :, 0].sum(axis=1) / np.maximum(n_free, 1), 1e-300)
    band[:, :, 0] += LOCAL_RIDGE * scale[:, None] + unused
    free_ctrl = banded_cholesky_batch(band, rhs.reshape(s_count, nf, n_lat))
    flat_free = free_ctrl.reshape(-1, n_lat)
    fit = kept
    for r in range(d + 1):
        fit += w[:, r, None] * flat_free[base + free_idx[:, r]]
    if basis is not None:
        err = fit @ basis - target[0][sample]
    else:
        err = fit - (target[0][sample] if target.shape[0] == 1 else target[lane_of_pair, sample])
    return _reduce_pairs(err, counts)


def _reduce_pairs(err: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Max abs error and sum of squared errors per candidate of an error field (P, M) whose rows are
    the candidates' samples one candidate after another (``counts`` rows each)."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    local_max = np.zeros(counts.size)
    local_sq = np.zeros(counts.size)
    has = counts > 0
    if err.shape[0]:
        local_max[has] = np.maximum.reduceat(np.abs(err).max(axis=1), starts[has])
        local_sq[has] = np.add.reduceat((err**2).sum(axis=1), starts[has])
    return local_max, local_sq


def _errors_through_basis(kernel, geo: _Geometry, idx: np.ndarray, tau: np.ndarray, latent: np.ndarray,
                          target: np.ndarray, basis: np.ndarray, lanes: np.ndarray,
                          degree: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_refit_chunk` with big PCA rows: the refits compiled, their errors through one matrix
    product (per sample, the compiled kernel's loop over L x M products loses to BLAS)."""
    fitted = kernel.local_refits(geo.sub_knots[idx], geo.n_sub[idx], geo.free_lo[idx], geo.n_free[idx],
                                 geo.fixed[idx], geo.s0[idx], geo.s1[idx], tau, latent, lanes[idx], basis, target,
                                 degree, LOCAL_RIDGE, values=True)
    counts = np.maximum(geo.s1[idx] - geo.s0[idx], 0)
    starts = np.concatenate([[0], np.cumsum(counts)])
    cand = np.repeat(np.arange(idx.size), counts)
    sample = geo.s0[idx][cand] + (np.arange(int(starts[-1])) - starts[:-1][cand])
    return _reduce_pairs(fitted @ basis - target[0][sample], counts)  # (PCA rows: one lane, as _refit_chunk)


def _local_refits(
    geo: _Geometry,
    tau: np.ndarray,
    latent: np.ndarray,
    target: np.ndarray,
    basis: np.ndarray | None,
    lanes: np.ndarray,
    degree: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Max error and sum of squared errors of every candidate's refit: compiled where the knot
    scoring runs compiled (:func:`.knots.compiled_spline_kernel`, PCA rows of at most
    ``COMPILED_BASIS_MAX`` values), else on numpy in chunks."""
    s_count = lanes.size
    kernel = compiled_spline_kernel()
    if kernel is not None and (basis is None or basis.size <= COMPILED_BASIS_MAX):
        try:
            return kernel.local_refits(geo.sub_knots, geo.n_sub, geo.free_lo, geo.n_free, geo.fixed, geo.s0, geo.s1,
                                       tau, latent, lanes, basis, target, degree, LOCAL_RIDGE)
        except Exception as exc:  # noqa: BLE001 - a kernel that fails to compile here: numpy from now on
            _SCORER_FAILURE.append(f"{type(exc).__name__}: {exc}")
            warnings.warn(f"the compiled local refits failed ({_SCORER_FAILURE[0]}); running them on numpy",
                          RuntimeWarning, stacklevel=2)
            kernel = None
    local_max = np.zeros(s_count)
    local_sq = np.zeros(s_count)
    counts = geo.s1 - geo.s0
    bounds = np.concatenate([[0], np.cumsum(counts)])
    # chunks of about `step` pairs, each candidate whole
    step = max(1, min(PAIR_CHUNK, PAIR_CHUNK_ELEMENTS // max(target.shape[-1], latent.shape[-1])))
    cuts = np.searchsorted(bounds, np.arange(0, bounds[-1] + step, step), side="right") - 1
    cuts = np.unique(np.concatenate([[0], np.clip(cuts, 0, s_count), [s_count]]))
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        if hi <= lo:
            continue
        idx = np.arange(lo, hi)
        if kernel is not None and basis is not None:
            try:
                local_max[idx], local_sq[idx] = _errors_through_basis(kernel, geo, idx, tau, latent, target, basis,
                                                                      lanes, degree)
                continue
            except Exception as exc:  # noqa: BLE001 - as above
                _SCORER_FAILURE.append(f"{type(exc).__name__}: {exc}")
                warnings.warn(f"the compiled local refits failed ({_SCORER_FAILURE[0]}); running them on numpy",
                              RuntimeWarning, stacklevel=2)
                kernel = None
        local_max[idx], local_sq[idx] = _refit_chunk(geo, idx, tau, latent, target, basis, lanes, degree)
    return local_max, local_sq


def score_replacements(
    fits: Sequence[LaneFit | None],
    tau: np.ndarray,
    latent: np.ndarray,
    target: np.ndarray,
    basis: np.ndarray | None,
    degree: int,
    multiplicity: int,
    lanes: np.ndarray,
    first: np.ndarray,
    stop: np.ndarray,
    moved: np.ndarray | None = None,
    n_moved: np.ndarray | None = None,
    margin: int = 2,
) -> LocalScores:
    """Patchwork errors of S candidate changes of the lanes' knots, each refitted locally.

    Parameters
    ----------
    fits : sequence of LaneFit or None
        The current fit of every lane (indexed by lane; None for lanes without candidates).
    tau : ndarray, shape (N,)
        Sample times in [0, 1].
    latent : ndarray, shape (C, N, L)
        What the splines fit, per lane (C = 1: shared by all).
    target : ndarray, shape (C, N, M)
        What the errors are measured against, in tolerance units.
    basis : ndarray, shape (L, M), or None
        PCA rows mapping latent to target (None: latent is target).
    degree, multiplicity : int
        Spline degree and internal knot multiplicity.
    lanes : ndarray of int, shape (S,)
        Lane of each candidate.
    first, stop : ndarray of int, shape (S,)
        Candidate s replaces the lane's distinct internal knots ``first[s]:stop[s]`` ...
    moved : ndarray, shape (S, R), optional
        ... by ``moved[s, :n_moved[s]]`` (default: by nothing, a removal). The new knots must lie
        strictly between the knots around the replaced ones.
    n_moved : ndarray of int, shape (S,), optional
    margin : int
        Spans refitted on each side of the change.

    Returns
    -------
    LocalScores
        Max error and RMS over all samples of the lane (current errors outside the refit), and the
        x-intervals where each patchwork changes the spline and whose control points it reads.
    """
    lanes = np.asarray(lanes, dtype=int)
    first = np.asarray(first, dtype=int)
    stop = np.asarray(stop, dtype=int)
    s_count = lanes.size
    if moved is None or n_moved is None:
        moved = np.zeros((s_count, 0))
        n_moved = np.zeros(s_count, dtype=int)
    if s_count == 0:
        return LocalScores(np.zeros(0), np.zeros(0), np.zeros((0, 2)), np.zeros((0, 2)))
    geo = _geometry(fits, tau, degree, multiplicity, lanes, first, stop, np.asarray(moved, dtype=float),
                    np.asarray(n_moved, dtype=int), margin)
    local_max, local_sq = _local_refits(geo, tau, latent, target, basis, lanes, degree)
    outside_max = np.empty(s_count)
    old_sq = np.empty(s_count)
    total_sq = np.empty(s_count)
    for c in np.unique(lanes):
        sel = lanes == c
        f = _fit_of(fits, c)
        outside_max[sel] = np.maximum(f.prefix_max[geo.s0[sel]], f.suffix_max[geo.s1[sel]])
        old_sq[sel] = f.cum_sq[geo.s1[sel]] - f.cum_sq[geo.s0[sel]]
        total_sq[sel] = f.cum_sq[-1]
    rms = np.sqrt(np.maximum(total_sq - old_sq + local_sq, 0.0) / tau.size)
    return LocalScores(np.maximum(local_max, outside_max), rms, geo.changed, geo.depends)
