"""Pose space (Cashman & Hormann 2012): shape signal h, pose signal g, MDS positions, interpolation.

Written against the API contract in docs/pose_space.md and the seed
(../shared/seeds/cashman-hormann-time-pose-shape.txt).  Expectations come from closed forms, from
slow reference implementations written here (PCA by our own SVD / eigh, the thin-plate least-squares
problem solved through its full KKT system with Lagrange multipliers, classical MDS, brute-force
stress minimisation with scipy.optimize) and from invariances.  The time signal, the edits,
serialisation and bad input are in test_posespace_time.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from anim_signals.posespace import (
    build_pose_space,
    fit_pose_signal,
    greedy_site_order,
    mds_positions,
    shape_signal,
    shape_signal_from_examples,
    stress,
)

# ------------------------------------------------------------------------------------------------
# generated sequences
# ------------------------------------------------------------------------------------------------


def twisting_cylinder(n=12, rings=5, around=8, turns=0.6, bend=0.3):
    """A cylinder (rings x around vertices) twisting about its axis and bending a little."""
    theta = np.linspace(0.0, 2 * np.pi, around, endpoint=False)
    h = np.linspace(0.0, 2.0, rings)
    frames = []
    for i in range(n):
        s = i / (n - 1)
        twist = turns * np.sin(np.pi * s) * h  # angle per ring
        ang = theta[None, :] + twist[:, None]
        x = np.cos(ang) + bend * s * h[:, None] ** 2
        y = np.sin(ang)
        z = np.repeat(h[:, None], around, axis=1) * (1.0 + 0.1 * s)
        frames.append(np.stack([x, y, z], axis=-1).reshape(-1))
    return np.array(frames)


def smooth_trajectory(n=15, d=30, seed=0, harmonics=3):
    """Random smooth curves: a few random Fourier harmonics per value (not periodic over the frames)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 0.8, n)[:, None]
    z = rng.normal(size=(1, d))
    for h in range(1, harmonics + 1):
        z = z + rng.normal(size=(1, d)) / h * np.sin(2 * np.pi * h * t + rng.uniform(0, 2 * np.pi, (1, d)))
    return z


def repeated_poses(seed=1, d=24):
    """A ping-pong sequence of a few key poses: exact repeats, some not adjacent and one hold."""
    rng = np.random.default_rng(seed)
    keys = rng.normal(size=(7, d))
    idx = [0, 1, 2, 3, 4, 4, 3, 2, 1, 0, 5, 6, 2, 1]
    return keys[idx], idx


def rms_per_vertex(a, b):
    diff = (np.asarray(a) - np.asarray(b)).reshape(len(a), -1, 3)
    return float(np.sqrt(np.mean(np.sum(diff**2, axis=2))))


def pairwise(a):
    return np.sqrt(((a[:, None, :] - a[None, :, :]) ** 2).sum(-1))


def ref_stress(p, x):
    """Seed eq. 6, double loop."""
    total = 0.0
    n = len(p)
    for i in range(n - 1):
        for j in range(i + 1, n):
            total += (np.linalg.norm(p[i] - p[j]) - np.linalg.norm(x[i] - x[j])) ** 2
    return total


# ------------------------------------------------------------------------------------------------
# reference thin-plate spline (slow, written from the seed's §2.2 formula)
# ------------------------------------------------------------------------------------------------


def ref_phi(r):
    r = np.asarray(r, dtype=float)
    out = np.zeros_like(r)
    pos = r > 0
    out[pos] = r[pos] ** 2 * np.log(r[pos])
    return out


def ref_design(p, sites):
    """[phi(|p_i - s_j|)..., 1, p_x, p_y] built with explicit loops."""
    n, ell = len(p), len(sites)
    a = np.zeros((n, ell + 3))
    for i in range(n):
        for j in range(ell):
            a[i, j] = ref_phi(np.hypot(*(p[i] - sites[j])))
        a[i, ell:] = [1.0, p[i, 0], p[i, 1]]
    return a


