"""Whole searches over key positions compiled with numba: each unit's search from its first key to its last.

:func:`.fast_search.greedy` steps every unit of the clip together in Python, one batch of segment
tests per round: a 1,500-frame clip takes over two thousand rounds, most of them a few segments of
the busiest curves, and their overhead was most of the search's time. Here :func:`search_channels`
hands the units out to the threads as they come free, and each unit's search runs alone in machine
code, with the same segment test (:func:`.segment_kernel._one_segment`) and the same lengths tried in
the same order:

* FREE handles (Fewest Keys): :func:`.segment_kernel._search_unit`, with the handle lengths refined
  and keys free to sit off their samples;
* Editable Keys: :func:`search_editable_unit`, keys on their samples. A unit has two twins searched
  side by side, one trial each per round as the Python search steps them: the *aligned* twin, whose
  segments start with the slope the previous segment ended with (an ALIGNED key), and the *free*
  twin, whose first handle is free. The free twin's segment is taken, and the key marked a corner,
  only where it reaches ``CORNER_GAIN`` times as far and ``CORNER_MIN_SAMPLES`` samples further;
  once it is known to fall short of that, its search ends early. The same keys, handles and corners
  as the Python search (``tests/core/test_search_kernel.py`` compares the two on generated clips and
  a captured walk).

A unit is a group of channels sharing their key frames (one channel when keys are not shared).
Imported by :func:`.segment_fit.search_channels_of` and the segment worker (never where numba must
not load: :mod:`.segment_process`).
"""

from __future__ import annotations

import itertools

import numpy as np

from .compiled import THREADS, compile_lazily
from .compiled import pool as _pool
from .segment_kernel import _holds_between, _one_segment, _scratch, _search_unit

__all__ = ["search_channels", "search_editable_unit"]


def _slope_after(y_end, c2, beta, span):  # pragma: no cover - compiled
    """The slope a segment ends with, as numpy divides (a zero denominator gives inf or NaN, not an error)."""
    den = beta * span
    num = y_end - c2
    if den != 0.0:
        return num / den
    if num > 0.0:
        return np.inf
    if num < 0.0:
        return -np.inf
    return np.nan


def _fresh_twins(lo, hi, probes_left, probing, searching, probes):  # pragma: no cover - compiled
    """Both twins' search state as a key starts it (:func:`search_editable_unit`), in place."""
    for t in range(2):
        lo[t] = 1
        hi[t] = 0
        probes_left[t] = probes
        probing[t] = False
        searching[t] = True


