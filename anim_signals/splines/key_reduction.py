"""Fewest Bezier keys within a max error, per channel: a shortest path over key positions.

Every channel keeps keys on some of its own sample frames, and each segment between two keys is
one Blender Bezier segment whose two handles are chosen for that segment alone: both slopes and
both handle lengths free (FREE handles). With keys on the samples' values, segments are
independent, and a segment from sample ``i`` to sample ``j`` is *feasible* when some handles keep
every sample strictly between them within the channel's tolerance. The fewest keys are then a
shortest path from the first sample to the last over feasible segments, the formulation of
bbsolver (a max-error keyframe reducer for After Effects curves, which runs an exact dynamic
programme over all pairs of positions with a least-squares fit of the four handle parameters per
pair).

The compiled FAST search (FREE handles) goes one step beyond that model: a key's
value may sit off its sample within the limit (:data:`.segment_fit.FREE_KEY_VALUES`), a third
unknown of each segment's minimax fit; the next segment starts from it. That keeps 3-5 % fewer keys
on mocap (fewer than the shortest path with keys on the samples can reach) at the same max error.
EXACT, Editable Keys, a pose check and the numpy fallback keep the samples' values.

Two searches over key positions:

* ``FAST`` (the default): from each key, the longest feasible segment, its length found by
  galloping from the channel's last segment length and bisecting; its end is the next key. Each
  channel's (or group's) whole search runs compiled (:func:`.search_kernel.search_channels`; Editable
  Keys' too, the same keys as the Python search); a pose check and the numpy
  fallback step all channels together in Python (:func:`.fast_search.greedy`). The cost grows linearly with the
  clip. When a segment from a later start always reaches at least as far as one from an earlier
  start, this greedy rule is optimal (a jump game); on mocap it keeps 1-3 % more keys than EXACT.
* ``EXACT``: every pair of samples tested, then a shortest path (bbsolver's search); cubic in the
  clip's length, for short clips, benchmarks and tests.

The segment test, run for many segments at once, is :mod:`.segment_fit`'s cascade (thirds, a
table of handle lengths, Lawson towards the minimax).

A segment is accepted when every sample is within ``ACCEPT_SHARE`` of the tolerance, which leaves
room for Blender storing keys in float32 and solving x(t) = frame in its own way. The result is
checked at the end with :meth:`BezierCurve.evaluate` (Blender's evaluation, handle rescaling
included) on float32-rounded keys. A channel that misses there (tolerances near float32's
resolution of the values and frames: the "Joints" error space gives channels far from zero
tolerances of 1e-6) is searched again with a tighter limit; a segment that still misses is replaced
by keys on every sample it spans, whichever keeps fewer keys (it keeps the guarantee).

Near-constant channels (half their range within the tolerance) get a single key.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

import numpy as np

from . import fast_search, segment_fit
from .bezier_keys import BezierCurve, evaluate_curves
from .fast_search import Chosen
from .segment_fit import ACCEPT_SHARE, HANDLE_PAIRS, fit_segments_of, segment_feasible, segment_values
from .stored_keys import as_stored, check_and_repair

__all__ = ["ACCEPT_SHARE", "HANDLES", "HANDLE_PAIRS", "SEARCHES", "FewestKeys", "fewest_keys", "iter_fewest_keys", "segment_feasible",
           "warm_up"]

SEARCHES = ("FAST", "EXACT")
HANDLES = ("FREE", "EDITABLE")
# EXACT tests every pair of samples: about a minute for 105 frames x 96 curves on 2 cores, over
# ten for 140 frames.
EXACT_MAX_SAMPLES = 200
# Channels whose keys miss their tolerance once stored in float32 are searched again at most this
# many times, their limit tightened by at most FLOAT32_TIGHTEN each time (then the final check keys
# every sample of a segment that still misses).
FLOAT32_RETRIES = 2
FLOAT32_TIGHTEN = 0.9
# With a pose check, near-constant channels held at their single key may use at most this share of
# what the check allows, at every sample: the check sees only the samples between keys, and at a key
# the held channels alone make the error (the rest is for the moving channels between keys).
HELD_SHARE = 0.8


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
    fitted_values : ndarray, shape (N, M), optional
        Every channel at every sample frame, as Blender evaluates the float32 keys.
    """

    curves: list[BezierCurve]
    key_indices: list[np.ndarray]
    max_abs_error: np.ndarray
    within_tolerance: bool
    repaired_segments: int = 0
    corners: int = 0
    fitted_values: np.ndarray | None = None

    @property
    def n_keys(self) -> int:
        """Keys over all channels."""
        return int(sum(c.n_keys for c in self.curves))


