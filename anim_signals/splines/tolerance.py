"""Tolerance mode: the fewest knots per lane with every sample within tolerance.

On a :class:`.knots.KnotProblem` (errors in tolerance units, 1.0 = the tolerance), all lanes together:

1. greedy insertion: split the worst offending spans until every sample is within tolerance;
2. removal rounds: every knot of every lane is scored by a local refit (:mod:`.local`: the spans
   around the knot refitted, the rest of the current fit kept, so the score costs the window's
   samples, not the clip's); the removable knots, best first and far enough apart that their
   refits do not touch, are removed together, and one global least-squares fit per round
   confirms them (where it breaks the tolerance, the removal nearest the broken sample waits
   until something near it changes); scores are kept between rounds except where a removal
   changed the fit;
3. when a lane has no removable knot left, CMA-ES moves the knots around its cheapest removal to
   win one back (scored by local refits too, confirmed by a global fit).

A round costs a few global fits plus local refits over about ten spans per knot, i.e. linear in
the samples, and the number of rounds depends on how many neighbouring knots must go one after
the other, not on the clip's length: the whole search is about linear in the samples.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .knots import (
    _SCORER_FAILURE,
    FEASIBLE,
    RMS_TIE_BREAK,
    SCORE_CHUNK_ELEMENTS,
    KnotProblem,
    compiled_spline_kernel,
)
from .local import LaneFit, LocalScores, lane_fit, score_replacements

__all__ = ["ToleranceSolution", "fit_lanes", "solve_tolerance"]

INSERT_FRACTION = 0.25  # share of the offending spans split per insertion round
INSERTION_PROGRESS_STEP = 0.02
INSERTION_PROGRESS_MAX = 0.3  # insertion reports progress up to here, removal the rest
# Spans refitted on each side of a removed knot when scoring it locally.
REMOVAL_MARGIN = 2
# A deterministic budget of CMA-ES rescues: ~RESCUE_BUDGET lane-runs in all, 1..8 per lane (one
# curve of a 96-curve clip gets one; a shared latent knot vector gets eight).
RESCUE_BUDGET = 100
MAX_RESCUES_PER_LANE = 8
RESCUE_WINDOW = 3  # a rescue moves this many knots on each side of the removed one
RESCUE_SEED_STRIDE = 7919  # a prime: rescue seeds differ per lane and per knot count
# A round removes every removable knot whose refit window is free, so a few dozen rounds remove
# all a clip can lose whatever its length; the cap is a safety net (the knots are within
# tolerance after every round, just more of them).
MAX_REMOVAL_ROUNDS = 64
# A batch the global fit does not confirm is narrowed this often before it waits a round.
CONFIRM_ATTEMPTS = 3


class ToleranceSolution(NamedTuple):
    """Internal knots per lane and whether the lane ends within tolerance."""

    internal: list[np.ndarray]
    feasible: np.ndarray  # (C,) bool


class _Rescue(NamedTuple):
    lane: int
    knots: np.ndarray  # the lane's knots without the removed one
    gap: int  # where the removed knot was


def fit_lanes(problem: KnotProblem, internal: Sequence[np.ndarray], lanes: Sequence[int]) -> list[LaneFit]:
    """Global least-squares fits of ``internal[k]`` on lane ``lanes[k]``, with their errors.

    Parameters
    ----------
    problem : KnotProblem
    internal : sequence of ndarray
        Internal (distinct) knots of each fit.
    lanes : sequence of int
        The lane each fit belongs to.

    Returns
    -------
    list of LaneFit
        One per fit, in order.
    """
    lanes = list(lanes)
    chunk = max(1, int(SCORE_CHUNK_ELEMENTS // max(1, problem.target[0].size)))
    out: list[LaneFit] = []
    for start in range(0, len(lanes), chunk):
        part = [np.asarray(internal[k], dtype=float) for k in range(start, min(start + chunk, len(lanes)))]
        err, ctrl = problem.errors(part, np.array(lanes[start : start + chunk]))
        for k, knots in enumerate(part):
            full = problem.knot_vectors(knots[None])[0]
            out.append(lane_fit(full, ctrl[k, : full.size - problem.degree - 1], err[k]))
    return out


# --------------------------------------------------------------------------------------
# 1) insertion


def _insert_knots(
    problem: KnotProblem, internal: np.ndarray, per_sample: np.ndarray, snap: np.ndarray | None
) -> np.ndarray | None:
    """New knots in the worst spans whose samples break the tolerance; None if none can split
    (numpy; :func:`_insert_knots_of_lanes` runs it compiled where the scoring is).

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
    # overshoots, and every surplus knot costs a removal later
    order = np.lexsort((new_knots, err))[::-1]
    take = max(1, int(np.ceil(err.size * INSERT_FRACTION)))
    return np.sort(np.concatenate([internal, new_knots[order[:take]]]))