def search_editable_unit(frames, columns, chans, lims, ab, table, between, lawson_iterations, ridge, probes,
                         first_length, key0, slopes, corner_gain, corner_min_samples, stop_at, keys, fits,
                         broken):  # pragma: no cover - compiled
    """One unit's Editable Keys search from key ``key0``: channels ``chans`` (rows of ``columns``) share
    their key frames, each within its ``lims``; ``slopes`` (k,) the slope each channel's previous segment
    ended with (NaN at the first sample: no slope to keep; updated in place). Writes the keys (sample
    indices) to ``keys``, each channel's segment fits (alpha, beta, c1, c2, end value) to
    ``fits[i, :, s]`` and whether each key is a corner to ``broken``; returns the number of keys once a
    key reaches ``stop_at`` or the last sample (from there a call with that key, the slopes and
    ``max(last length, 2)`` as ``first_length`` goes on with the same keys).

    With ``between``, as in :func:`.segment_kernel._search_unit`: the twins' lengths are tested at
    the samples, and the midpoints of the segment taken once both settle; where one misses, that
    key's search runs again with every test holding them (the 16 mocap clips of the speed
    benchmark: 5.3 -> 3.4 s, 0.2 % fewer keys)."""
    k = chans.shape[0]
    n = frames.shape[0]
    size = 2 * n + 2
    u, tgt, inv, b1, b2, b3, r0, weights, res = _scratch(size)
    keys[0] = key0
    broken[0] = False
    count = 1
    if key0 >= n - 1:
        return count
    key = key0
    # per twin (0 aligned, 1 free): the search state of fast_search.greedy, and each channel's fit at ``lo``
    lo = np.ones(2, np.int64)
    hi = np.zeros(2, np.int64)
    trial = np.empty(2, np.int64)
    probing = np.zeros(2, np.bool_)
    searching = np.ones(2, np.bool_)
    probes_left = np.full(2, probes, np.int64)
    best = np.zeros((2, k, 4))
    trial_fit = np.zeros((k, 4))
    guess = first_length
    for t in range(2):
        trial[t] = max(min(guess, n - 1 - key), 1)
    midpoints = False  # whether this key's tests hold the midpoints too (as in _search_unit)
    while True:
        for t in range(2):
            if not searching[t]:
                continue
            ok = True
            for i in range(k):
                y = columns[chans[i]]
                sl = slopes[i] if t == 0 else np.nan
                o, _, va, vb, v1, v2, _, _ = _one_segment(frames, y, key, trial[t], lims[i], sl, ab, table,
                                                          between and midpoints, lawson_iterations, ridge, 0.0,
                                                          np.nan, np.nan, y[key], False, u, tgt, inv, b1, b2, b3, r0,
                                                          weights, res)
                if not o:
                    ok = False
                    break
                trial_fit[i, 0], trial_fit[i, 1], trial_fit[i, 2], trial_fit[i, 3] = va, vb, v1, v2
            probe = probing[t]
            if ok:
                lo[t] = trial[t]
                best[t, :, :] = trial_fit
                if probe:
                    hi[t] = 0  # a longer segment past an infeasible one: keep growing from it
            elif not probe:
                hi[t] = trial[t]
            probing[t] = False
            room = n - 1 - key
            settled = lo[t] == room or (hi[t] > 0 and hi[t] - lo[t] <= 1) or (probe and not ok)
            ask = settled and not probe and lo[t] < room and probes_left[t] > 0
            if ask:
                probes_left[t] -= 1
                probing[t] = True
                trial[t] = min(room, 2 * hi[t] + 2)
            if settled and not ask:
                searching[t] = False
        # the free twin matters only at a corner: once it fails short of CORNER_GAIN times the
        # aligned twin's length, its search ends (the first key takes it whatever its length)
        if (searching[1] and np.isfinite(slopes[0]) and hi[1] > 0
                and (hi[1] <= corner_gain * lo[0] or hi[1] < lo[0] + corner_min_samples)):
            searching[1] = False
            probing[1] = False
        if not searching[0] and not searching[1]:
            first = not np.isfinite(slopes[0])
            corner = (not first and lo[1] >= corner_gain * lo[0] and lo[1] >= lo[0] + corner_min_samples)
            taken = 1 if (corner or first) else 0
            length = lo[taken]
            if between and not midpoints and length > 1:
                holds = True
                for i in range(k):
                    if not _holds_between(frames, columns[chans[i]], key, length, lims[i], best[taken, i, 0],
                                          best[taken, i, 1], best[taken, i, 2], best[taken, i, 3],
                                          columns[chans[i]][key + length], columns[chans[i]][key], False, u, tgt, inv,
                                          b1, b2, b3, r0):
                        holds = False
                        break
                if not holds:  # this key's search again, both twins' tests holding the midpoints too
                    midpoints = True
                    _fresh_twins(lo, hi, probes_left, probing, searching, probes)
                    for t in range(2):
                        trial[t] = max(min(guess, n - 1 - key), 1)
                    continue
            start = key
            end = start + length
            for i in range(k):
                y = columns[chans[i]]
                if length == 1:  # never tested (one step always passes): fit it now
                    sl = slopes[i] if taken == 0 else np.nan
                    _, _, va, vb, v1, v2, _, _ = _one_segment(frames, y, start, 1, lims[i], sl, ab, table, between,
                                                              lawson_iterations, ridge, 0.0, np.nan, np.nan, y[start],
                                                              False, u, tgt, inv, b1, b2, b3, r0, weights, res)
                    best[taken, i, 0], best[taken, i, 1], best[taken, i, 2], best[taken, i, 3] = va, vb, v1, v2
                for r in range(4):
                    fits[i, r, count - 1] = best[taken, i, r]
                fits[i, 4, count - 1] = y[end]
                slopes[i] = _slope_after(y[end], best[taken, i, 3], best[taken, i, 1], frames[end] - frames[start])
            broken[count - 1] = corner
            keys[count] = end
            broken[count] = False
            count += 1
            key = end
            if key >= n - 1 or key >= stop_at:
                return count
            guess = max(length, 2)
            midpoints = False
            _fresh_twins(lo, hi, probes_left, probing, searching, probes)
        for t in range(2):
            if searching[t] and not probing[t]:
                room = n - 1 - key
                if lo[t] == 1 and hi[t] == 0:
                    nxt = min(guess, room)
                elif hi[t] == 0:
                    nxt = min(lo[t] * 2, room)
                else:
                    nxt = (lo[t] + hi[t]) // 2
                trial[t] = max(nxt, 1)


# (the segment test is compiled into these: their cache follows segment_kernel.py's content too)
compile_lazily(globals(), ("_slope_after", "_fresh_twins", "search_editable_unit"), depends=("segment_kernel.py",))


