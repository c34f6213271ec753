"""Fitting many curves within a max error: dense F-curves -> the fewest exact Bezier keys.

Builds on Mukai's latent spline (:mod:`.latent`) for animators:

* tolerance mode: every original sample ends within a per-channel tolerance, with the fewest
  knots we can find (greedy knot insertion until feasible, then knot removal, each removal
  rescued by CMA-ES when plain removal breaks the tolerance);
* per-channel mode (each F-curve its own knots) and AUTO (whichever writes fewer keys);
* C1 keys (double knots: every key its own slope, like a hand-made Bezier key);
* knots snapped to whole frames; an optional free-handle-length pass (:mod:`.bezier`).

All errors are measured on the original samples in the channel's own units. The latent-spline
names (:func:`fit_latent_spline`, ...) are importable from here as well, as in earlier releases.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from ..validation import choice, finite_array, finite_result, positive_int
from .bezier import hermite_keys, insert_keys, prune_keys, repair_keys
from .bezier_keys import BezierCurve, constant_curve, evaluate_curves
from .bspline import spline_to_bezier
from .key_reduction import PoseCheck, iter_fewest_keys
from .knots import FEASIBLE, KnotProblem, snap_grid
from .latent import (
    PCA_RESIDUAL_SHARE,
    FitCancelled,
    SplineModel,
    _check_degree,
    _check_representable,
    _check_search_settings,
    _final_fit,
    _final_lane_fits,
    _prepare,
    _Samples,
    distortion,
    fit_latent_spline,
    fit_uniform_spline,
)
from .tolerance import solve_tolerance

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

DEFAULT_CHANNEL_ITERATIONS = 20
# within_tolerance allows this relative excess (float32 keys, rounding of the repair).
TOLERANCE_SLACK = 1e-6
# A curve whose spline fit stays this far (tolerance units) below the tolerance is not checked at every
# sample again: its keys evaluate to the spline within rounding, far below this.
REPAIR_CHECK_MARGIN = 1e-6
# A curve whose C1 spline misses samples (knots two samples apart cannot follow it) is fitted again
# with simple knots only where the repair added at least this share of its keys. On the 16 mocap
# clips, 205 such curves: the 141 below 20 % gained 9 keys from the refit in all (2 curves), the 64
# above it 365 (18 curves), and the refit of every one of them was 30-50 % of the time on the clips
# where most curves miss samples. Against it: the demo's generated biped (a jump, capture noise)
# 719 -> 741 keys; at 10 % it keeps 707 and the 16 clips the same keys, but 67 % of the long
# clip's keys (42 % at 20 %) are refitted.
SIMPLE_KNOTS_RETRY_SHARE = 0.2
FREE_HANDLES_PROGRESS = 0.99
# AUTO skips the latent spline when the moving channels times LATENT_SKIP_SHARE x the per-channel
# keys of the channel at LATENT_SKIP_QUANTILE exceed the per-channel total (_latent_cannot_win).
LATENT_SKIP_QUANTILE = 0.95
LATENT_SKIP_SHARE = 0.5
LATENT_SKIP_MIN_CURVES = 20

MODES = ("FEWEST", "EDITABLE", "AUTO", "LATENT", "PER_CHANNEL")
# Knot multiplicities tried per continuity: 1 = simple knots (C2), 2 = double knots (C1 keys).
MULTIPLICITIES: dict[str, tuple[int, ...]] = {"C2": (1,), "C1": (2,), "AUTO": (1, 2)}


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
    fitted_values : ndarray, shape (N, M), optional
        Every channel's curve at every sample frame, what the errors were measured on (Fewest and
        Editable Keys: as Blender evaluates the float32 keys).
    """

    curves: list[BezierCurve]
    mode_used: str
    max_abs_error: np.ndarray
    rms_error: np.ndarray
    distortion: float
    within_tolerance: bool
    knot_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    fitted_values: np.ndarray | None = None

    @property
    def n_keys(self) -> int:
        """Keys over all channels."""
        return int(sum(c.n_keys for c in self.curves))

    def evaluate(self, frames: np.ndarray) -> np.ndarray:
        """Values (N, M) of every channel's keys at ``frames`` (N,), as Blender evaluates them."""
        return evaluate_curves(self.curves, frames)



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


