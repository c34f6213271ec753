"""The compiled knot scoring (numba) against the numpy least squares it replaces in KnotProblem.score."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba", reason="numba is not installed: the numpy scoring runs instead (tested elsewhere)")

from anim_signals.splines import knots as knot_search  # noqa: E402
from anim_signals.splines import segment_fit, spline_kernel  # noqa: E402
from anim_signals.splines.bspline import LSQ_RIDGE, lsq_batch, pad_knot_vectors  # noqa: E402


def reference_scores(tau, latent, lanes, basis, target, internal, degree, multiplicity):
    """Max error, RMS and per-sample max from lsq_batch, candidate by candidate (unpadded)."""
    out = []
    for row, lane in zip(internal, lanes, strict=True):
        knots, n_ctrl = pad_knot_vectors([row], degree, multiplicity)
        _, fit, _ = lsq_batch(knots, tau, latent[lane], degree, n_ctrl=n_ctrl)
        fit = fit[0] if basis is None else fit[0] @ basis
        err = np.abs(fit - target[lane])
        out.append((err.max(), np.sqrt((err**2).sum(axis=1).mean()), err.max(axis=1)))
    return (np.array([o[0] for o in out]), np.array([o[1] for o in out]), np.array([o[2] for o in out]))


def random_rows(rng, count, sizes, lo=0.03, hi=0.97):
    return [np.sort(rng.uniform(lo, hi, rng.choice(sizes))) for _ in range(count)]


@pytest.mark.parametrize("degree, multiplicity", [(3, 1), (3, 2), (2, 1), (2, 2), (1, 1), (1, 2)])
def test_scores_equal_the_numpy_least_squares(degree, multiplicity):
    rng = np.random.default_rng(degree * 10 + multiplicity)
    n = 180
    tau = np.sort(np.concatenate([[0.0, 1.0], rng.uniform(0, 1, n - 2)]))
    lanes_data = np.stack([np.column_stack([np.sin(6 * tau + c), np.cos(9 * tau * (c + 1))]) for c in range(3)])
    # padded rows of different lengths, none, and knots on samples (as the tolerance search puts them)
    internal = random_rows(rng, 40, [1, 3, 6, 11]) + [np.zeros(0)]
    internal += [np.sort(rng.choice(tau[3:-3], size, replace=False)) for size in (2, 5, 9)]
    lanes = rng.integers(0, 3, len(internal))
    knots, n_ctrl = pad_knot_vectors(internal, degree, multiplicity)
    got = spline_kernel.score_candidates(knots, n_ctrl, tau, lanes_data, lanes, None, lanes_data, degree, LSQ_RIDGE,
                                         samples=True)
    want = reference_scores(tau, lanes_data, lanes, None, lanes_data, internal, degree, multiplicity)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_scores_through_pca_rows_and_empty_spans():
    # a latent group mapped to 5 columns by orthonormal rows, and knots closer together than the
    # samples (spans without a sample: only the ridge keeps the system solvable)
    rng = np.random.default_rng(3)
    tau = np.linspace(0.0, 1.0, 60)
    latent = np.column_stack([np.sin(5 * tau), tau**2, np.cos(3 * tau)])[None]
    basis = np.linalg.qr(rng.normal(size=(5, 3)))[0].T  # (3, 5) orthonormal rows
    target = latent[0] @ basis + 0.01 * rng.normal(size=(60, 5))
    target = target[None]
    internal = random_rows(rng, 20, [2, 4, 7]) + [np.array([0.5, 0.501, 0.502])]
    knots, n_ctrl = pad_knot_vectors(internal, 3, 1)
    lanes = np.zeros(len(internal), dtype=int)
    got = spline_kernel.score_candidates(knots, n_ctrl, tau, latent, lanes, basis, target, 3, LSQ_RIDGE, samples=True)
    want = reference_scores(tau, latent, lanes, basis, target, internal, 3, 1)
    # the ridged system of a span without samples is ill-conditioned (1e10): Cholesky and LU agree
    # to about 1e-6 there
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)


def test_knot_problem_scores_the_same_compiled_or_not(monkeypatch):
    if segment_fit.kernel_location() != "process":
        pytest.skip("the segment test does not run compiled in this process: neither does the scoring")
    rng = np.random.default_rng(7)
    tau = np.linspace(0.0, 1.0, 101)
    columns = np.column_stack([90 / (1 + np.exp(-100 * (tau - 0.4))), np.sin(8 * tau), tau**3])
    problem = knot_search.KnotProblem.lanes(tau, columns, 3, 2)
    internal = random_rows(rng, 30, [2, 5, 9])
    lanes = rng.integers(0, 3, len(internal))
    assert knot_search._compiled_scorer() is not None
    compiled = problem.score(internal, lanes, samples=True)
    assert not knot_search._SCORER_FAILURE, knot_search._SCORER_FAILURE  # no fallback to numpy happened
    assert problem.evaluations == len(internal)
    monkeypatch.setattr(knot_search, "_compiled_scorer", lambda: None)
    numpy_scores = problem.score(internal, lanes, samples=True)
    for name in ("max_error", "rms", "per_sample"):
        np.testing.assert_allclose(getattr(compiled, name), getattr(numpy_scores, name), rtol=1e-9, atol=1e-12)
    # no samples asked for: none returned
    assert problem.score(internal[:3], lanes[:3]).per_sample is None


def test_many_candidates_split_over_threads_score_as_one(monkeypatch):
    monkeypatch.setattr(spline_kernel, "THREADS", 2)  # split even on a one-core machine
    rng = np.random.default_rng(11)
    tau = np.linspace(0.0, 1.0, 400)
    data = np.sin(11 * tau)[None, :, None]
    internal = random_rows(rng, 120, [5, 12])
    knots, n_ctrl = pad_knot_vectors(internal, 3, 1)
    lanes = np.zeros(len(internal), dtype=int)
    together = spline_kernel.score_candidates(knots, n_ctrl, tau, data, lanes, None, data, 3, LSQ_RIDGE, samples=True)
    one_by_one = [spline_kernel.score_candidates(knots[i:i + 1], n_ctrl[i:i + 1], tau, data, lanes[:1], None, data, 3,
                                                 LSQ_RIDGE, samples=True) for i in range(len(internal))]
    assert len(internal) * tau.size >= spline_kernel._SPLIT_MIN  # the batch is split over the threads
    for k, name in enumerate(("max_error", "rms", "per_sample")):
        np.testing.assert_array_equal(together[k], np.concatenate([o[k] for o in one_by_one]), err_msg=name)


@pytest.mark.parametrize("snap", [False, True])
def test_insertion_step_equals_the_numpy_one(monkeypatch, snap):
    from anim_signals.splines import tolerance

    rng = np.random.default_rng(5 + snap)
    tau = np.linspace(0.0, 1.0, 97)
    problem = knot_search.KnotProblem.lanes(tau, np.sin(9 * tau)[:, None], 3, 2)
    grid = np.linspace(0.0, 1.0, 33) if snap else None
    cases = 0
    internals, rows, wants = [], [], []
    for trial in range(60):
        internal = np.sort(rng.choice(tau[2:-2], rng.integers(0, 12), replace=False))
        if trial % 3 == 0 and internal.size > 2:  # knots closer than the samples: spans without any
            internal = np.sort(np.concatenate([internal, internal[:2] + 1e-4]))
        per_sample = rng.exponential(0.8, tau.size)
        if trial % 4 == 0:
            per_sample = np.round(per_sample * 2) / 2  # ties between spans' worst errors
        if trial == 7:
            per_sample[:] = 0.5  # within tolerance everywhere
        want = tolerance._insert_knots(problem, internal, per_sample, grid)  # numpy
        got = spline_kernel.split_spans(internal, tau, tau if grid is None else grid, per_sample, problem.min_gap,
                                        tolerance.INSERT_FRACTION, knot_search.FEASIBLE)
        internals.append(internal)
        rows.append(per_sample)
        wants.append(want)
        if want is None:
            assert got is None, trial
        else:
            cases += 1
            np.testing.assert_array_equal(got, want, err_msg=f"trial {trial}")
    assert cases > 40
    assert spline_kernel.split_spans(np.array([0.5]), tau, np.zeros(0), np.full(tau.size, 3.0), 0.01, 0.25, 1.0) is None
    # every lane at once (what a tolerance search's round runs), and through the search's own step
    assert knot_search.compiled_spline_kernel() is spline_kernel  # (not numpy against numpy)
    together = tolerance._insert_knots_of_lanes(problem, internals, np.array(rows), grid)
    assert len(together) == len(wants)
    for got, want in zip(together, wants, strict=True):
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_array_equal(got, want)


def test_every_lane_split_in_one_call_equals_one_call_per_lane():
    """split_lane_spans runs every lane in one compiled call, over both threads on big rounds: the
    same knots as split_spans lane by lane."""
    rng = np.random.default_rng(12)
    tau = np.linspace(0.0, 1.0, 700)
    for count in (1, 3, 80):  # 80 x 700 samples: split over the threads
        internals = [np.sort(rng.choice(tau[2:-2], rng.integers(0, 40), replace=False)) for _ in range(count)]
        internals[0] = np.zeros(0)  # a lane without knots yet
        per_sample = rng.exponential(0.9, (count, tau.size))
        per_sample[::5] = 0.5  # lanes within tolerance: None
        got = spline_kernel.split_lane_spans(internals, tau, tau, per_sample, 0.003, 0.25, 1.0)
        assert len(got) == count
        for k, internal in enumerate(internals):
            want = spline_kernel.split_spans(internal, tau, tau, per_sample[k], 0.003, 0.25, 1.0)
            assert (got[k] is None) == (want is None), k
            if want is not None:
                np.testing.assert_array_equal(got[k], want)
    assert spline_kernel.split_lane_spans([], tau, tau, np.zeros((0, tau.size)), 0.003, 0.25, 1.0) == []
    with pytest.raises(ValueError, match="one row"):
        spline_kernel.split_lane_spans([np.array([0.5])], tau, tau, np.zeros((2, tau.size)), 0.003, 0.25, 1.0)


def test_a_lane_outside_the_problem_is_refused():
    tau = np.linspace(0.0, 1.0, 20)
    data = np.sin(tau)[None, :, None]
    knots, n_ctrl = pad_knot_vectors([np.array([0.5])], 3, 1)
    with pytest.raises(IndexError, match="lane"):
        spline_kernel.score_candidates(knots, n_ctrl, tau, data, np.array([1]), None, data, 3, LSQ_RIDGE)


def _replacement_case(rng, degree, multiplicity, shared_columns):
    """A problem (per-curve lanes, or one PCA lane of ``shared_columns`` columns), each lane's current
    fit on uneven knots, and candidate removals and moves of every lane."""
    from anim_signals.splines.tolerance import fit_lanes

    n = 300
    tau = np.sort(np.concatenate([[0.0, 1.0], rng.uniform(0, 1, n - 2)]))
    if shared_columns:
        sources = np.column_stack([np.sin(7 * tau), np.cos(19 * tau**2), tau**3])
        target = 30 * sources @ rng.normal(size=(3, shared_columns)) + 0.05 * rng.normal(size=(n, shared_columns))
        problem = knot_search.KnotProblem.build(tau, target, degree, multiplicity, 1.0)
    else:
        target = np.column_stack([np.sin(9 * tau + c) * (c + 1) + 0.02 * rng.normal(size=n) for c in range(4)])
        problem = knot_search.KnotProblem.lanes(tau, target / 0.05, degree, multiplicity)
    internal = [np.sort(rng.uniform(0.02, 0.98, rng.integers(6, 18))) for _ in range(problem.n_lanes)]
    fits = fit_lanes(problem, internal, range(problem.n_lanes))
    lanes, first, stop, moved, n_moved = [], [], [], [], []
    for lane, u in enumerate(internal):
        for i in range(u.size):  # every removal
            lanes.append(lane), first.append(i), stop.append(i + 1), moved.append([0.0, 0.0]), n_moved.append(0)
        for i in range(0, u.size - 2, 3):  # moves of two knots to two others between their neighbours
            lo = u[i - 1] if i > 0 else 0.0
            hi = u[i + 2] if i + 2 < u.size else 1.0
            lanes.append(lane), first.append(i), stop.append(i + 2), n_moved.append(2)
            moved.append(list(lo + (hi - lo) * np.sort(rng.uniform(0.05, 0.95, 2))))
    return problem, fits, tuple(np.array(a) for a in (lanes, first, stop, moved, n_moved))


@pytest.mark.parametrize("degree, multiplicity, shared_columns", [
    (3, 1, 0), (3, 2, 0), (2, 1, 0), (2, 2, 0), (1, 1, 0),
    (3, 1, 4),  # PCA rows of at most COMPILED_BASIS_MAX values: errors in the kernel
    (3, 2, 12),  # bigger rows: the kernel's values through numpy's matrix product
])
def test_local_refits_equal_the_numpy_ones(monkeypatch, degree, multiplicity, shared_columns):
    from anim_signals.splines import local

    if segment_fit.kernel_location() != "process":
        pytest.skip("the segment test does not run compiled in this process: neither do the local refits")
    rng = np.random.default_rng(degree * 100 + multiplicity * 10 + shared_columns)
    problem, fits, (lanes, first, stop, moved, n_moved) = _replacement_case(rng, degree, multiplicity, shared_columns)
    if shared_columns:
        big = problem.basis.size > knot_search.COMPILED_BASIS_MAX
        assert big == (shared_columns == 12), problem.basis.shape  # both compiled paths are exercised
    args = (fits, problem.tau, problem.latent, problem.target, problem.basis, degree, multiplicity, lanes, first, stop,
            moved, n_moved)
    calls = []
    real = spline_kernel.local_refits
    monkeypatch.setattr(spline_kernel, "local_refits", lambda *a, **k: calls.append(1) or real(*a, **k))
    compiled = local.score_replacements(*args, margin=2)
    assert calls and not knot_search._SCORER_FAILURE, knot_search._SCORER_FAILURE
    monkeypatch.setattr(local, "compiled_spline_kernel", lambda: None)
    reference = local.score_replacements(*args, margin=2)
    assert lanes.size >= 8 and (n_moved > 0).any()
    for name in ("max_error", "rms", "changed", "depends"):
        np.testing.assert_allclose(getattr(compiled, name), getattr(reference, name), rtol=1e-9, atol=1e-12,
                                   err_msg=name)


def test_local_refits_without_freed_points_or_samples_equal_the_numpy_ones():
    # refits that free no control point (the kept ones fit alone), that see no sample, and spans of
    # zero width (a knot repeated): the kernel's and numpy's refits on the same geometry
    from anim_signals.splines import local

    rng = np.random.default_rng(17)
    for degree in (1, 2, 3):
        problem, fits, (lanes, first, stop, _, _) = _replacement_case(rng, degree, 2, 0)
        geo = local._geometry(fits, problem.tau, degree, 2, lanes, first, stop, np.zeros((lanes.size, 0)),
                              np.zeros(lanes.size, dtype=int), 2)
        n_free = geo.n_free.copy()
        n_free[::3] = 0
        s1 = geo.s1.copy()
        s1[1::5] = geo.s0[1::5]
        geo = geo._replace(n_free=n_free, s1=s1)
        assert np.any(np.diff(geo.sub_knots, axis=1) == 0.0)  # double knots: zero-width spans
        idx = np.arange(lanes.size)
        want = local._refit_chunk(geo, idx, problem.tau, problem.latent, problem.target, None, lanes, degree)
        got = spline_kernel.local_refits(geo.sub_knots, geo.n_sub, geo.free_lo, geo.n_free, geo.fixed, geo.s0,
                                         geo.s1, problem.tau, problem.latent, lanes, None, problem.target, degree,
                                         local.LOCAL_RIDGE)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
        assert np.all(got[0][1::5] == 0.0)


def test_local_refits_split_over_threads_equal_one_by_one(monkeypatch):
    from anim_signals.splines import local

    monkeypatch.setattr(spline_kernel, "THREADS", 2)
    monkeypatch.setattr(spline_kernel, "_SPLIT_MIN", 1)  # split even these few pairs
    rng = np.random.default_rng(21)
    problem, fits, (lanes, first, stop, _, _) = _replacement_case(rng, 3, 1, 0)
    geo = local._geometry(fits, problem.tau, 3, 1, lanes, first, stop, np.zeros((lanes.size, 0)),
                          np.zeros(lanes.size, dtype=int), 2)
    fields = (geo.sub_knots, geo.n_sub, geo.free_lo, geo.n_free, geo.fixed, geo.s0, geo.s1)
    rest = (problem.tau, problem.latent, lanes, None, problem.target, 3, LSQ_RIDGE)
    together = spline_kernel.local_refits(*fields, *rest)
    for s in (0, 5, lanes.size - 1):
        alone = spline_kernel.local_refits(*(f[s:s + 1] for f in fields), problem.tau, problem.latent,
                                           lanes[s:s + 1], None, problem.target, 3, LSQ_RIDGE)
        assert (together[0][s], together[1][s]) == (alone[0][0], alone[1][0])
    # the values form: the same refits, their values laid end to end
    fitted = spline_kernel.local_refits(*fields, *rest, values=True)
    assert fitted.shape == (int((geo.s1 - geo.s0).sum()), 1)
    sample = np.concatenate([np.arange(a, b) for a, b in zip(geo.s0, geo.s1, strict=True)])
    lane_of = np.repeat(lanes, geo.s1 - geo.s0)
    err = np.abs(fitted[:, 0] - problem.target[lane_of, sample, 0])
    ends = np.cumsum(geo.s1 - geo.s0)
    np.testing.assert_allclose([err[e - c:e].max() for e, c in zip(ends, geo.s1 - geo.s0, strict=True)],
                               together[0], rtol=1e-12)
    with pytest.raises(IndexError, match="lane"):
        spline_kernel.local_refits(*fields, problem.tau, problem.latent, lanes + 10, None, problem.target, 3,
                                   LSQ_RIDGE)


def test_the_spline_modes_through_a_worker_process_give_the_same_keys(monkeypatch):
    """Where numba must not run in the process (Blender beside Mesa), the knot scoring, insertion
    and local refits run in the segment worker: the same keys as in this process, the fit's big
    read-only arrays sent once each, a dead worker started again, and a failed request ends the child."""
    from anim_signals import fit_channels
    from anim_signals.splines import segment_process

    if segment_fit.kernel_location() != "process":
        pytest.skip("the segment test does not run compiled in this process")
    rng = np.random.default_rng(8)
    n = 400
    t = np.linspace(0.0, 1.0, n)
    values = np.column_stack([np.sin(2 * np.pi * (2 + c) * t + c) for c in range(5)]
                             + [np.cumsum(rng.normal(0.0, 0.02, n))])
    frames = np.arange(float(n))
    local = {mode: fit_channels(values, frames, 0.01, mode=mode) for mode in ("PER_CHANNEL", "LATENT")}
    worker = segment_process.WorkerKernel()
    requests, held = [], []
    real_spline, real_pack = worker.spline, worker._pack
    monkeypatch.setattr(worker, "spline", lambda name, a, k: requests.append(name) or real_spline(name, a, k))
    monkeypatch.setattr(worker, "_pack", lambda v, pending: (lambda p: held.append(p[0]) or p)(real_pack(v, pending)))
    failures = list(knot_search._SCORER_FAILURE)
    try:
        monkeypatch.setattr(segment_fit, "_kernel", lambda: worker)
        assert knot_search.compiled_spline_kernel() is worker.spline_kernel
        for mode, want in local.items():
            got = fit_channels(values, frames, 0.01, mode=mode)
            for a, b in zip(got.curves, want.curves, strict=True):
                np.testing.assert_array_equal(a.co, b.co, err_msg=mode)
                np.testing.assert_array_equal(a.handle_left, b.handle_left, err_msg=mode)
                np.testing.assert_array_equal(a.handle_right, b.handle_right, err_msg=mode)
        assert {"score_candidates", "split_lane_spans", "local_refits"} <= set(requests)
        sent, named = held.count(segment_process._HOLD), held.count(segment_process._TOKEN)
        assert 0 < sent < named  # arrays sent once, then named
        assert len(worker._held) <= segment_process._HELD_MAX
        assert not knot_search._SCORER_FAILURE
        # a worker that died is started again (and sent its arrays again)
        worker._process.kill()
        worker._process.wait()
        held.clear()
        again = fit_channels(values, frames, 0.01, mode="PER_CHANNEL")
        assert again.n_keys == local["PER_CHANNEL"].n_keys and not knot_search._SCORER_FAILURE
        assert segment_process._HOLD in held  # the new child was sent the fit's arrays whole
        # a request the child fails ends it: neither side keeps what the other may not hold
        assert worker._held
        with pytest.raises(RuntimeError, match="segment worker failed"):
            worker.spline("split_spans", (np.array([0.5]),), {})  # missing arguments: a TypeError there
        assert not worker._held and worker._process is None
        assert fit_channels(values, frames, 0.01, mode="PER_CHANNEL").n_keys == local["PER_CHANNEL"].n_keys
    finally:
        worker.close()
        knot_search._SCORER_FAILURE[:] = failures


def test_the_worker_sends_writeable_and_small_arrays_whole_every_time():
    from anim_signals.splines import segment_process

    worker = segment_process.WorkerKernel()
    try:
        pending: dict = {}
        big = np.zeros(4096)
        assert worker._pack(big, pending)[0] == segment_process._VALUE  # writeable: it may change
        big.flags.writeable = False
        assert worker._pack(big, pending)[0] == segment_process._HOLD
        assert worker._pack(big, pending)[0] == segment_process._TOKEN  # twice in one request: sent once
        assert not worker._held  # held once the child has answered
        small = np.zeros(8)
        small.flags.writeable = False
        assert worker._pack(small, pending)[0] == segment_process._VALUE
        assert worker._pack(3, pending)[0] == segment_process._VALUE
        # many problems one after another: the child holds the last _HELD_MAX arrays, the answers stay right
        for k in range(segment_process._HELD_MAX + 5):
            tau = np.linspace(0.0, 1.0, 2000 + k)
            tau.flags.writeable = False
            per_sample = np.full((1, tau.size), 2.0)
            got = worker.spline("split_lane_spans", ([np.array([0.5])], tau, tau, per_sample, 0.01, 0.25, 1.0), {})
            want = spline_kernel.split_lane_spans([np.array([0.5])], tau, tau, per_sample, 0.01, 0.25, 1.0)
            np.testing.assert_array_equal(got[0], want[0])
            assert len(worker._held) <= segment_process._HELD_MAX
        with pytest.raises(ValueError, match="no spline kernel function"):
            worker.spline("evaluate", (), {})
    finally:
        worker.close()


def test_read_only_problem_data_runs_the_forms_already_compiled():
    """A fit's problem arrays are read-only views (the worker names them by token); numba would
    compile every kernel again for read-only arrays, after the warm-up: the kernels take them as
    writeable views of the same memory instead."""
    rng = np.random.default_rng(4)
    tau = np.linspace(0.0, 1.0, 60)
    problem = knot_search.KnotProblem.lanes(tau, np.sin(7 * tau)[:, None] + 0.01 * rng.normal(size=(60, 1)), 3, 2)
    assert not problem.tau.flags.writeable and not problem.target.flags.writeable
    knots, n_ctrl = pad_knot_vectors([np.array([0.3, 0.6])], 3, 2)
    args = (knots, n_ctrl, problem.tau, problem.latent, np.zeros(1, dtype=np.int64), None, problem.target, 3,
            LSQ_RIDGE, True)
    writeable = spline_kernel.score_candidates(*(a.copy() if isinstance(a, np.ndarray) else a for a in args))
    dispatchers = {name: getattr(spline_kernel, name) for name in ("_score_rows", "_split_spans")}
    spline_kernel.split_spans(np.array([0.5]), tau.copy(), tau.copy(), np.full(60, 2.0), 0.01, 0.25, 1.0)
    counts = {name: len(d.signatures) for name, d in dispatchers.items()}
    read_only = spline_kernel.score_candidates(*args)
    spline_kernel.split_spans(np.array([0.5]), problem.tau, problem.tau, np.full(60, 2.0), 0.01, 0.25, 1.0)
    assert {name: len(d.signatures) for name, d in dispatchers.items()} == counts
    for a, b in zip(writeable, read_only, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not problem.tau.flags.writeable  # the problem's own views stay read-only
