"""Editable Keys' compiled search (anim_signals.splines.search_kernel) against the Python search it
replaces (fast_search.greedy with editable twins): the same keys, handles and corners."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba", reason="numba is not installed: Editable Keys runs the Python search (tested elsewhere)")

from anim_signals.splines import fast_search, segment_fit  # noqa: E402
from anim_signals.splines import key_reduction as fk  # noqa: E402
from anim_signals.splines.generated import wavy_walk  # noqa: E402
from anim_signals.steps import run_steps  # noqa: E402

MOCAP = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "mocap"


def corner_clip(seed, n=300, m=8):
    """Smooth motion with steps, kinks and noise: corners for the free twin, eases for the probes."""
    rng = np.random.default_rng(seed)
    frames, values = wavy_walk(rng, n, m, frequency_max=5.0, amplitude_min=0.3, walk=0.01)
    values[n // 3:, 0] += 1.2  # a step
    values[:, 1] = np.abs(frames - n / 2) / 40.0  # a kink
    values[:, 2] = np.where(frames % 90 < 45, frames % 90, 90 - frames % 90) / 30.0  # a zigzag: corners
    values[:, 3] = 0.4  # constant: one key
    values[:, 4] += rng.normal(0.0, 0.015, n)  # noise above the tolerance: one- and two-sample segments
    values[:, 5] = np.abs((frames % 8) - 4.0) * 0.5  # a fast zigzag: a corner every 4 samples
    return frames, values


def python_search(monkeypatch):
    """Make the compiled search unavailable: Editable Keys then steps fast_search.greedy in Python."""
    def unavailable(*args, **kwargs):
        return None
        yield  # a generator, as the real one
    monkeypatch.setattr(fast_search, "compiled_search", unavailable)


@pytest.fixture
def same_tests(monkeypatch):
    """The compiled search tests a key's lengths at the samples and the midpoints once the key
    settles, the Python search every length at both: the same tests without midpoints (the
    midpoints are held in test_segment_kernel.py)."""
    monkeypatch.setattr(segment_fit, "BETWEEN_FRAMES", False)


def assert_same_curves(a, b):
    assert len(a.curves) == len(b.curves)
    for j, (x, y) in enumerate(zip(a.curves, b.curves, strict=True)):
        for name in ("co", "handle_left", "handle_right", "handle_type"):
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name), err_msg=f"channel {j} {name}")
    assert a.corners == b.corners
    np.testing.assert_array_equal(a.max_abs_error, b.max_abs_error)
    assert a.repaired_segments == b.repaired_segments


def searches(monkeypatch):
    """Record every compiled search call (to know the compiled path ran)."""
    calls = []
    original = segment_fit.search_channels_of
    monkeypatch.setattr(segment_fit, "search_channels_of",
                        lambda *a, **k: calls.append(a[-1] if len(a) > 10 else k.get("editable")) or original(*a, **k))
    return calls


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shared", [False, True])
def test_compiled_editable_search_keeps_the_python_keys(same_tests, monkeypatch, seed, shared):
    if not segment_fit.compiled_kernel():
        pytest.skip("no compiled segment test here")
    frames, values = corner_clip(seed)
    tol = np.full(values.shape[1], 0.01)
    groups = np.arange(values.shape[1]) // 3 if shared else None
    with monkeypatch.context() as patch:
        python_search(patch)
        want = fk.fewest_keys(values, frames, tol, handles="EDITABLE", groups=groups)
    calls = searches(monkeypatch)
    got = fk.fewest_keys(values, frames, tol, handles="EDITABLE", groups=groups)
    assert calls and all(c == (fast_search.CORNER_GAIN, fast_search.CORNER_MIN_SAMPLES) for c in calls)
    assert_same_curves(got, want)
    assert got.within_tolerance
    assert want.corners > 0  # the free twin won somewhere: the corner rule ran


def test_a_search_stopped_and_resumed_keeps_the_same_keys(same_tests, monkeypatch):
    # many progress steps: each unit's search stops every few frames and goes on from the state it
    # stopped in (the last key, its segments' fits and the slopes the next segments keep)
    if not segment_fit.compiled_kernel():
        pytest.skip("no compiled segment test here")
    frames, values = corner_clip(7, n=400)
    values = values[:, :5]  # (the zigzag leaves one shared unit no corner)
    tol = np.full(values.shape[1], 0.01)
    groups = np.zeros(values.shape[1], dtype=int)  # one unit: stretches of frames
    with monkeypatch.context() as patch:
        python_search(patch)
        want = fk.fewest_keys(values, frames, tol, handles="EDITABLE", groups=groups)
        want_per_curve = fk.fewest_keys(values, frames, tol, handles="EDITABLE")
    monkeypatch.setattr(fast_search, "PROGRESS_STEPS", 40)
    calls = searches(monkeypatch)
    stepped = fk.fewest_keys(values, frames, tol, handles="EDITABLE", groups=groups)
    assert len(calls) >= 20
    assert_same_curves(stepped, want)
    assert stepped.corners > 0
    assert_same_curves(fk.fewest_keys(values, frames, tol, handles="EDITABLE"), want_per_curve)
    # with the midpoints checked once each key settles: stopped and resumed, the same keys as one call
    monkeypatch.setattr(segment_fit, "BETWEEN_FRAMES", True)
    for handles in ("EDITABLE", "FREE"):
        stepped = fk.fewest_keys(values, frames, tol, handles=handles, groups=groups)
        with monkeypatch.context() as patch:
            patch.setattr(fast_search, "PROGRESS_STEPS", 1)
            assert_same_curves(stepped, fk.fewest_keys(values, frames, tol, handles=handles, groups=groups))


@pytest.mark.skipif(not (MOCAP / "cmu_iclone_02_01_walk.bvh").exists(),
                    reason="../shared/data/mocap is not here (a shared clip: its README)")
def test_a_captured_walk_keeps_the_python_keys(same_tests, monkeypatch):
    if not segment_fit.compiled_kernel():
        pytest.skip("no compiled segment test here")
    from anim_signals.spatialkeys.bvh import read_bvh

    clip = read_bvh(MOCAP / "cmu_iclone_02_01_walk.bvh")
    n = clip.quaternions.shape[0]
    values = np.column_stack([clip.root_positions, clip.quaternions.reshape(n, -1)[:, :80]])
    frames = np.arange(n, dtype=float)
    tol = np.r_[np.full(3, 0.05), np.full(values.shape[1] - 3, 0.002)]
    with monkeypatch.context() as patch:
        python_search(patch)
        want = fk.fewest_keys(values, frames, tol, handles="EDITABLE")
    got = fk.fewest_keys(values, frames, tol, handles="EDITABLE")
    assert_same_curves(got, want)
    assert got.corners > 0


def test_the_search_is_cached_per_content_of_the_segment_test():
    # numba checks a cached function against its own file only: the editable search, which has the
    # segment test compiled into it, is cached in a folder named after segment_kernel.py's content
    import hashlib

    from anim_signals.splines import compiled, search_kernel

    source = Path(compiled.__file__).with_name("segment_kernel.py").read_bytes()
    folder = compiled.cache_dir(search_kernel.__name__, ("segment_kernel.py",))
    assert folder.endswith(hashlib.sha1(source).hexdigest()[:12])
    assert folder != compiled.cache_dir(search_kernel.__name__)
    # where numba keeps it (a private attribute of its dispatcher: skip if numba moved it)
    cache = getattr(getattr(search_kernel.search_editable_unit, "_cache", None), "_cache_path", None)
    if cache is None:
        pytest.skip("this numba does not say where it caches")
    assert str(cache).startswith(folder)


@pytest.mark.parametrize("handles", ["FREE", "EDITABLE"])
def test_a_search_of_many_curves_in_one_call_keeps_the_keys_of_shares(handles, monkeypatch):
    """Many units in this process run in one call, in a thread of their own, each unit's end
    reported: the same keys as the search made share by share (one call per share of the curves),
    one progress value per curve, rising."""
    if segment_fit.kernel_location() != "process":
        pytest.skip("no compiled segment test in this process")
    frames, values = corner_clip(11, n=240, m=20)
    tol = np.full(values.shape[1], 0.01)
    calls = []
    real = segment_fit.search_channels_of
    monkeypatch.setattr(segment_fit, "search_channels_of", lambda *a, **k: calls.append(len(a[2])) or real(*a, **k))
    seen: list[float] = []
    whole = fk.fewest_keys(values, frames, tol, handles=handles, progress=seen.append)
    moving = calls[0]
    assert len(calls) == 1 and moving >= fast_search.PROGRESS_STEPS  # every moving curve in one call
    assert len(seen) >= moving and seen == sorted(seen)
    calls.clear()
    monkeypatch.setattr(fast_search, "PROGRESS_STEPS", moving + 1)  # fewer curves than steps: shares
    shares = fk.fewest_keys(values, frames, tol, handles=handles)
    assert len(calls) > 1
    for a, b in zip(whole.curves, shares.curves, strict=True):
        np.testing.assert_array_equal(a.co, b.co)
        np.testing.assert_array_equal(a.handle_left, b.handle_left)
        np.testing.assert_array_equal(a.handle_right, b.handle_right)


def test_closing_a_search_in_its_thread_stops_it_between_units():
    import threading
    import time

    started = []

    def search(done, cancel):
        for unit in range(50):
            if cancel.is_set():
                return "stopped"
            started.append(unit)
            time.sleep(0.01)
            done.append(unit)
        return "finished"

    gen = fast_search._in_a_thread(search, 50)
    first = next(gen)
    while first == 0.0:  # (the same value again while no unit has ended)
        first = next(gen)
    assert 0.0 < first <= 0.95
    gen.close()  # Esc: no unit starts after this, and the thread is over when close returns
    assert len(started) < 50
    assert not [t for t in threading.enumerate() if t.name.startswith("anim_signals_search")]
    values, result = run_steps(fast_search._in_a_thread(search, 50))
    assert result == "finished"
    assert values == sorted(values) and values[-1] == pytest.approx(0.95)
    assert len(set(values)) in (50, 51)  # one value per unit (and 0 while the first runs)


def test_a_unit_that_runs_long_hands_the_thread_back_while_it_runs():
    """Without a unit ending (one bone of many keyed on shared frames, say, taking long), the
    generator still yields every POLL_SECONDS or so: a modal operator's time slice ends and Esc is
    read."""
    import time

    def search(done, cancel):
        for unit in range(fast_search.PROGRESS_STEPS):
            end = time.perf_counter() + (0.3 if unit == 0 else 0.0)
            while time.perf_counter() < end and not cancel.is_set():
                time.sleep(0.002)
            done.append(unit)
        return "finished"

    values, result = run_steps(fast_search._in_a_thread(search, fast_search.PROGRESS_STEPS))
    assert result == "finished"
    assert values.count(0.0) >= 5 and values[-1] == pytest.approx(0.95)
    gen = fast_search._in_a_thread(search, fast_search.PROGRESS_STEPS)
    assert next(gen) == 0.0
    start = time.perf_counter()
    gen.close()  # Esc while the one unit runs
    assert time.perf_counter() - start < 0.3