def _insert_knots_of_lanes(problem: KnotProblem, internals: list[np.ndarray], per_sample: np.ndarray,
                           snap: np.ndarray | None) -> list[np.ndarray | None]:
    """:func:`_insert_knots` for several lanes (``per_sample`` one row each): in one call of the
    compiled step where the scoring is compiled (:func:`.spline_kernel.split_lane_spans`, the same
    knots; one request per round where it runs in a worker process)."""
    kernel = compiled_spline_kernel()
    if kernel is not None and internals:
        try:
            return kernel.split_lane_spans(internals, problem.tau, problem.tau if snap is None else snap, per_sample,
                                           problem.min_gap, INSERT_FRACTION, FEASIBLE)
        except Exception as exc:  # noqa: BLE001 - numpy takes the same step
            _SCORER_FAILURE.append(f"{type(exc).__name__}: {exc}")
            warnings.warn(f"the compiled knot insertion failed ({_SCORER_FAILURE[0]}); running it on numpy",
                          RuntimeWarning, stacklevel=2)
    return [_insert_knots(problem, internal, row, snap) for internal, row in zip(internals, per_sample, strict=True)]


def _insert_until_feasible(
    problem: KnotProblem, internal: list[np.ndarray], feasible: np.ndarray, snap: np.ndarray | None
) -> Generator[float, None, None]:
    """Greedy insertion on every lane (in place) until it is within tolerance or cannot split."""
    active = list(range(problem.n_lanes))
    rounds = 0
    while active:
        mx, _, per_sample = problem.score([internal[c] for c in active], np.array(active), samples=True)
        assert per_sample is not None
        missing = np.flatnonzero(~(mx <= FEASIBLE))  # (a NaN score is not feasible: insertion is tried)
        feasible[[c for k, c in enumerate(active) if mx[k] <= FEASIBLE]] = True
        lanes = [active[k] for k in missing]
        still = []
        for c, grown in zip(lanes, _insert_knots_of_lanes(problem, [internal[c] for c in lanes], per_sample[missing],
                                                          snap), strict=True):
            if grown is not None:
                internal[c] = grown
                still.append(c)
        active = still
        rounds += 1
        yield min(INSERTION_PROGRESS_MAX, INSERTION_PROGRESS_STEP * rounds)


# --------------------------------------------------------------------------------------
# 2) removal rounds


@dataclass
class _LaneScores:
    """The local removal scores of one lane's knots, kept between rounds: a removal changes the
    fit only around it, so only the knots whose refits read that part are scored again."""

    max_error: np.ndarray  # (n,)
    rms: np.ndarray  # (n,)
    changed: np.ndarray  # (n, 2) x-interval each removal changes
    depends: np.ndarray  # (n, 2) x-interval each removal's refit reads
    valid: np.ndarray  # (n,) bool
    blocked: np.ndarray  # (n,) bool: the global fit refused this removal; wait for a change nearby

    @classmethod
    def empty(cls, n: int) -> _LaneScores:
        return cls(np.zeros(n), np.zeros(n), np.zeros((n, 2)), np.zeros((n, 2)), np.zeros(n, dtype=bool),
                   np.zeros(n, dtype=bool))

    def removed(self, picks: Sequence[int], windows: np.ndarray) -> _LaneScores:
        """Scores after removing knots ``picks`` whose removals changed the disjoint x-intervals
        ``windows``: the scores whose refits read any of them are stale (and worth a new try)."""
        keep = np.ones(self.valid.size, dtype=bool)
        keep[list(picks)] = False
        out = _LaneScores(self.max_error[keep], self.rms[keep], self.changed[keep], self.depends[keep],
                          self.valid[keep].copy(), self.blocked[keep].copy())
        hit = _nearest_window(windows, out.depends) >= 0
        out.valid &= ~hit
        out.blocked &= ~hit
        return out