def ref_tps_kkt(p, x, sites):
    """min ||A c - X||^2  s.t.  sum w = 0, sum s w^T = 0, by the full KKT system (Lagrange)."""
    a = ref_design(p, sites)
    ell = len(sites)
    c = np.zeros((3, ell + 3))
    c[0, :ell] = 1.0
    c[1:, :ell] = sites.T
    kkt = np.block([[2 * a.T @ a, c.T], [c, np.zeros((3, 3))]])
    rhs = np.vstack([2 * a.T @ x, np.zeros((3, x.shape[1]))])
    sol = np.linalg.solve(kkt, rhs)
    coef = sol[: ell + 3]
    return coef[:ell], coef[ell:], a @ coef  # weights, affine, fitted values at p


def ref_tps_interpolant(sites, x):
    """The classical interpolating TPS system [[K, Q], [Q^T, 0]] [w; a] = [x; 0]."""
    ell = len(sites)
    k = ref_phi(pairwise(sites))
    q = np.column_stack([np.ones(ell), sites])
    big = np.block([[k, q], [q.T, np.zeros((3, 3))]])
    sol = np.linalg.solve(big, np.vstack([x, np.zeros((3, x.shape[1]))]))
    return sol[:ell], sol[ell:]


def ref_eval(weights, affine, sites, p):
    return ref_design(p, sites) @ np.vstack([weights, affine])


# ------------------------------------------------------------------------------------------------
# shape signal h
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 3, 6])
def test_shape_signal_is_the_pca_of_the_frames(m):
    z = smooth_trajectory(n=14, d=45, seed=3)
    sig, x = shape_signal(z, m=m)
    mean = z.sum(axis=0) / len(z)
    np.testing.assert_allclose(sig.h0, mean, atol=1e-12)
    assert sig.H.shape == (45, m) and x.shape == (14, m) and sig.m == m
    np.testing.assert_allclose(sig.H.T @ sig.H, np.eye(m), atol=1e-10)
    # our own PCA: eigenvectors of the scatter matrix (not an SVD of the frames)
    y = z - mean
    evals, evecs = np.linalg.eigh(y.T @ y)
    top = evecs[:, np.argsort(evals)[::-1][:m]]
    np.testing.assert_allclose(sig.H @ sig.H.T, top @ top.T, atol=1e-8)  # same subspace
    np.testing.assert_allclose(x, y @ sig.H, atol=1e-10)  # x_i = H^T (z_i - h0)
    # reconstruction error = tail of the singular values (Eckart-Young), by numpy's SVD we call
    s = np.linalg.svd(y, compute_uv=False)
    err = np.sum((z - sig.decode(x)) ** 2)
    np.testing.assert_allclose(err, np.sum(s[m:] ** 2), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sig.encode(z), x, atol=1e-10)


def test_shape_signal_beats_random_subspaces():
    rng = np.random.default_rng(7)
    z = smooth_trajectory(n=12, d=30, seed=8)
    sig, x = shape_signal(z, m=3)
    best = np.sum((z - sig.decode(x)) ** 2)
    y = z - z.mean(axis=0)
    for _ in range(50):
        q, _ = np.linalg.qr(rng.normal(size=(30, 3)))
        assert np.sum((y - y @ q @ q.T) ** 2) >= best - 1e-12