def _latent_cannot_win(per_channel: Sequence[BezierCurve], moving: np.ndarray) -> bool:
    """Whether one latent spline for all ``moving`` channels would write more keys than the
    per-channel keys ``per_channel`` by a wide margin (AUTO skips it then). An estimate, not a
    bound: it held on every clip measured.

    The latent spline keys every moving channel on its shared knots, and each channel's curve on
    those knots is within tolerance on its own, so it needs at least as many knots as that
    channel's fewest. The per-channel search is near that fewest on most curves but can be 2x off
    on the noisiest (measured: 1,328 keys where the latent spline keys the channel with 634), so
    the estimate takes the channel at the 95th percentile of per-channel keys, at half its keys
    (:data:`LATENT_SKIP_QUANTILE`, :data:`LATENT_SKIP_SHARE`). On 16 mocap clips the latent
    spline wrote 2.1-6.6x that estimate; it is skipped where the estimate alone exceeds the
    per-channel total (9 of the 16, all of 900+ frames among them, whose channels differ most).
    With fewer than :data:`LATENT_SKIP_MIN_CURVES` moving curves the percentile is in effect the
    noisiest curve, where the per-channel search is furthest from the fewest: both are fitted.
    """
    if moving.size < LATENT_SKIP_MIN_CURVES:
        return False
    counts = np.array([per_channel[j].n_keys for j in moving], dtype=float)
    estimate = moving.size * LATENT_SKIP_SHARE * float(np.quantile(counts, LATENT_SKIP_QUANTILE))
    return estimate > sum(c.n_keys for c in per_channel)


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
) -> tuple[list[BezierCurve], np.ndarray]:
    """Bezier keys of the solved knots, repaired where the spline misses a sample, and the share of
    each curve's keys that the repair added."""
    degree = problem.degree
    span = frames[-1] - frames[0]
    if shared:
        knots, ctrl, error = _final_fit(problem, internal[0], frames[0], span, snapped=snap is not None)
        curves = spline_to_bezier(knots, ctrl * tol + mean, degree)
        errors = [error]
    else:
        curves, errors = [], []
        for c, (knots, ctrl, error) in enumerate(_final_lane_fits(problem, internal, frames[0], span,
                                                                  snapped=snap is not None)):
            curves += spline_to_bezier(knots, ctrl * tol[c] + mean[c], degree)
            errors.append(error)
    # The guarantee: where the spline cannot reach a sample (noise finer than the closest knot
    # spacing, a corner), keys go on the offending samples themselves, which is exact there.
    # The keys reproduce the spline exactly, so a curve whose fit is clear of its tolerance by
    # more than rounding needs no check at every sample (repair_keys would return it as it is).
    unknown = np.zeros(len(tol) if shared else 1, dtype=bool)  # snapped knots: check every curve
    clear = np.concatenate([unknown if e is None else e < FEASIBLE - REPAIR_CHECK_MARGIN for e in errors])
    repaired = [curve if clear[j] else repair_keys(curve, frames, values[:, j], tol[j]) for j, curve in enumerate(curves)]
    added = np.array([1.0 - spline.n_keys / curve.n_keys for spline, curve in zip(curves, repaired, strict=True)])
    return repaired, added


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
    curves, added = _curves_from(problem, internal, values, frames, tol, mean, shared, settings.snap)
    # (per-channel: the curves the repair barely changed keep their C1 keys; see SIMPLE_KNOTS_RETRY_SHARE)
    retried = np.ones(values.shape[1], dtype=bool) if shared else ~feasible & (added >= SIMPLE_KNOTS_RETRY_SHARE)
    if settings.multiplicity > 1 and not feasible.all() and retried.any():
        # C1 knots must stay two samples apart, so corners and jumps are out of their reach;
        # simple (C2) knots can close in to one sample. Refit the stuck curves with those and
        # keep, per curve, whichever writes fewer keys.
        cols = np.flatnonzero(retried)
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

    Raises
    ------
    ValueError
        On empty or non-finite input, shapes that differ, or frames not strictly increasing.
    """
    frames = finite_array("frames", frames, ndim=1)
    values = finite_array("values", values, ndim=1)
    if values.shape != frames.shape:
        raise ValueError(f"values has shape {values.shape}, expected {frames.shape} (one value per frame)")
    if np.any(np.diff(frames) <= 0):
        raise ValueError("frames must be strictly increasing")
    slopes = np.gradient(values, frames) if frames.size > 1 else np.zeros(1)
    return hermite_keys(frames, values, finite_result("the slopes", slopes))


def _channel_tolerances(tolerance: Any, m: int) -> np.ndarray:
    tol = finite_array("tolerance", tolerance, ndim=(0, 1), min_length=None)
    if tol.shape not in ((), (1,), (m,)):
        raise ValueError(f"tolerance must be one number or {m} (one per channel), got shape {tol.shape}")
    tol = np.broadcast_to(tol, (m,)).copy()
    if np.any(tol <= 0):
        raise ValueError(f"tolerance must be positive, got {tol.min()}")
    return tol


def _check_options(mode: str, continuity: str) -> None:
    choice("mode", mode, MODES)
    choice("continuity", continuity, tuple(MULTIPLICITIES))


def _fit_run(
    samples: _Samples, tol: np.ndarray, moving: np.ndarray, mode: str, settings: _GroupSettings, lo: float,
    width: float, groups: np.ndarray | None = None,
) -> Generator[float, None, list[BezierCurve]]:
    """Every channel's keys in one mode: constant channels one key, the moving ones fitted
    together (LATENT: one latent spline per group when ``groups`` labels the channels). Yields
    overall progress in [lo, lo + width]."""
    values, frames, tau = samples
    curves = [
        constant_curve(frames[0], 0.5 * (values[:, j].max() + values[:, j].min())) for j in range(values.shape[1])
    ]
    parts = [moving]
    if mode == "LATENT" and groups is not None:
        parts = [moving[groups[moving] == g] for g in np.unique(groups[moving])]
    for p, part in enumerate(parts):
        if not part.size:
            continue
        p_lo, p_width = lo + width * p / len(parts), width / len(parts)
        sub = _group_fit(values[:, part], frames, tau, tol[part], mode == "LATENT", settings)
        while True:
            try:
                frac = next(sub)
            except StopIteration as stop:
                fitted = stop.value
                break
            yield p_lo + p_width * min(frac, 1.0)
        for j, curve in zip(part, fitted, strict=True):
            curves[j] = curve
    yield lo + width
    return curves


def _summary(curves: list[BezierCurve], mode: str, values: np.ndarray, frames: np.ndarray, tol: np.ndarray,
             approx: np.ndarray | None = None) -> ChannelsFit:
    if approx is None:
        approx = evaluate_curves(curves, frames)
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
        fitted_values=approx,
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
    groups: np.ndarray | Sequence[int] | None = None,
    pose_check: PoseCheck | None = None,
) -> Generator[float, None, ChannelsFit]:
    """Generator form of :func:`fit_channels`: yields progress in [0, 1], returns the fit.

    A modal operator steps it once per timer event; stopping early writes nothing. The
    parameters are those of :func:`fit_channels`, and ``pose_check`` (modes ``'FEWEST'`` with every
    channel in one group): :func:`.key_reduction.fewest_keys`'s.

    Yields
    ------
    float
        Progress, non-decreasing within each mode tried, ending with 1.0.

    Returns
    -------
    ChannelsFit
        As ``StopIteration.value``.

    Raises
    ------
    ValueError
        On the bad input of :func:`fit_channels`, when called (not at the first step).
    """
    # checked here, when the generator is made, not at its first step
    samples = _prepare(values, frames)
    values, frames, tau = samples
    n, m = values.shape
    _check_options(mode, continuity)
    if mode not in ("FEWEST", "EDITABLE"):  # keys on samples: no spline degree to satisfy
        _check_degree(degree, n)
    tol = _channel_tolerances(tolerance, m)
    internal_knots = positive_int("internal_knots", internal_knots, minimum=0)
    _check_search_settings(population, max_iterations, seed)
    _check_representable(values, tol)
    iters = DEFAULT_CHANNEL_ITERATIONS if max_iterations is None else int(max_iterations)
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != (m,):
            raise ValueError(f"groups must have one label per channel, shape ({m},), got {groups.shape}")
    if pose_check is not None and mode != "FEWEST":
        raise ValueError("pose_check needs mode='FEWEST'")
    return _iter_fit(samples, tol, mode, internal_knots, degree, population, iters, seed, snap_to_frames,
                     continuity, free_handles, groups, pose_check)


def _iter_fit(
    samples: _Samples,
    tol: np.ndarray,
    mode: str,
    internal_knots: int,
    degree: int,
    population: int | None,
    iters: int,
    seed: int,
    snap_to_frames: bool,
    continuity: str,
    free_handles: bool,
    groups: np.ndarray | None = None,
    pose_check: PoseCheck | None = None,
) -> Generator[float, None, ChannelsFit]:
    values, frames, tau = samples
    if mode in ("FEWEST", "EDITABLE"):
        # Keys on sample frames, every segment its own handles (fewest_keys), free or aligned; the spline
        # settings (knots, degree, continuity, CMA-ES) do not apply.
        found = yield from iter_fewest_keys(values, frames, tol, handles="FREE" if mode == "FEWEST" else "EDITABLE",
                                            groups=groups, pose_check=pose_check)
        for j, curve in enumerate(found.curves):
            for part in (curve.co, curve.handle_left, curve.handle_right):
                finite_result(f"the keys of channel {j}", part)
        # (the curves as Blender stores them were evaluated at every frame by the final check)
        return _summary(found.curves, mode, values, frames, tol, approx=found.fitted_values)
    snap = snap_grid(frames, tau) if snap_to_frames else None
    moving = np.flatnonzero(~_constant_channels(values, tol))
    # AUTO fits per channel first: the latent runs are skipped when those keys show they cannot win
    # (:func:`_latent_cannot_win`). On equal key counts the latent spline is kept, as listed here.
    modes = ["LATENT", "PER_CHANNEL"] if mode == "AUTO" else [mode]
    runs = [(md, mu) for md in modes for mu in MULTIPLICITIES[continuity]]
    order = sorted(range(len(runs)), key=lambda r: runs[r][0] == "LATENT") if mode == "AUTO" else range(len(runs))
    best: _Run | None = None
    best_rank = (0, 0)
    for step, run_index in enumerate(order):
        md, mult = runs[run_index]
        lo, width = step / len(runs), 1.0 / len(runs)
        if (md == "LATENT" and mode == "AUTO" and groups is None and best is not None and best.mode == "PER_CHANNEL"
                and _latent_cannot_win(best.curves, moving)):
            yield lo + width
            continue
        settings = _GroupSettings(degree, mult, internal_knots, population, iters, seed, snap)
        curves = yield from _fit_run(samples, tol, moving, md, settings, lo, width, groups)
        count = sum(c.n_keys for c in curves)
        if best is None or (count, run_index) < best_rank:
            best, best_rank = _Run(count, md, curves), (count, run_index)
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
    if best.mode == "LATENT" and groups is not None:
        curves = _share_key_frames(curves, groups)
    for j, curve in enumerate(curves):
        for part in (curve.co, curve.handle_left, curve.handle_right):
            finite_result(f"the keys of channel {j}", part)
    yield 1.0
    return _summary(curves, best.mode, values, frames, tol)


def _share_key_frames(curves: list[BezierCurve], groups: np.ndarray) -> list[BezierCurve]:
    """Every curve of a group keyed on the union of the group's key frames (the keys the latent
    spline's repair added to single curves), by exact splits: the curves do not change."""
    out = list(curves)
    for g in np.unique(groups):
        members = [j for j in np.flatnonzero(groups == g) if curves[j].n_keys > 1]
        if len(members) < 2:
            continue
        union = np.unique(np.concatenate([curves[j].co[:, 0] for j in members]))
        for j in members:
            out[j] = insert_keys(curves[j], union)
    return out


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
    groups: np.ndarray | Sequence[int] | None = None,
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
    mode : {'AUTO', 'FEWEST', 'EDITABLE', 'LATENT', 'PER_CHANNEL'}
        One knot vector for all channels (through PCA), one per channel, or whichever of those two
        writes fewer keys (AUTO fits per channel first and skips the shared knot vector where those
        keys show it would write more, on channels that differ much in how many keys they need); or ``'FEWEST'``: keys on sample frames (values within the tolerance of
        the samples'), every segment with its own free handles, the fewest per channel (:func:`.key_reduction.fewest_keys`; the spline settings
        below do not apply); ``'EDITABLE'``: the same with ALIGNED handles except at corners.
        The Fit Spline operator's default is ``'FEWEST'``.
    internal_knots : int
        When > 0, a knot count placed by CMA-ES first; the tolerance decides the rest.
    degree : {1, 2, 3}
        Polynomial degree of the spline.
    population : int, optional
        CMA-ES population (default: 4 + floor(3 ln(dimension)), Hansen's tutorial).
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
    groups : array_like of int, shape (M,), optional
        Channels with the same label share their key frames (for example per bone): FEWEST and
        EDITABLE take a segment where it passes for every channel of the group; LATENT fits one
        latent spline per group (default: all channels). Ignored by PER_CHANNEL.
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
        On non-positive or non-finite tolerances, an unknown mode or continuity, empty or NaN /
        infinite values (or beyond +-1e150), frames not strictly increasing or of the wrong
        shape, a degree outside 1-3, fewer than ``degree + 1`` samples, a population below 2,
        negative counts, or a moving channel more than 1e12 times its tolerance in magnitude
        (float64 cannot fit it that closely). The message names the argument.

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
        continuity=continuity, free_handles=free_handles, groups=groups,
    )
    while True:
        try:
            frac = next(gen)
        except StopIteration as stop:
            return stop.value
        if progress is not None and progress(frac) is False:
            gen.close()
            raise FitCancelled("fit cancelled")
