"""The FAST search over key positions of :mod:`.key_reduction`: from each key the longest feasible segment.

A segment's length is found by galloping from the channel's last segment length and bisecting, then
one probe further out (feasibility is not always monotone in the length); its end is the next key.
Channels that share their key frames (a group: a bone's curves, or all of them) form a *unit*, whose
length passes where it passes for every channel.

Where the segment test runs compiled, each unit's whole search runs in machine code
(:func:`compiled_search`: :func:`.search_kernel.search_channels`, Editable Keys' too); a pose check and the numpy fallback step every unit together in Python, one
batch of segment tests per round (:func:`greedy`). Both keep the same keys where keys stay on their
samples (``tests/core/test_segment_kernel.py``, ``tests/core/test_search_kernel.py``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import segment_fit
from .segment_fit import fit_segments_of

__all__ = ["CORNER_GAIN", "CORNER_MIN_SAMPLES", "FIRST_LENGTH", "PROBES", "PROGRESS_STEPS", "Chosen", "compiled_search",
           "greedy", "refining_handles", "search"]

# Editable handles: a key becomes a corner (FREE) where a free first handle reaches this many times
# as far as the aligned one, and at least this many samples further.
CORNER_GAIN = 3.0
CORNER_MIN_SAMPLES = 4
# The compiled search reports progress (and can be cancelled) at least about this many times: per
# share of the units, or per stretch of frames when there are fewer units; in this process, with
# at least this many units, at the end of each unit.
PROGRESS_STEPS = 16
# A search of many units in this process runs in a thread of its own while the caller reports each
# unit's end; it looks this often (seconds) whether one ended.
POLL_SECONDS = 0.005
# Longer lengths tried from a key once its search has settled (feasibility is not always monotone).
PROBES = 1
# The length tried first from the first key (later keys start from the last segment's length).
FIRST_LENGTH = 8


def refining_handles() -> bool:
    """Whether the searches refine handle lengths (:data:`.segment_fit.REFINE_GATE`; compiled only:
    the numpy cascade would only repeat a test it already failed)."""
    return segment_fit.REFINE_GATE > 0 and segment_fit.compiled_kernel()


@dataclass
class Chosen:
    """One channel's keys (sample indices) and, per segment, its handle lengths (fractions of the
    segment) and inner control values; per key whether its two handles may differ (a corner), and
    its value where keys may sit off their samples (None: the samples' values)."""

    keys: list[int]
    alpha: list[float]
    beta: list[float]
    c1: list[float]
    c2: list[float]
    broken: list[bool]
    values: list[float] | None = None


def greedy(frames, values, limit, moving, editable: bool, group_of: np.ndarray,
            unit_check: Callable[[int, int, object], bool] | None = None) -> Generator[float, None, list[Chosen]]:
    """From each key the longest feasible segment, every channel at once: the next key is its end.

    The search runs per *unit*: a group of channels that share their key frames (``group_of``
    labels the moving channels; one channel per group when keys are not shared). A length passes
    for a unit when it passes for every channel in it. Per unit a search state: ``lo`` a length
    known feasible, ``hi`` one known infeasible (0: none yet). The length tried is the last
    segment's length first, then doubled until one fails, then bisected; once settled, ``PROBES``
    longer lengths (twice the failed one) are tried, and the search grows on from one that passes.
    Segments are grouped by padded length (powers of two), so padding costs at most 2x.

    With ``editable``, every unit has a twin: one whose first handles keep the slopes the previous
    segments ended with (ALIGNED keys) and one free. The free one is taken, and the key marked a
    corner, only where it reaches at least ``CORNER_GAIN`` times as far (and ``CORNER_MIN_SAMPLES``
    samples further).

    With ``unit_check`` (one unit, keys not editable), a length passes where
    ``unit_check(start, length, fits)`` says so, ``fits`` the unit's channels' segment fits (each
    the best its own limit asked for), instead of where every channel meets its own limit.
    """
    n = values.shape[0]
    columns = np.ascontiguousarray(values.T)
    width = moving.size
    groups = int(group_of.max()) + 1
    # Editable Keys keeps the table's handle lengths: refining costs it 0.7 s on a 1,500 x 306 clip
    # (past the 2 s goal) for 4 % fewer keys, and it keeps within 0.55 x Decimate's keys without.
    refine = refining_handles() and not editable
    variants = 2 if editable else 1
    units = groups * variants
    lanes = width * variants
    chan = np.tile(moving, variants)
    unit_of = np.concatenate([group_of + v * groups for v in range(variants)])
    members = [np.flatnonzero(group_of == g) for g in range(groups)]
    first_lane = np.array([m[0] for m in members])  # a lane of each group (its aligned twin's)
    key = np.zeros(units, int)
    lo = np.ones(units, int)
    hi = np.zeros(units, int)
    guess = np.full(units, FIRST_LENGTH)
    trial = np.minimum(guess, n - 1)
    probing = np.zeros(units, bool)
    refining = np.zeros(units, bool)  # past the cascade's last length: one further at a time, refined
    probes_left = np.full(units, PROBES)
    slope = np.full(lanes, np.nan)  # only the aligned lanes (the first ``width``) ever hold one
    best = np.zeros((4, lanes))  # alpha, beta, c1, c2 of each lane's fit at its unit's length lo
    searching = np.ones(units, bool)
    # units of one channel take the refined lengths that held one sample shorter as the answer, as
    # the compiled search does (segment_kernel._search_unit); a unit check judges the fits themselves:
    # the best each can be
    alone = np.tile(np.array([m.size == 1 for m in members]), variants) & (unit_check is None)
    chosen = [Chosen([0], [], [], [], [], [False]) for _ in range(width)]
    while searching.any():
        rows = np.flatnonzero(searching[unit_of])  # lanes
        lengths = trial[unit_of[rows]]
        warm = None
        if refine:
            # growing a segment: the lengths that held one sample shorter are tried first
            grown = refining[unit_of[rows]]
            warm = (np.where(grown, best[0, rows], np.nan), np.where(grown, best[1, rows], np.nan))
        found = fit_segments_of(frames, columns, chan[rows], key[unit_of[rows]], lengths, limit[chan[rows]],
                                slope=slope[rows], refine=refining[unit_of[rows]] if refine else None,
                                start_lengths=warm, warm_decides=None if warm is None else alone[unit_of[rows]])
        ok = found.ok
        fits = np.stack([found.alpha, found.beta, found.c1, found.c2])
        tested = np.flatnonzero(searching)
        misses = np.bincount(unit_of[rows][~ok], minlength=units)
        unit_ok = misses[tested] == 0
        if unit_check is not None:
            unit_ok = np.array([bool(unit_check(int(key[u]), int(trial[u]), found)) for u in tested])
        lengths_u = trial[tested]
        passed = tested[unit_ok]
        unit_passed = np.zeros(units, bool)
        unit_passed[passed] = True
        lane_pass = unit_passed[unit_of[rows]]
        best[:, rows[lane_pass]] = fits[:, lane_pass]
        probe = probing[tested]
        lo[passed] = lengths_u[unit_ok]
        failed = tested[~unit_ok & ~probe]
        hi[failed] = lengths_u[~unit_ok & ~probe]
        hi[tested[unit_ok & probe]] = 0  # a longer segment past an infeasible one: keep growing from it
        probing[tested] = False
        room = n - 1 - key[tested]
        refined = refining[tested]
        settled = ((lo[tested] == room) | ((hi[tested] > 0) & (hi[tested] - lo[tested] <= 1)) | (probe & ~unit_ok)) & ~refined
        # Feasibility is not always monotone in the length (long eases): before settling, one probe
        # further out per key.
        ask = settled & ~probe & (lo[tested] < room) & (probes_left[tested] > 0)
        probes_left[tested[ask]] -= 1
        probing[tested[ask]] = True
        trial[tested[ask]] = np.minimum(room[ask], 2 * hi[tested[ask]] + 2)
        # Then one length further at a time with the handle lengths refined (dearer than the
        # cascade, so only here), until one fails.
        startrefining = settled & ~ask & (lo[tested] < room) & refine
        refining[tested[startrefining]] = True
        refined_done = refined & (~unit_ok | (lo[tested] == room))
        refining[tested[refined_done]] = False
        searching[tested[(settled & ~ask & ~startrefining) | refined_done]] = False
        if editable:
            # A free twin matters only at a corner: once it is known to fail short of CORNER_GAIN
            # times its aligned twin's length, its search ends (the first key, without a slope to
            # keep, takes the free twin whatever its length).
            aligned = np.arange(groups)
            free = aligned + groups
            keeps_slope = np.isfinite(slope[first_lane])
            short = (searching[free] & keeps_slope & (hi[free] > 0)
                     & ((hi[free] <= CORNER_GAIN * lo[aligned]) | (hi[free] < lo[aligned] + CORNER_MIN_SAMPLES)))
            searching[free[short]] = False
            probing[free[short]] = False
            refining[free[short]] = False
        for unit in np.flatnonzero(~searching[:groups] & (key[:groups] < n - 1)):
            if editable and searching[unit + groups]:
                continue  # its free twin has not settled yet
            taken = unit
            first = not np.isfinite(slope[members[unit][0]])
            corner = False
            if editable:
                twin = unit + groups
                corner = (not first and lo[twin] >= CORNER_GAIN * lo[unit]
                          and lo[twin] >= lo[unit] + CORNER_MIN_SAMPLES)
                if corner or first:
                    taken = twin
            length = int(lo[taken])
            start = key[unit]
            if length == 1:  # never tested (one step always passes): fit it now
                lanes_t = members[unit] + (taken // groups) * width
                one = fit_segments_of(frames, columns, chan[lanes_t], np.full(lanes_t.size, start),
                                      np.ones(lanes_t.size, int), limit[chan[lanes_t]], slope=slope[lanes_t])
                best[:, lanes_t] = one.alpha, one.beta, one.c1, one.c2
            for j in members[unit]:
                lane = j + (taken // groups) * width
                settled_fit = best[:, lane].copy()
                chosen[j].broken[-1] = bool(corner)
                _settle(chosen[j], start, length, settled_fit)
                if editable:
                    end = start + length
                    beta = settled_fit[1]
                    slope[j] = (columns[chan[j], end] - settled_fit[3]) / (beta * (frames[end] - frames[start]))
            for twin in range(unit, units, groups):
                key[twin] += length
                guess[twin] = max(length, 2)
                lo[twin], hi[twin] = 1, 0
                probes_left[twin] = PROBES
                refining[twin] = False
                searching[twin] = key[twin] < n - 1
        nxt_units = np.flatnonzero(searching & ~probing)
        room = n - 1 - key[nxt_units]
        fresh = (lo[nxt_units] == 1) & (hi[nxt_units] == 0)
        grow = hi[nxt_units] == 0
        nxt = np.where(grow, np.minimum(lo[nxt_units] * 2, room), (lo[nxt_units] + hi[nxt_units]) // 2)
        nxt = np.where(fresh, np.minimum(guess[nxt_units], room), nxt)
        nxt = np.where(refining[nxt_units], np.minimum(lo[nxt_units] + 1, room), nxt)
        trial[nxt_units] = np.maximum(nxt, 1)
        yield 0.95 * float(np.mean(key[:groups])) / max(n - 1, 1)
    return chosen


def _settle(chosen: Chosen, start: int, length: int, fit: np.ndarray) -> None:
    chosen.keys.append(int(start + length))
    chosen.alpha.append(float(fit[0]))
    chosen.beta.append(float(fit[1]))
    chosen.c1.append(float(fit[2]))
    chosen.c2.append(float(fit[3]))
    chosen.broken.append(False)


def compiled_search(frames, values, limit, moving, labels,
                     editable: bool = False) -> Generator[float, None, list[Chosen] | None]:
    """:func:`greedy`, each unit's search (``labels``: the moving channels' units, as ``greedy``'s
    ``group_of``) run whole in compiled code: in this process with at least ``PROGRESS_STEPS`` units,
    all of them in one call in a thread of its own, a step (and a chance to cancel) at each unit's
    end; else a share of the units per step; with fewer units than ``PROGRESS_STEPS`` (keys shared by all curves: one unit) each share's search also stops
    and goes on every stretch of frames. FREE handles: the same keys where keys stay on their samples
    (:func:`.segment_fit.search_channels_of`); ``editable``: the same keys and handles as ``greedy``
    (:mod:`.search_kernel`). None when it cannot run (no compiled kernel, or one that failed)."""
    columns = np.ascontiguousarray(values.T)
    n_units = int(labels.max()) + 1
    share = max(4, -(-n_units // PROGRESS_STEPS))
    # Many units in this process: one call for them all, in a thread of its own, reporting each unit's
    # end (shares of units, one call each, left a thread idle at the end of every share while the
    # other finished its last unit: 0.15-0.3 s of a Joints fit of 300 curves).
    whole = n_units >= PROGRESS_STEPS and segment_fit.kernel_location() == "process"
    if whole:
        share = n_units
    n_shares = -(-n_units // share)
    stretch = frames.size if whole else -(-frames.size // max(1, -(-PROGRESS_STEPS // n_shares)))
    corners = (CORNER_GAIN, CORNER_MIN_SAMPLES) if editable else None
    chosen: list[Chosen | None] = [None] * moving.size
    for s, first in enumerate(range(0, n_units, share)):
        units = np.arange(first, min(first + share, n_units))
        lanes = np.concatenate([np.flatnonzero(labels == g) for g in units])
        bounds = np.concatenate([[0], np.cumsum([np.count_nonzero(labels == g) for g in units])])
        part = moving[lanes]
        keys: list[list[int]] = [[] for _ in part]
        fits: list[list[list[float]]] = [[[] for _ in range(5)] for _ in part]
        broken: list[list[bool]] = [[] for _ in part]
        start = None
        for stop_at in range(stretch, frames.size - 1 + stretch, stretch):
            if whole:
                found = yield from _in_a_thread(functools.partial(
                    segment_fit.search_channels_of, frames, columns, part, limit[part], refining_handles(), PROBES,
                    FIRST_LENGTH, bounds, None, stop_at, corners), n_units)
            else:
                found = segment_fit.search_channels_of(frames, columns, part, limit[part], refining_handles(), PROBES,
                                                       FIRST_LENGTH, bounds, start, stop_at, corners)
            if found is None:
                return None
            counts, found_keys, found_fits = found[:3]
            key_end = np.cumsum(counts)
            fit_end = key_end - np.arange(1, part.size + 1)
            for i, count in enumerate(counts):
                k = found_keys[key_end[i] - count:key_end[i]].tolist()
                keys[i] += k if start is None else k[1:]  # (a later stretch starts at the last key)
                for r, row in enumerate(found_fits[:, fit_end[i] - (count - 1):fit_end[i]].tolist()):
                    fits[i][r] += row
                if editable:
                    flags = found[3][key_end[i] - count:key_end[i]].tolist()
                    if start is None:
                        broken[i] += flags
                    else:  # the last key's flag is decided by the segment that starts there
                        broken[i][-1:] = flags[:1]
                        broken[i] += flags[1:]
            start = segment_fit.search_state(counts, found_keys, found_fits, bounds)
            if editable:
                start = (*start, _slopes_kept(frames, columns, part, keys, fits))
            yield 0.95 * (s + min(1.0, stop_at / max(frames.size - 1, 1))) / n_shares
        for i, (k, f) in enumerate(zip(keys, fits, strict=True)):
            if editable:
                chosen[lanes[i]] = Chosen(k, f[0], f[1], f[2], f[3], broken[i])
            else:
                key_values = [float(values[0, part[i]])] + f[4]
                chosen[lanes[i]] = Chosen(k, f[0], f[1], f[2], f[3], [False] * len(k), key_values)
    return [c for c in chosen if c is not None]


def _in_a_thread(search: Callable[[list, threading.Event], Any], n_units: int) -> Generator[float, None, Any]:
    """Run ``search(done, cancel)`` in a thread of its own and yield progress as its units end (in
    [0, 0.95]), and the same value again every :data:`POLL_SECONDS` while none ends (a search of one
    long unit still hands the caller its thread back: for Esc, and for work of its own meanwhile);
    returns what it returns. Closing the generator (Esc) sets ``cancel`` and waits for the units under
    way."""
    done: list[int] = []
    cancel = threading.Event()
    reported = 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="anim_signals_search") as runner:
        future = runner.submit(search, done, cancel)
        try:
            while True:
                finished = bool(wait([future], timeout=POLL_SECONDS).done)
                if not finished and reported == len(done):
                    yield 0.95 * (reported / max(n_units, 1))
                    continue
                while reported < len(done):
                    reported += 1
                    yield 0.95 * (reported / max(n_units, 1))
                if finished:
                    break
        except BaseException:
            cancel.set()  # (leaving the block waits for the units under way)
            raise
    return future.result()


def _slopes_kept(frames, columns, chan, keys: list[list[int]], fits: list[list[list[float]]]) -> np.ndarray:
    """The slope each channel's last segment ends with, which Editable Keys' next segment keeps (as
    :func:`greedy` computes it; NaN before the first segment)."""
    out = np.full(len(keys), np.nan)
    for i, k in enumerate(keys):
        if len(k) > 1:
            end, before = k[-1], k[-2]
            out[i] = (columns[chan[i], end] - fits[i][3][-1]) / (fits[i][1][-1] * (frames[end] - frames[before]))
    return out


def search(frames, values, limit, moving, labels, editable: bool) -> Generator[float, None, list[Chosen]]:
    """The FAST search of the moving channels: compiled where it can run, else stepped in Python
    (:func:`greedy`)."""
    compiled = yield from compiled_search(frames, values, limit, moving, labels, editable)
    if compiled is not None:
        return compiled
    return (yield from greedy(frames, values, limit, moving, editable, labels))
