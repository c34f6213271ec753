"""Square-root-velocity map and the closure projection (seed §3.2, eq. 2-6, Algorithm 1).

Expectations come from closed forms (circle, straight line, polyline length), from slow reference
implementations written here (per-interval loops, a finite-difference Jacobian along the seed's
normal basis b_i = (q_i/|q|) q + |q| e_i) and from invariances, never from the module itself.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from anim_signals.manifolds.srv import closure_gap, normalise, project_closed, srv, srv_inverse, srv_length

# --------------------------------------------------------------------------------------------------
# slow references (plain loops over the intervals of the polyline)


def ref_srv(c):
    """q_k = v_k / sqrt(|v_k|), v_k = (c[k+1] - c[k]) (N-1): one interval at a time."""
    c = np.asarray(c, dtype=float)
    m = c.shape[0] - 1
    out = np.zeros((m, c.shape[1]))
    for k in range(m):
        v = (c[k + 1] - c[k]) * m
        s = math.sqrt(sum(float(x) * float(x) for x in v))
        if s > 0.0:
            out[k] = v / math.sqrt(s)
    return out


def ref_gap(q):
    """R^-1[q](1) - c(0) = (1/M) sum_k q_k |q_k| (eq. 3 with piecewise-constant q)."""
    q = np.asarray(q, dtype=float)
    total = np.zeros(q.shape[1])
    for row in q:
        total += row * math.sqrt(float(row @ row))
    return total / q.shape[0]


def polyline_length(c):
    c = np.asarray(c, dtype=float)
    return sum(math.sqrt(float(d @ d)) for d in np.diff(c, axis=0))


def smooth_curve(n_frames, n_channels, seed, periods=1.0):
    """A smooth random multichannel curve (a few harmonics per channel plus drift)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n_frames)[:, None]
    out = np.zeros((n_frames, n_channels))
    for h in (1, 2, 3):
        amp = rng.normal(0.0, 1.0 / h, n_channels)
        phase = rng.uniform(0.0, 2 * np.pi, n_channels)
        out += amp * np.sin(2 * np.pi * h * periods * t + phase)
    return out + rng.normal(0.0, 0.3, n_channels) * t + rng.normal(0.0, 1.0, n_channels)


