"""B-spline toolkit against scipy's BSpline and hand-checkable identities."""

import numpy as np
import pytest
from scipy.interpolate import BSpline

from anim_signals.splines import bspline as bs


@pytest.fixture
def spline():
    rng = np.random.default_rng(0)
    internal = np.sort(rng.uniform(0, 10, 7))
    knots = bs.clamped_knots(internal, 0.0, 10.0, 3)
    ctrl = rng.normal(size=(knots.size - 4, 3))
    return knots, ctrl


def test_partition_of_unity_and_scipy_agreement(spline):
    knots, ctrl = spline
    x = np.linspace(0, 10, 333)
    mat = bs.design_matrix(knots, x, 3)
    np.testing.assert_allclose(mat.sum(axis=1), 1.0, atol=1e-12)
    assert (mat >= -1e-15).all()
    np.testing.assert_allclose(bs.evaluate(knots, ctrl, x, 3), BSpline(knots, ctrl, 3)(x), atol=1e-12)
    np.testing.assert_allclose(
        bs.evaluate(knots, ctrl, x, 3, derivative=1), BSpline(knots, ctrl, 3).derivative()(x), atol=1e-10
    )


@pytest.mark.parametrize("degree", [1, 2, 3])
def test_exact_recovery_of_known_spline(degree):
    rng = np.random.default_rng(degree)
    knots = bs.clamped_knots(np.array([2.0, 3.5, 7.0]), 0.0, 10.0, degree)
    ctrl = rng.normal(size=(knots.size - degree - 1, 2))
    x = np.linspace(0, 10, 200)
    data = BSpline(knots, ctrl, degree)(x)
    np.testing.assert_allclose(bs.lsq_control_points(knots, x, data, degree), ctrl, atol=1e-6)


def test_batched_lsq_matches_dense_lstsq_per_candidate():
    rng = np.random.default_rng(3)
    x = np.linspace(0, 1, 150)
    data = rng.normal(size=(150, 4))
    knots = np.stack([bs.clamped_knots(np.sort(rng.uniform(0.05, 0.95, 9)), 0, 1, 3) for _ in range(12)])
    ctrl, fit, sse = bs.lsq_batch(knots, x, data, 3, ridge=0.0)
    _, _, sse_nofit = bs.lsq_batch(knots, x, data, 3, ridge=0.0, return_fit=False)
    for s in range(knots.shape[0]):
        mat = bs.design_matrix(knots[s], x, 3)
        ref = np.linalg.lstsq(mat, data, rcond=None)[0]
        np.testing.assert_allclose(ctrl[s], ref, atol=1e-7)
        np.testing.assert_allclose(fit[s], mat @ ref, atol=1e-7)
        assert sse[s] == pytest.approx(((mat @ ref - data) ** 2).sum(), rel=1e-9)
    np.testing.assert_allclose(sse_nofit, sse, rtol=1e-6)


def test_banded_solver_large_systems_match_dense():
    rng = np.random.default_rng(4)
    x = np.linspace(0, 1, 2000)
    knots = bs.clamped_knots(np.sort(rng.uniform(0.01, 0.99, 300)), 0, 1, 3)[None]
    spans, vals = bs.basis_batch(knots, x, 3)
    band, rhs, _ = bs._normal_equations(spans, vals, rng.normal(size=(2000, 2)), knots.shape[1] - 4, 3)
    band[:, :, 0] += 1e-3
    sol = bs.banded_cholesky_solve(band, rhs)
    k = band.shape[1]
    dense = np.zeros((k, k))
    for d in range(4):
        dense[np.arange(k - d), np.arange(d, k)] = band[0, : k - d, d]
        dense[np.arange(d, k), np.arange(k - d)] = band[0, : k - d, d]
    np.testing.assert_allclose(sol[0], np.linalg.solve(dense, rhs[0]), atol=1e-8)