def test_shape_signal_m_from_tolerance_is_the_smallest_meeting_it():
    z = smooth_trajectory(n=16, d=60, seed=11, harmonics=5)
    n = len(z)
    y = z - z.mean(axis=0)
    u, s, vt = np.linalg.svd(y, full_matrices=False)
    rms = []  # our own per-vertex RMS error of the rank-m PCA, m = 0..n-1
    for m in range(n):
        rec = (u[:, :m] * s[:m]) @ vt[:m]
        rms.append(rms_per_vertex(y, rec))
    rms = np.array(rms)
    assert np.all(np.diff(rms) <= 1e-12)
    for target in (1, 2, 4, 7):
        assert rms[target] < rms[target - 1]
        tol = np.sqrt(rms[target] * rms[target - 1])  # strictly between the two levels
        sig, x = shape_signal(z, tolerance=tol)
        assert sig.m == target, (tol, rms[: target + 2])
        assert rms_per_vertex(z, sig.decode(x)) <= tol


def test_shape_signal_tolerance_finds_the_exact_rank():
    rng = np.random.default_rng(5)
    basis = rng.normal(size=(5, 60))
    z = rng.normal(size=(20, 5)) @ basis + rng.normal(size=60)
    sig, x = shape_signal(z, tolerance=1e-9)
    assert sig.m == 5
    np.testing.assert_allclose(sig.decode(x), z, atol=1e-9)


def test_shape_signal_from_examples_reproduces_blends():
    rng = np.random.default_rng(2)
    d, m, n = 36, 4, 9
    q0 = rng.normal(size=d)
    q = q0 + rng.normal(size=(m, d))
    c = rng.normal(size=(n, m))
    z = q0 + c @ (q - q0)  # exact blends of the examples
    sig, x = shape_signal_from_examples(q0, q, z)
    np.testing.assert_allclose(sig.h0, q0, atol=0)
    np.testing.assert_allclose(sig.H, (q - q0).T, atol=1e-14)  # h_j = q_j - q0, not orthonormalised
    np.testing.assert_allclose(x, c, atol=1e-9)
    np.testing.assert_allclose(sig.decode(x), z, atol=1e-9)
    np.testing.assert_allclose(sig.encode(z), c, atol=1e-9)
    # frames off the span: least-squares coordinates (our own lstsq)
    z2 = z + rng.normal(size=z.shape)
    _, x2 = shape_signal_from_examples(q0, q, z2)
    want, *_ = np.linalg.lstsq((q - q0).T, (z2 - q0).T, rcond=None)
    np.testing.assert_allclose(x2, want.T, atol=1e-9)


# ------------------------------------------------------------------------------------------------
# pose signal g (thin-plate spline)
# ------------------------------------------------------------------------------------------------


def scattered(n, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, size=(n, 2)) * [1.5, 1.0]


def test_tps_interpolates_when_sites_are_the_points():
    p = scattered(11, 0)
    x = np.random.default_rng(1).normal(size=(11, 4))
    g = fit_pose_signal(p, x, p)
    np.testing.assert_allclose(g.evaluate(p), x, atol=1e-9)
    w, a = ref_tps_interpolant(p, x)
    np.testing.assert_allclose(g.weights, w, atol=1e-8)
    np.testing.assert_allclose(g.affine, a, atol=1e-8)
    # the documented form: g(p) = affine[0] + p @ affine[1:] + phi(|p - s|) @ weights
    q = scattered(30, 9) * 2.0
    np.testing.assert_allclose(g.evaluate(q), ref_eval(g.weights, g.affine, p, q), atol=1e-10)
    np.testing.assert_allclose(g.basis(q), ref_design(q, p), atol=1e-12)
    np.testing.assert_allclose(g.basis(q) @ g.coefficients, g.evaluate(q), atol=1e-12)


@pytest.mark.parametrize("ell", [3, 4, 7, 15])
def test_tps_reproduces_linear_functions_for_any_l(ell):
    p = scattered(15, 3)
    x_of = lambda pts: 0.3 + pts @ np.array([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]])  # noqa: E731
    g = fit_pose_signal(p, x_of(p), p[:ell])
    q = scattered(40, 4) * 3.0  # also far outside the data
    np.testing.assert_allclose(g.evaluate(q), x_of(q), atol=1e-9)
    np.testing.assert_allclose(g.weights, 0.0, atol=1e-9)