def _nearest_window(windows: np.ndarray, intervals: np.ndarray, nearest: bool = False) -> np.ndarray:
    """Per x-interval (or point: both ends equal), the index of the disjoint window it overlaps,
    else -1; with ``nearest``, the index of the closest window instead."""
    order = np.argsort(windows[:, 0])
    starts, ends = windows[order, 0], windows[order, 1]
    # the window starting last before an interval's end is the only one that can overlap it
    last = np.searchsorted(starts, intervals[:, 1], side="left") - 1
    at = np.maximum(last, 0)
    overlap = (last >= 0) & (ends[at] > intervals[:, 0])
    if not nearest:
        return np.where(overlap, order[at], -1)
    after = np.minimum(last + 1, starts.size - 1)
    gap_before = np.where(last >= 0, np.maximum(intervals[:, 0] - ends[at], 0.0), np.inf)
    gap_after = np.where(last + 1 < starts.size, np.maximum(starts[after] - intervals[:, 1], 0.0), np.inf)
    return order[np.where(gap_before <= gap_after, at, after)]


@dataclass
class _Removal:
    """State of the removal phase of :func:`solve_tolerance`."""

    removing: list[int]  # lanes still trying to lose a knot
    fits: list[LaneFit | None]  # (C,) each lane's current global fit
    failures: np.ndarray  # (C,) CMA-ES rescues that did not close the gap
    rescues: np.ndarray  # (C,) CMA-ES rescues spent
    max_rescues: int
    scores: dict[int, _LaneScores] = field(default_factory=dict)  # per lane, kept between rounds


def _span_range(breaks: np.ndarray, interval: np.ndarray) -> tuple[int, int]:
    """Spans [lo, hi) of ``breaks`` covered by the x-interval (whose ends are breaks)."""
    lo, hi = np.searchsorted(breaks, interval, side="left")
    return int(lo), int(max(hi, lo + 1))


def _pick_apart(breaks: np.ndarray, order: np.ndarray, changed: np.ndarray, depends: np.ndarray) -> list[int]:
    """Candidates in ``order`` whose refits leave each other alone: none changes what another
    reads, so the removals together give exactly the refits each was scored with."""
    n_spans = breaks.size - 1
    in_changed = np.zeros(n_spans, dtype=bool)
    in_depends = np.zeros(n_spans, dtype=bool)
    picks = []
    for k in order:
        c0, c1 = _span_range(breaks, changed[k])
        d0, d1 = _span_range(breaks, depends[k])
        if in_depends[c0:c1].any() or in_changed[d0:d1].any():
            continue
        in_changed[c0:c1] = True
        in_depends[d0:d1] = True
        picks.append(int(k))
    return picks


def _gather_scores(state: _Removal, lanes: np.ndarray, index: np.ndarray) -> LocalScores:
    """The kept scores of knots ``index`` of lanes ``lanes``, as one LocalScores."""
    n = lanes.size
    out = LocalScores(np.zeros(n), np.zeros(n), np.zeros((n, 2)), np.zeros((n, 2)))
    for c in np.unique(lanes):
        sel = lanes == c
        cache, at = state.scores[int(c)], index[sel]
        out.max_error[sel], out.rms[sel] = cache.max_error[at], cache.rms[at]
        out.changed[sel], out.depends[sel] = cache.changed[at], cache.depends[at]
    return out


