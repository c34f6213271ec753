"""Pose space built from one tolerance (Cashman & Hormann §3.4): the choice of l and k.

Expectations come from brute force written here: the shape / pose / total error budgets of
``build_pose_space``'s docstring computed from the frames, a linear scan over l with
``fit_pose_signal``, and a linear scan over k with ``fit_time_signal``.  The build must meet the
tolerance, take the smallest l, a k whose predecessor fails, never a time signal whose control points
are thrown far out (issue 16, item 2), and do a bounded amount of work: O(log n) time-signal fits
and one pose fit, however many candidates there are.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import anim_signals.posespace.signals as signals_module
import anim_signals.posespace.sites as sites_module
import anim_signals.posespace.space as space_module
from anim_signals.posespace import build_pose_space, fit_pose_signal, fit_time_signal, greedy_site_order
from anim_signals.posespace.signals import control_reach
from anim_signals.posespace.space import MAX_CONTROL_REACH
from anim_signals.splines import bspline


def cycling_mesh(n, cycle=24, vertices=40, seed=0):
    """(n, 3 * vertices): each vertex on its own two-harmonic loop, the loop repeating every ``cycle``."""
    rng = np.random.default_rng(seed)
    s = 2 * np.pi * np.arange(n)[:, None] / cycle
    rest = rng.normal(size=(1, 3 * vertices))
    a1, a2 = rng.normal(size=(2, 1, 3 * vertices))
    ph1, ph2 = rng.uniform(0, 2 * np.pi, size=(2, 1, 3 * vertices))
    return rest + a1 * np.sin(s + ph1) + 0.4 * a2 * np.sin(2 * s + ph2 + 0.3 * np.sin(s / 3.0))


def budgets(space, z, tol):
    """(pose budget for l, total budget for k) as the build's docstring states them."""
    n, d = z.shape
    rows = d // space.row_size
    residual = float(np.sum((z - space.shape.decode(space.latent)) ** 2))
    return tol**2 * (2.0 / 3.0) * n * rows - residual, tol**2 * n * rows - residual


def time_error(space, k):
    """(sum_i |x_i - g(f_k(i))|^2, control reach) of the time signal with k control points."""
    ts = fit_time_signal(space.positions, k, space.reconstructed_frames)
    err = float(np.sum((space.latent - space.pose.evaluate(ts.evaluate(ts.frames))) ** 2))
    return err, control_reach(ts.control, space.positions)


@pytest.fixture(scope="module")
def built():
    z = cycling_mesh(90)
    tol = 0.02
    return z, tol, build_pose_space(z, tolerance=tol, row_size=3)


def test_tolerance_build_meets_the_tolerance(built):
    z, tol, space = built
    err = space.reconstruction_error(z)
    assert err["rms"] <= tol
    assert 4 <= space.l < space.n and 4 <= space.k < space.n  # a real reduction, not the interpolating case


def test_l_is_the_smallest_count_whose_pose_fit_is_within_budget(built):
    z, tol, space = built
    pose_budget, _ = budgets(space, z, tol)
    order, used = space.site_order, space.site_count  # the prefix used; repeated poses merge into one site
    np.testing.assert_array_equal(order[:used], greedy_site_order(space.positions, space.latent, count=used))
    prefix = space.positions[order[:used]]
    assert space.pose.l <= used and all(np.any(np.all(prefix == s, axis=1)) for s in space.pose.sites)

    def pose_error(ell):
        g = fit_pose_signal(space.positions, space.latent, space.positions[order[:ell]])
        return float(np.sum((space.latent - g.evaluate(space.positions)) ** 2))

    linear_scan = next(ell for ell in range(4, space.n + 1) if pose_error(ell) <= pose_budget)
    assert used == linear_scan
    assert pose_error(used - 1) > pose_budget


def test_k_passes_on_every_frame_and_its_predecessor_fails(built):
    z, tol, space = built
    _, total_budget = budgets(space, z, tol)
    err, reach = time_error(space, space.k)
    assert err <= total_budget and reach <= MAX_CONTROL_REACH
    before, reach_before = time_error(space, space.k - 1)
    assert before > total_budget or reach_before > MAX_CONTROL_REACH
    # a linear scan (the smallest passing k) cannot be above it; here the error falls monotonically
    # near the answer, so the search finds exactly that k
    linear_scan = next(k for k in range(4, space.n + 1)
                       if time_error(space, k)[0] <= total_budget and time_error(space, k)[1] <= MAX_CONTROL_REACH)
    assert space.k == linear_scan


def test_a_time_signal_that_explodes_is_not_accepted_for_its_fit_error():
    """A random-walk layout: k = 37 of 40 fits within the budget, but only with control points
    tens of thousands of extents away (Piegl-Tiller knots with k close to n); the build must not
    take it (issue 16, item 2) and interpolates instead."""
    rng = np.random.default_rng(0)
    p = np.cumsum(rng.normal(size=(40, 2)), axis=0)
    z = p.copy()  # two values per frame: the pose signal is affine, so the error is the time signal's
    tol = 0.0433
    budget = tol**2 * 40 * 2
    wild = fit_time_signal(p, 37)
    assert float(np.sum((wild.evaluate(wild.frames) - p) ** 2)) <= budget  # passes by error alone...
    assert control_reach(wild.control, p) > 1e3  # ...thrown far out
    space = build_pose_space(z, positions=p, row_size=1, tolerance=tol)
    assert control_reach(space.time.control, space.positions) <= MAX_CONTROL_REACH
    assert space.reconstruction_error(z)["rms"] <= tol
    assert space.k == 42  # no k <= n both fits and stays near the frames: the interpolating n + 2


