"""Latent nonuniform splines: the method of Mukai, "Latent Nonuniform Splines for Animation
Approximation", §3.

PCA of the channels, then one cubic B-spline with free internal knots in the latent space; control
points by least squares for each candidate knot vector and the knots by CMA-ES over positive knot
increments (constrained sampling: increments clipped at 0 and rescaled to span the clip). Every
CMA-ES generation is scored in one vectorised call (:mod:`.knots`). :func:`fit_latent_spline` with a
knot count is exactly the paper's method; with a tolerance it is the first stage of
:mod:`.fitting`'s max-error fit. :func:`fit_uniform_spline` is the paper's uniform baseline.

Also the pieces both fits share: sample preparation, the final least-squares fit on given knots
and the distortion measure E_D.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import numpy as np

from ..steps import run_steps
from ..validation import MAX_MAGNITUDE, choice, finite_array, finite_result, non_negative, positive_int
from .bezier_keys import BezierCurve
from .bspline import clamped_knots, evaluate, lsq_batch, spline_to_bezier
from .knots import SCORE_CHUNK_ELEMENTS, KnotProblem, curvature_knots, snap_grid, snap_knots
from .tolerance import solve_tolerance

__all__ = ["FitCancelled", "SplineModel", "distortion", "fit_latent_spline", "fit_uniform_spline"]

# Mukai's CMA-ES settings for a fixed knot count.
DEFAULT_POPULATION = 100
DEFAULT_KNOT_ITERATIONS = 100
# CMA-ES generations per rescue in tolerance mode (fit_latent_spline / fit_channels).
DEFAULT_TOLERANCE_ITERATIONS = 60
# Tolerance mode fits in PCA space while the PCA residual stays within this share of the
# tolerance: the spline gets the rest.
PCA_RESIDUAL_SHARE = 0.25
# A fixed knot count is capped just below what min_gap allows on [0, 1].
KNOT_COUNT_MARGIN = 1e-9
# A channel to fit may reach at most this many tolerances in magnitude (float64 keeps ~16 digits,
# the least squares loses a few).
MAX_VALUE_TO_TOLERANCE = 1e12
# Knots within this (relative to the clip length) of a sample are put exactly on it.
ON_SAMPLE_TOLERANCE = 1e-9

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


# --------------------------------------------------------------------------------------
# Input checks and the final least-squares fit


class _Samples(NamedTuple):
    values: np.ndarray  # (N, M)
    frames: np.ndarray  # (N,) strictly increasing
    tau: np.ndarray  # (N,) frames normalised to [0, 1]


class _FinalFit(NamedTuple):
    knots: np.ndarray  # full knot vector in frames
    control_points: np.ndarray  # (K, M) in tolerance units
    # (M,) each column's max abs error at the samples, in tolerance units; None when snapping
    # moved the knots after the fit
    max_error: np.ndarray | None = None


def _prepare(values: np.ndarray, frames: np.ndarray | None) -> _Samples:
    """Checked samples: finite values (N, M), strictly increasing finite frames (N,)."""
    values = finite_array("values", values, ndim=(1, 2), max_abs=MAX_MAGNITUDE)
    if values.ndim == 1:
        values = values[:, None]
    if values.shape[1] == 0:
        raise ValueError(f"values has no channels (shape {values.shape})")
    n = values.shape[0]
    if frames is None:
        frames = np.arange(n, dtype=float)
    else:
        frames = finite_array("frames", frames, ndim=1, max_abs=MAX_MAGNITUDE)
        if frames.shape != (n,):
            raise ValueError(f"frames has shape {frames.shape}, expected ({n},) (one frame per row of values)")
    if n >= 2 and np.any(np.diff(frames) <= 0):
        raise ValueError("frames must be strictly increasing")
    span = frames[-1] - frames[0] if n >= 2 else 1.0
    tau = (frames - frames[0]) / span
    if not np.all(np.isfinite(tau)) or (n >= 2 and np.any(np.diff(tau) <= 0)):
        raise ValueError("frames are too close together (or too far apart) to tell apart in float64")
    return _Samples(values, frames, tau)


def _check_degree(degree: int, n: int) -> None:
    choice("degree", degree, (1, 2, 3))
    if n < degree + 1:
        raise ValueError(f"values has {n} sample(s): a degree-{degree} spline needs at least {degree + 1}")


def _check_representable(values: np.ndarray, tol: np.ndarray) -> None:
    """Refuse channels that need fitting but whose magnitude dwarfs their tolerance.

    float64 keeps ~16 digits: the least squares behind every fit loses a few more, so a channel
    whose values are beyond MAX_VALUE_TO_TOLERANCE tolerances cannot be fitted within its
    tolerance (rounding alone exceeds it), and pretending otherwise writes wrong keys.
    """
    half_span = (values.max(axis=0) - values.min(axis=0)) / 2.0
    magnitude = np.abs(values).max(axis=0)
    bad = np.flatnonzero((half_span > tol) & (magnitude > tol * MAX_VALUE_TO_TOLERANCE))
    if bad.size:
        j = int(bad[0])
        raise ValueError(
            f"values: channel {j} reaches {magnitude[j]:.3g}, more than {MAX_VALUE_TO_TOLERANCE:.0e} times its "
            f"tolerance {tol[j]:.3g}: float64 cannot fit it that closely (raise the tolerance or rescale the data)"
        )


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
    error = np.abs(fit_full[0] - target)
    if problem.basis is not None:
        # the latent fit can beat the full refit in max norm; keep whichever is tighter
        err_latent, ctrl_latent = problem.errors(internal[None])
        if np.abs(err_latent).max() < error.max():
            ctrl = ctrl_latent[0] @ problem.basis
            error = np.abs(err_latent[0])
    return _in_frames(problem, knots[0], ctrl, error.max(axis=0), frames0, span, snapped)


def _final_lane_fits(
    problem: KnotProblem, internal: Sequence[np.ndarray], frames0: float, span: float, snapped: bool = False
) -> list[_FinalFit]:
    """:func:`_final_fit` of every lane of a problem without a basis (one channel per lane), the
    lanes' least-squares fits solved together in chunks (one small solve per lane cost more in
    numpy's call overhead than in arithmetic)."""
    if problem.basis is not None:
        raise ValueError("lanes fitted together need a problem without a basis")
    n_lanes = problem.n_lanes
    chunk = max(1, int(SCORE_CHUNK_ELEMENTS // max(1, problem.target[0].size)))
    out: list[_FinalFit] = []
    for start in range(0, n_lanes, chunk):
        lanes = np.arange(start, min(start + chunk, n_lanes))
        part = [np.asarray(internal[c], dtype=float) for c in lanes]
        err, ctrl = problem.errors(part, lanes)
        for k, knots in enumerate(part):
            full = problem.knot_vectors(knots[None])[0]
            n_ctrl = full.size - problem.degree - 1
            out.append(_in_frames(problem, full, ctrl[k, :n_ctrl], np.abs(err[k]).max(axis=0), frames0, span, snapped))
    return out


def _in_frames(problem: KnotProblem, knots: np.ndarray, ctrl: np.ndarray, max_error: np.ndarray, frames0: float,
               span: float, snapped: bool) -> _FinalFit:
    knots_frames = frames0 + span * knots
    _put_on_samples(knots_frames, frames0 + span * problem.tau, span)
    if snapped:
        inner = slice(problem.degree + 1, -(problem.degree + 1))
        knots_frames[inner] = np.round(knots_frames[inner])
        return _FinalFit(knots_frames, ctrl)
    return _FinalFit(knots_frames, ctrl, max_error)


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
    return run_steps(gen)[1]


# --------------------------------------------------------------------------------------
# One spline for all channels: fixed knot count (Mukai) or tolerance


def _latent_tolerances(max_error: Any, m: int) -> np.ndarray:
    if max_error is None:
        return np.ones(m)
    tol = finite_array("max_error", max_error, ndim=(0, 1), min_length=None)
    if tol.shape not in ((), (1,), (m,)):
        raise ValueError(f"max_error must be one number or {m} (one per channel), got shape {tol.shape}")
    tol = np.broadcast_to(tol, (m,)).copy()
    if np.any(tol <= 0):
        raise ValueError(f"max_error must be positive, got {tol.min()}")
    return tol


def _scaled_pca_tolerance(pca_tolerance: float | None, max_error: Any, tol: np.ndarray) -> float | None:
    """The PCA residual allowed, in tolerance units."""
    if pca_tolerance is not None:
        return pca_tolerance if max_error is None else pca_tolerance / float(tol.min())
    return PCA_RESIDUAL_SHARE if max_error is not None else None


def _check_search_settings(population: Any, max_iterations: Any, seed: Any) -> None:
    """CMA-ES settings: a population of at least 2 (CMA-ES ranks the samples), generations >= 0."""
    if population is not None:
        positive_int("population", population, minimum=2)
    if max_iterations is not None:
        positive_int("max_iterations", max_iterations, minimum=0)
    positive_int("seed", seed, minimum=-(2**63))


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
        CMA-ES population size (default: 100 for ``internal_knots``, 4 + floor(3 ln(dimension)) otherwise).
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
        When neither ``internal_knots`` nor ``max_error`` is given; on a non-positive or
        non-finite tolerance, empty or NaN / infinite values (or beyond +-1e150), frames not
        strictly increasing or of the wrong shape, a degree outside 1-3, fewer than
        ``degree + 1`` samples, a population below 2, negative counts, or a channel to fit
        more than 1e12 times its tolerance in magnitude (float64 cannot fit it that closely).
        The message names the argument.

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
    if internal_knots is not None:
        internal_knots = positive_int("internal_knots", internal_knots, minimum=0)
    _check_search_settings(population, max_iterations, seed)
    if pca_tolerance is not None:
        pca_tolerance = non_negative("pca_tolerance", pca_tolerance)
    choice("multiplicity", multiplicity, (1, 2))
    tol = _latent_tolerances(max_error, values.shape[1])
    if max_error is not None:
        _check_representable(values, tol)
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
    knots, ctrl, _ = _final_fit(problem, internal, frames[0], span, snapped=snap_to_frames)
    ctrl = finite_result("the fitted control points", ctrl * tol + mean)
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
    internal_knots = positive_int("internal_knots", internal_knots, minimum=0)
    if internal_knots + degree + 1 > values.shape[0]:
        raise ValueError(
            f"internal_knots is {internal_knots}: {values.shape[0]} samples allow at most "
            f"{values.shape[0] - degree - 1} for a degree-{degree} spline"
        )
    internal = np.linspace(frames[0], frames[-1], internal_knots + 2)[1:-1]
    knots = clamped_knots(internal, frames[0], frames[-1], degree)
    ctrl, _, _ = lsq_batch(knots[None], frames, values, degree, return_fit=False)
    return _model_from(values, frames, knots, finite_result("the fitted control points", ctrl[0]), degree)