def _plan_removals(
    problem: KnotProblem,
    internal: list[np.ndarray],
    state: _Removal,
    snap: np.ndarray | None,
    max_iterations: int,
) -> tuple[dict[int, list[int]], dict[int, np.ndarray], list[_Rescue]]:
    """One round's choices: per lane, removable knots whose refits do not touch (best first),
    with the x-intervals their refits change; or a CMA-ES rescue of its cheapest removal."""
    lanes, index = [], []
    for c in state.removing:
        cache = state.scores.setdefault(c, _LaneScores.empty(internal[c].size))
        stale = np.flatnonzero(~cache.valid)
        lanes += [c] * stale.size
        index += stale.tolist()
    lanes_a, index_a = np.array(lanes, dtype=int), np.array(index, dtype=int)
    fresh = score_replacements(
        state.fits, problem.tau, problem.latent, problem.target, problem.basis, problem.degree, problem.multiplicity,
        lanes_a, index_a, index_a + 1, margin=REMOVAL_MARGIN,
    )
    problem.local_evaluations += lanes_a.size
    for c in state.removing:
        sel = lanes_a == c
        cache, at = state.scores[c], index_a[sel]
        cache.max_error[at], cache.rms[at] = fresh.max_error[sel], fresh.rms[sel]
        cache.changed[at], cache.depends[at] = fresh.changed[sel], fresh.depends[sel]
        cache.valid[at] = True
    lanes, index = [], []
    for c in state.removing:
        idx = np.flatnonzero(~state.scores[c].blocked)
        lanes += [c] * idx.size
        index += idx.tolist()
    lanes_a, index_a = np.array(lanes, dtype=int), np.array(index, dtype=int)
    scores = _gather_scores(state, lanes_a, index_a)
    objective = scores.max_error + RMS_TIE_BREAK * scores.rms
    chosen: dict[int, list[int]] = {}
    changed: dict[int, np.ndarray] = {}
    rescue: list[_Rescue] = []
    for c in state.removing:
        sel = np.flatnonzero(lanes_a == c)
        if sel.size == 0:
            continue
        removable = sel[scores.max_error[sel] <= FEASIBLE]
        if removable.size:
            breaks = np.concatenate([[0.0], internal[c], [1.0]])
            order = removable[np.lexsort((index_a[removable], objective[removable]))]
            picks = _pick_apart(breaks, order, scores.changed, scores.depends)
            chosen[c] = [int(index_a[k]) for k in picks]
            changed[c] = scores.changed[picks]
        elif snap is None and state.failures[c] < 1 and state.rescues[c] < state.max_rescues and max_iterations > 0:
            state.rescues[c] += 1
            cheapest = int(index_a[sel[np.argmin(objective[sel])]])
            rescue.append(_Rescue(c, np.delete(internal[c], cheapest), cheapest))
    return chosen, changed, rescue


def _confirm_removals(
    problem: KnotProblem,
    internal: list[np.ndarray],
    state: _Removal,
    chosen: dict[int, list[int]],
    changed: dict[int, np.ndarray],
) -> set[int]:
    """Remove each lane's picks where one global fit confirms them (in place). Where the global fit
    breaks the tolerance (it differs from the local refits by a ripple that decays away from each
    removal), the pick nearest to each broken sample is blocked and the rest tried again (a few
    times, then all are blocked). Returns the lanes that lost knots."""
    pending = {c: (list(p), np.asarray(changed[c])) for c, p in chosen.items() if p}
    done: set[int] = set()
    for _ in range(CONFIRM_ATTEMPTS):
        if not pending:
            break
        trying = list(pending)
        new = [np.delete(internal[c], pending[c][0]) for c in trying]
        for c, knots, fit in zip(trying, new, fit_lanes(problem, new, trying), strict=True):
            picks, windows = pending.pop(c)
            if fit.max_error <= FEASIBLE:
                state.scores[c] = state.scores[c].removed(picks, windows)
                internal[c], state.fits[c] = knots, fit
                done.add(c)
                continue
            bad = problem.tau[fit.worst > FEASIBLE]
            blamed = np.zeros(len(picks), dtype=bool)
            blamed[_nearest_window(windows, np.column_stack([bad, bad]), nearest=True)] = True
            state.scores[c].blocked[np.asarray(picks)[blamed]] = True
            if not blamed.all():
                pending[c] = ([p for p, b in zip(picks, blamed, strict=True) if not b], windows[~blamed])
    for c, (picks, _) in pending.items():
        state.scores[c].blocked[picks] = True
    return done