# --------------------------------------------------------------------------------------------------
# the search


Progress = Callable[[float], "bool | None"]
# (start, length, values): whether a segment of every channel from sample ``start`` over ``length``
# samples passes, given every channel's fitted values at the samples in between, (length - 1, M).
PoseCheck = Callable[[int, int, np.ndarray], bool]


def iter_fewest_keys(
    values: np.ndarray,
    frames: np.ndarray,
    tolerance: np.ndarray | Sequence[float] | float,
    *,
    search: str = "FAST",
    handles: str = "FREE",
    groups: np.ndarray | Sequence[int] | None = None,
    pose_check: PoseCheck | None = None,
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
    if pose_check is not None and (search != "FAST" or handles != "FREE" or groups is None
                                   or np.unique(groups).size != 1):
        raise ValueError("pose_check decides for every channel at once: search='FAST', handles='FREE' and "
                         "one group for every channel")
    if search == "EXACT" and n > EXACT_MAX_SAMPLES:
        raise ValueError(f"search='EXACT' tests every pair of samples: at most {EXACT_MAX_SAMPLES} samples, "
                         f"got {n} (use search='FAST')")
    half_range = (values.max(axis=0) - values.min(axis=0)) / 2.0
    constant = half_range <= tol * ACCEPT_SHARE
    if pose_check is not None and n > 2 and constant.any():
        constant = yield from _constants_the_check_allows(values, half_range, tol, constant, pose_check)
    moving = np.flatnonzero(~constant)
    limit = tol * ACCEPT_SHARE
    chosen: list[Chosen] = []
    if n > 1 and moving.size:
        if search == "EXACT":
            feasible = yield from _all_pairs(frames, values, limit, moving)
            paths = {c: _shortest_path(feasible[lane]) for lane, c in enumerate(moving)}
            chosen = _refit(frames, values, [paths.get(c, np.array([0])) for c in range(m)], moving, limit)
        else:
            labels = np.arange(moving.size) if groups is None else np.unique(groups[moving], return_inverse=True)[1]
            if pose_check is not None:
                held = np.where(constant, 0.5 * (values.max(axis=0) + values.min(axis=0)), values)
                chosen = yield from fast_search.greedy(frames, values, limit, moving, False, labels,
                                            lambda a, length, found: pose_check(
                                                a, length, _fitted_between(frames, values, held, moving, a, length,
                                                                           found)))
            else:
                chosen = yield from fast_search.search(frames, values, limit, moving, labels, handles == "EDITABLE")
    yield 0.97
    editable = handles == "EDITABLE"
    curves = [_constant_curve(frames, values[:, c]) for c in range(m)]
    for lane, c in enumerate(moving):
        if n > 1:
            curves[c] = _curve(frames, values[:, c], chosen[lane], editable)
    fitted = None
    if search == "FAST" and pose_check is None and n > 1 and moving.size:
        fitted = _search_again_where_float32_misses(frames, values, tol, limit, moving, labels, editable, chosen,
                                                    curves)
    keys = [np.asarray(chosen[list(moving).index(c)].keys) if c in moving and n > 1 else np.array([0])
            for c in range(m)]
    corners = sum(int(np.count_nonzero(ch.broken)) for ch in chosen)
    # (with a pose check, the channels' tolerances are not what the keys keep: nothing to repair here)
    curves, repaired, errors, fitted = check_and_repair(frames, values, tol if pose_check is None else tol + np.inf,
                                                         curves, keys, fitted)
    yield 1.0
    return FewestKeys(curves, keys, errors, bool(np.all(errors <= tol)), repaired, corners, fitted)


def fewest_keys(
    values: np.ndarray,
    frames: np.ndarray,
    tolerance: np.ndarray | Sequence[float] | float,
    *,
    search: str = "FAST",
    handles: str = "FREE",
    groups: np.ndarray | Sequence[int] | None = None,
    pose_check: PoseCheck | None = None,
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
        with, FREE only at detected corners (where a free start reaches
        ``fast_search.CORNER_GAIN`` times as far); for animators who will edit the keys. FAST search
        only.
    groups : array_like of int, shape (M,), optional
        Channels with the same label share their key frames (for example all channels of a bone,
        or all channels: keyed poses that read like hand keys in the Dope Sheet): a segment is
        taken only where it passes for every moving channel of the group; each channel keeps its
        own handles. Near-constant channels keep their single key. FAST search only.
    pose_check : callable, optional
        With every channel in one group: decides whether a segment passes, instead of each
        channel's tolerance (which then only sets what each channel's segment fit aims at, and
        which channels may be near-constant: give tolerances near what the check allows; those whose
        single key would break the check at some sample, with ``HELD_SHARE`` of its room, are keyed
        as moving ones). Called as ``pose_check(start, length, fitted)`` with every
        channel's fitted values at the samples strictly between (``(length - 1, M)``; near-constant
        channels at their single key's value); for example the largest joint error of a rig in
        object space against a bound (the "Joints" error space with keys shared by all curves).
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

    gen = iter_fewest_keys(values, frames, tolerance, search=search, handles=handles, groups=groups,
                           pose_check=pose_check)
    try:
        while True:
            p = next(gen)
            if progress is not None and progress(p):
                raise FitCancelled("cancelled")
    except StopIteration as stop:
        return stop.value


def warm_up() -> str:
    """Compile (or load from numba's disk cache) every form of the segment test a fit uses, and the
    spline modes' knot scoring where it runs compiled (in this process or the worker process).

    The first fit after an install or an update otherwise waits for the compile: about 20 s on a
    2-core machine, once (later processes load the cache in about a second). Blender's UI calls
    this in a background thread at startup; where the kernel runs in a worker process the compile
    happens there, and the calling thread only waits on a pipe. Safe to call from any thread and
    more than once (a fit that starts meanwhile waits for the same compile).

    Returns
    -------
    str
        Where the segment test runs: ``'process'``, ``'worker'`` or ``'numpy'`` (nothing compiled).

    Examples
    --------
    >>> warm_up() in ("process", "worker", "numpy")
    True
    """
    if not segment_fit.compiled_kernel():
        return "numpy"
    frames = np.arange(40.0)
    values = np.column_stack([np.sin(frames / 5.0), np.cos(frames / 4.0), np.sin(frames / 3.0) ** 3])
    fewest_keys(values, frames, 0.01)  # the compiled search, each curve on its own
    fewest_keys(values, frames, 0.01, groups=[0, 0, 1])  # keys shared per group
    fewest_keys(values, frames, 0.01, handles="EDITABLE")  # Editable Keys' compiled search
    fewest_keys(values, frames, 0.01, groups=[0, 0, 0], pose_check=lambda start, length, fitted: True)
    _warm_up_knot_scoring()
    return segment_fit.kernel_location()


def _warm_up_knot_scoring() -> None:
    """Compile the spline modes' knot scoring, insertion step and local refits too, where they run compiled (in this
    process or the worker process). A failure there is recorded (the spline modes then run on numpy), not raised: the
    segment test above works."""
    import warnings

    from .bspline import LSQ_RIDGE, pad_knot_vectors
    from .knots import _SCORER_FAILURE, compiled_spline_kernel

    kernel = compiled_spline_kernel()
    if kernel is None:
        return
    tau = np.linspace(0.0, 1.0, 20)
    data = np.sin(3.0 * tau)[None, :, None]
    knots, n_ctrl = pad_knot_vectors([np.array([0.5])], 3, 1)
    try:
        _, _, per_sample = kernel.score_candidates(knots, n_ctrl, tau, data, np.zeros(1, dtype=np.int64), None, data,
                                                   3, LSQ_RIDGE, True)
        kernel.split_lane_spans([np.array([0.5])], tau, tau, per_sample * 0.0 + 2.0, 0.01, 0.25, 1.0)
        refit = (knots, n_ctrl, np.zeros(1, np.int64), n_ctrl, np.zeros((1, int(n_ctrl[0]), 1)),
                 np.zeros(1, np.int64), np.full(1, tau.size), tau, data, np.zeros(1, np.int64), None, data, 3, LSQ_RIDGE)
        kernel.local_refits(*refit)  # the removal rounds' local refits, both outputs
        kernel.local_refits(*refit, values=True)
    except Exception as exc:  # noqa: BLE001 - recorded: the spline modes score on numpy
        _SCORER_FAILURE.append(f"{type(exc).__name__}: {exc}")
        warnings.warn(f"the compiled knot scoring failed ({_SCORER_FAILURE[0]}); the spline modes run on numpy",
                      RuntimeWarning, stacklevel=2)


def _all_pairs(frames, values, limit, moving) -> Generator[float, None, np.ndarray]:
    """Feasibility of every segment (i, j) of the moving channels, shape (len(moving), N, N)."""
    n = values.shape[0]
    feasible = np.zeros((moving.size, n, n), bool)
    lane = np.repeat(np.arange(moving.size), n - 1)
    start = np.tile(np.arange(n - 1), moving.size)
    columns = np.ascontiguousarray(values.T)
    refine = fast_search.refining_handles()
    for length in range(1, n):
        rows = np.flatnonzero(start + length <= n - 1)
        c, st = moving[lane[rows]], start[rows]
        fit = fit_segments_of(frames, columns, c, st, np.full(rows.size, length), limit[c], refine=refine)
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


def _search_again_where_float32_misses(frames, values, tol, limit, moving, labels, editable: bool,
                                       chosen: list[Chosen], curves: list[BezierCurve]) -> np.ndarray:
    """Search again, with a tighter limit, the channels (with the rest of their unit) whose keys miss
    their tolerance once Blender stores them in float32, at most ``FLOAT32_RETRIES`` times, and keep
    per unit whichever keeps fewer keys once the final check has repaired it: the first search or
    the last. Updates ``chosen`` and ``curves`` in place; returns every channel's stored curve at
    the frames (N, M).

    Tolerances near float32's resolution of the values and frames (the "Joints" error space gives
    channels far from zero tolerances of 1e-6) leave less room than ``ACCEPT_SHARE`` allows for; a
    tighter search then usually keeps fewer keys than the repair (every sample of a segment keyed).
    """
    fitted = evaluate_curves([as_stored(c) for c in curves], frames)
    first: dict[int, tuple[Chosen, BezierCurve, np.ndarray]] = {}
    limit = limit.copy()
    for _ in range(FLOAT32_RETRIES):
        error = np.abs(fitted[:, moving] - values[:, moving]).max(axis=0)
        missed = error > tol[moving]
        if not missed.any():
            break
        lanes = np.flatnonzero(np.isin(labels, labels[missed]))
        again = moving[missed]
        limit[again] *= np.minimum(FLOAT32_TIGHTEN, tol[again] / error[missed])
        redo = moving[lanes]
        gen = fast_search.search(frames, values, limit, redo, np.unique(labels[lanes], return_inverse=True)[1], editable)
        try:
            while True:
                next(gen)
        except StopIteration as stop:
            found = stop.value
        for lane, c, fresh in zip(lanes, redo, found, strict=True):
            first.setdefault(int(lane), (chosen[lane], curves[c], fitted[:, c].copy()))
            chosen[lane] = fresh
            curves[c] = _curve(frames, values[:, c], fresh, editable)
            fitted[:, c] = as_stored(curves[c]).evaluate(frames)
    for unit in np.unique(labels[list(first)]):
        lanes = np.flatnonzero(labels == unit)
        if _keys_once_repaired(frames, values, tol, moving[lanes], [first[lane][:2] for lane in lanes]) < \
                _keys_once_repaired(frames, values, tol, moving[lanes], [(chosen[lane], curves[moving[lane]])
                                                                         for lane in lanes]):
            for lane in lanes:
                chosen[lane], curves[moving[lane]], fitted[:, moving[lane]] = first[lane]
    return fitted


def _keys_once_repaired(frames, values, tol, channels, found: list[tuple[Chosen, BezierCurve]]) -> int:
    """How many keys the final check leaves these channels' curves with (its repair included)."""
    curves = [curve for _, curve in found]
    keys = [np.asarray(c.keys) for c, _ in found]
    check_and_repair(frames, values[:, channels], tol[channels], curves, keys)
    return sum(k.size for k in keys)


def _constants_the_check_allows(values, half_range, tol, constant, pose_check: PoseCheck
                                ) -> Generator[float, None, np.ndarray]:
    """The near-constant channels, fewer where holding them all breaks the pose check.

    A sample that the held channels alone push past the check would always end a segment (no
    segment over it passes) and, a key, never be checked. So the held channels must pass at every
    sample with room to spare: their deviations scaled by ``1 / HELD_SHARE`` pass the check over the
    whole clip. Where they do not, the channels that move most against their tolerance are keyed
    instead, as few as pass (bisection over that order: a handful of checks of the whole clip; a
    cancel can come between them).
    """
    n = values.shape[0]
    middle = 0.5 * (values.max(axis=0) + values.min(axis=0))
    inside = values[1:n - 1]

    def passes(held: np.ndarray) -> bool:
        scaled = inside + np.where(held, middle - inside, 0.0) / HELD_SHARE
        return bool(pose_check(0, n - 1, scaled))

    if passes(constant):
        return constant
    yield 0.0
    candidates = np.flatnonzero(constant & (half_range > 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        motion = np.where(tol[candidates] > 0.0, half_range[candidates] / tol[candidates], np.inf)
    order = candidates[np.argsort(-motion, kind="stable")]
    lo, hi = 0, order.size  # keying order[:lo] fails; keying order[:hi] (every moving one) passes
    while hi - lo > 1:
        mid = (lo + hi) // 2
        held = constant.copy()
        held[order[:mid]] = False
        if passes(held):
            hi = mid
        else:
            lo = mid
        yield 0.0
    held = constant.copy()
    held[order[:hi]] = False
    return held


def _fitted_between(frames, values, held, moving, start: int, length: int, found) -> np.ndarray:
    """Every channel at the samples strictly inside a segment, (length - 1, M): the moving ones
    (``found``: their fits, in ``moving`` order) as fitted, the others as ``held``."""
    out = held[start + 1:start + length].copy()
    if length > 1:
        out[:, moving] = segment_values(frames, values.T, moving, start, length, found)
    return out


def _refit(frames, values, keys: list[np.ndarray], moving, limit) -> list[Chosen]:
    """Handles for given keys (free at every key): each segment fitted by the cascade."""
    columns = np.ascontiguousarray(values.T)
    out = []
    for c in moving:
        zeros = [0.0] * (keys[c].size - 1)
        out.append(Chosen(list(map(int, keys[c])), zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy(),
                           [False] * keys[c].size))
    segs = [(lane, s, int(a), int(b)) for lane, c in enumerate(moving)
            for s, (a, b) in enumerate(zip(keys[c][:-1], keys[c][1:]))]
    by_length: dict[int, list[tuple[int, int, int, int]]] = {}
    for seg in segs:
        by_length.setdefault(seg[3] - seg[2], []).append(seg)
    for length, group in by_length.items():
        lane = np.array([g[0] for g in group])
        start = np.array([g[2] for g in group])
        fit = fit_segments_of(frames, columns, moving[lane], start, np.full(lane.size, length),
                              limit[moving[lane]], refine=fast_search.refining_handles())
        for row, (ln, s_idx, _, _) in enumerate(group):
            out[ln].alpha[s_idx] = float(fit.alpha[row])
            out[ln].beta[s_idx] = float(fit.beta[row])
            out[ln].c1[s_idx] = float(fit.c1[row])
            out[ln].c2[s_idx] = float(fit.c2[row])
    return out


def _curve(frames, column, chosen: Chosen, editable: bool) -> BezierCurve:
    """The Bezier keys of one channel from its chosen segments."""
    k = np.asarray(chosen.keys)
    co = np.column_stack([frames[k], column[k] if chosen.values is None else chosen.values])
    left = np.empty_like(co)
    right = np.empty_like(co)
    h = np.diff(co[:, 0])
    right[:-1, 0] = co[:-1, 0] + np.asarray(chosen.alpha) * h
    right[:-1, 1] = chosen.c1
    left[1:, 0] = co[1:, 0] - np.asarray(chosen.beta) * h
    left[1:, 1] = chosen.c2
    left[0] = 2 * co[0] - right[0]
    right[-1] = 2 * co[-1] - left[-1]
    free = np.asarray(chosen.broken) | (not editable)
    return BezierCurve(co, left, right, np.where(free, "FREE", "ALIGNED"))


def _constant_curve(frames, column) -> BezierCurve:
    mid = 0.5 * (column.max() + column.min())
    co = np.array([[frames[0], mid]])
    return BezierCurve(co, co - [1.0, 0.0], co + [1.0, 0.0], np.array(["FREE"]))