@pytest.mark.parametrize("ell", [3, 5, 9, 16])
def test_tps_side_conditions(ell):
    p = scattered(16, 5)
    x = np.random.default_rng(6).normal(size=(16, 3))
    g = fit_pose_signal(p, x, p[:ell])
    np.testing.assert_allclose(g.weights.sum(axis=0), 0.0, atol=1e-9)
    np.testing.assert_allclose(g.sites.T @ g.weights, 0.0, atol=1e-9)


@pytest.mark.parametrize(("n", "ell", "seed"), [(12, 4, 0), (20, 7, 1), (25, 12, 2), (9, 8, 3)])
def test_tps_least_squares_matches_the_kkt_reference(n, ell, seed):
    p = scattered(n, seed)
    x = np.random.default_rng(seed + 100).normal(size=(n, 3))
    sites = p[np.random.default_rng(seed + 200).permutation(n)[:ell]]
    g = fit_pose_signal(p, x, sites)
    w, a, fitted = ref_tps_kkt(p, x, sites)
    np.testing.assert_allclose(g.evaluate(p), fitted, atol=1e-8)
    np.testing.assert_allclose(g.weights, w, atol=1e-6)
    np.testing.assert_allclose(g.affine, a, atol=1e-6)
    # least squares: residual orthogonal to every feasible direction (null space of side conditions)
    resid = x - g.evaluate(p)
    design = ref_design(p, sites)
    side = np.zeros((3, ell + 3))
    side[0, :ell] = 1.0
    side[1:, :ell] = sites.T
    _, sv, vt = np.linalg.svd(side)
    null = vt[3:].T
    np.testing.assert_allclose((design @ null).T @ resid, 0.0, atol=1e-8)


def test_tps_is_invariant_under_similarities_of_the_pose_plane():
    p = scattered(18, 7)
    x = np.random.default_rng(8).normal(size=(18, 2))
    sites = p[:8]
    base = fit_pose_signal(p, x, sites).evaluate(p)
    ang = 0.7
    rot = np.array([[np.cos(ang), -np.sin(ang)], [np.sin(ang), np.cos(ang)]])
    for scale in (1.0, 3.5, 0.2):
        move = lambda q: scale * q @ rot.T + [4.0, -2.0]  # noqa: B023, E731
        g = fit_pose_signal(move(p), x, move(sites))
        np.testing.assert_allclose(g.evaluate(move(p)), base, atol=1e-8)


# ------------------------------------------------------------------------------------------------
# greedy site order (seed §3.2.2)
# ------------------------------------------------------------------------------------------------


def ref_fit_error(p, x, ell_sites):
    return float(np.sum((x - ref_tps_kkt(p, x, ell_sites)[2]) ** 2))


def test_greedy_order_is_nested_and_the_error_does_not_grow():
    n = 16
    p = scattered(n, 21)
    x = np.random.default_rng(22).normal(size=(n, 5))
    order = greedy_site_order(p, x)
    assert sorted(order.tolist()) == list(range(n))
    for ell in range(4, n):
        assert np.array_equal(greedy_site_order(p, x, count=ell), order[:ell])
    errs = [ref_fit_error(p, x, p[order[:ell]]) for ell in range(4, n + 1)]
    assert np.all(np.diff(errs) <= 1e-9 * max(errs[0], 1.0)), errs
    assert errs[-1] < 1e-16 * n + 1e-12 * errs[0]
    # each new site is the unchosen frame with the largest error of the current fit (brute force)
    for ell in range(4, n):
        fitted = ref_tps_kkt(p, x, p[order[:ell]])[2]
        e = np.linalg.norm(x - fitted, axis=1)
        e[order[:ell]] = -1.0
        assert order[ell] == int(np.argmax(e))


