"""Free-knot search for the spline fits of :mod:`anim_signals.splines.fitting`.

Everything works on normalised time ``tau`` in [0, 1] and on data scaled by the tolerances, so
an error of 1.0 is exactly the tolerance. A :class:`KnotProblem` scores many candidate knot
vectors in one vectorised least-squares call; on it:

* CMA-ES over positive knot increments with the constrained sampling of Mukai, "Latent
  Nonuniform Splines for Animation Approximation", §3 (increments clipped at 0 and rescaled to
  span the interval), several independent lanes in lockstep (:meth:`KnotProblem.cma_lanes`);
* the scores every search uses; the fewest knots within tolerance (tolerance mode) is built on
  them in :mod:`.tolerance`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .bspline import LSQ_RIDGE, clamped_knots, lsq_batch, pad_knot_vectors
from .cma_es import BatchedCMAES

__all__ = [
    "FEASIBLE",
    "KnotProblem",
    "KnotSearch",
    "Scores",
    "curvature_knots",
    "snap_grid",
    "snap_knots",
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
# Increments: clipped at 0 plus this, so an all-zero sample still spreads its knots evenly.
INCREMENT_FLOOR = 1e-12
INCREMENT_OFFSET = 1e-6  # increments of given knots stay strictly positive

# Curvature-placed knots: a floor on the bending density, relative to its mean (plus a tiny
# constant, for a straight line), so flat stretches still get their share of knots.
DENSITY_FLOOR = 1e-3
DENSITY_MEAN_FLOOR = 1e-12


# (candidate knot rows, the run of each) -> (max error, RMS) per row, for KnotProblem.cma_lanes
RunScorer = Callable[[list[np.ndarray], np.ndarray], tuple[np.ndarray, np.ndarray]]


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


# The compiled scoring measures through PCA rows of at most this many values (latent x columns);
# bigger ones go to numpy, whose BLAS product beats the kernel's per-sample loop there (a 132-curve
# clip's latent spline, rows of about 30 x 132, took 7.0 s compiled against 0.54 s on numpy).
COMPILED_BASIS_MAX = 16
# Why the compiled spline kernel was given up in this process (empty while it works).
_SCORER_FAILURE: list[str] = []


def compiled_spline_kernel():
    """The module :mod:`.spline_kernel` where the segment test runs compiled in this process, its
    stand-in :attr:`.segment_process.WorkerKernel.spline_kernel` where the segment test runs in a
    worker process (a process where numba must not load), else None (numpy: no numba,
    ``ANIM_SIGNALS_KERNEL=numpy``, or a compiled step that failed here)."""
    if _SCORER_FAILURE:
        return None
    from . import segment_fit

    location = segment_fit.kernel_location()
    if location == "worker":
        return segment_fit._kernel().spline_kernel
    if location != "process":
        return None
    try:
        from . import spline_kernel
    except Exception as exc:  # noqa: BLE001 - an install numba cannot load: numpy runs instead (not retried)
        _SCORER_FAILURE.append(f"{type(exc).__name__}: {exc}")
        return None
    return spline_kernel


def _compiled_scorer():
    """:func:`.spline_kernel.score_candidates` where it runs (:func:`compiled_spline_kernel`), else None."""
    kernel = compiled_spline_kernel()
    return None if kernel is None else kernel.score_candidates


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
        Knot vectors fitted on the whole clip and CMA-ES generations run so far.
    local_evaluations : int
        Knot changes scored by a local refit (:mod:`.local`) so far.
    """

    tau: np.ndarray
    target: np.ndarray
    degree: int
    multiplicity: int
    min_gap: float
    latent: np.ndarray
    basis: np.ndarray | None
    evaluations: int = 0
    local_evaluations: int = 0
    generations: int = 0

    def __post_init__(self) -> None:
        # The data stays as built: read-only views, which a kernel worker process
        # (:mod:`.segment_process`) receives once per fit and names by a token after that.
        views: dict[int, np.ndarray] = {}

        def read_only(array: np.ndarray) -> np.ndarray:
            if id(array) not in views:
                view = np.asarray(array).view()
                view.flags.writeable = False
                views[id(array)] = view
            return views[id(array)]

        self.tau, self.target, self.latent = read_only(self.tau), read_only(self.target), read_only(self.latent)
        if self.basis is not None:
            self.basis = read_only(self.basis)

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
        compiled = _compiled_scorer() if self.basis is None or self.basis.size <= COMPILED_BASIS_MAX else None
        if compiled is not None and internal:
            knots, n_ctrl = pad_knot_vectors(internal, self.degree, self.multiplicity)
            try:
                # (one lane: every candidate fits it, whatever lanes says, as on numpy)
                scores = Scores(*compiled(knots, n_ctrl, self.tau, self.latent,
                                          lanes if self.n_lanes > 1 else np.zeros(len(internal), dtype=np.int64),
                                          self.basis, self.target, self.degree, LSQ_RIDGE, samples))
            except Exception as exc:  # noqa: BLE001 - numpy scores the same, only slower
                _SCORER_FAILURE.append(f"{type(exc).__name__}: {exc}")
                warnings.warn(f"the compiled knot scoring failed ({_SCORER_FAILURE[0]}); scoring on numpy",
                              RuntimeWarning, stacklevel=2)
            else:
                self.evaluations += knots.shape[0]
                return scores
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

    def _searches(
        self,
        starts: list[np.ndarray],
        population: int | None,
        max_iterations: int,
        seeds: Sequence[int],
    ) -> list[tuple[BatchedCMAES, np.ndarray]]:
        """One batched CMA-ES per dimension over the runs' start increments, with the runs (indices
        into ``starts``) it holds: step ``CMA_SIGMA0_FRACTION`` of the mean increment, ``tolx`` a
        fraction of that step."""
        searches = []
        sizes = np.array([start.size for start in starts])
        for size in np.unique(sizes):
            members = np.flatnonzero(sizes == size)
            means = np.stack([starts[k] for k in members])
            sigmas = CMA_SIGMA0_FRACTION * means.mean(axis=1)
            search = BatchedCMAES(
                means, sigmas, [int(seeds[k]) for k in members], popsize=population,
                max_iterations=max_iterations, tolfun=CMA_TOLFUN, tolx=CMA_TOLX_FRACTION * sigmas,
            )
            searches.append((search, members))
        return searches

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
        scorer: RunScorer | None = None,
    ) -> Generator[float, None, list[KnotSearch]]:
        """CMA-ES (:class:`.cma_es.BatchedCMAES`) in lockstep on several lanes, all populations scored together.

        Minimises 'rms' or 'max' (+ RMS tie-break) over each run's knot count (that of its
        init). ``windows[k] = (i0, i1)`` frees only ``inits[k][i0:i1]`` (the others stay put):
        a local, low-dimensional search that converges in a few generations. A run stops early
        once its max error reaches ``target`` (tolerance mode). ``scorer(rows, runs)`` gives the
        max error and RMS of candidate knot rows of runs ``runs`` (default: a fit of the lane's
        whole clip; tolerance mode refits locally).

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
        if scorer is None:
            def scorer(rows: list[np.ndarray], runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                scores = self.score(rows, lanes[runs])
                return scores.max_error, scores.rms
        mx0, rms0 = scorer(list(inits), np.arange(len(inits)))
        best: list[_Best] = []
        for k, init in enumerate(inits):
            obj0 = rms0[k] if objective == "rms" else mx0[k] + RMS_TIE_BREAK * rms0[k]
            best.append(_Best(np.asarray(init, dtype=float), float(mx0[k]), float(rms0[k]), float(obj0)))
        starts = [self.knots_to_increments(init[i0:i1], *bounds[k])
                  for k, (init, (i0, i1)) in enumerate(zip(inits, windows, strict=True))]
        searches = self._searches(starts, population, max_iterations, seeds)
        running = np.ones(len(inits), dtype=bool)
        if target is not None:
            running &= np.array([b.max_error > target for b in best], dtype=bool)
        for gen in range(max_iterations):
            for search, members in searches:
                running[members] &= ~search.stopped
            if not running.any():
                break
            asked: list[tuple[BatchedCMAES, np.ndarray, np.ndarray, np.ndarray]] = []
            for search, members in searches:
                local = np.flatnonzero(running[members])
                if local.size:
                    asked.append((search, local, members[local], search.ask(local)))
            candidates = {int(k): self._candidates(samples, inits[k], windows[k], bounds[k])
                          for _, _, ks, xs in asked for k, samples in zip(ks, xs, strict=True)}
            order = [int(k) for _, _, ks, _ in asked for k in ks]
            batch = [row for k in order for row in candidates[k]]
            runs = np.concatenate([np.full(len(candidates[k]), k) for k in order])
            mx, rms = scorer(batch, runs)
            obj = _objective(mx, rms, objective)
            offset = 0
            for search, local, ks, _ in asked:
                count = ks.size * search.popsize
                search.tell(local, obj[offset : offset + count].reshape(ks.size, search.popsize))
                offset += count
            offset = 0
            for k in order:
                count = len(candidates[k])
                o_k = obj[offset : offset + count]
                i = int(np.argmin(o_k))
                if o_k[i] < best[k].objective:
                    best[k] = _Best(candidates[k][i], float(mx[offset + i]), float(rms[offset + i]), float(o_k[i]))
                offset += count
            self.generations += 1
            yield (gen + 1) / max_iterations
            if target is not None:
                running &= np.array([b.max_error > target for b in best], dtype=bool)
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