@pytest.mark.parametrize("multiplicity", [1, 2, 3])
def test_bezier_conversion_is_exact(spline, multiplicity):
    knots, ctrl = spline
    internal = np.repeat(knots[4:-4], multiplicity)
    knots = bs.clamped_knots(internal, 0.0, 10.0, 3)
    ctrl = np.random.default_rng(5).normal(size=(knots.size - 4, 2))
    curves = bs.spline_to_bezier(knots, ctrl, 3)
    x = np.linspace(-1, 11, 2001)
    ref = BSpline(knots, ctrl, 3, extrapolate=False)(np.clip(x, 0, 10))
    for col, curve in enumerate(curves):
        assert curve.n_keys == np.unique(knots).size  # one key per distinct knot
        np.testing.assert_allclose(curve.evaluate(x), ref[:, col], atol=1e-10)
        # handles at a third of each neighbouring segment: x(t) is linear in Blender
        h = np.diff(curve.co[:, 0])
        np.testing.assert_allclose(curve.handle_right[:-1, 0] - curve.co[:-1, 0], h / 3)
        np.testing.assert_allclose(curve.co[1:, 0] - curve.handle_left[1:, 0], h / 3)
        expected = "ALIGNED" if multiplicity < 3 else "FREE"
        assert set(curve.handle_type[1:-1]) == {expected}


def test_find_spans_matches_searchsorted():
    rng = np.random.default_rng(6)
    knots = np.stack([bs.clamped_knots(np.sort(rng.uniform(0, 1, 5)), 0, 1, 3) for _ in range(7)])
    x = np.linspace(0, 1, 57)
    spans = bs.find_spans(knots, x, 3)
    for s in range(7):
        ref = np.clip(np.searchsorted(knots[s], x, side="right") - 1, 3, knots.shape[1] - 5)
        np.testing.assert_array_equal(spans[s], ref)


def test_padded_rows_with_own_data_match_separate_fits():
    rng = np.random.default_rng(8)
    x = np.linspace(0, 1, 90)
    internals = [np.sort(rng.uniform(0.05, 0.95, n)) for n in (0, 3, 7, 12)]
    data = rng.normal(size=(4, 90, 1))
    knots, n_ctrl = bs.pad_knot_vectors(internals, 3)
    ctrl, fit, sse = bs.lsq_batch(knots, x, data, 3, n_ctrl=n_ctrl, ridge=1e-12)
    for row, internal in enumerate(internals):
        mat = bs.design_matrix(bs.clamped_knots(internal, 0, 1, 3), x, 3)
        ref = np.linalg.lstsq(mat, data[row], rcond=None)[0]
        np.testing.assert_allclose(ctrl[row, : n_ctrl[row]], ref, atol=1e-6)
        np.testing.assert_allclose(ctrl[row, n_ctrl[row] :], 0.0, atol=1e-9)
        np.testing.assert_allclose(fit[row], mat @ ref, atol=1e-6)
        assert sse[row] == pytest.approx(((mat @ ref - data[row]) ** 2).sum(), rel=1e-6)


def test_every_curve_evaluated_together_equals_each_evaluated_alone():
    """evaluate_curves gives, bit for bit, what BezierCurve.evaluate gives curve by curve: thirds
    handles, free handles of any length (Blender shortens those longer than their segment), one-key
    curves, frames before the first key and after the last, curves of different key frames."""
    from anim_signals.splines.bezier_keys import BezierCurve, constant_curve, evaluate_curves

    rng = np.random.default_rng(6)
    curves = [constant_curve(3.0, -2.0)]
    for trial in range(12):
        k = int(rng.integers(2, 12))
        x = np.cumsum(rng.uniform(0.5, 9.0, k)) + rng.uniform(-20.0, 20.0)
        y = rng.normal(0.0, 10.0 ** rng.integers(-2, 3), k)
        h = np.diff(x)
        if trial % 3 == 0:  # thirds: a spline's keys
            left, right = np.concatenate([h[:1], h]) / 3, np.concatenate([h, h[-1:]]) / 3
        else:
            left = np.concatenate([h[:1], h]) * rng.uniform(0.0, 1.7, k)
            right = np.concatenate([h, h[-1:]]) * rng.uniform(0.0, 1.7, k)
        slope_l, slope_r = rng.normal(0.0, 2.0, k), rng.normal(0.0, 2.0, k)
        curves.append(BezierCurve(np.column_stack([x, y]), np.column_stack([x - left, y - left * slope_l]),
                                  np.column_stack([x + right, y + right * slope_r]), np.full(k, "FREE")))
    curves.append(constant_curve(0.0, 7.0))
    frames = np.concatenate([np.linspace(-40.0, 140.0, 301), [curves[1].co[0, 0], curves[1].co[-1, 0]]])
    together = evaluate_curves(curves, frames)
    assert together.shape == (frames.size, len(curves))
    for j, curve in enumerate(curves):
        np.testing.assert_array_equal(together[:, j], curve.evaluate(frames))
    assert evaluate_curves([], frames).shape == (frames.size, 0)
