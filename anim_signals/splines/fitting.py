"""Latent nonuniform spline fitting with a max-error guarantee.

The method of Mukai, "Latent Nonuniform Splines for Animation Approximation", §3: PCA of the
channels, then one cubic B-spline with free internal knots in the latent space; control points
by least squares for each candidate knot vector and the knots by CMA-ES over positive knot
increments (constrained sampling: increments clipped at 0 and rescaled to span the clip).
Every CMA-ES generation is scored in one vectorised call (:mod:`.knots`).

Beyond the paper, for animators:

* tolerance mode: every original sample ends within a per-channel tolerance, with the fewest
  knots we can find (greedy knot insertion until feasible, then knot removal, each removal
  rescued by CMA-ES when plain removal breaks the tolerance);
* per-channel mode (each F-curve its own knots) and AUTO (whichever writes fewer keys);
* C1 keys (double knots: every key its own slope, like a hand-made Bezier key);
* knots snapped to whole frames.

All errors are measured on the original samples in the channel's own units.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, TypeVar

import numpy as np

from .bezier import hermite_keys, prune_keys, repair_keys
from .bspline import BezierCurve, clamped_knots, constant_curve, evaluate, lsq_batch, spline_to_bezier
from .knots import FEASIBLE, KnotProblem, curvature_knots, snap_grid, snap_knots, solve_tolerance

__all__ = [
    "ChannelsFit",
    "FitCancelled",
    "SplineModel",
    "distortion",
    "fit_channels",
    "fit_latent_spline",
    "fit_uniform_spline",
    "interpolating_curve",
    "iter_fit_channels",
]

Progress = Callable[[float], "bool | None"]

# Mukai's CMA-ES settings for a fixed knot count.
DEFAULT_POPULATION = 100
DEFAULT_KNOT_ITERATIONS = 100
# CMA-ES generations per rescue in tolerance mode (fit_latent_spline / fit_channels).
DEFAULT_TOLERANCE_ITERATIONS = 60
DEFAULT_CHANNEL_ITERATIONS = 20
# Tolerance mode fits in PCA space while the PCA residual stays within this share of the
# tolerance: the spline gets the rest.
PCA_RESIDUAL_SHARE = 0.25
# A fixed knot count is capped just below what min_gap allows on [0, 1].
KNOT_COUNT_MARGIN = 1e-9
# Knots within this (relative to the clip length) of a sample are put exactly on it.
ON_SAMPLE_TOLERANCE = 1e-9
# within_tolerance allows this relative excess (float32 keys, rounding of the repair).
TOLERANCE_SLACK = 1e-6
FREE_HANDLES_PROGRESS = 0.99

MODES = ("AUTO", "LATENT", "PER_CHANNEL")
# Knot multiplicities tried per continuity: 1 = simple knots (C2), 2 = double knots (C1 keys).
MULTIPLICITIES: dict[str, tuple[int, ...]] = {"C2": (1,), "C1": (2,), "AUTO": (1, 2)}

_T = TypeVar("_T")


class FitCancelled(Exception):
    """Raised when the progress callback asks to stop; nothing has been written."""


def distortion(values: np.ndarray, approx: np.ndarray) -> float:
    """Distortion E_D in percent: ``100 * ||Y - Y~|| / ||Y - mean(Y)||``.

    Mukai, "Latent Nonuniform Splines for Animation Approximation", eq. 5 (after Karni and
    Gotsman).

    Parameters
    ----------
    values : ndarray, shape (N, M) or (N,)
        Original samples.
    approx : ndarray, same size as ``values``
        Approximation at the same samples.

    Returns
    -------
    float
        E_D in percent; 0 for a constant original matched exactly, inf for a constant original
        missed.
    """
    values = np.asarray(values, dtype=float).reshape(len(values), -1)
    approx = np.asarray(approx, dtype=float).reshape(len(values), -1)
    denom = float(((values - values.mean(axis=0)) ** 2).sum())
    num = float(((values - approx) ** 2).sum())
    if denom <= 0.0:
        return 0.0 if num <= 0.0 else float("inf")
    return 100.0 * float(np.sqrt(num / denom))


@dataclass(frozen=True)
class SplineModel:
    """A fitted B-spline over frames; plain arrays, so it can be stored and restored.

    Attributes
    ----------
    knots : ndarray, shape (K + degree + 1,)
        Full clamped knot vector, in frames.
    control_points : ndarray, shape (K, M)
        Control points in the channels' units.
    degree : int
        Polynomial degree (1-3).
    rms : float
        ``sqrt(mean over frames of ||y_n - y~_n||^2)`` (Mukai's eq. 4 in data space).
    max_error : float
        Max abs error over every sample and channel, in channel units.
    n_components : int
        PCA components the knots were optimised in (0: none).
    iterations : int
        CMA-ES generations spent.
    """

    knots: np.ndarray
    control_points: np.ndarray
    degree: int
    rms: float
    max_error: float
    n_components: int = 0
    iterations: int = 0

    def evaluate(self, frames: np.ndarray) -> np.ndarray:
        """Values (N, M) at ``frames`` (N,); frames outside the knot range are clamped."""
        return evaluate(self.knots, self.control_points, np.asarray(frames, dtype=float), self.degree)

    def distortion(self, values: np.ndarray, frames: np.ndarray | None = None) -> float:
        """E_D (percent) against ``values`` (N, M) at ``frames`` (default: evenly over the knots)."""
        values = np.asarray(values, dtype=float).reshape(len(values), -1)
        if frames is None:
            frames = np.linspace(self.knots[0], self.knots[-1], len(values))
        return distortion(values, self.evaluate(frames))

    @property
    def internal_knots(self) -> np.ndarray:
        """Internal knots, in frames (repeated for C1 keys)."""
        return self.knots[self.degree + 1 : -(self.degree + 1)]

    @property
    def n_keys(self) -> int:
        """Bezier keys per channel: one per distinct knot."""
        return int(np.unique(self.knots).size)

    def to_bezier(self) -> list[BezierCurve]:
        """Exact Bezier keys, one curve per channel (see :func:`.bspline.spline_to_bezier`)."""
        return spline_to_bezier(self.knots, self.control_points, self.degree)


@dataclass(frozen=True)
class ChannelsFit:
    """The keys to write for every channel and how well they match the original samples.

    Attributes
    ----------
    curves : list of BezierCurve
        One per channel, in input order.
    mode_used : str
        ``'LATENT'`` or ``'PER_CHANNEL'``.
    max_abs_error, rms_error : ndarray, shape (M,)
        Per channel, in channel units, over the original samples.
    distortion : float
        E_D in percent over all channels (:func:`distortion`).
    within_tolerance : bool
        Every sample within its channel's tolerance.
    knot_counts : ndarray of int, shape (M,)
        Keys per channel.
    """

    curves: list[BezierCurve]
    mode_used: str
    max_abs_error: np.ndarray
    rms_error: np.ndarray
    distortion: float
    within_tolerance: bool
    knot_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))

    @property
    def n_keys(self) -> int:
        """Keys over all channels."""
        return int(sum(c.n_keys for c in self.curves))

    def evaluate(self, frames: np.ndarray) -> np.ndarray:
        """Values (N, M) of every channel's keys at ``frames`` (N,), as Blender evaluates them."""
        frames = np.asarray(frames, dtype=float)
        return np.column_stack([c.evaluate(frames) for c in self.curves])


# --------------------------------------------------------------------------------------
# Input checks and the final least-squares fit


class _Samples(NamedTuple):
    values: np.ndarray  # (N, M)
    frames: np.ndarray  # (N,) strictly increasing
    tau: np.ndarray  # (N,) frames normalised to [0, 1]


class _FinalFit(NamedTuple):
    knots: np.ndarray  # full knot vector in frames
    control_points: np.ndarray  # (K, M) in tolerance units


def _prepare(values: np.ndarray, frames: np.ndarray | None) -> _Samples:
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2:
        raise ValueError("values must be (frames, channels)")
    n = values.shape[0]
    frames = np.arange(n, dtype=float) if frames is None else np.asarray(frames, dtype=float)
    if frames.shape != (n,):
        raise ValueError(f"frames has shape {frames.shape}, expected ({n},)")
    if n >= 2 and np.any(np.diff(frames) <= 0):
        raise ValueError("frames must be strictly increasing")
    if not np.all(np.isfinite(values)):
        raise ValueError("values contain NaN or infinite samples")
    span = frames[-1] - frames[0] if n >= 2 else 1.0
    tau = (frames - frames[0]) / span
    return _Samples(values, frames, tau)


def _check_degree(degree: int, n: int) -> None:
    if degree not in (1, 2, 3):
        raise ValueError("degree must be 1, 2 or 3 (Blender keys are cubic Bezier segments)")
    if n < degree + 1:
        raise ValueError(f"need at least {degree + 1} samples for a degree-{degree} spline, got {n}")


def _put_on_samples(knots_frames: np.ndarray, sample_frames: np.ndarray, span: float) -> None:
    """Knots placed on samples come back as frame + 1e-14: put them exactly on the frame (in place)."""
    nearest = sample_frames[np.clip(np.searchsorted(sample_frames, knots_frames), 0, sample_frames.size - 1)]
    on_sample = np.abs(nearest - knots_frames) <= ON_SAMPLE_TOLERANCE * max(span, 1.0)
    knots_frames[on_sample] = nearest[on_sample]


def _final_fit(
    problem: KnotProblem, internal: np.ndarray, frames0: float, span: float, snapped: bool = False, lane: int = 0
) -> _FinalFit:
    """Knots in frames and control points (K, M) in tolerance units, refitted on all channels."""
    knots = problem.knot_vectors(internal[None])
    target = problem.target[lane]
    ctrl_full, fit_full, _ = lsq_batch(knots, problem.tau, target, problem.degree)
    assert fit_full is not None
    ctrl = ctrl_full[0]
    if problem.basis is not None:
        # the latent fit can beat the full refit in max norm; keep whichever is tighter
        err_latent, ctrl_latent = problem.errors(internal[None])
        if np.abs(err_latent).max() < np.abs(fit_full[0] - target).max():
            ctrl = ctrl_latent[0] @ problem.basis
    knots_frames = frames0 + span * knots[0]
    _put_on_samples(knots_frames, frames0 + span * problem.tau, span)
    if snapped:
        inner = slice(problem.degree + 1, -(problem.degree + 1))
        knots_frames[inner] = np.round(knots_frames[inner])
    return _FinalFit(knots_frames, ctrl)


def _model_from(
    values: np.ndarray, frames: np.ndarray, knots: np.ndarray, ctrl: np.ndarray, degree: int, **extra: int
) -> SplineModel:
    fitted = evaluate(knots, ctrl, frames, degree)
    err = fitted - values
    return SplineModel(
        knots=knots,
        control_points=ctrl,
        degree=degree,
        rms=float(np.sqrt((err**2).sum(axis=1).mean())),
        max_error=float(np.abs(err).max()),
        **extra,
    )


def _drain(gen: Generator[float, None, _T]) -> _T:
    """Run a progress generator to the end; its return value."""
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


# --------------------------------------------------------------------------------------
# One spline for all channels: fixed knot count (Mukai) or tolerance


def _latent_tolerances(max_error: Any, m: int) -> np.ndarray:
    if max_error is None:
        return np.ones(m)
    tol = np.broadcast_to(np.asarray(max_error, dtype=float), (m,)).copy()
    if np.any(tol <= 0):
        raise ValueError("max_error must be positive")
    return tol


def _scaled_pca_tolerance(pca_tolerance: float | None, max_error: Any, tol: np.ndarray) -> float | None:
    """The PCA residual allowed, in tolerance units."""
    if pca_tolerance is not None:
        return pca_tolerance if max_error is None else pca_tolerance / float(tol.min())
    return PCA_RESIDUAL_SHARE if max_error is not None else None


def _fixed_count_knots(
    problem: KnotProblem, internal_knots: int, population: int | None, max_iterations: int | None, seed: int
) -> np.ndarray:
    """Mukai's fit: ``internal_knots`` knots placed by CMA-ES for the least RMS."""
    max_int = int((1.0 - KNOT_COUNT_MARGIN) / problem.min_gap) - 1
    n_int = max(0, min(int(internal_knots), max_int))
    if n_int == 0:
        return np.zeros(0)
    # start from whichever is better: even knots, or knots that share the curve's bending equally
    starts = [np.linspace(0.0, 1.0, n_int + 2)[1:-1], curvature_knots(problem, n_int)]
    start_rms = problem.score(starts).rms
    init = starts[int(np.argmin(start_rms))]
    search = problem.cma(
        n_int, init, "rms", population or DEFAULT_POPULATION, max_iterations or DEFAULT_KNOT_ITERATIONS, seed
    )
    return _drain(search).knots


def fit_latent_spline(
    values: np.ndarray,
    frames: np.ndarray | None = None,
    *,
    internal_knots: int | None = None,
    max_error: float | Sequence[float] | np.ndarray | None = None,
    degree: int = 3,
    population: int | None = None,
    max_iterations: int | None = None,
    seed: int = 0,
    pca_tolerance: float | None = None,
    multiplicity: int = 1,
    snap_to_frames: bool = False,
) -> SplineModel:
    """Fit one B-spline with shared free knots to all channels.

    Mukai, "Latent Nonuniform Splines for Animation Approximation", §3: PCA of the channels,
    one B-spline in the latent space, control points by least squares, knots by CMA-ES.

    Parameters
    ----------
    values : ndarray, shape (N, M) or (N,)
        Dense samples, one column per channel, in the channels' own units.
    frames : ndarray, shape (N,), optional
        Strictly increasing sample times in frames (default ``0 .. N-1``).
    internal_knots : int, optional
        The paper's setting: this many internal knots placed by CMA-ES for the least RMS
        (population defaults to the paper's 100). Capped by the sample spacing.
    max_error : float or array_like of shape (M,), optional
        Tolerance per channel (channel units): the fewest knots that keep every sample within
        it. Takes precedence over ``internal_knots``.
    degree : {1, 2, 3}
        Polynomial degree.
    population : int, optional
        CMA-ES population size (default: 100 for ``internal_knots``, pycma's otherwise).
    max_iterations : int, optional
        CMA-ES generations (default 100 for ``internal_knots``, 60 per rescue for ``max_error``).
    seed : int
        Seed of CMA-ES's sampling: equal inputs and seed give equal knots.
    pca_tolerance : float, optional
        Max abs PCA residual (channel units) that decides the number of latent components
        (default: all components for ``internal_knots``, a quarter of the tolerance otherwise).
    multiplicity : {1, 2}
        2 doubles every internal knot (C1 keys with their own slopes).
    snap_to_frames : bool
        Put the knots on whole frames.

    Returns
    -------
    SplineModel
        Knots in frames, control points (K, M), RMS and max error over the samples.

    Raises
    ------
    ValueError
        When neither ``internal_knots`` nor ``max_error`` is given; on a non-positive
        tolerance, NaN / infinite values, frames not strictly increasing or of the wrong
        shape, a degree outside 1-3 or fewer than ``degree + 1`` samples.

    Examples
    --------
    >>> import numpy as np
    >>> frames = np.arange(61.0)
    >>> values = np.column_stack([np.sin(frames / 8), 2 * np.cos(frames / 5)])
    >>> model = fit_latent_spline(values, frames, max_error=0.01)
    >>> bool(model.max_error <= 0.01), model.control_points.shape[1]
    (True, 2)
    >>> model.evaluate([0.0, 60.0]).shape
    (2, 2)
    >>> model = fit_latent_spline(values[:, :1], frames, internal_knots=4, max_iterations=10)
    >>> model.internal_knots.size, model.n_keys
    (4, 6)
    """
    values, frames, tau = _prepare(values, frames)
    _check_degree(degree, values.shape[0])
    if internal_knots is None and max_error is None:
        raise ValueError("give internal_knots (fixed count) or max_error (tolerance)")
    tol = _latent_tolerances(max_error, values.shape[1])
    mean = values.mean(axis=0)
    target = (values - mean) / tol
    pca_scaled = _scaled_pca_tolerance(pca_tolerance, max_error, tol)
    problem = KnotProblem.build(tau, target, degree, multiplicity, pca_scaled)
    span = frames[-1] - frames[0]
    if max_error is None:
        assert internal_knots is not None
        internal = _fixed_count_knots(problem, internal_knots, population, max_iterations, seed)
    else:
        snap = snap_grid(frames, tau) if snap_to_frames else None
        iterations = max_iterations or DEFAULT_TOLERANCE_ITERATIONS
        solution = solve_tolerance(problem, population=population, max_iterations=iterations, seed=seed, snap=snap)
        internal = _drain(solution).internal[0]
    if snap_to_frames and internal.size:
        internal = snap_knots(internal, snap_grid(frames, tau))
    knots, ctrl = _final_fit(problem, internal, frames[0], span, snapped=snap_to_frames)
    ctrl = ctrl * tol + mean
    n_components = 0 if problem.basis is None else problem.basis.shape[0]
    return _model_from(values, frames, knots, ctrl, degree, n_components=n_components, iterations=problem.generations)


def fit_uniform_spline(
    values: np.ndarray, frames: np.ndarray | None = None, *, internal_knots: int, degree: int = 3
) -> SplineModel:
    """The baseline: the same spline with evenly spaced internal knots, by least squares.

    Parameters
    ----------
    values : ndarray, shape (N, M) or (N,)
        Dense samples in channel units.
    frames : ndarray, shape (N,), optional
        Strictly increasing sample times in frames (default ``0 .. N-1``).
    internal_knots : int
        Number of evenly spaced internal knots.
    degree : {1, 2, 3}
        Polynomial degree.

    Returns
    -------
    SplineModel

    Raises
    ------
    ValueError
        On the same bad input as :func:`fit_latent_spline`.
    """
    values, frames, tau = _prepare(values, frames)
    _check_degree(degree, values.shape[0])
    internal = np.linspace(frames[0], frames[-1], int(internal_knots) + 2)[1:-1]
    knots = clamped_knots(internal, frames[0], frames[-1], degree)
    ctrl, _, _ = lsq_batch(knots[None], frames, values, degree, return_fit=False)
    return _model_from(values, frames, knots, ctrl[0], degree)


# --------------------------------------------------------------------------------------
# Operator-facing: many F-curves, per-channel tolerances, exact Bezier keys


@dataclass(frozen=True)
class _GroupSettings:
    degree: int
    multiplicity: int
    internal_knots: int
    population: int | None
    max_iterations: int
    seed: int
    snap: np.ndarray | None


class _Run(NamedTuple):
    """One (mode, multiplicity) attempt of :func:`iter_fit_channels`."""

    n_keys: int
    mode: str
    curves: list[BezierCurve]


def _constant_channels(values: np.ndarray, tol: np.ndarray) -> np.ndarray:
    return (values.max(axis=0) - values.min(axis=0)) / 2.0 <= tol


def _seed_knots(problem: KnotProblem, settings: _GroupSettings) -> Generator[float, None, list[np.ndarray]]:
    """The user's knot count placed by CMA-ES on every lane: where the tolerance search starts."""
    uniform = np.linspace(0.0, 1.0, settings.internal_knots + 2)[1:-1]
    found = yield from problem.cma_lanes(
        [uniform] * problem.n_lanes,
        np.arange(problem.n_lanes),
        "max",
        settings.population,
        max(settings.max_iterations, 1),
        [settings.seed + c for c in range(problem.n_lanes)],
        target=FEASIBLE,
    )
    return [f.knots for f in found]


def _curves_from(
    problem: KnotProblem,
    internal: list[np.ndarray],
    values: np.ndarray,
    frames: np.ndarray,
    tol: np.ndarray,
    mean: np.ndarray,
    shared: bool,
    snap: np.ndarray | None,
) -> list[BezierCurve]:
    """Bezier keys of the solved knots, repaired where the spline misses a sample."""
    degree = problem.degree
    span = frames[-1] - frames[0]
    if shared:
        knots, ctrl = _final_fit(problem, internal[0], frames[0], span, snapped=snap is not None)
        curves = spline_to_bezier(knots, ctrl * tol + mean, degree)
    else:
        curves = []
        for c in range(problem.n_lanes):
            knots, ctrl = _final_fit(problem, internal[c], frames[0], span, snapped=snap is not None, lane=c)
            curves += spline_to_bezier(knots, ctrl * tol[c] + mean[c], degree)
    # The guarantee: where the spline cannot reach a sample (noise finer than the closest knot
    # spacing, a corner), keys go on the offending samples themselves, which is exact there.
    return [repair_keys(curve, frames, values[:, j], tol[j]) for j, curve in enumerate(curves)]


def _group_fit(
    values: np.ndarray, frames: np.ndarray, tau: np.ndarray, tol: np.ndarray, shared: bool, settings: _GroupSettings
) -> Generator[float, None, list[BezierCurve]]:
    """Keys for a group of channels, every sample within its tolerance.

    shared: one knot vector for all channels (latent, through PCA); otherwise each channel its
    own knots (lanes solved together).
    """
    mean = values.mean(axis=0)
    target = (values - mean) / tol
    if shared:
        pca_share = PCA_RESIDUAL_SHARE if values.shape[1] > 1 else None
        problem = KnotProblem.build(tau, target, settings.degree, settings.multiplicity, pca_share)
    else:
        problem = KnotProblem.lanes(tau, target, settings.degree, settings.multiplicity)
    starts = (yield from _seed_knots(problem, settings)) if settings.internal_knots > 0 else None
    internal, feasible = yield from solve_tolerance(
        problem, population=settings.population, max_iterations=settings.max_iterations, seed=settings.seed,
        snap=settings.snap, starts=starts,
    )
    curves = _curves_from(problem, internal, values, frames, tol, mean, shared, settings.snap)
    if settings.multiplicity > 1 and not feasible.all():
        # C1 knots must stay two samples apart, so corners and jumps are out of their reach;
        # simple (C2) knots can close in to one sample. Refit the stuck curves with those and
        # keep, per curve, whichever writes fewer keys.
        cols = np.arange(values.shape[1]) if shared else np.flatnonzero(~feasible)
        simple = replace(settings, multiplicity=1)
        retry = yield from _group_fit(values[:, cols], frames, tau, tol[cols], shared, simple)
        if shared:
            if sum(c.n_keys for c in retry) < sum(c.n_keys for c in curves):
                curves = retry
        else:
            for j, curve in zip(cols, retry, strict=True):
                if curve.n_keys < curves[j].n_keys:
                    curves[j] = curve
    return curves


def interpolating_curve(frames: np.ndarray, values: np.ndarray) -> BezierCurve:
    """A key on every sample (exact at the samples), slopes by finite differences.

    Parameters
    ----------
    frames : ndarray, shape (N,)
        Strictly increasing frames.
    values : ndarray, shape (N,)
        One channel's samples.

    Returns
    -------
    BezierCurve
        N keys with Hermite handles.
    """
    frames = np.asarray(frames, dtype=float)
    values = np.asarray(values, dtype=float)
    slopes = np.gradient(values, frames) if frames.size > 1 else np.zeros(1)
    return hermite_keys(frames, values, slopes)


def _channel_tolerances(tolerance: Any, m: int) -> np.ndarray:
    tol = np.broadcast_to(np.asarray(tolerance, dtype=float), (m,)).copy()
    if np.any(~np.isfinite(tol)) or np.any(tol <= 0):
        raise ValueError("tolerances must be positive and finite")
    return tol


def _check_options(mode: str, continuity: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    if continuity not in MULTIPLICITIES:
        raise ValueError(f"unknown continuity {continuity!r}")


def _fit_run(
    samples: _Samples, tol: np.ndarray, moving: np.ndarray, mode: str, settings: _GroupSettings, lo: float, width: float
) -> Generator[float, None, list[BezierCurve]]:
    """Every channel's keys in one mode: constant channels one key, the moving ones fitted
    together. Yields overall progress in [lo, lo + width]."""
    values, frames, tau = samples
    curves = [
        constant_curve(frames[0], 0.5 * (values[:, j].max() + values[:, j].min())) for j in range(values.shape[1])
    ]
    if moving.size:
        sub = _group_fit(values[:, moving], frames, tau, tol[moving], mode == "LATENT", settings)
        while True:
            try:
                frac = next(sub)
            except StopIteration as stop:
                fitted = stop.value
                break
            yield lo + width * min(frac, 1.0)
        for j, curve in zip(moving, fitted, strict=True):
            curves[j] = curve
        yield lo + width
    return curves


def _summary(curves: list[BezierCurve], mode: str, values: np.ndarray, frames: np.ndarray, tol: np.ndarray) -> ChannelsFit:
    approx = np.column_stack([c.evaluate(frames) for c in curves])
    err = approx - values
    max_abs = np.abs(err).max(axis=0)
    return ChannelsFit(
        curves=curves,
        mode_used=mode,
        max_abs_error=max_abs,
        rms_error=np.sqrt((err**2).mean(axis=0)),
        distortion=distortion(values, approx),
        within_tolerance=bool(np.all(max_abs <= tol * (1 + TOLERANCE_SLACK))),
        knot_counts=np.array([c.n_keys for c in curves]),
    )


def iter_fit_channels(
    values: np.ndarray,
    frames: np.ndarray,
    tolerance: np.ndarray | Sequence[float] | float,
    *,
    mode: str = "AUTO",
    internal_knots: int = 0,
    degree: int = 3,
    population: int | None = None,
    max_iterations: int | None = None,
    seed: int = 0,
    snap_to_frames: bool = False,
    continuity: str = "C1",
    free_handles: bool = False,
) -> Generator[float, None, ChannelsFit]:
    """Generator form of :func:`fit_channels`: yields progress in [0, 1], returns the fit.

    A modal operator steps it once per timer event; stopping early writes nothing. The
    parameters are those of :func:`fit_channels`.

    Yields
    ------
    float
        Progress, non-decreasing within each mode tried, ending with 1.0.

    Returns
    -------
    ChannelsFit
        As ``StopIteration.value``.
    """
    samples = _prepare(values, frames)
    values, frames, tau = samples
    n, m = values.shape
    _check_degree(degree, n)
    tol = _channel_tolerances(tolerance, m)
    _check_options(mode, continuity)
    snap = snap_grid(frames, tau) if snap_to_frames else None
    iters = DEFAULT_CHANNEL_ITERATIONS if max_iterations is None else max_iterations
    moving = np.flatnonzero(~_constant_channels(values, tol))
    modes = ["LATENT", "PER_CHANNEL"] if mode == "AUTO" else [mode]
    runs = [(md, mu) for md in modes for mu in MULTIPLICITIES[continuity]]
    best: _Run | None = None
    for run_index, (md, mult) in enumerate(runs):
        lo, width = run_index / len(runs), 1.0 / len(runs)
        settings = _GroupSettings(degree, mult, internal_knots, population, iters, seed, snap)
        curves = yield from _fit_run(samples, tol, moving, md, settings, lo, width)
        count = sum(c.n_keys for c in curves)
        if best is None or count < best.n_keys:
            best = _Run(count, md, curves)
    assert best is not None
    curves = best.curves
    if free_handles:
        # Blender keys can do more than a spline's: free handle lengths often let a segment
        # span two (bezier.prune_keys); the tolerance still holds at every sample
        curves = [
            prune_keys(curve, frames, values[:, j], tol[j]) if curve.n_keys > 2 else curve
            for j, curve in enumerate(curves)
        ]
        yield FREE_HANDLES_PROGRESS
    yield 1.0
    return _summary(curves, best.mode, values, frames, tol)


def fit_channels(
    values: np.ndarray,
    frames: np.ndarray,
    tolerance: np.ndarray | Sequence[float] | float,
    *,
    mode: str = "AUTO",
    internal_knots: int = 0,
    degree: int = 3,
    population: int | None = None,
    max_iterations: int | None = None,
    seed: int = 0,
    snap_to_frames: bool = False,
    continuity: str = "C1",
    free_handles: bool = False,
    progress: Progress | None = None,
) -> ChannelsFit:
    """Fit exact Bezier keys to every channel so each original sample stays within tolerance.

    What the Fit Spline operator runs: channels that stay within tolerance of a constant get
    one key; the others get the fewest keys the knot search finds (:func:`fit_latent_spline`'s
    tolerance mode, in one latent space or per channel), repaired with keys on any sample the
    spline still misses, so the tolerance always holds.

    Parameters
    ----------
    values : ndarray, shape (N, M) or (N,)
        Dense samples, one column per channel (angles unwrapped, quaternions continuous: see
        :mod:`anim_signals.channels`), in channel units.
    frames : ndarray, shape (N,)
        Strictly increasing sample times in frames.
    tolerance : float or array_like of shape (M,)
        Max abs error per channel, in channel units (radians for rotations); positive, finite.
    mode : {'AUTO', 'LATENT', 'PER_CHANNEL'}
        One knot vector for all channels (through PCA), one per channel, or whichever writes
        fewer keys.
    internal_knots : int
        When > 0, a knot count placed by CMA-ES first; the tolerance decides the rest.
    degree : {1, 2, 3}
        Polynomial degree of the spline.
    population : int, optional
        CMA-ES population (default: pycma's, 4 + 3 ln(dimension)).
    max_iterations : int, optional
        CMA-ES generations per search (default 20).
    seed : int
        Seed of CMA-ES's sampling: equal inputs and seed give equal keys.
    snap_to_frames : bool
        Keys on whole frames only.
    continuity : {'C1', 'C2', 'AUTO'}
        'C1' (default) doubles every knot so each key carries its own slope with ALIGNED
        handles, like a hand-set Bezier key: measured ~35% fewer keys than 'C2' (simple
        knots, curvature-continuous) at the same tolerance; 'AUTO' tries both.
    free_handles : bool
        After the spline fit, remove every key that one Blender segment with re-chosen handle
        lengths can replace within tolerance (the result is no longer a B-spline, but still
        exact Bezier keys that Blender evaluates as we do).
    progress : callable, optional
        ``progress(fraction)`` with fraction in [0, 1]; returning False cancels.

    Returns
    -------
    ChannelsFit
        Keys per channel with their errors over the original samples.

    Raises
    ------
    FitCancelled
        When ``progress`` returns False.
    ValueError
        On non-positive or non-finite tolerances, an unknown mode or continuity, NaN /
        infinite values, frames not strictly increasing or of the wrong shape, a degree outside
        1-3 or fewer than ``degree + 1`` samples.

    Examples
    --------
    >>> import numpy as np
    >>> frames = np.arange(0.0, 121.0)
    >>> values = np.column_stack([np.sin(frames / 12), np.where(frames < 60, 0.0, 1.0), np.full(121, 3.0)])
    >>> fit = fit_channels(values, frames, tolerance=0.01)
    >>> fit.within_tolerance, fit.mode_used
    (True, 'PER_CHANNEL')
    >>> bool(fit.knot_counts[0] < 20), int(fit.knot_counts[2])  # a few keys; a constant: one
    (True, 1)
    >>> bool(np.abs(fit.evaluate(frames) - values).max() <= 0.01)
    True
    """
    gen = iter_fit_channels(
        values, frames, tolerance, mode=mode, internal_knots=internal_knots, degree=degree,
        population=population, max_iterations=max_iterations, seed=seed, snap_to_frames=snap_to_frames,
        continuity=continuity, free_handles=free_handles,
    )
    while True:
        try:
            frac = next(gen)
        except StopIteration as stop:
            return stop.value
        if progress is not None and progress(frac) is False:
            gen.close()
            raise FitCancelled("fit cancelled")
