"""The compiled segment test (numba) against the numpy cascade it mirrors, and Fewest Keys on both."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba", reason="numba is not installed: the numpy cascade runs instead (tested elsewhere)")

from anim_signals.splines import fast_search, search_kernel, segment_fit, segment_kernel  # noqa: E402
from anim_signals.splines import key_reduction as fk  # noqa: E402
from anim_signals.splines.generated import wavy_walk  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def numpy_only(monkeypatch):
    monkeypatch.setattr(segment_fit, "_kernel", lambda: None)


def clip(seed, n=160, m=6):
    frames, values = wavy_walk(seed, n, m)
    values[n // 2:, 0] += 0.8  # a step: corners and long-failing segments
    return frames, values


def random_segments(seed, frames, values, count=400):
    rng = np.random.default_rng(seed)
    n, m = values.shape
    length = rng.integers(1, 60, count)
    start = np.array([rng.integers(0, n - 1 - min(L, n - 2) + 1) for L in length])
    length = np.minimum(length, n - 1 - start)
    start[:10] = 0  # segments touching the clip's first and last samples (the one-sided midpoints)
    start[10:20] = n - 1 - length[10:20]
    chan = rng.integers(0, m, count)
    limit = rng.uniform(0.002, 0.2, count)
    slope = np.where(rng.random(count) < 0.4, rng.normal(0, 0.05, count), np.nan)
    return chan, start, length, limit, slope


@pytest.mark.parametrize("seed", range(4))
def test_kernel_gives_the_numpy_cascade_result(seed, monkeypatch):
    frames, values = clip(seed)
    columns = np.ascontiguousarray(values.T)
    chan, start, length, limit, slope = random_segments(seed, frames, values)
    compiled = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit, slope=slope)
    numpy_only(monkeypatch)
    reference = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit, slope=slope)
    # Both stages ran: some segments pass at thirds, some need the table or Lawson, some fail.
    assert 0.1 < compiled.ok.mean() < 0.9
    assert np.any(compiled.pair > 0)
    near = np.abs(reference.error - limit) <= 1e-7 * limit
    np.testing.assert_array_equal(compiled.ok[~near], reference.ok[~near])
    np.testing.assert_allclose(compiled.error, reference.error, rtol=1e-7, atol=1e-12)
    same_pair = compiled.pair == reference.pair
    assert same_pair.mean() > 0.98
    np.testing.assert_allclose(compiled.c1[same_pair], reference.c1[same_pair], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(compiled.c2[same_pair], reference.c2[same_pair], rtol=1e-6, atol=1e-9)


def test_kernel_handles_are_what_it_measured():
    # Independent of both cascades: the curve built from the kernel's pair and inner values,
    # evaluated the way Blender does, misses the samples by the error it reported.
    frames, values = clip(7)
    columns = np.ascontiguousarray(values.T)
    chan, start, length, limit, _ = random_segments(7, frames, values, count=60)
    fit = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit)
    for row in range(chan.size):
        a, b = start[row], start[row] + length[row]
        curve = segment_fit.segment_curve(frames[a], frames[b], values[a, chan[row]], values[b, chan[row]], fit, row)
        inside = slice(a + 1, b)
        worst = np.abs(curve.evaluate(frames[inside]) - values[inside, chan[row]]).max(initial=0.0)
        # (the kernel's Bezier parameters come from a table, ~1e-8 off the exact x(t) = frame solve)
        assert worst <= fit.error[row] * (1 + 1e-5) + 1e-9  # the samples' error (midpoints count too)
        if fit.ok[row]:
            assert worst <= limit[row] * (1 + 1e-5)


@pytest.mark.parametrize("handles,groups", [("FREE", None), ("EDITABLE", None), ("FREE", [0, 0, 1, 1, 2, 2])])
def test_fewest_keys_are_the_same_compiled_or_not(handles, groups, monkeypatch):
    frames, values = clip(3, n=220)
    tol = np.array([0.01, 0.02, 0.005, 0.01, 0.03, 0.01])
    monkeypatch.setattr(segment_fit, "REFINE_GATE", 0.0)  # the numpy cascade does not refine
    monkeypatch.setattr(segment_fit, "FREE_KEY_VALUES", False)  # nor free the keys' values
    # (nor test the samples first and the midpoints once a key settles: the segment tests, midpoints
    # included, are compared one by one above)
    monkeypatch.setattr(segment_fit, "BETWEEN_FRAMES", False)
    compiled = fk.fewest_keys(values, frames, tol, handles=handles, groups=groups)
    numpy_only(monkeypatch)
    reference = fk.fewest_keys(values, frames, tol, handles=handles, groups=groups)
    assert compiled.within_tolerance and reference.within_tolerance
    for a, b in zip(compiled.key_indices, reference.key_indices):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(compiled.max_abs_error, reference.max_abs_error, rtol=1e-6, atol=1e-9)


def test_threads_give_bitwise_the_same_result(monkeypatch):
    frames, values = clip(5)
    columns = np.ascontiguousarray(values.T)
    args = random_segments(5, frames, values, count=300)
    refine = np.arange(300) % 2 == 0
    monkeypatch.setattr(segment_kernel, "THREADS", 1)
    one = segment_fit.fit_segments_of(frames, columns, *args[:4], slope=args[4], refine=refine)
    monkeypatch.setattr(segment_kernel, "THREADS", 3)
    three = segment_fit.fit_segments_of(frames, columns, *args[:4], slope=args[4], refine=refine)
    for name in ("ok", "pair", "alpha", "beta", "c1", "c2", "error"):
        np.testing.assert_array_equal(getattr(one, name), getattr(three, name))


def python_search(monkeypatch):
    """Make Fewest Keys step its channels together in Python (one compiled batch per round)."""
    def unavailable(*args):
        return None
        yield  # a generator, as _compiled_search is

    monkeypatch.setattr(fast_search, "compiled_search", unavailable)


@pytest.mark.parametrize("gate", [0.0, 2.0])
@pytest.mark.parametrize("groups", [None, [0, 0, 0, 1, 1, 2, 2, 2]])
def test_compiled_search_takes_the_keys_of_the_python_search(gate, groups, monkeypatch):
    # Each unit's whole search in compiled code (a channel, or channels sharing their key frames)
    # against the Python search stepping every unit together: the same lengths tried in the same
    # order, so bitwise the same curves. (The whole search tests a key's lengths at the samples
    # first and the midpoints once it settles, the Python search every length at both: the same
    # tests only without midpoints; the midpoints are held below.)
    frames, values = clip(6, n=260, m=8)
    values[:, 7] = 0.3  # a constant channel among them
    tol = np.array([0.01, 0.02, 0.005, 0.01, 0.03, 0.01, 0.002, 0.01])
    monkeypatch.setattr(segment_fit, "REFINE_GATE", gate)
    monkeypatch.setattr(segment_fit, "BETWEEN_FRAMES", False)
    monkeypatch.setattr(segment_fit, "FREE_KEY_VALUES", False)  # (the Python search keeps the samples' values)
    calls = []
    original = segment_fit.search_channels_of
    monkeypatch.setattr(segment_fit, "search_channels_of", lambda *a: calls.append(a[2]) or original(*a))
    whole = fk.fewest_keys(values, frames, tol, groups=groups)
    # every moving channel searched compiled (over several stretches of frames: fewer units than steps)
    assert sorted(set(np.concatenate(calls).tolist())) == list(range(7))
    python_search(monkeypatch)
    stepped = fk.fewest_keys(values, frames, tol, groups=groups)
    assert whole.within_tolerance and whole.n_keys < 0.5 * values.size
    for a, b in zip(whole.curves, stepped.curves):
        for name in ("co", "handle_left", "handle_right"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_array_equal(whole.max_abs_error, stepped.max_abs_error)
    if groups is not None:
        for unit in ([0, 1, 2], [3, 4], [5, 6]):
            for c in unit[1:]:
                np.testing.assert_array_equal(whole.key_indices[c], whole.key_indices[unit[0]])


def _midpoint_misses(frames, values, tol, fit):
    """Midpoints between samples beyond their allowance, from the curves as the core evaluates them:
    the segment test's rule (a cubic through the four samples around each midpoint, within the
    limit plus a spread that grows with the local change)."""
    n = frames.size
    a, b = np.arange(n - 1), np.arange(1, n)
    misses = 0
    for c in range(values.shape[1]):
        y, limit = values[:, c], tol[c] * segment_fit.ACCEPT_SHARE
        before, after = y[np.maximum(a - 1, 0)], y[np.minimum(b + 1, n - 1)]
        target = (9.0 * (y[a] + y[b]) - before - after) / 16.0
        target = np.where(a == 0, (3.0 * y[a] + 6.0 * y[b] - after) / 8.0, target)
        target = np.where(b == n - 1, (6.0 * y[a] + 3.0 * y[b] - before) / 8.0, target)
        spread = 0.25 * np.abs(y[b] - y[a]) + np.abs(target - 0.5 * (y[a] + y[b]))
        got = fit.curves[c].evaluate(0.5 * (frames[a] + frames[b]))
        misses += int(np.count_nonzero(np.abs(got - target) > limit + spread))
    return misses


def test_holds_between_judges_a_fit_at_the_midpoints_as_the_curve_evaluates(monkeypatch):
    # Segments fitted to their samples alone, then judged at the midpoints: the kernel's check
    # against the segment's Bezier curve evaluated by the core, with the allowance of
    # _midpoint_misses; both outcomes occur.
    frames, values = clip(3, n=300, m=8)
    columns = np.ascontiguousarray(values.T)
    chan, start, length, _, _ = random_segments(3, frames, values, count=1200)
    limit = np.random.default_rng(4).uniform(0.003, 0.03, chan.size)
    keep = length >= 2
    chan, start, length, limit = chan[keep], start[keep], length[keep], limit[keep]
    monkeypatch.setattr(segment_fit, "BETWEEN_FRAMES", False)
    fit = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit)
    u, tgt, inv, b1, b2, b3, r0, _, _ = segment_kernel._scratch(2 * frames.size + 2)
    verdicts = []
    for row in np.flatnonzero(fit.ok):
        a, b, c = start[row], start[row] + length[row], chan[row]
        holds = segment_kernel._holds_between(frames, columns[c], a, length[row], limit[row], fit.alpha[row],
                                              fit.beta[row], fit.c1[row], fit.c2[row], values[b, c], values[a, c],
                                              False, u, tgt, inv, b1, b2, b3, r0)
        curve = segment_fit.segment_curve(frames[a], frames[b], values[a, c], values[b, c], fit, row)
        y, last = values[:, c], frames.size - 1
        i = np.arange(a, b)
        before, after = y[np.maximum(i - 1, 0)], y[np.minimum(i + 2, last)]
        target = (9.0 * (y[i] + y[i + 1]) - before - after) / 16.0
        target = np.where(i == 0, (3.0 * y[i] + 6.0 * y[i + 1] - after) / 8.0, target)
        target = np.where(i + 1 == last, (6.0 * y[i] + 3.0 * y[i + 1] - before) / 8.0, target)
        spread = 0.25 * np.abs(y[i + 1] - y[i]) + np.abs(target - 0.5 * (y[i] + y[i + 1]))
        miss = np.abs(curve.evaluate(0.5 * (frames[i] + frames[i + 1])) - target) - (limit[row] + spread)
        if np.abs(miss).min() > 1e-9 * limit[row]:  # (not a hair from the allowance)
            verdicts.append((holds, bool(np.all(miss < 0.0))))
    assert len(verdicts) > 100
    assert all(mine == theirs for mine, theirs in verdicts)
    held = sum(h for h, _ in verdicts)
    assert held >= 100 and len(verdicts) - held >= 3, (held, len(verdicts))  # both outcomes, judged alike


@pytest.mark.parametrize("handles", ["FREE", "EDITABLE"])
@pytest.mark.parametrize("seed", [1, 3])
def test_the_whole_search_holds_the_midpoints_it_tests_once_a_key_settles(seed, handles, monkeypatch):
    # Samples first, midpoints once a key's segment settles (and that key's search again with
    # both where they do not hold; Editable Keys: the twin taken): every midpoint within its
    # allowance, where a search at the samples alone leaves some beyond it, with about as many keys.
    frames, values = clip(seed, n=300, m=8)
    tol = np.full(values.shape[1], 0.01)
    fit = fk.fewest_keys(values, frames, tol, handles=handles)
    assert fit.within_tolerance and _midpoint_misses(frames, values, tol, fit) == 0
    monkeypatch.setattr(segment_fit, "BETWEEN_FRAMES", False)
    samples_only = fk.fewest_keys(values, frames, tol, handles=handles)
    assert _midpoint_misses(frames, values, tol, samples_only) >= 10
    assert 0.98 * samples_only.n_keys <= fit.n_keys <= 1.02 * samples_only.n_keys


def test_shared_keys_with_free_values_stay_shared_and_within_tolerance(monkeypatch):
    # Keys shared by a bone's curves, each key's value free per curve: the frames stay shared,
    # every sample within its curve's tolerance under Blender's evaluation, fewer keys than with
    # the samples' values.
    frames, values = clip(3, n=220)
    tol = np.array([0.01, 0.02, 0.005, 0.01, 0.03, 0.01])
    groups = [0, 0, 0, 1, 1, 1]
    free = fk.fewest_keys(values, frames, tol, groups=groups)
    for g in (0, 1):
        for c in range(3 * g + 1, 3 * g + 3):
            np.testing.assert_array_equal(free.key_indices[c], free.key_indices[3 * g])
    assert free.within_tolerance and free.repaired_segments == 0
    for c, curve in enumerate(free.curves):
        assert np.abs(curve.evaluate(frames) - values[:, c]).max() <= tol[c]
    off = sum(int(np.count_nonzero(cv.co[:, 1] != values[k, c]))
              for c, (cv, k) in enumerate(zip(free.curves, free.key_indices)))
    assert off > 0
    monkeypatch.setattr(segment_fit, "FREE_KEY_VALUES", False)
    on_samples = fk.fewest_keys(values, frames, tol, groups=groups)
    assert free.n_keys < on_samples.n_keys


def test_units_must_cover_the_channels_in_order():
    frames, values = clip(3, n=60)
    columns = np.ascontiguousarray(values.T)
    args = (frames, columns, np.arange(4), np.full(4, 0.01), segment_fit.HANDLE_PAIRS, segment_fit._inverse_tables(),
            True, 12, 1e-9, 0.0, 1, 8)
    for units in ([0, 2, 3], [1, 4], [0, 2, 2, 4]):
        with pytest.raises(ValueError, match="units"):
            search_kernel.search_channels(*args, False, units)


def test_compiled_search_reports_progress_per_share_of_channels():
    frames, values = clip(6, n=120, m=40)
    seen = []
    fk.fewest_keys(values, frames, 0.01, progress=seen.append)
    assert len(seen) >= 5 and seen == sorted(seen) and seen[-1] == 1.0


# ------------------------------------------------------------------------------------------
# Refined handle lengths
# ------------------------------------------------------------------------------------------


def test_refinement_passes_segments_the_table_misses_with_curves_that_hold():
    # Independent check: each refined segment rebuilt from (alpha, beta, c1, c2) and evaluated the
    # way Blender does (x(t) = frame solved anew) misses by what the kernel reported, and within
    # the limit where it says ok.
    frames, values = clip(11)
    columns = np.ascontiguousarray(values.T)
    chan, start, length, limit, slope = random_segments(11, frames, values, count=400)
    plain = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit, slope=slope)
    refined = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit, slope=slope, refine=True)
    np.testing.assert_array_equal(refined.ok[plain.ok], True)  # what passed still passes, unchanged
    np.testing.assert_array_equal(refined.alpha[plain.ok], plain.alpha[plain.ok])
    saved = ~plain.ok & refined.ok
    assert saved.sum() >= 5, saved.sum()
    assert np.all(refined.error <= plain.error * (1 + 1e-12))
    assert np.all(plain.error[saved] <= segment_fit.REFINE_GATE * limit[saved])
    table = {tuple(ab) for ab in segment_fit.HANDLE_PAIRS.round(12)}
    off_table = [(a, b) for a, b in zip(refined.alpha[saved].round(12), refined.beta[saved].round(12))
                 if (a, b) not in table]
    assert off_table  # lengths between the table's
    for row in np.flatnonzero(~plain.ok & (refined.error < plain.error)):
        a, b = start[row], start[row] + length[row]
        curve = segment_fit.segment_curve(frames[a], frames[b], values[a, chan[row]], values[b, chan[row]], refined,
                                          row)
        inside = slice(a + 1, b)
        worst = np.abs(curve.evaluate(frames[inside]) - values[inside, chan[row]]).max(initial=0.0)
        assert worst <= refined.error[row] * (1 + 1e-6) + 1e-12
        if refined.ok[row]:
            assert worst <= limit[row] * (1 + 1e-6)
            if np.isfinite(slope[row]):  # an aligned first handle keeps the slope it was given
                h = frames[b] - frames[a]
                got = (refined.c1[row] - values[a, chan[row]]) / (refined.alpha[row] * h)
                np.testing.assert_allclose(got, slope[row], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("groups", [None, [0, 0, 1, 1, 2, 2]])
def test_refined_search_keeps_fewer_keys_within_tolerance(groups, monkeypatch):
    frames, values = clip(3, n=220)
    tol = np.array([0.01, 0.02, 0.005, 0.01, 0.03, 0.01])
    refined = fk.fewest_keys(values, frames, tol, groups=groups)
    monkeypatch.setattr(segment_fit, "REFINE_GATE", 0.0)
    plain = fk.fewest_keys(values, frames, tol, groups=groups)
    assert refined.within_tolerance and refined.repaired_segments == 0
    # every original frame, evaluated as Blender does, within each channel's tolerance
    for c, curve in enumerate(refined.curves):
        assert np.abs(curve.evaluate(frames) - values[:, c]).max() <= tol[c]
    n_refined = sum(k.size for k in refined.key_indices)
    n_plain = sum(k.size for k in plain.key_indices)
    assert n_refined < n_plain, (n_refined, n_plain)
    if groups is not None:  # still shared
        for g in range(3):
            np.testing.assert_array_equal(refined.key_indices[2 * g], refined.key_indices[2 * g + 1])


def test_editable_keys_keep_the_table_handle_lengths(monkeypatch):
    frames, values = clip(3, n=220)
    editable = fk.fewest_keys(values, frames, 0.01, handles="EDITABLE")
    monkeypatch.setattr(segment_fit, "REFINE_GATE", 0.0)
    plain = fk.fewest_keys(values, frames, 0.01, handles="EDITABLE")
    for a, b in zip(editable.key_indices, plain.key_indices):
        np.testing.assert_array_equal(a, b)


def test_without_the_compiled_kernel_the_search_does_not_refine(monkeypatch):
    frames, values = clip(3, n=220)
    numpy_only(monkeypatch)
    calls = []
    original = fast_search.fit_segments_of

    def spy(*args, **kwargs):
        calls.append(kwargs.get("refine"))
        return original(*args, **kwargs)

    monkeypatch.setattr(fast_search, "fit_segments_of", spy)
    fk.fewest_keys(values, frames, 0.01)
    assert calls and all(r is None for r in calls)


def test_two_python_threads_at_once():
    # A Dask worker runs tasks in threads: two fits at the same time must both finish, and equal
    # the fit run alone.
    frames, values = clip(9, n=300)
    alone = fk.fewest_keys(values, frames, 0.01)
    results: list = [None, None]

    def work(i):
        results[i] = fk.fewest_keys(values, frames, 0.01)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert r is not None
        for a, b in zip(r.key_indices, alone.key_indices):
            np.testing.assert_array_equal(a, b)


def test_environment_variable_forces_numpy():
    code = "from anim_signals.splines import segment_fit as s; print(s.compiled_kernel())"
    env = dict(os.environ, ANIM_SIGNALS_KERNEL="numpy")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    env.pop("ANIM_SIGNALS_KERNEL")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_a_kernel_that_fails_falls_back_to_numpy_with_a_warning(monkeypatch):
    def broken(*args):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(segment_fit, "_kernel", lambda: broken)
    monkeypatch.setattr(segment_fit, "KERNEL_FAILURE", [])
    # (the compiled search tests the midpoints once a key settles, the Python one at every length)
    monkeypatch.setattr(segment_fit, "BETWEEN_FRAMES", False)
    frames, values = clip(2, n=120)
    with pytest.warns(RuntimeWarning, match="no compiler here"):
        fit = fk.fewest_keys(values, frames, 0.01)
    assert fit.within_tolerance
    assert not segment_fit.compiled_kernel()
    monkeypatch.undo()
    # (the numpy cascade neither refines nor frees the keys' values)
    monkeypatch.setattr(segment_fit, "BETWEEN_FRAMES", False)
    monkeypatch.setattr(segment_fit, "REFINE_GATE", 0.0)
    monkeypatch.setattr(segment_fit, "FREE_KEY_VALUES", False)
    reference = fk.fewest_keys(values, frames, 0.01)
    for a, b in zip(fit.key_indices, reference.key_indices):
        np.testing.assert_array_equal(a, b)


def _grown_segments(seed=11, count=400):
    """Segments one sample longer than ones that pass, with the handle lengths that passed: a
    search growing its segments (``start_lengths``)."""
    frames, values = clip(seed)
    columns = np.ascontiguousarray(values.T)
    chan, start, length, limit, _ = random_segments(seed, frames, values, count=count)
    keep = (length >= 3) & (start + length < frames.size - 1)
    chan, start, length, limit = chan[keep], start[keep], length[keep], limit[keep]
    shorter = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit, refine=True)
    passed = shorter.ok
    chan, start, length, limit = chan[passed], start[passed], length[passed] + 1, limit[passed]
    return frames, columns, chan, start, length, limit, (shorter.alpha[passed], shorter.beta[passed])


def test_refined_warm_lengths_that_still_fail_decide_where_asked():
    # warm_decides (a unit of one curve growing its segment): where the lengths that held one
    # sample shorter, refined, still fail, the segment fails; elsewhere the cascade and a second
    # refinement from the table's best pair may still find lengths that pass
    frames, columns, chan, start, length, limit, warm = _grown_segments()
    cascade = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit, refine=True, start_lengths=warm)
    decided = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit, refine=True,
                                          start_lengths=warm, warm_decides=np.ones(chan.size, bool))
    assert decided.ok.sum() > 20
    # a pass is the warm lengths' own, the same either way
    for name in ("alpha", "beta", "c1", "c2", "error"):
        np.testing.assert_array_equal(getattr(decided, name)[decided.ok], getattr(cascade, name)[decided.ok])
    assert np.all(cascade.ok[decided.ok])
    # some the cascade rescued fail here, each refined (within the gate) before it failed
    rescued = cascade.ok & ~decided.ok
    assert rescued.any()
    assert np.all(decided.error[rescued] <= segment_fit.REFINE_GATE * limit[rescued])
    # and where warm_decides is false the cascade runs as without it
    mixed = np.arange(chan.size) % 2 == 0
    both = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit, refine=True, start_lengths=warm,
                                       warm_decides=mixed)
    np.testing.assert_array_equal(both.ok, np.where(mixed, decided.ok, cascade.ok))


# --------------------------------------------------------------------------------------------------
# the worker process (where another LLVM is loaded: Blender's UI on Linux with Mesa's OpenGL)


def test_foreign_llvm_is_found_in_the_memory_map():
    from anim_signals.splines.segment_process import foreign_llvm_loaded

    mesa = "7f00-7f10 r-xp 00000000 08:01 42 /usr/lib/x86_64-linux-gnu/libLLVM.so.19.1\n"
    ours = "7f00-7f10 r-xp 00000000 08:01 43 /site-packages/llvmlite/binding/libllvmlite.so\n"
    assert foreign_llvm_loaded(mesa + ours)
    assert not foreign_llvm_loaded(ours)
    assert not foreign_llvm_loaded("")
    # this test process (numpy, scipy, numba's llvmlite) holds no other LLVM
    assert not foreign_llvm_loaded()


def test_worker_process_gives_the_kernel_result(monkeypatch):
    from anim_signals.splines.segment_process import WorkerKernel

    frames, values = clip(11)
    columns = np.ascontiguousarray(values.T)
    chan, start, length, limit, slope = random_segments(11, frames, values, count=200)
    refine = np.arange(chan.size) % 3 != 0
    local = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit, slope=slope, refine=refine)
    worker = WorkerKernel()
    try:
        monkeypatch.setattr(segment_fit, "_kernel", lambda: worker)
        assert segment_fit.kernel_location() == "worker"
        remote = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit, slope=slope, refine=refine)
        for name in ("ok", "pair", "alpha", "beta", "c1", "c2", "error"):
            np.testing.assert_array_equal(getattr(local, name), getattr(remote, name))
        # grown segments with their warm lengths, some decided by them: the same in the child
        g_frames, g_columns, g_chan, g_start, g_length, g_limit, warm = _grown_segments(count=200)
        decides = np.arange(g_chan.size) % 2 == 0
        grown = [segment_fit.fit_segments_of(g_frames, g_columns, g_chan, g_start, g_length, g_limit, refine=True,
                                             start_lengths=warm, warm_decides=decides)]
        monkeypatch.undo()
        for asked in (decides, None):
            grown.append(segment_fit.fit_segments_of(g_frames, g_columns, g_chan, g_start, g_length, g_limit,
                                                     refine=True, start_lengths=warm, warm_decides=asked))
        monkeypatch.setattr(segment_fit, "_kernel", lambda: worker)
        for name in ("ok", "pair", "alpha", "beta", "c1", "c2", "error"):
            np.testing.assert_array_equal(getattr(grown[0], name), getattr(grown[1], name))
        assert np.any(grown[1].ok != grown[2].ok)  # (where it decided, it made a difference)
        # a whole search through the worker (each channel's or unit's search runs whole in the
        # child, FREE and EDITABLE): the same curves
        searches = []
        original_search = worker.search
        units = np.arange(values.shape[1]) // 2
        for handles, groups in (("FREE", None), ("EDITABLE", None), ("FREE", units)):
            tol = np.full(values.shape[1], 0.01)
            monkeypatch.setattr(segment_fit, "_kernel", lambda: worker)
            monkeypatch.setattr(worker, "search", lambda *a, h=handles: searches.append(h) or original_search(*a))
            far = fk.fewest_keys(values, frames, tol, handles=handles, groups=groups)
            monkeypatch.undo()
            near = fk.fewest_keys(values, frames, tol, handles=handles, groups=groups)
            for a, b in zip(far.curves, near.curves):
                np.testing.assert_array_equal(a.co, b.co)
                np.testing.assert_array_equal(a.handle_right, b.handle_right)
                np.testing.assert_array_equal(a.handle_left, b.handle_left)
            # the child's search frees the keys' values too (FREE; Editable Keys keeps the samples')
            off = sum(int(np.count_nonzero(c.co[:, 1] != values[k, j]))
                      for j, (c, k) in enumerate(zip(far.curves, far.key_indices)) if c.n_keys > 1)
            assert (off > 0) == (handles == "FREE")
        assert set(searches) == {"FREE", "EDITABLE"}
        # the pose check's values between keys: the child's are the kernel's, bit for bit
        fit = segment_fit.fit_segments_of(frames, columns, chan[:20], np.full(20, 5), np.full(20, 30), limit[:20])
        monkeypatch.setattr(segment_fit, "_kernel", lambda: worker)
        remote_values = segment_fit.segment_values(frames, columns, chan[:20], 5, 30, fit)
        monkeypatch.undo()
        np.testing.assert_array_equal(remote_values, segment_fit.segment_values(frames, columns, chan[:20], 5, 30, fit))
        assert remote_values.shape == (29, 20)
        # a worker that died is started again
        monkeypatch.setattr(segment_fit, "_kernel", lambda: worker)
        worker._process.kill()
        worker._process.wait()
        again = segment_fit.fit_segments_of(frames, columns, chan, start, length, limit, slope=slope, refine=refine)
        np.testing.assert_array_equal(again.error, local.error)
    finally:
        worker.close()
    assert worker._process is None


# How a child can fail to start: exit at once (the greeting meets a broken pipe or an end of
# file, whichever comes first), exit later (end of file), answer something else, and a broken
# pipe forced on the greeting (the path the first case takes on a loaded machine).
@pytest.mark.parametrize("script, broken_pipe", [
    ("exit 3", False), ("sleep 0.3; exit 3", False), ("echo not-a-worker", False), ("sleep 5", True),
])
def test_a_worker_that_cannot_start_falls_back_to_numpy(monkeypatch, tmp_path, script, broken_pipe):
    from anim_signals.splines import segment_process
    from anim_signals.splines.segment_process import WorkerKernel

    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    if broken_pipe:
        def broken(fd, data):
            raise BrokenPipeError(32, "Broken pipe")
        monkeypatch.setattr(segment_process, "_write_all", broken)
    workers = []
    monkeypatch.setattr(segment_fit, "_kernel", lambda: workers.append(WorkerKernel(str(fake))) or workers[-1])
    monkeypatch.setattr(segment_fit, "KERNEL_FAILURE", [])
    frames, values = clip(4, n=100)
    with pytest.warns(RuntimeWarning, match="segment worker cannot run the compiled kernel"):
        fit = fk.fewest_keys(values, frames, 0.01)
    assert fit.within_tolerance and segment_fit.kernel_location() == "numpy"
    # the failed child was reaped: nothing left running
    assert workers and all(w._process is None for w in workers)


def test_a_worker_that_stops_during_a_fit_falls_back_to_numpy(monkeypatch):
    from anim_signals.splines import segment_process
    from anim_signals.splines.segment_process import WorkerKernel

    worker = WorkerKernel()
    started = []

    def dies(fd, n):
        started.append(worker._process)
        worker._process.kill()
        worker._process.wait()
        raise EOFError("the segment worker closed its pipe")

    try:
        monkeypatch.setattr(segment_process, "_receive_answer", dies)
        monkeypatch.setattr(segment_fit, "_kernel", lambda: worker)
        monkeypatch.setattr(segment_fit, "KERNEL_FAILURE", [])
        frames, values = clip(4, n=100)
        with pytest.warns(RuntimeWarning, match="segment worker stopped"):
            fit = fk.fewest_keys(values, frames, 0.01)
        assert fit.within_tolerance and segment_fit.kernel_location() == "numpy"
        assert worker._process is None and started[0].poll() is not None
    finally:
        worker.close()


def test_environment_variable_forces_the_worker():
    code = ("from anim_signals.splines import segment_fit as s; import numpy as np; "
            "from anim_signals import fewest_keys; x = np.arange(80.0); f = fewest_keys(np.sin(x / 7), x, 1e-3); "
            "print(s.kernel_location(), f.within_tolerance)")
    env = dict(os.environ, ANIM_SIGNALS_KERNEL="process")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["worker", "True"], out.stderr


_WARM_UP_PROBE = """
import sys
import numpy as np
from anim_signals import fit_channels
from anim_signals.splines import key_reduction, segment_kernel, spline_kernel