def search_channels(frames, columns, chan, limit, ab, table, between, lawson_iterations, ridge, refine_gate, probes,
                    first_length, free_values=False, units=None, start=None, stop_at=None, editable=None, done=None,
                    cancel=None):
    """:func:`.fast_search.greedy`'s search (FREE handles) run whole in compiled code: channel
    ``chan[i]`` (row of ``columns``) within ``limit[i]``, the handle lengths refined where the
    table misses by at most ``refine_gate`` times the limit (0: never). ``units`` (u + 1,)
    increasing offsets into ``chan``: channels ``chan[units[j]:units[j + 1]]`` share their key frames
    (None: every channel its own keys). With ``free_values`` a key's value may sit off its sample
    within the limit (:func:`_search_unit`). ``start`` ``(key0 (u,), last_fit (k, 5), lengths (u,))``:
    each unit's search goes on from key ``key0`` (each channel's segment before it ``last_fit``, the
    first length tried ``lengths``; default: the first sample, its values, ``first_length``);
    ``stop_at``: each unit's
    search returns once a key reaches that sample (default: the end), for the caller to go on from
    there (:func:`.segment_fit.search_state`).

    With ``editable`` ``(corner_gain, corner_min_samples)``, Editable Keys' search instead
    (:func:`search_editable_unit`; keys on their samples, no refinement): ``start``
    then also gives each channel's slope to keep (a fourth array, (k,)), and a fourth array is
    returned, whether each key is a corner (aligned with ``keys``).

    The Python search steps all units together, one batch of segments per round: a long clip
    takes thousands of rounds of a few segments each, and their overhead and the second core left
    idle were most of its time. Here each unit's search runs from start to end in one call, units
    handed out one at a time to the threads as they come free.

    ``done`` (a list): each unit's index is appended as its search ends (another thread may read
    how far the search is). ``cancel`` (a :class:`threading.Event`): once set, no further unit
    starts, and None is returned.

    Returns ``(counts, keys, fits)``: ``counts`` (k,) keys per channel, ``keys`` (sum(counts),) the
    channels' key sample indices one after another, ``fits`` (5, sum(counts) - k) each segment's
    (alpha, beta, c1, c2, end value), in the same order.
    """
    frames = np.ascontiguousarray(frames, dtype=np.float64)
    columns = np.ascontiguousarray(columns, dtype=np.float64)
    chan = np.asarray(chan, dtype=np.int64)
    limit = np.asarray(limit, dtype=np.float64)
    ab = np.ascontiguousarray(ab, dtype=np.float64)
    table = np.ascontiguousarray(table, dtype=np.float64)
    n = frames.shape[0]
    k = chan.size
    bounds = np.arange(k + 1) if units is None else np.asarray(units, dtype=np.int64)
    if bounds[0] != 0 or bounds[-1] != k or np.any(np.diff(bounds) <= 0):
        raise ValueError("units must be increasing offsets from 0 to the number of channels")
    n_units = bounds.size - 1
    slopes = np.full(k, np.nan)
    if start is None:
        key0 = np.zeros(n_units, np.int64)
        last_fit = np.zeros((k, 5))
        last_fit[:, 4] = columns[chan, 0] if n else 0.0
        lengths = np.full(n_units, int(first_length), np.int64)
    else:
        key0, last_fit, lengths = (np.ascontiguousarray(a, dtype=t)
                                   for a, t in zip(start[:3], (np.int64, np.float64, np.int64), strict=True))
        if key0.shape != (n_units,) or last_fit.shape != (k, 5) or lengths.shape != (n_units,):
            raise ValueError("start must give a key and a length per unit and a segment fit (5 values) per channel")
        if editable is not None:
            slopes = np.array(start[3], dtype=np.float64)
            if slopes.shape != (k,):
                raise ValueError("an editable search's start must give a slope per channel")
    broken = np.zeros((n_units, max(n, 1)), np.bool_)
    stop = n if stop_at is None else int(stop_at)
    unit_counts = np.zeros(n_units, np.int64)
    keys = np.zeros((n_units, max(n, 1)), np.int64)
    fits = np.zeros((k, 5, max(n - 1, 1)))
    handed_out = itertools.count()  # next() on it is atomic under the GIL

    def work() -> None:
        while (j := next(handed_out)) < n_units:
            if cancel is not None and cancel.is_set():
                return
            a, b = bounds[j], bounds[j + 1]
            if editable is None:
                unit_counts[j] = _search_unit(frames, columns, chan[a:b], limit[a:b], ab, table, bool(between),
                                              int(lawson_iterations), float(ridge), float(refine_gate), int(probes),
                                              int(lengths[j]), bool(free_values), int(key0[j]), last_fit[a:b], stop,
                                              keys[j], fits[a:b])
            else:
                unit_counts[j] = search_editable_unit(frames, columns, chan[a:b], limit[a:b], ab, table,
                                                      bool(between), int(lawson_iterations), float(ridge),
                                                      int(probes), int(lengths[j]), int(key0[j]), slopes[a:b],
                                                      float(editable[0]), int(editable[1]), stop, keys[j], fits[a:b],
                                                      broken[j])
            if done is not None:
                done.append(j)  # (list.append is atomic under the GIL)

    jobs = [_pool().submit(work) for _ in range(min(THREADS, n_units) - 1)]
    work()  # the calling thread takes a share too
    for job in jobs:
        job.result()
    if cancel is not None and cancel.is_set():
        return None
    unit_of = np.repeat(np.arange(n_units), np.diff(bounds))
    counts = unit_counts[unit_of]
    flat_keys = (np.concatenate([keys[unit_of[i], :counts[i]] for i in range(k)]) if k
                 else np.zeros(0, np.int64))
    flat_fits = (np.concatenate([fits[i, :, :counts[i] - 1] for i in range(k)], axis=1) if k
                 else np.zeros((5, 0)))
    if editable is None:
        return counts, flat_keys, flat_fits
    flat_broken = (np.concatenate([broken[unit_of[i], :counts[i]] for i in range(k)]) if k
                   else np.zeros(0, np.bool_))
    return counts, flat_keys, flat_fits, flat_broken