def closed_curve(n_frames, n_channels, seed):
    """Exactly closed on the samples: integer harmonics over one period, last sample = first sample."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n_frames)[:, None]
    out = np.zeros((n_frames, n_channels))
    for h in (1, 2, 3):
        out += rng.normal(0.0, 1.0 / h, n_channels) * np.sin(2 * np.pi * h * t + rng.uniform(0, 6, n_channels))
    out[-1] = out[0]
    return out


# --------------------------------------------------------------------------------------------------
# the SRV map


@pytest.mark.parametrize("n_channels", [1, 2, 3, 7, 32, 96])
def test_srv_matches_slow_reference(n_channels):
    c = smooth_curve(41, n_channels, seed=n_channels)
    np.testing.assert_allclose(srv(c), ref_srv(c), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_channels", [1, 2, 3, 5, 17, 96])
@pytest.mark.parametrize("n_frames", [2, 3, 60])
def test_round_trip_any_channels(n_frames, n_channels):
    c = smooth_curve(n_frames, n_channels, seed=100 + n_channels)
    q = srv(c)
    assert q.shape == (n_frames - 1, n_channels)
    back = srv_inverse(q, c[0])
    assert back.shape == c.shape
    scale = np.abs(c).max()
    np.testing.assert_allclose(back, c, rtol=0, atol=1e-12 * scale * n_frames)


def test_round_trip_random_walk_with_held_poses():
    rng = np.random.default_rng(3)
    c = np.cumsum(rng.normal(size=(80, 12)), axis=0)
    c[20:30] = c[20]  # a held pose: zero velocity on ten intervals
    back = srv_inverse(srv(c), c[0])
    np.testing.assert_allclose(back, c, rtol=0, atol=1e-10)


@pytest.mark.parametrize("n_channels", [1, 4, 96])
def test_length_is_polyline_length(n_channels):
    c = smooth_curve(57, n_channels, seed=7)
    assert srv_length(srv(c)) == pytest.approx(polyline_length(c), rel=1e-12)


@pytest.mark.parametrize("n_channels", [1, 3, 96])
def test_closure_gap_is_end_minus_start(n_channels):
    c = smooth_curve(33, n_channels, seed=11)
    q = srv(c)
    np.testing.assert_allclose(closure_gap(q), c[-1] - c[0], rtol=0, atol=1e-12 * np.abs(c).max() * 33)
    np.testing.assert_allclose(closure_gap(q), ref_gap(q), rtol=1e-12, atol=1e-14)


def test_length_and_gap_of_arbitrary_q():
    """On any q (not only images of srv): L = (1/M) sum |q_k|^2, gap = (1/M) sum q_k |q_k|."""
    rng = np.random.default_rng(5)
    q = rng.normal(size=(23, 6))
    assert srv_length(q) == pytest.approx(float(np.sum(q**2)) / 23, rel=1e-13)
    c = srv_inverse(q, np.zeros(6))
    assert polyline_length(c) == pytest.approx(srv_length(q), rel=1e-12)
    np.testing.assert_allclose(c[-1] - c[0], ref_gap(q), rtol=1e-12, atol=1e-14)


def test_constant_channels_and_held_poses_give_zero_without_warnings():
    c = smooth_curve(30, 5, seed=2)
    c[:, 1] = 0.25  # a constant channel
    c[:, 3] = -4.0
    all_const = np.tile(np.array([1.0, -2.0, 3.0]), (12, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            q = srv(c)
            q0 = srv(all_const)
            back = srv_inverse(q0, all_const[0])
            gap = closure_gap(q0)
            closed = project_closed(q0)
    assert np.all(q[:, 1] == 0.0) and np.all(q[:, 3] == 0.0)
    assert np.all(np.isfinite(q))
    assert np.all(q0 == 0.0)
    np.testing.assert_array_equal(back, all_const)
    np.testing.assert_array_equal(gap, 0.0)
    assert srv_length(q0) == 0.0
    assert np.all(closed.q == 0.0) and closed.converged


def test_tiny_velocity_is_not_flushed_to_nan():
    c = np.array([[0.0, 0.0], [1e-300, 0.0], [1e-300, 2e-300]])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        q = srv(c)
    assert np.all(np.isfinite(q))


@pytest.mark.parametrize("radius", [0.5, 2.0, 30.0])
@pytest.mark.parametrize("n_samples", [5, 64, 301])
def test_circle_closed_form(radius, n_samples):
    """A circle of radius r sampled N times (first = last sample): every chord is 2 r sin(pi/(N-1)),
    so |q_k| = sqrt(chord (N-1)) is constant, the length is (N-1) chord and the gap is zero."""
    m = n_samples - 1
    phi = 2 * np.pi * np.arange(n_samples) / m
    c = radius * np.column_stack([np.cos(phi), np.sin(phi)])
    q = srv(c)
    chord = 2 * radius * math.sin(math.pi / m)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), math.sqrt(chord * m), rtol=1e-12)
    assert srv_length(q) == pytest.approx(m * chord, rel=1e-12)
    assert np.linalg.norm(closure_gap(q)) <= 1e-12 * radius
    # the direction of q_k is the chord direction, at angle phi_k + pi/2 + pi/m
    ang = np.arctan2(q[:, 1], q[:, 0])
    expected = phi[:-1] + np.pi / 2 + np.pi / m
    np.testing.assert_allclose(np.angle(np.exp(1j * (ang - expected))), 0.0, atol=1e-10)


def test_circle_embedded_in_many_channels():
    """A circle in a random 2-plane of R^96: |q| still constant (the map is rotation-equivariant)."""
    rng = np.random.default_rng(9)
    basis, _ = np.linalg.qr(rng.normal(size=(96, 2)))
    m = 50
    phi = 2 * np.pi * np.arange(m + 1) / m
    c = 3.0 * np.column_stack([np.cos(phi), np.sin(phi)]) @ basis.T + rng.normal(size=96)
    q = srv(c)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), math.sqrt(2 * 3.0 * math.sin(math.pi / m) * m),
                               rtol=1e-10)


@pytest.mark.parametrize("n_channels", [1, 3, 96])
def test_straight_line_gives_constant_q(n_channels):
    """c(t) = a + t b sampled uniformly: q = b / sqrt(|b|) on every interval."""
    rng = np.random.default_rng(n_channels)
    a, b = rng.normal(size=n_channels), rng.normal(size=n_channels)
    t = np.linspace(0.0, 1.0, 40)[:, None]
    q = srv(a + t * b)
    expected = b / math.sqrt(np.linalg.norm(b))
    np.testing.assert_allclose(q, np.tile(expected, (39, 1)), rtol=1e-10, atol=1e-12)
    assert srv_length(q) == pytest.approx(np.linalg.norm(b), rel=1e-12)


def test_non_uniform_line_keeps_direction():
    b = np.array([3.0, -4.0])  # |b| = 5
    s = np.array([0.0, 0.1, 0.15, 0.5, 0.9, 1.0])
    q = srv(s[:, None] * b)
    speeds = np.diff(s) * 5 * 5  # |v_k| = (s_{k+1}-s_k) |b| / h, h = 1/5
    np.testing.assert_allclose(q, (b / 5) * np.sqrt(speeds)[:, None], rtol=1e-12)


def test_translation_invariance_and_scaling():
    c = smooth_curve(25, 4, seed=21)
    q = srv(c)
    np.testing.assert_allclose(srv(c + np.array([5.0, -1.0, 0.0, 100.0])), q, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(srv(4.0 * c), 2.0 * q, rtol=1e-12, atol=1e-12)  # q scales as sqrt


def test_normalise():
    c = smooth_curve(25, 4, seed=22)
    q = srv(c)
    unit, length = normalise(q)
    assert length == pytest.approx(polyline_length(c), rel=1e-12)
    assert float(np.sum(unit**2)) / unit.shape[0] == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(unit * math.sqrt(length), q, rtol=1e-12)
    with pytest.raises(ValueError):
        normalise(np.zeros((5, 3)))


@pytest.mark.parametrize("bad", [np.zeros((1, 3)), np.zeros(5), np.zeros((0, 2))])
def test_srv_rejects_too_short_or_1d(bad):
    with pytest.raises(ValueError):
        srv(bad)


# --------------------------------------------------------------------------------------------------
# the closure projection (Algorithm 1)


def slightly_open(n_frames, n_channels, seed, gap=0.02):
    """A closed curve plus a small linear drift: relative gap about ``gap``."""
    c = closed_curve(n_frames, n_channels, seed)
    rng = np.random.default_rng(seed + 1000)
    d = rng.normal(size=n_channels)
    d *= gap * polyline_length(c) / np.linalg.norm(d)
    return c + np.linspace(0.0, 1.0, n_frames)[:, None] * d


def relative_residual(q):
    return float(np.linalg.norm(ref_gap(q)) / srv_length(q))


@pytest.mark.parametrize("n_channels", [1, 2, 3, 12])
def test_projection_closes_the_curve(n_channels):
    c = slightly_open(80, n_channels, seed=n_channels, gap=0.05)
    q = srv(c)
    out = project_closed(q, tol=1e-6)
    assert out.converged
    assert relative_residual(out.q) < 1e-6
    assert out.residual == pytest.approx(relative_residual(out.q), rel=1e-6, abs=1e-12)
    curve = srv_inverse(out.q, c[0])
    assert np.linalg.norm(curve[-1] - curve[0]) <= 1e-6 * polyline_length(curve)


def test_projection_keeps_the_l2_norm():
    q = srv(slightly_open(70, 5, seed=31, gap=0.1))
    out = project_closed(q)
    assert srv_length(out.q) == pytest.approx(srv_length(q), rel=1e-12)
    assert float(np.sum(out.q**2)) == pytest.approx(float(np.sum(q**2)), rel=1e-12)


def test_projection_is_a_small_correction():
    """Relative gap eps -> the projected q moves by O(eps), not across the sphere."""
    c = slightly_open(90, 6, seed=41, gap=0.01)
    q = srv(c)
    out = project_closed(q)
    rel_change = np.linalg.norm(out.q - q) / np.linalg.norm(q)
    assert rel_change < 0.05
    curve = srv_inverse(out.q, c[0])
    assert np.max(np.abs(curve - c)) < 0.05 * polyline_length(c)


@pytest.mark.parametrize("n_channels", [1, 2, 4, 96])
def test_closed_curve_is_left_unchanged(n_channels):
    c = closed_curve(64, n_channels, seed=50 + n_channels)
    q = srv(c)
    assert relative_residual(q) < 1e-12
    out = project_closed(q)
    assert out.converged
    np.testing.assert_allclose(out.q, q, rtol=0, atol=1e-12 * np.abs(q).max())


def test_circle_is_a_fixed_point():
    m = 40
    phi = 2 * np.pi * np.arange(m + 1) / m
    q = srv(np.column_stack([np.cos(phi), np.sin(phi), np.zeros(m + 1)]))
    out = project_closed(q, tol=1e-9)
    np.testing.assert_allclose(out.q, q, rtol=0, atol=1e-12)
    assert out.iterations == 0


def normal_basis(q):
    """b_i = (q_i/|q|) q + |q| e_i, pointwise (eq. 6); zero where q = 0.  Shape (n, M, n)."""
    m, n = q.shape
    out = np.zeros((n, m, n))
    for k in range(m):
        norm = math.sqrt(float(q[k] @ q[k]))
        for i in range(n):
            if norm > 0.0:
                out[i, k] = (q[k, i] / norm) * q[k]
                out[i, k, i] += norm
    return out


def fd_jacobian(q, eps=1e-6):
    """J[:, i] = d/d beta_i  gap(q + beta_i b_i), central differences of the slow reference gap."""
    basis = normal_basis(q)
    n = q.shape[1]
    jac = np.zeros((n, n))
    for i in range(n):
        jac[:, i] = (ref_gap(q + eps * basis[i]) - ref_gap(q - eps * basis[i])) / (2 * eps)
    return jac


def test_fd_jacobian_equals_seed_formula_at_unit_length():
    """The seed's J = delta + 3 int q_i q_j (unit length) is the derivative along the normal basis."""
    q = srv(slightly_open(50, 4, seed=61, gap=0.05))
    q = q / math.sqrt(srv_length(q))
    seed_jac = np.eye(4) + 3.0 * (q.T @ q) / q.shape[0]
    np.testing.assert_allclose(fd_jacobian(q), seed_jac, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("n_channels", [2, 3, 7])
def test_newton_step_uses_the_fd_jacobian(n_channels):
    """One step of project_closed = the Newton step built from a finite-difference Jacobian of the
    closure gap along b_i, followed by the rescale to the input's length (a full, accepted step)."""
    c = slightly_open(45, n_channels, seed=70 + n_channels, gap=0.03)
    q = srv(c)
    length = srv_length(q)
    u = q / math.sqrt(length)  # the step is taken at unit length
    r = ref_gap(u)
    beta = -np.linalg.solve(fd_jacobian(u), r)
    basis = normal_basis(u)
    trial = u + np.tensordot(beta, basis, axes=1)
    trial /= math.sqrt(float(np.sum(trial**2)) / trial.shape[0])
    assert np.linalg.norm(ref_gap(trial)) < np.linalg.norm(r)  # the full step is a decrease
    expected = trial * math.sqrt(length)

    out = project_closed(q, tol=1e-14, max_iter=1)
    assert out.iterations == 1
    np.testing.assert_allclose(out.q, expected, rtol=0, atol=1e-7 * np.abs(q).max())
    # Newton converges quadratically: one step shrinks a 3 % gap by far more than a gradient step
    assert relative_residual(out.q) < 0.03 * 0.05


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_converges_in_few_iterations(seed):
    q = srv(slightly_open(100, 8, seed=80 + seed, gap=0.02))
    out = project_closed(q, tol=1e-8)
    assert out.converged
    assert 1 <= out.iterations <= 5
    assert relative_residual(out.q) < 1e-8


def test_far_open_curve_is_still_closed():
    """A straight line (relative gap 1: the worst case) still ends on the closed curves."""
    rng = np.random.default_rng(90)
    c = np.linspace(0.0, 1.0, 60)[:, None] * rng.normal(size=3) + 0.05 * rng.normal(size=(60, 3))
    out = project_closed(srv(c), tol=1e-6, max_iter=200)
    assert out.converged
    assert relative_residual(out.q) < 1e-6
    assert srv_length(out.q) == pytest.approx(polyline_length(c), rel=1e-10)


def test_project_100_frames_96_channels():
    c = slightly_open(100, 96, seed=95, gap=0.05)
    rng = np.random.default_rng(96)
    c += 0.002 * np.cumsum(rng.normal(size=c.shape), axis=0)  # mocap-like jitter
    q = srv(c)
    out = project_closed(q)
    assert out.q.shape == (99, 96)
    assert out.converged and np.all(np.isfinite(out.q))
    assert relative_residual(out.q) < 1e-6
    assert srv_length(out.q) == pytest.approx(srv_length(q), rel=1e-12)


def test_projection_with_constant_channels():
    c = slightly_open(60, 5, seed=99, gap=0.04)
    c[:, 2] = 1.5
    with np.errstate(all="raise"):
        out = project_closed(srv(c))
    assert out.converged
    np.testing.assert_array_equal(out.q[:, 2], 0.0)  # the basis has no component along a still channel
    assert relative_residual(out.q) < 1e-6


def test_projection_does_not_modify_its_input():
    q = srv(slightly_open(40, 3, seed=101))
    keep = q.copy()
    project_closed(q)
    np.testing.assert_array_equal(q, keep)