def best_fit_plane_distance(x):
    """Distances to the least-squares plane: eigh of the scatter, checked against random planes."""
    c = x.mean(axis=0)
    y = x - c
    evals, evecs = np.linalg.eigh(y.T @ y)
    span = evecs[:, np.argsort(evals)[::-1][:2]]
    off = y - y @ span @ span.T
    # brute-force sanity: no random plane through the centroid fits better
    rng = np.random.default_rng(0)
    best = np.sum(off**2)
    for _ in range(300):
        q, _ = np.linalg.qr(rng.normal(size=(x.shape[1], 2)))
        assert np.sum((y - y @ q @ q.T) ** 2) >= best - 1e-12
    return np.linalg.norm(off, axis=1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_first_four_are_farthest_from_the_best_fit_plane(seed):
    rng = np.random.default_rng(seed)
    n = 14
    p = scattered(n, seed + 30)
    x = rng.normal(size=(n, 4)) * [3.0, 2.0, 0.7, 0.4] + 5.0
    order = greedy_site_order(p, x)
    dist = best_fit_plane_distance(x)
    top4 = set(np.argsort(-dist)[:4].tolist())
    assert set(order[:4].tolist()) == top4


def test_build_pose_space_first_sites_are_off_the_pca_plane():
    """With the PCA shape signal the plane is spanned by h1, h2: distance = |x_i[2:]| (seed §3.2.2)."""
    z = smooth_trajectory(n=14, d=36, seed=41, harmonics=4)
    space = build_pose_space(z, m=6, l=9, k=10)
    dist = np.linalg.norm(space.latent[:, 2:], axis=1)
    assert set(space.site_order[:4].tolist()) == set(np.argsort(-dist)[:4].tolist())
    np.testing.assert_allclose(space.pose.sites, space.positions[space.site_order[:9]], atol=0)


# ------------------------------------------------------------------------------------------------
# MDS positions (seed §3.2.1, eq. 6)
# ------------------------------------------------------------------------------------------------


def classical_mds(x):
    """Torgerson: double-centred squared distances, top two eigenpairs."""
    d2 = pairwise(x) ** 2
    n = len(x)
    j = np.eye(n) - np.ones((n, n)) / n
    b = -0.5 * j @ d2 @ j
    evals, evecs = np.linalg.eigh(b)
    top = np.argsort(evals)[::-1][:2]
    return evecs[:, top] * np.sqrt(np.maximum(evals[top], 0.0))


def test_stress_is_eq6():
    rng = np.random.default_rng(3)
    p, x = rng.normal(size=(9, 2)), rng.normal(size=(9, 5))
    np.testing.assert_allclose(stress(p, x), ref_stress(p, x), rtol=1e-12)
    assert stress(p, np.column_stack([p, np.zeros((9, 3))])) == pytest.approx(0.0, abs=1e-20)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unpinned_mds_not_worse_than_classical_mds(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(15, 6)) * [3, 2, 1.5, 1, 0.5, 0.5]
    p = mds_positions(x)
    assert p.shape == (15, 2) and np.all(np.isfinite(p))
    start = ref_stress(classical_mds(x), x)
    assert ref_stress(p, x) <= start * (1 + 1e-9)


def test_mds_recovers_planar_configurations():
    rng = np.random.default_rng(4)
    truth = rng.normal(size=(10, 2))
    rot, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    x = np.column_stack([truth, np.zeros((10, 3))]) @ rot + rng.normal(size=5)  # planar, embedded in R^5
    p = mds_positions(x)
    np.testing.assert_allclose(pairwise(p), pairwise(truth), atol=1e-6)
    # pins consistent with a rigid motion of the truth: every position follows that motion
    ang = 1.1
    r2 = np.array([[np.cos(ang), -np.sin(ang)], [np.sin(ang), np.cos(ang)]])
    moved = truth @ r2.T + [2.0, -1.0]
    pins = {1: moved[1], 4: moved[4], 7: moved[7]}
    q = mds_positions(x, pins=pins)
    for i, v in pins.items():
        assert np.array_equal(q[i], v)
    np.testing.assert_allclose(q, moved, atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1])