dispatchers = {f"{module.__name__.rsplit('.', 1)[1]}.{name}": getattr(module, name)
               for module in (segment_kernel, spline_kernel) for name in dir(module)
               if type(getattr(module, name)).__name__ == "CPUDispatcher"}
assert all(not d.signatures for d in dispatchers.values()), "compiled before the warm-up"
print("where", key_reduction.warm_up())
warm = {name: len(d.signatures) for name, d in dispatchers.items()}
rng = np.random.default_rng(3)
frames = np.arange(300.0)
values = np.cumsum(rng.normal(size=(300, 6)), axis=0) * 0.05
for kwargs in ({}, {"groups": [0, 0, 0, 1, 1, 1]}, {"handles": "EDITABLE"},
               {"groups": [0] * 6, "pose_check": lambda start, length, fitted: length < 9}):
    key_reduction.fewest_keys(values, frames, 0.02, **kwargs)
for mode in ("PER_CHANNEL", "LATENT"):  # the spline modes' scoring, insertion and local refits
    fit_channels(values, frames, 0.02, mode=mode)
# (the functions they call are compiled into them)
entry_points = ("segment_kernel._batch", "segment_kernel._search_unit", "spline_kernel._score_rows",
                "spline_kernel._refit_rows", "spline_kernel._split_lanes")
