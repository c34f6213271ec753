"""Free-knot search for the spline fits of :mod:`anim_signals.splines.fitting`.

Everything works on normalised time ``tau`` in [0, 1] and on data scaled by the tolerances, so
an error of 1.0 is exactly the tolerance. A :class:`KnotProblem` scores many candidate knot
vectors in one vectorised least-squares call; on it:

* CMA-ES over positive knot increments with the constrained sampling of Mukai, "Latent
  Nonuniform Splines for Animation Approximation", §3 (increments clipped at 0 and rescaled to
  span the interval), several independent lanes in lockstep (:meth:`KnotProblem.cma_lanes`);
* the fewest knots within tolerance (:func:`solve_tolerance`): greedy knot insertion until
  feasible, then knot removal shortlisted by the derivative jump at each knot, each removal
  rescued by CMA-ES when plain removal breaks the tolerance.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import cma
import numpy as np

from .bspline import clamped_knots, knot_jumps, lsq_batch, pad_knot_vectors

__all__ = [
    "FEASIBLE",
    "KnotProblem",
    "KnotSearch",
    "Scores",
    "ToleranceSolution",
    "curvature_knots",
    "snap_grid",
    "snap_knots",
    "solve_tolerance",
]

# Errors are in tolerance units: a candidate is within tolerance when its max error is <= 1.
FEASIBLE = 1.0
# The 'max' objective breaks ties between equally feasible candidates by their RMS.
RMS_TIE_BREAK = 0.1
# Score at most this many error-field elements per chunk (~32 MB of float64).
SCORE_CHUNK_ELEMENTS = 4_000_000
# Distinct knots stay (multiplicity - this) median sample steps apart.
MIN_GAP_SLACK = 0.001
# PCA without a tolerance keeps the components carrying all but this fraction of the energy.
PCA_ENERGY_LOST = 1e-12

# CMA-ES: the first step size as a fraction of the mean increment, and the stopping tolerances.
CMA_SIGMA0_FRACTION = 0.3
CMA_TOLFUN = 1e-12
CMA_TOLX_FRACTION = 1e-9  # of sigma0
CMA_SEED_MODULUS = 2**31 - 2  # pycma treats seed 0 as "random": seeds map to 1 .. 2**31 - 2
# Increments: clipped at 0 plus this, so an all-zero sample still spreads its knots evenly.
INCREMENT_FLOOR = 1e-12
INCREMENT_OFFSET = 1e-6  # increments of given knots stay strictly positive

# Tolerance mode.
INSERT_FRACTION = 0.25  # share of the offending spans split per insertion round
INSERTION_PROGRESS_STEP = 0.02
INSERTION_PROGRESS_MAX = 0.3  # insertion reports progress up to here, removal the rest
SHORTLIST_SIZE = 8  # knots per lane whose removal gets a full fit each round
SHORTLIST_WIDENING = 4  # the shortlist grows this much (once) when none of it is removable
# A deterministic budget of CMA-ES rescues: ~RESCUE_BUDGET lane-runs in all, 1..8 per lane (one
# curve of a 96-curve clip gets one; a shared latent knot vector gets eight).
RESCUE_BUDGET = 100
MAX_RESCUES_PER_LANE = 8
RESCUE_WINDOW = 3  # a rescue moves this many knots on each side of the removed one
RESCUE_SEED_STRIDE = 7919  # a prime: rescue seeds differ per lane and per knot count
# Every removal round scores its shortlist on the whole clip (cost ~ samples), and a round
# removes a few knots, so unbounded rounds would make a long clip's fit quadratic: the removal
# phase stops after this many rounds (the knots are then already within tolerance, just more
# of them). Clips of a few thousand frames need far fewer.
MAX_REMOVAL_ROUNDS = 64
# Curvature-placed knots: a floor on the bending density, relative to its mean (plus a tiny
# constant, for a straight line), so flat stretches still get their share of knots.
DENSITY_FLOOR = 1e-3
DENSITY_MEAN_FLOOR = 1e-12


class Scores(NamedTuple):
    """Errors of S candidate knot vectors, in tolerance units."""

    max_error: np.ndarray  # (S,) max abs error over samples and channels
    rms: np.ndarray  # (S,) sqrt(mean over samples of the squared error norm)
    per_sample: np.ndarray | None  # (S, N) max abs error over channels, when asked for


class KnotSearch(NamedTuple):
    """The best internal knots CMA-ES found for one lane."""

    knots: np.ndarray  # (n_int,) internal knots in (0, 1)
    max_error: float
    rms: float


class _Best(NamedTuple):
    knots: np.ndarray
    max_error: float
    rms: float
    objective: float


class ToleranceSolution(NamedTuple):
    """Internal knots per lane and whether the lane ends within tolerance."""

    internal: list[np.ndarray]
    feasible: np.ndarray  # (C,) bool


class _Rescue(NamedTuple):
    lane: int
    knots: np.ndarray  # the lane's knots without the removed one
    gap: int  # where the removed knot was


def _objective(max_error: np.ndarray, rms: np.ndarray, objective: str) -> np.ndarray:
    return rms if objective == "rms" else max_error + RMS_TIE_BREAK * rms


@dataclass
class KnotProblem:
    """Tolerance-scaled data in one or more independent *lanes*, scored for many knot vectors.

    A lane is one knot vector's worth of channels: the whole latent group (one lane with a PCA
    basis) or one F-curve each (per-channel mode: many 1-channel lanes scored together, so a
    96-curve clip costs a few big numpy calls per round instead of 96 small ones).

    Attributes
    ----------
    tau : ndarray, shape (N,)
        Sample times normalised to [0, 1].
    target : ndarray, shape (C, N, M)
        Centred, tolerance-scaled values per lane.
    degree : int
        Spline degree (1-3).
    multiplicity : int
        Every internal knot repeated this often (2: C1 keys).
    min_gap : float
        Closest allowed distance of distinct knots, in tau.
    latent : ndarray, shape (C, N, L)
        What the splines are fitted to: PCA scores, or ``target`` itself.
    basis : ndarray, shape (L, M), or None
        Orthonormal PCA rows (single lane) mapping latent to target; None when latent is target.
    evaluations, generations : int
        Knot vectors scored and CMA-ES generations run so far.
    """

    tau: np.ndarray
    target: np.ndarray
    degree: int
    multiplicity: int
    min_gap: float
    latent: np.ndarray
    basis: np.ndarray | None
    evaluations: int = 0
    generations: int = 0

    @classmethod
    def build(
        cls, tau: np.ndarray, target: np.ndarray, degree: int, multiplicity: int, pca_tolerance: float | None
    ) -> KnotProblem:
        """One lane over all columns of ``target`` (N, M), fitted in PCA space (see :func:`pca`)."""
        latent, basis = pca(target, pca_tolerance)
        return cls(tau, target[None], degree, multiplicity, min_gap(tau, multiplicity), latent[None], basis)

    @classmethod
    def lanes(cls, tau: np.ndarray, columns: np.ndarray, degree: int, multiplicity: int) -> KnotProblem:
        """One lane per column of ``columns`` (N, C)."""
        target = columns.T[:, :, None].copy()
        return cls(tau, target, degree, multiplicity, min_gap(tau, multiplicity), target, None)

    @property
    def n_lanes(self) -> int:
        """C, independent knot vectors solved together."""
        return int(self.target.shape[0])

    def knot_vectors(self, internal: np.ndarray) -> np.ndarray:
        """Full clamped knot vectors (S, nk) on [0, 1] of internal knots (S, n_int)."""
        internal = np.atleast_2d(internal)
        return clamped_knots(np.repeat(internal, self.multiplicity, axis=1), 0.0, 1.0, self.degree)

    def errors(
        self, internal: Sequence[np.ndarray] | np.ndarray, lanes: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Error field (S, N, M) in tolerance units and control points (S, K, L) per candidate.

        ``lanes[s]`` is the lane candidate s is fitted to (default: lane 0).
        """
        if isinstance(internal, np.ndarray) and internal.ndim == 1:
            internal = internal[None]
        knots, n_ctrl = pad_knot_vectors(list(internal), self.degree, self.multiplicity)
        if lanes is None:
            lanes = np.zeros(knots.shape[0], dtype=int)
        data = self.latent[0] if self.n_lanes == 1 else self.latent[lanes]
        ctrl, fit, _ = lsq_batch(knots, self.tau, data, self.degree, n_ctrl=n_ctrl)
        assert fit is not None
        self.evaluations += knots.shape[0]
        if self.basis is not None:
            fit = fit @ self.basis
        return fit - (self.target[0][None] if self.n_lanes == 1 else self.target[lanes]), ctrl

    def score(
        self, internal: Sequence[np.ndarray] | np.ndarray, lanes: np.ndarray | None = None, samples: bool = False
    ) -> Scores:
        """Max error, RMS and (with ``samples``) the per-sample max of every candidate."""
        if isinstance(internal, np.ndarray) and internal.ndim == 1:
            internal = internal[None]
        internal = list(internal)
        lanes = np.zeros(len(internal), dtype=int) if lanes is None else np.asarray(lanes)
        chunk = max(1, int(SCORE_CHUNK_ELEMENTS // max(1, self.target[0].size)))
        maxes, rmss, per_sample = [], [], []
        for start in range(0, len(internal), chunk):
            err, _ = self.errors(internal[start : start + chunk], lanes[start : start + chunk])
            worst = np.abs(err).max(axis=2)
            maxes.append(worst.max(axis=1))
            rmss.append(np.sqrt((err**2).sum(axis=2).mean(axis=1)))
            if samples:
                per_sample.append(worst)
        return Scores(
            np.concatenate(maxes),
            np.concatenate(rmss),
            np.concatenate(per_sample) if samples else None,
        )

    # -- CMA-ES over positive increments (Mukai's constrained sampling) --

    def increments_to_knots(self, z: np.ndarray, n_int: int, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
        """Candidate knots (S, n_int) in (lo, hi) from sampled increments z (S, n_int + 1):
        clipped at 0, rescaled to fill the interval, and kept ``min_gap`` apart."""
        z = np.atleast_2d(z)
        d = np.maximum(z, 0.0) + INCREMENT_FLOOR
        d = d / d.sum(axis=1, keepdims=True)
        free = (hi - lo) - (n_int + 1) * self.min_gap
        d = self.min_gap + max(free, 0.0) * d
        return lo + np.cumsum(d, axis=1)[:, :-1]

    def knots_to_increments(self, internal: np.ndarray, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
        """Increments (n_int + 1,) that :meth:`increments_to_knots` maps back to ``internal``."""
        n_int = internal.size
        d = np.diff(np.concatenate([[lo], internal, [hi]]))
        free = max((hi - lo) - (n_int + 1) * self.min_gap, INCREMENT_FLOOR)
        return np.maximum(d - self.min_gap, 0.0) / free + INCREMENT_OFFSET

    def _strategy(
        self, init: np.ndarray, bounds: tuple[float, float], population: int | None, max_iterations: int, seed: int
    ) -> cma.CMAEvolutionStrategy:
        z0 = self.knots_to_increments(init, *bounds)
        sigma0 = CMA_SIGMA0_FRACTION * float(np.mean(z0))
        opts = {
            "seed": int(seed) % CMA_SEED_MODULUS + 1,
            "verbose": -9,
            "maxiter": max_iterations,
            "tolfun": CMA_TOLFUN,
            "tolx": CMA_TOLX_FRACTION * sigma0,
            # no log files, and an absolute prefix: pycma's logger resolves it with
            # abspath(), which fails when the working directory no longer exists
            "verb_log": 0,
            "verb_filenameprefix": os.path.join(tempfile.gettempdir(), "anim_signals_cma_"),
        }
        if population:
            opts["popsize"] = int(population)
        return cma.CMAEvolutionStrategy(z0, sigma0, opts)

    def _candidates(
        self, asked: np.ndarray, init: np.ndarray, window: tuple[int, int], bounds: tuple[float, float]
    ) -> np.ndarray:
        """Full internal knot rows (S, n_int): the window moved as sampled, the rest as in init."""
        i0, i1 = window
        moved = self.increments_to_knots(asked, i1 - i0, *bounds)
        keep_left = np.broadcast_to(init[:i0], (moved.shape[0], i0))
        keep_right = np.broadcast_to(init[i1:], (moved.shape[0], init.size - i1))
        return np.concatenate([keep_left, moved, keep_right], axis=1)

    def cma_lanes(
        self,
        inits: Sequence[np.ndarray],
        lanes: np.ndarray,
        objective: str,
        population: int | None,
        max_iterations: int,
        seeds: Sequence[int],
        target: float | None = None,
        windows: Sequence[tuple[int, int]] | None = None,
    ) -> Generator[float, None, list[KnotSearch]]:
        """CMA-ES (pycma ask/tell) in lockstep on several lanes, all populations scored together.

        Minimises 'rms' or 'max' (+ RMS tie-break) over each run's knot count (that of its
        init). ``windows[k] = (i0, i1)`` frees only ``inits[k][i0:i1]`` (the others stay put):
        a local, low-dimensional search that converges in a few generations. A run stops early
        once its max error reaches ``target`` (tolerance mode).

        Yields
        ------
        float
            Progress after each generation.

        Returns
        -------
        list of KnotSearch
            The best knots of each run, in the order of ``inits``.
        """
        lanes = np.asarray(lanes)
        inits = [np.asarray(init, dtype=float) for init in inits]
        if windows is None:
            windows = [(0, init.size) for init in inits]
        bounds = [
            (float(init[i0 - 1]) if i0 > 0 else 0.0, float(init[i1]) if i1 < init.size else 1.0)
            for init, (i0, i1) in zip(inits, windows, strict=True)
        ]
        mx0, rms0, _ = self.score(list(inits), lanes)
        strategies = []
        best: list[_Best] = []
        for k, init in enumerate(inits):
            i0, i1 = windows[k]
            strategies.append(self._strategy(init[i0:i1], bounds[k], population, max_iterations, seeds[k]))
            obj0 = rms0[k] if objective == "rms" else mx0[k] + RMS_TIE_BREAK * rms0[k]
            best.append(_Best(np.asarray(init, dtype=float), float(mx0[k]), float(rms0[k]), float(obj0)))
        running = [k for k in range(len(inits)) if target is None or best[k].max_error > target]
        for gen in range(max_iterations):
            running = [k for k in running if not (gen > 0 and strategies[k].stop())]
            if not running:
                break
            asked = {k: np.asarray(strategies[k].ask()) for k in running}
            candidates = {k: self._candidates(asked[k], inits[k], windows[k], bounds[k]) for k in running}
            batch = [row for k in running for row in candidates[k]]
            owners = np.concatenate([np.full(len(candidates[k]), lanes[k]) for k in running])
            mx, rms, _ = self.score(batch, owners)
            offset = 0
            for k in running:
                count = len(candidates[k])
                m_k, r_k = mx[offset : offset + count], rms[offset : offset + count]
                offset += count
                obj = _objective(m_k, r_k, objective)
                strategies[k].tell(list(asked[k]), obj.tolist())
                i = int(np.argmin(obj))
                if obj[i] < best[k].objective:
                    best[k] = _Best(candidates[k][i], float(m_k[i]), float(r_k[i]), float(obj[i]))
            self.generations += 1
            yield (gen + 1) / max_iterations
            if target is not None:
                running = [k for k in running if best[k].max_error > target]
        return [KnotSearch(b.knots, b.max_error, b.rms) for b in best]

    def cma(
        self,
        n_int: int,
        init: np.ndarray | None,
        objective: str,
        population: int | None,
        max_iterations: int,
        seed: int,
        target: float | None = None,
    ) -> Generator[float, None, KnotSearch]:
        """Single-lane CMA-ES over ``n_int`` knots (uniform start unless ``init`` is given)."""
        if init is None:
            init = np.linspace(0.0, 1.0, n_int + 2)[1:-1]
        results = yield from self.cma_lanes(
            [np.asarray(init, dtype=float)], np.zeros(1, dtype=int), objective, population,
            max_iterations, [seed], target,
        )
        return results[0]


def min_gap(tau: np.ndarray, multiplicity: int = 1) -> float:
    """Closest distinct knots, in tau.

    Every span holds a sample per degree of freedom its key adds (one sample apart for C2 keys,
    two for C1 keys, which carry a value and a slope); closer knots make the least-squares
    problem singular.
    """
    return float(np.median(np.diff(tau))) * (multiplicity - MIN_GAP_SLACK)


def pca(target: np.ndarray, pca_tolerance: float | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Latent scores (N, L) and basis (L, M) of ``target`` (N, M).

    The fewest components whose max abs residual is within ``pca_tolerance``; with None, every
    component that carries signal. Returns ``(target, None)`` when PCA would not reduce.
    """
    n, m = target.shape
    if m == 1:
        return target, None
    u, s, vt = np.linalg.svd(target, full_matrices=False)
    energy = s**2
    if pca_tolerance is None:
        total = energy.sum()
        keep = int(np.searchsorted(np.cumsum(energy), total * (1 - PCA_ENERGY_LOST)) + 1) if total > 0 else 1
    else:
        keep = s.size
        for count in range(1, s.size + 1):
            resid = target - (u[:, :count] * s[:count]) @ vt[:count]
            if np.abs(resid).max() <= pca_tolerance:
                keep = count
                break
    keep = max(1, min(keep, s.size))
    if keep >= m:
        return target, None
    return u[:, :keep] * s[:keep], vt[:keep]


def curvature_knots(problem: KnotProblem, n_int: int) -> np.ndarray:
    """Knots placed so each span holds an equal share of sqrt(|second difference|) of lane 0's
    latent curve: dense where the motion is busy (the usual free-knot heuristic).

    Parameters
    ----------
    problem : KnotProblem
    n_int : int
        Number of internal knots.

    Returns
    -------
    ndarray, shape (n_int,)
        Internal knots in (0, 1), at least ``problem.min_gap`` apart.
    """
    latent = problem.latent[0]
    bend = np.zeros(problem.tau.size)
    if latent.shape[0] >= 3:
        bend[1:-1] = np.linalg.norm(latent[2:] - 2 * latent[1:-1] + latent[:-2], axis=1)
    density = np.sqrt(bend) + DENSITY_FLOOR * (np.sqrt(bend).mean() + DENSITY_MEAN_FLOOR)
    cumulative = np.concatenate([[0.0], np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(problem.tau))])
    cumulative /= cumulative[-1]
    knots = np.interp(np.linspace(0.0, 1.0, n_int + 2)[1:-1], cumulative, problem.tau)
    # keep the minimum spacing the sampler guarantees
    z = problem.knots_to_increments(np.maximum.accumulate(knots))
    return problem.increments_to_knots(z, n_int)[0]


def snap_grid(frames: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Whole frames strictly inside the clip, in tau units.

    Parameters
    ----------
    frames : ndarray, shape (N,)
        Sample frames, increasing.
    tau : ndarray, shape (N,)
        The same normalised to [0, 1].

    Returns
    -------
    ndarray, shape (G,)
    """
    whole = np.arange(np.ceil(frames[0]), np.floor(frames[-1]) + 1)
    whole = whole[(whole > frames[0]) & (whole < frames[-1])]
    return (whole - frames[0]) / (frames[-1] - frames[0])


def snap_knots(internal: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Each knot moved to its nearest grid point; knots that meet merge.

    Parameters
    ----------
    internal : ndarray, shape (n_int,)
        Internal knots in tau.
    grid : ndarray, shape (G,)
        Allowed positions, increasing (:func:`snap_grid`).

    Returns
    -------
    ndarray, shape (<= n_int,)
        Sorted distinct knots on the grid (none for an empty grid).
    """
    if grid.size == 0:
        return np.zeros(0)
    idx = np.clip(np.searchsorted(grid, internal), 1, max(grid.size - 1, 1))
    lo = grid[idx - 1]
    hi = grid[np.minimum(idx, grid.size - 1)]
    snapped = np.where(np.abs(internal - lo) <= np.abs(hi - internal), lo, hi)
    return np.unique(snapped)


# --------------------------------------------------------------------------------------
# Tolerance mode: fewest knots with every sample within tolerance


def _insert_knots(
    problem: KnotProblem, internal: np.ndarray, per_sample: np.ndarray, snap: np.ndarray | None
) -> np.ndarray | None:
    """New knots in the worst spans whose samples break the tolerance; None if none can split.

    Vectorised over the spans (samples are sorted, so each span's samples are one run): a
    loop over spans that scans every sample would make a long clip's insertion quadratic.
    """
    breaks = np.concatenate([[0.0], internal, [1.0]])
    seg = np.clip(np.searchsorted(breaks, problem.tau, side="right") - 1, 0, breaks.size - 2)
    grid = problem.tau if snap is None else snap
    spans, first = np.unique(seg, return_index=True)
    span_worst = np.maximum.reduceat(per_sample, first)
    offending = span_worst > FEASIBLE
    if not offending.any() or grid.size == 0:
        return None
    # the first sample of each span that reaches the span's worst error (np.argmax's choice)
    group = np.searchsorted(spans, seg)
    at_worst = np.flatnonzero(per_sample == span_worst[group])
    _, first_worst = np.unique(seg[at_worst], return_index=True)
    worst = problem.tau[at_worst[first_worst]][offending]
    err = span_worst[offending]
    lo, hi = breaks[spans[offending]], breaks[spans[offending] + 1]
    # halfway between the worst sample and the span centre, on a sample position: spans
    # stay whole numbers of samples, so splitting can go down to a knot on every sample
    # (where the least-squares spline interpolates)
    pos = 0.5 * (worst + 0.5 * (lo + hi))
    first_in = np.searchsorted(grid, lo + problem.min_gap, side="left")
    last_in = np.searchsorted(grid, hi - problem.min_gap, side="right") - 1
    splittable = first_in <= last_in
    right = np.clip(np.searchsorted(grid, pos), first_in, last_in)
    left = np.clip(right - 1, first_in, last_in)
    grid_idx = np.clip(np.where(np.abs(pos - grid[np.clip(left, 0, grid.size - 1)])
                                <= np.abs(grid[np.clip(right, 0, grid.size - 1)] - pos), left, right),
                       0, grid.size - 1)
    err, new_knots = err[splittable], grid[grid_idx[splittable]]
    if err.size == 0:
        return None
    # worst spans first, and only a share of them per round: inserting everywhere at once
    # overshoots, and every surplus knot costs a (much dearer) removal round later
    order = np.lexsort((new_knots, err))[::-1]
    take = max(1, int(np.ceil(err.size * INSERT_FRACTION)))
    return np.sort(np.concatenate([internal, new_knots[order[:take]]]))


def _insert_until_feasible(
    problem: KnotProblem, internal: list[np.ndarray], feasible: np.ndarray, snap: np.ndarray | None
) -> Generator[float, None, None]:
    """Greedy insertion on every lane (in place) until it is within tolerance or cannot split."""
    active = list(range(problem.n_lanes))
    rounds = 0
    while active:
        mx, _, per_sample = problem.score([internal[c] for c in active], np.array(active), samples=True)
        assert per_sample is not None
        still = []
        for k, c in enumerate(active):
            if mx[k] <= FEASIBLE:
                feasible[c] = True
                continue
            grown = _insert_knots(problem, internal[c], per_sample[k], snap)
            if grown is not None:
                internal[c] = grown
                still.append(c)
        active = still
        rounds += 1
        yield min(INSERTION_PROGRESS_MAX, INSERTION_PROGRESS_STEP * rounds)


def _removal_shortlists(
    problem: KnotProblem, internal: list[np.ndarray], lanes: list[int], sizes: list[int]
) -> dict[int, list[int]]:
    """Per lane, the indices of the knots whose removal looks cheapest (at most sizes[k]).

    Cheapest: the smallest jump of the spline's derivative of order degree - multiplicity + 1
    there, times the local span length to that power (the knot-removal criterion).
    """
    out = {c: list(range(internal[c].size)) for c, n in zip(lanes, sizes, strict=True) if internal[c].size <= n}
    todo = [(c, n) for c, n in zip(lanes, sizes, strict=True) if c not in out]
    if not todo:
        return out
    _, ctrl = problem.errors([internal[c] for c, _ in todo], np.array([c for c, _ in todo]))
    order = problem.degree - problem.multiplicity + 1
    for k, (c, n) in enumerate(todo):
        knots = problem.knot_vectors(internal[c][None])[0]
        jumps = knot_jumps(knots, ctrl[k, : knots.size - problem.degree - 1], problem.degree, order, internal[c])
        breaks = np.concatenate([[0.0], internal[c], [1.0]])
        cost = jumps * (breaks[2:] - breaks[:-2]) ** order
        out[c] = sorted(int(i) for i in np.argsort(cost)[:n])
    return out


@dataclass
class _Removal:
    """State of the removal phase of :func:`solve_tolerance`, per lane."""

    removing: list[int]  # lanes still trying to lose a knot
    failures: np.ndarray  # (C,) CMA-ES rescues that did not close the gap
    rescues: np.ndarray  # (C,) CMA-ES rescues spent
    max_rescues: int
    widen: set[int]  # lanes whose shortlist grows next round


def _plan_removals(
    problem: KnotProblem,
    internal: list[np.ndarray],
    state: _Removal,
    snap: np.ndarray | None,
    max_iterations: int,
) -> tuple[dict[int, list[int]], list[_Rescue]]:
    """One round's choices: per lane, well-separated removable knots (best first), or a wider
    shortlist next round, or a CMA-ES rescue of its cheapest removal."""
    removing = state.removing
    shortlist = _removal_shortlists(
        problem,
        internal,
        removing,
        [SHORTLIST_WIDENING * SHORTLIST_SIZE if c in state.widen else SHORTLIST_SIZE for c in removing],
    )
    widened, state.widen = state.widen, set()
    cands = [np.delete(internal[c], i) for c in removing for i in shortlist[c]]
    owners = np.concatenate([np.full(len(shortlist[c]), c) for c in removing])
    mx, rms, _ = problem.score(cands, owners)
    chosen: dict[int, list[int]] = {}
    rescue: list[_Rescue] = []
    offset = 0
    for c in removing:
        idx = np.asarray(shortlist[c])
        n_c = idx.size
        m_c, r_c = mx[offset : offset + n_c], rms[offset : offset + n_c]
        removable = np.flatnonzero(m_c <= FEASIBLE)
        if removable.size:
            picks: list[int] = []
            for i in idx[removable[np.argsort(m_c[removable] + RMS_TIE_BREAK * r_c[removable])]]:
                if all(abs(int(i) - j) > problem.degree + 1 for j in picks):
                    picks.append(int(i))
            chosen[c] = picks
        elif n_c < internal[c].size and c not in widened:
            chosen[c] = []  # nothing on the shortlist: widen it (once) next round
            state.widen.add(c)
        elif snap is None and state.failures[c] < 1 and state.rescues[c] < state.max_rescues and max_iterations > 0:
            state.rescues[c] += 1
            worst = int(np.argmin(m_c + RMS_TIE_BREAK * r_c))
            rescue.append(_Rescue(c, cands[offset + worst], int(idx[worst])))
        offset += n_c
    return chosen, rescue


def _remove_jointly(problem: KnotProblem, internal: list[np.ndarray], chosen: dict[int, list[int]]) -> None:
    """Remove every lane's chosen knots (in place): all at once where that stays within
    tolerance, halving the sets that break it; single removals are known to be feasible."""
    while any(len(p) > 1 for p in chosen.values()):
        trying = [c for c, p in chosen.items() if len(p) > 1]
        ok, _, _ = problem.score([np.delete(internal[c], chosen[c]) for c in trying], np.array(trying))
        for c, good in zip(trying, ok <= FEASIBLE, strict=True):
            if good:
                internal[c] = np.delete(internal[c], chosen.pop(c))
            else:
                chosen[c] = chosen[c][: len(chosen[c]) // 2]
    for c, picks in chosen.items():
        internal[c] = np.delete(internal[c], picks)


def _run_rescues(
    problem: KnotProblem,
    internal: list[np.ndarray],
    rescue: list[_Rescue],
    failures: np.ndarray,
    population: int | None,
    max_iterations: int,
    seed: int,
) -> Generator[float, None, None]:
    """CMA-ES moves the knots around each removed one (RESCUE_WINDOW each side) to close the gap;
    a lane keeps the result when it is within tolerance (in place), else counts a failure."""
    lanes = np.array([r.lane for r in rescue])
    windows = [(max(0, r.gap - RESCUE_WINDOW), min(r.knots.size, r.gap + RESCUE_WINDOW)) for r in rescue]
    results = yield from problem.cma_lanes(
        [r.knots for r in rescue],
        lanes,
        "max",
        population,
        max_iterations,
        [seed + RESCUE_SEED_STRIDE * int(c) + internal[c].size for c in lanes],
        target=FEASIBLE,
        windows=windows,
    )
    for r, found in zip(rescue, results, strict=True):
        if found.max_error <= FEASIBLE:
            internal[r.lane] = np.asarray(found.knots)
        else:
            failures[r.lane] += 1


def solve_tolerance(
    problem: KnotProblem,
    *,
    population: int | None,
    max_iterations: int,
    seed: int,
    snap: np.ndarray | None,
    starts: Sequence[np.ndarray] | None = None,
    max_rescues: int | None = None,
) -> Generator[float, None, ToleranceSolution]:
    """Fewest knots per lane with every sample within tolerance; all lanes advance together.

    1) greedy insertion until feasible; 2) removal of well-separated removable knots (best
    first, halving the set when the joint removal breaks the tolerance); 3) when no single
    removal is feasible, CMA-ES moves the remaining knots to win one back. Removal stops after
    MAX_REMOVAL_ROUNDS rounds, so the cost stays about linear in the samples.

    Parameters
    ----------
    problem : KnotProblem
        The lanes to solve.
    population, max_iterations, seed : int
        CMA-ES settings of the rescues (population None: pycma's default).
    snap : ndarray or None
        Allowed knot positions in tau (whole frames), or None for any sample position.
    starts : sequence of ndarray, optional
        Initial internal knots per lane (default: none).
    max_rescues : int, optional
        CMA-ES rescues per lane (default: a budget of ~RESCUE_BUDGET over all lanes).

    Yields
    ------
    float
        Progress in [0, 1].

    Returns
    -------
    ToleranceSolution
        Internal knots per lane and which lanes are within tolerance.
    """
    n_lanes = problem.n_lanes
    internal = [np.zeros(0) if starts is None else np.asarray(starts[c], dtype=float) for c in range(n_lanes)]
    feasible = np.zeros(n_lanes, dtype=bool)
    yield from _insert_until_feasible(problem, internal, feasible, snap)
    start_total = max(1, sum(internal[c].size for c in range(n_lanes)))
    if max_rescues is None:
        max_rescues = int(np.clip(RESCUE_BUDGET // n_lanes, 1, MAX_RESCUES_PER_LANE))
    state = _Removal(
        removing=[c for c in range(n_lanes) if feasible[c] and internal[c].size > 0],
        failures=np.zeros(n_lanes, dtype=int),
        rescues=np.zeros(n_lanes, dtype=int),
        max_rescues=max_rescues,
        widen=set(),
    )
    for _ in range(MAX_REMOVAL_ROUNDS):
        if not state.removing:
            break
        chosen, rescue = _plan_removals(problem, internal, state, snap, max_iterations)
        progressed = set(chosen)
        _remove_jointly(problem, internal, chosen)
        if rescue:
            yield from _run_rescues(problem, internal, rescue, state.failures, population, max_iterations, seed)
        done = sum(internal[c].size for c in range(n_lanes))
        yield INSERTION_PROGRESS_MAX + (1 - INSERTION_PROGRESS_MAX) * (1 - done / start_total)
        rescued = {r.lane for r in rescue}
        state.removing = [
            c
            for c in state.removing
            if internal[c].size > 0 and (c in progressed or c in rescued) and state.failures[c] < 1
        ]
    return ToleranceSolution(internal, feasible)