def test_pinned_mds_keeps_pins_and_lowers_stress(seed):
    rng = np.random.default_rng(seed + 10)
    n = 12
    x = rng.normal(size=(n, 5)) * [2, 2, 1, 0.5, 0.3]
    pins = {0: np.array([-3.0, 0.0]), 5: np.array([3.0, 0.5]), 9: np.array([0.0, 2.5])}
    init = rng.normal(size=(n, 2))
    for i, v in pins.items():
        init[i] = v
    p = mds_positions(x, pins=pins, init=init)
    for i, v in pins.items():
        assert np.array_equal(p[i], v)  # exactly
    assert ref_stress(p, x) < ref_stress(init, x)
    # no init: pins still exact and the result is a sensible (finite) layout
    p2 = mds_positions(x, pins=pins)
    for i, v in pins.items():
        assert np.array_equal(p2[i], v)
    assert np.all(np.isfinite(p2))


def test_pinned_smacof_close_to_brute_force_optimum():
    rng = np.random.default_rng(12)
    n = 6
    x = rng.normal(size=(n, 4))
    pins = {0: np.array([0.0, 0.0]), 3: np.array([2.0, 0.5])}
    free = [i for i in range(n) if i not in pins]

    def full(v):
        p = np.zeros((n, 2))
        for i, c in pins.items():
            p[i] = c
        p[free] = v.reshape(-1, 2)
        return p

    best = np.inf
    for _ in range(25):
        res = minimize(lambda v: ref_stress(full(v), x), rng.normal(size=2 * len(free)) * 2, method="BFGS")
        best = min(best, res.fun)
    p = mds_positions(x, pins=pins, iterations=3000, tol=1e-12)
    got = ref_stress(p, x)
    assert got <= best * 1.02 + 1e-9, (got, best)
    assert got >= best - 1e-6  # sanity: the brute force found the optimum
    default = ref_stress(mds_positions(x, pins=pins), x)  # default iterations / tolerance
    assert default <= best * 1.02 + 1e-9, (default, best)


# ------------------------------------------------------------------------------------------------
# the interpolation case k - 2 = l = m + 1 = n (seed §3.4)
# ------------------------------------------------------------------------------------------------


def _sequences():
    rep, _ = repeated_poses()
    return {
        "cylinder": twisting_cylinder(),
        "smooth0": smooth_trajectory(n=15, d=30, seed=0),
        "smooth1": smooth_trajectory(n=9, d=21, seed=5, harmonics=2),
        "smooth2": smooth_trajectory(n=20, d=60, seed=9, harmonics=4),
        "repeated": rep,
    }


@pytest.mark.parametrize("name", sorted(_sequences()))
def test_interpolation_case_reproduces_every_frame(name):
    z = _sequences()[name]
    n = len(z)
    scale = float(np.abs(z).max())
    space = build_pose_space(z)
    n_distinct = len(np.unique(z, axis=0))
    assert space.k == n + 2
    # coincident sites (repeated poses) are merged: l counts the distinct ones
    assert space.l == n_distinct
    rank = np.linalg.matrix_rank(z - z.mean(axis=0))
    assert space.m == min(n - 1, rank)
    frames = np.arange(1.0, n + 1.0)
    np.testing.assert_allclose(space.evaluate(frames), z, atol=1e-7 * scale)
    if rank == n - 1:  # explicit constants: the same
        explicit = build_pose_space(z, k=n + 2, l=n, m=n - 1)
        np.testing.assert_allclose(explicit.evaluate(frames), z, atol=1e-7 * scale)
    err = space.reconstruction_error(z)
    assert err["max"] < 1e-7 * scale


