"""CMA-ES for many independent runs at once: every run of one dimension steps in the same numpy calls.

The algorithm and its default parameters are those of Hansen, "The CMA Evolution Strategy: A
Tutorial" (arXiv:1604.00772; Table 1 and Appendix A, with the revised rank-mu rate's 1/4 term that
pycma also uses): weighted recombination with negative (active) weights for the worse half,
cumulative step-size adaptation, rank-one and rank-mu covariance updates, and the covariance
decomposed afresh only every ``popsize / (c_1 + c_mu) / n / 10`` generations above
``LAZY_EIGEN_DIMENSION`` (the tutorial's O(n^2) schedule; every generation below it, where the
batched decomposition costs little). pycma (Hansen's library) runs the same algorithm one run at a time; its
bookkeeping (an archive of every sampled solution, option parsing, boundary and integer handling)
costs 1.5-2 ms a generation, more than the whole knot scoring of the seed's 1D setting (101
samples, population 100, 12 generations). Here a generation of R runs is a few batched numpy
calls: sampling, sorting, the updates and one batched eigendecomposition.

The knot searches (:meth:`.knots.KnotProblem.cma_lanes`) step all their runs together: the
per-curve spline modes start hundreds of small runs, each of which cost pycma a constructor (about
5 ms) before its first sample. ``tests/core/test_cma_es.py`` holds it against pycma.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["BatchedCMAES", "CMAParameters"]

# pycma's defaults for the stopping rules this module implements
FLAT_FITNESS_ITERATIONS = 1  # pycma's 'tolflatfitness': generations with a flat population tolerated
FLAT_FITNESS_QUANTILE = 0.75  # flat: the best value equals the one at this rank
TOL_UP_SIGMA = 1e20  # pycma's 'tolupsigma': a step this many times the first one ends the run
RANK_MU_OFFSET = 0.25  # the revised tutorial's and pycma's 1/4 in the rank-mu learning rate
LAZY_EIGEN_DIMENSION = 40  # above this many coordinates the covariance is decomposed lazily
HSIG_THRESHOLD = 1.4  # Hansen's tutorial, (1.4 + 2 / (n + 1)) E||N(0, I)||
EIGENVALUE_FLOOR = 1e-300  # a covariance eigenvalue rounded below zero counts as this


@dataclass(frozen=True)
class CMAParameters:
    """Strategy parameters of one CMA-ES run (Hansen's tutorial, Table 1).

    Attributes
    ----------
    dimension : int
        n, the number of coordinates searched.
    popsize : int
        lambda, samples per generation.
    mu : int
        Samples recombined into the mean (the better half).
    weights : ndarray, shape (popsize,)
        Recombination weights: positive for the first ``mu`` (sum 1), negative after.
    mueff : float
        Variance-effective selection mass of the positive weights.
    c_sigma, d_sigma : float
        Step-size cumulation and damping.
    c_c, c_1, c_mu : float
        Covariance path cumulation, rank-one and rank-mu learning rates.
    chi_n : float
        E||N(0, I)||, the expected length of a standard normal vector in ``dimension``.
    """

    dimension: int
    popsize: int
    mu: int
    weights: np.ndarray
    mueff: float
    c_sigma: float
    d_sigma: float
    c_c: float
    c_1: float
    c_mu: float
    chi_n: float

    @classmethod
    def default(cls, dimension: int, popsize: int | None = None) -> CMAParameters:
        """The tutorial's defaults for ``dimension`` and ``popsize`` (default 4 + floor(3 ln n)).

        Raises
        ------
        ValueError
            If ``dimension < 1`` or ``popsize < 2``.

        Examples
        --------
        >>> p = CMAParameters.default(5)
        >>> p.popsize, p.mu, round(float(p.weights[: p.mu].sum()), 12), round(p.c_mu, 4)
        (8, 4, 1.0, 0.0479)
        """
        n = int(dimension)
        if n < 1:
            raise ValueError(f"CMA-ES needs at least one dimension, got {dimension}")
        lam = int(popsize) if popsize else 4 + int(3 * np.log(n))
        if lam < 2:
            raise ValueError(f"CMA-ES needs a population of at least 2, got {popsize}")
        mu = lam // 2
        raw = np.log((lam + 1) / 2) - np.log(np.arange(1, lam + 1))
        positive, negative = raw[:mu], raw[mu:]
        mueff = positive.sum() ** 2 / (positive**2).sum()
        alpha_cov = 2.0
        c_1 = alpha_cov / ((n + 1.3) ** 2 + mueff)
        c_mu = min(1 - c_1, alpha_cov * (RANK_MU_OFFSET + mueff - 2 + 1 / mueff)
                   / ((n + 2) ** 2 + alpha_cov * mueff / 2))
        weights = np.empty(lam)
        weights[:mu] = positive / positive.sum()
        negative_mass = np.abs(negative[negative < 0]).sum()
        if negative_mass > 0:
            mueff_minus = negative.sum() ** 2 / (negative**2).sum()
            scale = min(
                1 + c_1 / c_mu,  # alpha_mu^-
                1 + 2 * mueff_minus / (mueff + 2),  # alpha_mueff^-
                (1 - c_1 - c_mu) / (n * c_mu),  # alpha_posdef^-
            )
            weights[mu:] = scale * negative / negative_mass
        else:
            weights[mu:] = 0.0
        c_sigma = (mueff + 2) / (n + mueff + 5)
        d_sigma = 1 + 2 * max(0.0, np.sqrt((mueff - 1) / (n + 1)) - 1) + c_sigma
        c_c = (4 + mueff / n) / (n + 4 + 2 * mueff / n)
        chi_n = np.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n**2))
        weights.setflags(write=False)
        return cls(n, lam, mu, weights, float(mueff), float(c_sigma), float(d_sigma), float(c_c),
                   float(c_1), float(c_mu), float(chi_n))


class BatchedCMAES:
    """R independent CMA-ES runs of one dimension, asked and told together.

    Each run has its own start, step size, seed and stopping state; a run's samples depend only on
    its own seed and history, never on which other runs share the batch. The caller picks the runs
    of each generation (``runs``): a run it stops asking for is simply left where it is.

    Parameters
    ----------
    means : array_like, shape (R, n)
        Start points.
    sigmas : array_like, shape (R,)
        Start step sizes (> 0).
    seeds : sequence of int, length R
        One seed per run (any integers; equal seeds give equal runs).
    popsize : int, optional
        Samples per generation (default 4 + floor(3 ln n)).
    max_iterations : int
        Generations after which a run stops.
    tolfun : float
        A run stops once both its current population's values and its best values over the last
        ``10 + ceil(30 n / popsize)`` generations span less than this (pycma's ``tolfun``).
    tolx : float or array_like, shape (R,)
        A run stops once ``sigma * sqrt(C_ii)`` and ``sigma * |p_c|`` are below this in every
        coordinate (pycma's ``tolx``; pycma compares ``p_c`` signed). A run also stops once its step
        exceeds ``TOL_UP_SIGMA`` times its first (pycma's ``tolupsigma``).

    Attributes
    ----------
    mean : ndarray, shape (R, n)
    sigma : ndarray, shape (R,)
    stopped : ndarray of bool, shape (R,)
        Runs that met a stopping rule (maximum generations, tolfun, tolx, flat fitness, or a
        covariance that is no longer finite).
    iterations : ndarray of int, shape (R,)
        Generations told per run.

    Examples
    --------
    >>> es = BatchedCMAES(np.full((3, 2), 3.0), np.ones(3), seeds=[1, 2, 3], max_iterations=200)
    >>> while not es.stopped.all():
    ...     runs = np.flatnonzero(~es.stopped)
    ...     x = es.ask(runs)
    ...     es.tell(runs, (x**2).sum(axis=2))
    >>> bool(np.abs(es.mean).max() < 1e-3)
    True
    """

    def __init__(
        self,
        means: np.ndarray,
        sigmas: np.ndarray,
        seeds: Sequence[int],
        popsize: int | None = None,
        max_iterations: int = 100,
        tolfun: float = 1e-11,
        tolx: float | np.ndarray = 1e-11,
    ) -> None:
        self.mean = np.array(means, dtype=float, ndmin=2)
        count, n = self.mean.shape
        self.sigma = np.array(sigmas, dtype=float).reshape(count)
        if len(seeds) != count:
            raise ValueError(f"one seed per run: {count} runs, {len(seeds)} seeds")
        self.params = CMAParameters.default(n, popsize)
        self.max_iterations = int(max_iterations)
        self.tolfun = float(tolfun)
        self.tolx = np.broadcast_to(np.asarray(tolx, dtype=float), (count,)).copy()
        self.history_length = int(10 + 30 * n / self.params.popsize)  # pycma's length of the best-value history
        p = self.params
        self.eigen_interval = (max(1, int(p.popsize / (p.c_1 + p.c_mu) / n / 10))
                               if n > LAZY_EIGEN_DIMENSION else 1)
        self.sigma0 = self.sigma.copy()
        self._eigen_iteration = np.zeros(count, dtype=int)
        self._rngs = [np.random.default_rng(int(s) % 2**64) for s in seeds]
        self.cov = np.broadcast_to(np.eye(n), (count, n, n)).copy()
        self.axes = self.cov.copy()  # B: eigenvectors of C, columns
        self.scales = np.ones((count, n))  # D: square roots of C's eigenvalues
        self.path_sigma = np.zeros((count, n))
        self.path_c = np.zeros((count, n))
        self.iterations = np.zeros(count, dtype=int)
        self.stopped = np.zeros(count, dtype=bool)
        self._flat = np.zeros(count, dtype=int)
        self._best_history = np.full((count, self.history_length), np.nan)
        self._normal: np.ndarray | None = None
        self._asked: np.ndarray | None = None

    @property
    def popsize(self) -> int:
        return self.params.popsize

    def ask(self, runs: np.ndarray) -> np.ndarray:
        """A generation of samples (len(runs), popsize, n) for the given runs (indices into R)."""
        runs = np.asarray(runs, dtype=int)
        if np.unique(runs).size != runs.size:
            raise ValueError("ask() takes each run once")
        n, lam = self.params.dimension, self.params.popsize
        normal = np.empty((runs.size, lam, n))
        for i, run in enumerate(runs):
            normal[i] = self._rngs[run].standard_normal((lam, n))
        # y = B D z, one row per sample
        steps = np.einsum("rkj,rij->rki", normal * self.scales[runs, None, :], self.axes[runs])
        self._normal, self._asked = normal, runs
        return self.mean[runs, None, :] + self.sigma[runs, None, None] * steps

    def tell(self, runs: np.ndarray, values: np.ndarray) -> None:
        """Update the runs asked last from their samples' values (len(runs), popsize); lower is better.

        NaN ranks last. Raises ValueError if ``runs`` are not those of the last :meth:`ask`.
        """
        runs = np.asarray(runs, dtype=int)
        if self._asked is None or not np.array_equal(runs, self._asked):
            raise ValueError("tell() needs the runs of the last ask()")
        p = self.params
        values = np.asarray(values, dtype=float).reshape(runs.size, p.popsize)
        ranked_values = np.where(np.isnan(values), np.inf, values)
        order = np.argsort(ranked_values, axis=1, kind="stable")
        normal = np.take_along_axis(self._normal, order[:, :, None], axis=1)
        ranked_values = np.take_along_axis(ranked_values, order, axis=1)
        self._normal = self._asked = None

        axes, scales, sigma = self.axes[runs], self.scales[runs], self.sigma[runs]
        steps = np.einsum("rkj,rij->rki", normal * scales[:, None, :], axes)  # y, ranked
        positive = p.weights[: p.mu]
        step_mean = np.einsum("k,rki->ri", positive, steps[:, : p.mu])
        # C^(-1/2) y = B z: the whitened mean step without inverting C
        whitened_mean = np.einsum("rij,rj->ri", axes, np.einsum("k,rkj->rj", positive, normal[:, : p.mu]))
        mean = self.mean[runs] + sigma[:, None] * step_mean

        generation = self.iterations[runs] + 1
        path_sigma = (1 - p.c_sigma) * self.path_sigma[runs] + np.sqrt(
            p.c_sigma * (2 - p.c_sigma) * p.mueff) * whitened_mean
        path_norm = np.linalg.norm(path_sigma, axis=1)
        h_sigma = (path_norm / np.sqrt(1 - (1 - p.c_sigma) ** (2 * generation))
                   < (HSIG_THRESHOLD + 2 / (p.dimension + 1)) * p.chi_n)
        path_c = (1 - p.c_c) * self.path_c[runs] + (
            h_sigma * np.sqrt(p.c_c * (2 - p.c_c) * p.mueff))[:, None] * step_mean

        # negative weights act on directions rescaled to length sqrt(n) in the whitened space
        weights = np.broadcast_to(p.weights, (runs.size, p.popsize)).copy()
        squared = np.maximum((normal[:, p.mu :] ** 2).sum(axis=2), EIGENVALUE_FLOOR)
        weights[:, p.mu :] *= p.dimension / squared
        rank_mu = np.matmul(np.swapaxes(steps * weights[:, :, None], 1, 2), steps)  # sum_k w_k y_k y_k^T
        rank_one = path_c[:, :, None] * path_c[:, None, :]
        lost = (1 - h_sigma) * p.c_c * (2 - p.c_c)
        decay = 1 + p.c_1 * lost - p.c_1 - p.c_mu * p.weights.sum()
        cov = decay[:, None, None] * self.cov[runs] + p.c_1 * rank_one + p.c_mu * rank_mu
        cov = (cov + np.swapaxes(cov, 1, 2)) / 2

        # flat fitness (the best sample no better than the one at the 75 % rank), as pycma:
        # a run stops after FLAT_FITNESS_ITERATIONS + 1 such generations in a row
        flat = ranked_values[:, 0] == ranked_values[:, int(FLAT_FITNESS_QUANTILE * p.popsize)]
        sigma = sigma * np.exp(p.c_sigma / p.d_sigma * (path_norm / p.chi_n - 1))

        finite = np.isfinite(cov).all(axis=(1, 2)) & np.isfinite(sigma) & np.isfinite(mean).all(axis=1)
        # a run whose update is not finite keeps its last state and stops (below)
        due = finite & (generation - self._eigen_iteration[runs] >= self.eigen_interval)
        if due.any():
            eigenvalues, eigenvectors = np.linalg.eigh(cov[due])
            axes[due] = eigenvectors
            scales[due] = np.sqrt(np.maximum(eigenvalues, EIGENVALUE_FLOOR))
            self._eigen_iteration[runs[due]] = generation[due]
        self.mean[runs] = np.where(finite[:, None], mean, self.mean[runs])
        self.cov[runs] = np.where(finite[:, None, None], cov, self.cov[runs])
        self.axes[runs] = axes
        self.scales[runs] = scales
        self.sigma[runs] = np.where(finite, sigma, self.sigma[runs])
        self.path_sigma[runs] = path_sigma
        self.path_c[runs] = path_c
        self.iterations[runs] = generation
        self._flat[runs] = np.where(flat, self._flat[runs] + 1, 0)

        history = np.roll(self._best_history[runs], 1, axis=1)
        history[:, 0] = ranked_values[:, 0]
        self._best_history[runs] = history
        self.stopped[runs] |= self._stops(runs, ranked_values, history, finite)

    def _stops(self, runs: np.ndarray, ranked_values: np.ndarray, history: np.ndarray, finite: np.ndarray) -> np.ndarray:
        """pycma's stopping rules that can end a short run: maxiter, tolfun, tolx, tolflatfitness,
        tolupsigma; and a run whose update was not finite."""
        with np.errstate(invalid="ignore"):
            current_range = ranked_values[:, -1] - ranked_values[:, 0]
            historic_range = np.nanmax(history, axis=1) - np.nanmin(history, axis=1)
            tolfun = (current_range < self.tolfun) & (historic_range < self.tolfun)
        spread = self.sigma[runs, None] * np.sqrt(np.maximum(np.diagonal(self.cov[runs], axis1=1, axis2=2), 0.0))
        path = self.sigma[runs, None] * np.abs(self.path_c[runs])
        tol = self.tolx[runs, None]
        tolx = (spread < tol).all(axis=1) & (path < tol).all(axis=1)
        return (
            (self.iterations[runs] >= self.max_iterations)
            | tolfun
            | tolx
            | (self._flat[runs] > FLAT_FITNESS_ITERATIONS)
            | (self.sigma[runs] > TOL_UP_SIGMA * self.sigma0[runs])
            | ~finite
        )