def _run_rescues(
    problem: KnotProblem,
    internal: list[np.ndarray],
    rescue: list[_Rescue],
    state: _Removal,
    population: int | None,
    max_iterations: int,
    seed: int,
) -> Generator[float, None, set[int]]:
    """CMA-ES moves the knots around each removed one (RESCUE_WINDOW each side) to close the gap,
    each candidate scored by a local refit; a lane keeps the result when a global fit confirms it
    (in place), else counts a failure. Returns the rescued lanes."""
    lanes = np.array([r.lane for r in rescue])
    windows = [(max(0, r.gap - RESCUE_WINDOW), min(r.knots.size, r.gap + RESCUE_WINDOW)) for r in rescue]

    def local_score(rows: list[np.ndarray], runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        first = np.array([windows[k][0] for k in runs], dtype=int)
        stop = np.array([windows[k][1] + 1 for k in runs], dtype=int)
        n_moved = stop - 1 - first
        moved = np.zeros((len(rows), max(int(n_moved.max()), 1)))
        for s, (row, k) in enumerate(zip(rows, runs, strict=True)):
            moved[s, : n_moved[s]] = row[windows[k][0] : windows[k][1]]
        scores = score_replacements(
            state.fits, problem.tau, problem.latent, problem.target, problem.basis,
            problem.degree, problem.multiplicity, lanes[runs], first, stop, moved, n_moved,
            margin=REMOVAL_MARGIN,
        )
        problem.local_evaluations += len(rows)
        return scores.max_error, scores.rms

    results = yield from problem.cma_lanes(
        [r.knots for r in rescue],
        lanes,
        "max",
        population,
        max_iterations,
        [seed + RESCUE_SEED_STRIDE * int(c) + internal[c].size for c in lanes],
        target=FEASIBLE,
        windows=windows,
        scorer=local_score,
    )
    found = [(r, np.asarray(f.knots)) for r, f in zip(rescue, results, strict=True) if f.max_error <= FEASIBLE]
    confirmed = fit_lanes(problem, [k for _, k in found], [r.lane for r, _ in found])
    rescued: set[int] = set()
    for (r, knots), fit in zip(found, confirmed, strict=True):
        if fit.max_error <= FEASIBLE:
            internal[r.lane], state.fits[r.lane] = knots, fit
            state.scores.pop(r.lane, None)
            rescued.add(r.lane)
    for r in rescue:
        if r.lane not in rescued:
            state.failures[r.lane] += 1
    return rescued


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

    1) greedy insertion until feasible; 2) rounds removing every removable knot whose local refit
    leaves the others' alone (best first), confirmed by one global fit per round; 3) when no
    removal is feasible, CMA-ES moves the knots around the cheapest one to win it back. Removal
    stops after MAX_REMOVAL_ROUNDS rounds; the cost is about linear in the samples.

    Parameters
    ----------
    problem : KnotProblem
        The lanes to solve.
    population, max_iterations, seed : int
        CMA-ES settings of the rescues (population None: 4 + floor(3 ln(dimension))).
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
    removing = [c for c in range(n_lanes) if feasible[c] and internal[c].size > 0]
    fits: list[LaneFit | None] = [None] * n_lanes
    for c, fit in zip(removing, fit_lanes(problem, [internal[c] for c in removing], removing), strict=True):
        fits[c] = fit
    state = _Removal(
        removing=removing,
        fits=fits,
        failures=np.zeros(n_lanes, dtype=int),
        rescues=np.zeros(n_lanes, dtype=int),
        max_rescues=max_rescues,
    )
    for _ in range(MAX_REMOVAL_ROUNDS):
        if not state.removing:
            break
        chosen, changed, rescue = _plan_removals(problem, internal, state, snap, max_iterations)
        _confirm_removals(problem, internal, state, chosen, changed)
        rescued: set[int] = set()
        if rescue:
            rescued = yield from _run_rescues(problem, internal, rescue, state, population, max_iterations, seed)
        done = sum(internal[c].size for c in range(n_lanes))
        yield INSERTION_PROGRESS_MAX + (1 - INSERTION_PROGRESS_MAX) * (1 - done / start_total)
        state.removing = [
            c
            for c in state.removing
            if internal[c].size > 0 and (c in chosen or c in rescued) and state.failures[c] < 1
        ]
    return ToleranceSolution(internal, feasible)