def test_tolerance_build_work_is_bounded(monkeypatch):
    """O(log n) time-signal fits and one pose fit; the greedy basis grows by one column per site."""
    z = cycling_mesh(400, cycle=30)
    calls = {"time": 0, "pose": 0, "columns": 0}
    real_time, real_pose = space_module._time_control_points, space_module.fit_pose_signal
    real_column = sites_module._NestedBasis._add_column

    def counting_time(*args, **kwargs):
        calls["time"] += 1
        return real_time(*args, **kwargs)

    def counting_pose(*args, **kwargs):
        calls["pose"] += 1
        return real_pose(*args, **kwargs)

    def counting_column(self, column):
        calls["columns"] += 1
        return real_column(self, column)

    monkeypatch.setattr(space_module, "_time_control_points", counting_time)
    monkeypatch.setattr(space_module, "fit_pose_signal", counting_pose)
    monkeypatch.setattr(sites_module._NestedBasis, "_add_column", counting_column)
    tol = 0.02
    space = build_pose_space(z, tolerance=tol)
    assert space.reconstruction_error(z)["rms"] <= tol
    bound = 2 * math.ceil(math.log2(space.n)) + 2
    assert space.k - 3 > bound  # a scan over k would have fitted more than the bound
    assert calls["time"] <= bound
    assert calls["pose"] == 1
    assert calls["columns"] <= space.l + 3 - 3  # 1, x, y, then one per site past the three anchors


def test_time_signal_fit_is_banded_and_matches_dense_least_squares(monkeypatch):
    rng = np.random.default_rng(3)
    n = 60
    p = np.cumsum(rng.normal(size=(n, 2)), axis=0)
    for k in (4, 17, 30, 45, n + 1, n + 2):
        ts = fit_time_signal(p, k)
        b = bspline.design_matrix(ts.knots, ts.params, 3)
        if k > n:  # natural end conditions take up the spare freedom
            ends = np.array([bspline.evaluate(ts.knots, np.eye(k), [u], 3, derivative=2)[0]
                             for u in (ts.knots[0], ts.knots[-1])])[: k - n]
            want = np.linalg.solve(np.vstack([b, ends]), np.vstack([p, np.zeros((k - n, 2))]))
        else:
            want = np.linalg.lstsq(b, p, rcond=None)[0]
        np.testing.assert_allclose(ts.control, want, atol=1e-8 * max(1.0, float(np.abs(want).max())))
    # long sequences never build the dense n x k matrix
    def no_dense(*args, **kwargs):
        raise AssertionError("dense collocation matrix built")

    monkeypatch.setattr(signals_module.bspline, "design_matrix", no_dense)
    long = np.cumsum(rng.normal(size=(20000, 2)), axis=0)
    for k in (500, 5000, 20002):
        ts = fit_time_signal(long, k)
        assert ts.control.shape == (k, 2) and control_reach(ts.control, long) < 2.0
    np.testing.assert_allclose(fit_time_signal(long, 20002).evaluate(np.arange(1.0, 20001.0)), long, atol=1e-6)


def random_walk(n, channels=30, seed=1):
    """(n, channels): an armature-like pose vector (each channel on its own, row_size 1)."""
    return np.cumsum(np.random.default_rng(seed).normal(scale=0.05, size=(n, channels)), axis=0)


@pytest.mark.parametrize("n", [40, 90, 240])
def test_exact_and_tolerance_builds_keep_control_points_near_the_frames(n):
    """Issue 16, item 2, for every kind of build: the exact (interpolating) build and a tolerance
    build, of a mesh (rows of 3) and of an armature-like pose vector (rows of 1), keep every
    time-signal control point within MAX_CONTROL_REACH layout extents (the frames reach 0.5)."""
    for z, row_size, tol in ((cycling_mesh(n), 3, 0.02), (random_walk(n), 1, 0.01)):
        for kwargs in ({}, {"tolerance": tol}):
            space = build_pose_space(z, row_size=row_size, **kwargs)
            assert control_reach(space.time.control, space.positions) <= MAX_CONTROL_REACH, (row_size, kwargs)


def test_a_given_k_that_throws_control_points_out_is_refused():
    """k = n - 1 on 40 frames puts control points ~1e8 extents out: refused, saying what to choose;
    k = n + 2 (interpolation) and a k far from n are fine."""
    z = cycling_mesh(40)
    assert control_reach(fit_time_signal(build_pose_space(z, k=42).positions, 39).control,
                         build_pose_space(z, k=42).positions) > 1e3  # what k = 39 would make
    with pytest.raises(ValueError, match=r"k = 39: .*choose a smaller k, k = 42 to interpolate"):
        build_pose_space(z, k=39)
    for k in (12, 42):
        space = build_pose_space(z, k=k)
        assert space.k == k and control_reach(space.time.control, space.positions) <= MAX_CONTROL_REACH