print("uncompiled", sorted(name for name in entry_points if not warm[name]))
print("new", sorted(name for name, d in dispatchers.items() if len(d.signatures) != warm[name]))
"""


def test_warm_up_compiles_every_form_a_fit_runs():
    """After :func:`key_reduction.warm_up`, no fit mode compiles anything more (a fresh process:
    numba's disk cache makes that a second or two once the kernel has been compiled here)."""
    env = dict(os.environ, ANIM_SIGNALS_KERNEL="local", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _WARM_UP_PROBE], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert lines["where"] == "process"
    assert lines["uncompiled"] == "[]", "an entry point of the kernel was not compiled"
    assert lines["new"] == "[]", "a fit compiled what the warm-up did not"


def test_warm_up_without_the_compiled_kernel_fits_nothing(monkeypatch):
    monkeypatch.setattr(segment_fit, "compiled_kernel", lambda: False)
    monkeypatch.setattr(fk, "fewest_keys", lambda *a, **k: pytest.fail("fitted without a kernel"))
    assert fk.warm_up() == "numpy"


@pytest.mark.parametrize("free_values", [True, False])
def test_a_shared_key_search_in_stretches_takes_the_keys_of_one_call(free_values, monkeypatch):
    """Keys shared by every curve are one unit: its compiled search stops every stretch of frames
    (progress, cancelling) and goes on from where it stopped, with the keys, handles and values of
    the search run in one call."""
    monkeypatch.setattr(segment_fit, "FREE_KEY_VALUES", free_values)
    frames, values = clip(8, n=400, m=5)
    everything = [0] * values.shape[1]
    seen: list[float] = []
    stretched = fk.fewest_keys(values, frames, 0.01, groups=everything, progress=seen.append)
    assert len({round(p, 6) for p in seen if p < 0.95}) >= fast_search.PROGRESS_STEPS // 2  # progress inside the search
    monkeypatch.setattr(fast_search, "PROGRESS_STEPS", 1)  # one share, one stretch: one call
    whole = fk.fewest_keys(values, frames, 0.01, groups=everything)
    assert [k.tolist() for k in stretched.key_indices] == [k.tolist() for k in whole.key_indices]
    for a, b in zip(stretched.curves, whole.curves, strict=True):
        np.testing.assert_array_equal(a.co, b.co)
        np.testing.assert_array_equal(a.handle_left, b.handle_left)
        np.testing.assert_array_equal(a.handle_right, b.handle_right)


def test_a_shared_key_search_can_be_cancelled_between_stretches():
    from anim_signals import FitCancelled

    frames, values = clip(9, n=400, m=4)
    calls = []

    def cancel_midway(p):
        calls.append(p)
        return 0.3 < p < 0.9

    with pytest.raises(FitCancelled):
        fk.fewest_keys(values, frames, 0.01, groups=[0] * 4, progress=cancel_midway)
    assert max(calls) < 0.9


def test_the_worker_goes_on_from_where_its_search_stopped():
    """The worker's search takes ``start`` and ``stop_at`` as the local one does."""
    from anim_signals.splines import segment_process

    frames, values = clip(10, n=240, m=3)
    columns = np.ascontiguousarray(values.T)
    chan = np.arange(3)
    limit = np.full(3, 0.01)
    units = np.array([0, 3])
    args = (segment_fit.HANDLE_PAIRS, segment_fit._inverse_tables(), segment_fit.BETWEEN_FRAMES,
            segment_fit.LAWSON_ITERATIONS, segment_fit._RIDGE, segment_fit.REFINE_GATE, fast_search.PROBES, fast_search.FIRST_LENGTH,
            True, units)
    local = search_kernel.search_channels(frames, columns, chan, limit, *args, None, 100)
    start = segment_fit.search_state(*local, units)
    assert 100 <= start[0][0] < 239
    then_local = search_kernel.search_channels(frames, columns, chan, limit, *args, start)
    worker = segment_process.WorkerKernel()
    try:
        then_worker = worker.search(frames, columns, chan, limit, *args, start)
    finally:
        worker.close()
    for a, b in zip(then_local, then_worker, strict=True):
        np.testing.assert_array_equal(a, b)
    assert then_local[1][0] == start[0][0] and then_local[1][-1] == 239