def test_interpolation_case_with_pins_still_reproduces_frames():
    z = smooth_trajectory(n=12, d=27, seed=13)
    space = build_pose_space(z)
    pinned = space.with_pins({0: (0.0, 0.0), 6: (space.positions[6] + [0.5, -0.3])})
    assert np.array_equal(pinned.positions[0], [0.0, 0.0])
    np.testing.assert_allclose(pinned.evaluate(np.arange(1.0, 13.0)), z, atol=1e-7 * np.abs(z).max())
    built = build_pose_space(z, pins={3: (1.0, 2.0)})
    assert np.array_equal(built.positions[3], [1.0, 2.0])
    np.testing.assert_allclose(built.evaluate(np.arange(1.0, 13.0)), z, atol=1e-7 * np.abs(z).max())


def test_psi_is_h_of_g_of_f():
    z = twisting_cylinder(n=14)
    space = build_pose_space(z, m=5, l=8, k=9)
    t = np.linspace(1.0, 14.0, 37)
    f = space.time.evaluate(t)
    x = ref_eval(space.pose.weights, space.pose.affine, space.pose.sites, f)
    np.testing.assert_allclose(space.weights_at(f), x, atol=1e-10)
    np.testing.assert_allclose(space.evaluate(t), space.shape.h0 + x @ space.shape.H.T, atol=1e-10)
    np.testing.assert_allclose(space.at(f), space.evaluate(t), atol=1e-12)


def test_pinning_one_of_two_equal_poses_keeps_the_interpolation_case():
    """First and last frames are the same pose (a cycle): MDS puts them on one point at build time.
    Pinning the two far apart (allowed by the contract) makes all n positions distinct again; with l = n and k = n + 2 the
    refitted representation must still reproduce every frame (seed §3.4, contract: with_pins refits g
    and f with the same l and k)."""
    z = smooth_trajectory(n=11, d=27, seed=13)
    z = np.vstack([z, z[:1]])  # frame 12 == frame 1 exactly
    n = len(z)
    space = build_pose_space(z)
    frames = np.arange(1.0, n + 1.0)
    np.testing.assert_allclose(space.evaluate(frames), z, atol=1e-7 * np.abs(z).max())
    far = space.positions[0] + 2.0 * (space.positions.max(axis=0) - space.positions.min(axis=0))
    pinned = space.with_pins({0: space.positions[0], n - 1: far})
    assert np.array_equal(pinned.positions[-1], far)
    assert np.linalg.norm(pinned.positions[0] - pinned.positions[-1]) > 1e-3  # now distinct
    np.testing.assert_allclose(pinned.evaluate(frames), z, atol=1e-6 * np.abs(z).max())


@pytest.mark.parametrize("scale", [1e-8, 1e-5, 1e10, 1e20, 1e30, 1e100])
def test_tolerance_build_does_not_depend_on_the_units(scale):
    """The same motion in other units (scaled by ``scale``, tolerance too) gets the same k, l, m and
    the same error relative to its tolerance: no absolute threshold decides a build. At 1e20 the
    thin-plate fit used to drop its constant column as noise (error 18x the tolerance) and at 1e-8
    the layout collapsed ('the sites are collinear')."""
    rng = np.random.default_rng(0)
    n = 40
    t = np.linspace(0.0, 2.0 * np.pi, n)
    z = (rng.normal(size=(1, 60)) + np.outer(np.sin(t), rng.normal(size=60))
         + 0.3 * np.outer(np.cos(2.0 * t), rng.normal(size=60)))

    def build(s):
        ps = build_pose_space(z * s, tolerance=0.01 * s)
        err = np.sqrt(np.mean((ps.evaluate(ps.frames) - z * s).reshape(n, -1, 3) ** 2))
        return (ps.k, ps.l, ps.m), err / (0.01 * s)

    counts, ratio = build(1.0)
    assert ratio <= 1.0
    other_counts, other_ratio = build(scale)
    assert other_counts == counts
    assert other_ratio == pytest.approx(ratio, rel=1e-6)
