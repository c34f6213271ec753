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
    for trial in range(60):
        internal = np.sort(rng.choice(tau[2:-2], rng.integers(0, 12), replace=False))
        if trial % 3 == 0 and internal.size > 2:  # knots closer than the samples: spans without any
            internal = np.sort(np.concatenate([internal, internal[:2] + 1e-4]))
        per_sample = rng.exponential(0.8, tau.size)
        if trial % 4 == 0:
            per_sample = np.round(per_sample * 2) / 2  # ties between spans' worst errors
        if trial == 7:
            per_sample[:] = 0.5  # within tolerance everywhere
        want = None
        with monkeypatch.context() as patch:
            patch.setattr(tolerance, "compiled_spline_kernel", lambda: None)
            want = tolerance._insert_knots(problem, internal, per_sample, grid)
        got = spline_kernel.split_spans(internal, tau, tau if grid is None else grid, per_sample, problem.min_gap,
                                        tolerance.INSERT_FRACTION, knot_search.FEASIBLE)
        if want is None:
            assert got is None, trial
        else:
            cases += 1
            np.testing.assert_array_equal(got, want, err_msg=f"trial {trial}")
    assert cases > 40
    assert spline_kernel.split_spans(np.array([0.5]), tau, np.zeros(0), np.full(tau.size, 3.0), 0.01, 0.25, 1.0) is None


def test_a_lane_outside_the_problem_is_refused():
    tau = np.linspace(0.0, 1.0, 20)
    data = np.sin(tau)[None, :, None]
    knots, n_ctrl = pad_knot_vectors([np.array([0.5])], 3, 1)
    with pytest.raises(IndexError, match="lane"):
        spline_kernel.score_candidates(knots, n_ctrl, tau, data, np.array([1]), None, data, 3, LSQ_RIDGE)
