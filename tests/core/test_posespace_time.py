"""Pose space (Cashman & Hormann 2012): time signal f, edits, serialisation, bad input, the horse.

Written against docs/pose_space.md and the seed (../shared/seeds/cashman-hormann-time-pose-shape.txt).
Expectations come from closed forms (Lee's centripetal steps, the Piegl-Tiller averaging), a slow
Cox-de Boor B-spline written here, brute-force Schoenberg-Whitney checks, and invariances (B-spline
locality, knot insertion).  Shape / pose signals and MDS are in test_posespace.py.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from anim_signals.posespace import (
    PoseSpace,
    build_pose_space,
    centripetal_params,
    fit_pose_signal,
    fit_time_signal,
    mds_positions,
    piegl_tiller_knots,
    shape_signal,
)

HORSE = Path(__file__).resolve().parents[3] / "shared" / "data" / "mesh" / "horse_gallop" / "horse_gallop.pc2"


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def twisting_cylinder(n=16, rings=5, around=8, turns=0.8, bend=0.3):
    theta = np.linspace(0.0, 2 * np.pi, around, endpoint=False)
    h = np.linspace(0.0, 2.0, rings)
    frames = []
    for i in range(n):
        s = i / (n - 1)
        twist = turns * np.sin(np.pi * s) * h
        ang = theta[None, :] + twist[:, None]
        x = np.cos(ang) + bend * s * h[:, None] ** 2
        y = np.sin(ang)
        z = np.repeat(h[:, None], around, axis=1) * (1.0 + 0.1 * s)
        frames.append(np.stack([x, y, z], axis=-1).reshape(-1))
    return np.array(frames)


def smooth_trajectory(n=20, d=30, seed=0, harmonics=3):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 0.8, n)[:, None]
    z = rng.normal(size=(1, d))
    for h in range(1, harmonics + 1):
        z = z + rng.normal(size=(1, d)) / h * np.sin(2 * np.pi * h * t + rng.uniform(0, 2 * np.pi, (1, d)))
    return z


def planar_curve(n, seed=0):
    """Positions along a wiggly planar curve (distinct, not collinear)."""
    rng = np.random.default_rng(seed)
    s = np.sort(rng.uniform(0.0, 1.0, n))
    s = (s - s[0]) / (s[-1] - s[0])
    return np.column_stack([3.0 * s + 0.2 * np.sin(9 * s), np.sin(4 * s) + 0.1 * rng.normal(size=n)])


def cox_de_boor(knots, u, degree=3):
    """Basis matrix (len(u), k) by the textbook recursion; the right end belongs to the last span."""
    knots = np.asarray(knots, dtype=float)
    u = np.atleast_1d(np.asarray(u, dtype=float))
    k = len(knots) - degree - 1
    last = max(i for i in range(len(knots) - 1) if knots[i] < knots[i + 1])
    out = np.zeros((len(u), k))
    for r, x in enumerate(u):
        b = np.zeros(len(knots) - 1)
        for i in range(len(knots) - 1):
            if knots[i] <= x < knots[i + 1] or (x == knots[-1] and i == last):
                b[i] = 1.0
        for p in range(1, degree + 1):
            nb = np.zeros(len(knots) - 1 - p)
            for i in range(len(nb)):
                left = knots[i + p] - knots[i]
                right = knots[i + p + 1] - knots[i + 1]
                val = 0.0
                if left > 0:
                    val += (x - knots[i]) / left * b[i]
                if right > 0:
                    val += (knots[i + p + 1] - x) / right * b[i + 1]
                nb[i] = val
            b = nb
        out[r] = b[:k]
    return out


def rows_rms_max(a, b):
    diff = (np.asarray(a) - np.asarray(b)).reshape(len(a), -1, 3)
    per = np.linalg.norm(diff, axis=2)
    return float(np.sqrt(np.mean(per**2))), float(per.max())


# ------------------------------------------------------------------------------------------------
# centripetal parameters, Piegl-Tiller knots
# ------------------------------------------------------------------------------------------------


def test_centripetal_params_match_lee():
    p = planar_curve(17, seed=1) * 4.0
    t = centripetal_params(p)
    steps = np.array([np.linalg.norm(p[i + 1] - p[i]) ** 0.5 for i in range(len(p) - 1)])
    want = np.concatenate([[0.0], np.cumsum(steps)]) / steps.sum()
    assert t[0] == 0.0 and t[-1] == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(t, want, atol=1e-7)
    # exponent 1/2, not 1: scaling the plane leaves them unchanged, chord-length would too, so also
    # check one step ratio directly against the square-root law
    i, j = 2, 9
    assert (t[i + 1] - t[i]) / (t[j + 1] - t[j]) == pytest.approx(steps[i] / steps[j], rel=1e-6)


def test_centripetal_params_strictly_increase_with_coincident_neighbours():
    p = planar_curve(10, seed=2)
    p = np.vstack([p[:3], p[2], p[2], p[3:7], p[6], p[7:]])  # holds: repeated neighbours
    t = centripetal_params(p)
    assert np.all(np.diff(t) > 0)
    assert t[0] == 0.0 and t[-1] == pytest.approx(1.0, abs=1e-15)


def schoenberg_whitney_ok(knots, t):
    """Brute force: an increasing choice i_1 < ... < i_k with B_j(t_{i_j}) > 0 (k <= n), and every
    basis function with some parameter in its support (any k)."""
    basis = cox_de_boor(knots, t)
    k = basis.shape[1]
    each = all(np.any(basis[:, j] > 0) for j in range(k))
    if k > len(t):
        return each
    i = -1
    for j in range(k):  # greedy matching is optimal for these interval-ordered supports
        cand = [r for r in range(i + 1, len(t)) if basis[r, j] > 0]
        if not cand:
            return False
        i = cand[0]
    return each


PARAM_SETS = {
    "uniform": np.linspace(0.0, 1.0, 10),
    "centripetal": centripetal_params(planar_curve(13, seed=3)),
    "clustered": np.concatenate([np.linspace(0, 0.05, 6), np.linspace(0.06, 0.1, 3), [0.5, 0.97, 0.98, 1.0]]),
}


@pytest.mark.parametrize("name", sorted(PARAM_SETS))
def test_piegl_tiller_knots_satisfy_schoenberg_whitney_for_every_k(name):
    t = PARAM_SETS[name]
    n = len(t)
    for k in range(4, n + 3):
        knots = piegl_tiller_knots(t, k)
        assert knots.shape == (k + 4,)
        assert np.all(np.diff(knots) >= 0)
        assert np.all(knots[:4] == t[0]) and np.all(knots[-4:] == t[-1])
        # support of B_j is (knots[j], knots[j + 4]): data inside for every j (ends clamped)
        for j in range(k):
            inside = (knots[j] < t) & (t < knots[j + 4])
            at_end = (j == 0 and t[0] == knots[0]) or (j == k - 1 and t[-1] == knots[-1])
            assert inside.any() or at_end, (k, j)
        assert schoenberg_whitney_ok(knots, t), k
        if k <= n:
            assert np.linalg.matrix_rank(cox_de_boor(knots, t)) == k
        if 4 < k < n + 2:  # the Piegl-Tiller averaging formula (The NURBS Book eq. 9.68-9.69)
            d = n / (k - 3)
            for jj in range(1, k - 3):
                i = int(jj * d)
                a = jj * d - i
                assert knots[jj + 3] == pytest.approx((1 - a) * t[i - 1] + a * t[i], abs=1e-12)
    knots = piegl_tiller_knots(t, n + 2)
    np.testing.assert_array_equal(knots[4:-4], t[1:-1])  # interpolation: interior knots at the data


# ------------------------------------------------------------------------------------------------
# the time signal: fit, rho, spline
# ------------------------------------------------------------------------------------------------


def test_time_signal_fit_is_least_squares_with_our_basis():
    p = planar_curve(25, seed=4)
    frames = np.cumsum(np.random.default_rng(5).uniform(0.5, 2.0, 25)) + 3.0  # non-uniform
    for k in (4, 7, 12, 20):
        ts = fit_time_signal(p, k, frames)
        assert ts.k == k and ts.control.shape == (k, 2) and ts.knots.shape == (k + 4,)
        np.testing.assert_allclose(ts.params, centripetal_params(p), atol=0)
        b = cox_de_boor(ts.knots, ts.params)
        want, *_ = np.linalg.lstsq(b, p, rcond=None)
        np.testing.assert_allclose(ts.control, want, atol=1e-8)
        np.testing.assert_allclose(ts.evaluate(frames), b @ want, atol=1e-8)


@pytest.mark.parametrize("extra", [0, 1, 2])
def test_time_signal_interpolates_when_k_at_least_n(extra):
    p = planar_curve(14, seed=6)
    ts = fit_time_signal(p, 14 + extra)
    np.testing.assert_allclose(ts.evaluate(np.arange(1.0, 15.0)), p, atol=1e-9)


def test_rho_is_monotone_and_interpolates():
    p = planar_curve(18, seed=7)
    frames = np.array([1, 2, 3, 5, 8, 9, 10, 14, 15, 16, 20, 21, 22, 23, 30, 31, 32, 40], dtype=float)
    ts = fit_time_signal(p, 9, frames)
    np.testing.assert_allclose(ts.rho(frames), ts.params, atol=1e-12)
    dense = np.linspace(frames[0], frames[-1], 2001)
    r = ts.rho(dense)
    assert np.all(np.diff(r) >= -1e-15)
    assert r[0] == pytest.approx(ts.params[0]) and r[-1] == pytest.approx(ts.params[-1])
    assert np.all((r >= ts.params[0] - 1e-15) & (r <= ts.params[-1] + 1e-15))
    # f = spline o rho with our own basis
    np.testing.assert_allclose(ts.evaluate(dense), cox_de_boor(ts.knots, r) @ ts.control, atol=1e-10)
    np.testing.assert_allclose(ts.spline(r), ts.evaluate(dense), atol=1e-12)


# ------------------------------------------------------------------------------------------------
# edits
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def space():
    z = twisting_cylinder(n=20)
    return z, build_pose_space(z, m=5, l=10, k=12)


def test_with_control_point_is_time_local(space):
    _, sp = space
    frames = sp.frames
    before = sp.evaluate(frames)
    u = sp.time.params
    knots = sp.time.knots
    for j in (0, 3, 6, sp.k - 1):
        moved = sp.with_control_point(j, sp.time.control[j] + [0.4, -0.7])
        after = moved.evaluate(frames)
        outside = (u < knots[j]) | (u > knots[j + 4])
        inside = (u > knots[j]) & (u < knots[j + 4])
        assert outside.any() and inside.any()
        assert np.array_equal(after[outside], before[outside])  # exactly unchanged
        assert np.max(np.abs(after[inside] - before[inside])) > 1e-6
        assert np.array_equal(sp.time.control, sp.time.control)  # the original is not modified
        np.testing.assert_array_equal(sp.evaluate(frames), before)


def test_with_loop_keeps_the_frames_before_and_after(space):
    _, sp = space
    frames = sp.frames
    old = sp.evaluate(frames)
    after_time = 8.5
    n_before = int(np.sum(frames <= after_time))
    n_after = len(frames) - n_before
    curve = sp.time.evaluate(np.linspace(1.0, 20.0, 400))
    mid = sp.time.evaluate(after_time)
    span = float(np.ptp(curve, axis=0).max())
    pts = mid + span * np.array([[0.3, 0.4], [0.0, 0.7], [-0.3, 0.4]])
    new = sp.with_loop(after_time, pts)
    assert len(new.frames) > len(frames)
    assert np.all(np.diff(new.frames) > 0)
    got = new.evaluate(new.frames)
    scale = float(np.abs(old).max())
    np.testing.assert_allclose(got[:n_before], old[:n_before], atol=1e-9 * scale, rtol=0)
    np.testing.assert_allclose(got[-n_after:], old[-n_after:], atol=1e-9 * scale, rtol=0)
    np.testing.assert_array_equal(new.frames[:n_before], frames[:n_before])
    # the loop heads for its points: the new curve comes closer to each than the old one did
    new_curve = new.time.evaluate(np.linspace(new.frames[0], new.frames[-1], 2000))
    for q in pts:
        assert np.min(np.linalg.norm(new_curve - q, axis=1)) < 0.8 * np.min(np.linalg.norm(curve - q, axis=1))
    assert np.all(np.isfinite(got))


def test_resample_at_the_frames_is_evaluate(space):
    z, sp = space
    np.testing.assert_array_equal(sp.resample(sp.frames), sp.evaluate(sp.frames))
    taus = np.linspace(1.0, 20.0, 39)  # frame-rate doubling: every other one is an original frame
    np.testing.assert_allclose(sp.resample(taus)[::2], sp.evaluate(sp.frames), atol=1e-12)
    exact = build_pose_space(z)
    np.testing.assert_allclose(exact.resample(exact.frames), z, atol=1e-7 * np.abs(z).max())


@pytest.mark.parametrize(("n_pts", "n_frames"), [(30, 50), (2, 7), (5, 5)])
def test_with_stroke(space, n_pts, n_frames):
    _, sp = space
    s = np.linspace(0.0, 1.0, n_pts)
    stroke = np.column_stack([-1.0 + 2.0 * s, 0.5 * np.sin(3 * s)]) * 0.5
    new = sp.with_stroke(stroke, n_frames)
    assert len(new.frames) == n_frames
    ends = new.time.evaluate(new.frames[[0, -1]])
    np.testing.assert_allclose(ends, stroke[[0, -1]], atol=1e-9)
    shapes = new.evaluate(new.frames)
    assert shapes.shape == (n_frames, sp.shape.h0.size)
    np.testing.assert_allclose(shapes[[0, -1]], new.at(stroke[[0, -1]]), atol=1e-9)
    inner = new.time.knots[4:-4]
    if inner.size > 1:  # uniform knots (seed §4.4)
        np.testing.assert_allclose(np.diff(inner), np.diff(inner)[0], atol=1e-12)
    # the shape and pose signals are untouched
    np.testing.assert_array_equal(new.pose.weights, sp.pose.weights)
    np.testing.assert_array_equal(new.shape.H, sp.shape.H)


# ------------------------------------------------------------------------------------------------
# serialisation, reconstruction error
# ------------------------------------------------------------------------------------------------


def _json_round_trip(d):
    plain = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in d.items()}
    return json.loads(json.dumps(plain))


def test_to_dict_from_dict_round_trip(space):
    z, sp = space
    pinned = build_pose_space(z, m=4, l=8, k=9, pins={2: (0.5, 0.25), 11: (-1.0, 0.0)})
    looped = sp.with_loop(6.5, np.array([[0.1, 0.2], [0.3, 0.1]]))
    times = np.linspace(1.0, 20.0, 77)
    grid = np.stack(np.meshgrid(np.linspace(-2, 2, 5), np.linspace(-1, 1, 4)), axis=-1).reshape(-1, 2)
    for s in (sp, pinned, looped):
        d = s.to_dict()
        for back in (PoseSpace.from_dict(d), PoseSpace.from_dict(_json_round_trip(d))):
            assert (back.k, back.l, back.m) == (s.k, s.l, s.m)
            np.testing.assert_array_equal(back.frames, s.frames)
            ts = np.linspace(s.frames[0], s.frames[-1], 77) if s is looped else times
            np.testing.assert_array_equal(back.evaluate(ts), s.evaluate(ts))
            np.testing.assert_array_equal(back.at(grid), s.at(grid))
            np.testing.assert_array_equal(back.site_order, s.site_order)
            if s is not looped:
                assert back.reconstruction_error()["rms"] == s.reconstruction_error()["rms"]
            assert sorted(back.pins) == sorted(s.pins)
            for i in s.pins:
                np.testing.assert_array_equal(back.pins[i], s.pins[i])


@pytest.mark.parametrize(("m", "ell", "k"), [(3, 6, 8), (5, 10, 12), (8, 20, 22)])
def test_reconstruction_error_from_the_residual_equals_against_z(m, ell, k):
    z = twisting_cylinder(n=20) + 0.01 * np.random.default_rng(m).normal(size=(20, 120))
    sp = build_pose_space(z, m=m, l=ell, k=k)
    stored = sp.reconstruction_error()
    direct = sp.reconstruction_error(z)
    rms, mx = rows_rms_max(z, sp.evaluate(np.arange(1.0, 21.0)))
    assert direct["rms"] == pytest.approx(rms, rel=1e-10)
    assert direct["max"] == pytest.approx(mx, rel=1e-10)
    assert stored["rms"] == pytest.approx(rms, rel=1e-8)
    assert rms > 0.0


def test_reconstruction_error_of_an_edited_space_does_not_crash(space):
    """After with_loop / with_stroke the time signal has a different number of frames than the
    reconstructed ones.  reconstruction_error() should then give numbers or a ValueError that says
    why -- not a numpy shape-mismatch error from deep inside."""
    _, sp = space
    edited = [sp.with_loop(8.5, np.array([[0.1, 0.2], [0.3, 0.1]])),
              sp.with_stroke(np.array([[0.0, 0.0], [1.0, 0.5]]), 30)]
    for e in edited:
        try:
            out = e.reconstruction_error()
        except ValueError as exc:
            assert "broadcast" not in str(exc), f"unhelpful error: {exc}"
        else:
            assert np.isfinite(out["rms"])


# ------------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------------


def test_fewer_than_four_frames():
    z = smooth_trajectory(n=3, d=12)
    with pytest.raises(ValueError, match=r"(?i)(frame|at least).*4|4.*frame"):
        build_pose_space(z)
    with pytest.raises(ValueError, match=r"(?i)frame"):
        shape_signal(z, m=1)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_frames(bad):
    z = smooth_trajectory(n=8, d=12)
    z[5, 4] = bad
    with pytest.raises(ValueError, match=r"(?i)nan|finite"):
        build_pose_space(z)
    with pytest.raises(ValueError, match=r"(?i)nan|finite"):
        shape_signal(z, m=2)


def test_static_sequence():
    z = np.tile(np.random.default_rng(0).normal(size=12), (10, 1))
    with pytest.raises(ValueError, match=r"(?i)static|variance|same"):
        build_pose_space(z)
    with pytest.raises(ValueError, match=r"(?i)static|variance|same"):
        shape_signal(z, tolerance=1e-3)


def test_collinear_sites():
    p = np.random.default_rng(1).normal(size=(10, 2))
    x = np.random.default_rng(2).normal(size=(10, 3))
    line = np.column_stack([np.linspace(0, 1, 5), 2 * np.linspace(0, 1, 5) + 1])
    with pytest.raises(ValueError, match=r"(?i)collinear|line"):
        fit_pose_signal(p, x, line)
    with pytest.raises(ValueError, match=r"(?i)site"):
        fit_pose_signal(p, x, p[:2])
    # coincident sites collapse to fewer than three distinct ones
    with pytest.raises(ValueError, match=r"(?i)site|distinct|collinear"):
        fit_pose_signal(p, x, np.vstack([p[:2], p[:2]]))
    # a one-dimensional sequence (one blend shape driven by a scalar): MDS puts the positions on a
    # line; the build bends them into a shallow arc, so it still works and interpolates every frame
    rng = np.random.default_rng(4)
    z = rng.normal(size=12) + np.sin(np.linspace(0, 3, 10))[:, None] * rng.normal(size=12)
    space = build_pose_space(z, row_size=1)
    np.testing.assert_allclose(space.evaluate(space.frames), z, atol=1e-9 * np.abs(z).max())
    c = space.positions - space.positions.mean(axis=0)
    sv = np.linalg.svd(c, compute_uv=False)
    assert sv[1] > 1e-3 * sv[0]  # spread in 2D


def test_contradicting_pins():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 4))
    with pytest.raises(ValueError, match=r"(?i)pin"):
        mds_positions(x, pins={1: (0.0, 0.0), 4: (0.0, 0.0)})
    z = smooth_trajectory(n=8, d=12)
    with pytest.raises(ValueError, match=r"(?i)pin"):
        build_pose_space(z, pins={1: (1.0, 1.0), 4: (1.0, 1.0)})
    with pytest.raises(ValueError, match=r"(?i)pin|frame"):
        mds_positions(x, pins={8: (0.0, 0.0)})  # no such frame
    # allowed: the same shape twice, pinned far apart or to one point
    x2 = np.vstack([x, x[1]])
    p = mds_positions(x2, pins={1: (0.0, 0.0), 8: (5.0, 5.0)})
    assert np.array_equal(p[8], [5.0, 5.0])
    mds_positions(x2, pins={1: (0.0, 0.0), 8: (0.0, 0.0)})


@pytest.mark.parametrize(
    ("kw", "word"),
    [({"k": 3}, "k"), ({"k": 13}, "k"), ({"l": 2}, "l"), ({"l": 12}, "l"), ({"m": 0}, "m"), ({"m": 40}, "m")],
)
def test_constants_out_of_range(kw, word):
    z = smooth_trajectory(n=11, d=30)  # n = 11: k in 4..13 allowed, so 13 is fine and 14 is not
    if kw.get("k") == 13:
        kw = {"k": 14}
    with pytest.raises(ValueError, match=rf"\b{word}\b"):
        build_pose_space(z, **kw)


def test_piegl_tiller_and_time_signal_reject_bad_k():
    t = np.linspace(0.0, 1.0, 8)
    for k in (3, 11):
        with pytest.raises(ValueError, match=r"\bk\b"):
            piegl_tiller_knots(t, k)
    with pytest.raises(ValueError, match=r"\bk\b"):
        fit_time_signal(planar_curve(8), 11)


def test_with_control_point_rejects_bad_index(space):
    _, sp = space
    for j in (-1, sp.k):
        with pytest.raises(ValueError, match=r"(?i)control point"):
            sp.with_control_point(j, (0.0, 0.0))


# ------------------------------------------------------------------------------------------------
# benchmark-style sanity check on the shared horse (no timing asserts)
# ------------------------------------------------------------------------------------------------


def read_pc2(path, count=None):
    with open(path, "rb") as fh:
        head = fh.read(32)
        assert head[:12] == b"POINTCACHE2\0"
        _version, n_verts, _start, _rate, n_samples = struct.unpack("<iiffi", head[12:32])
        count = n_samples if count is None else min(count, n_samples)
        data = np.frombuffer(fh.read(count * n_verts * 12), dtype="<f4")
    return data.reshape(count, n_verts, 3).astype(float)


@pytest.mark.shared_data
@pytest.mark.skipif(not HORSE.is_file(), reason=f"shared horse point cache not present ({HORSE})")
def test_horse_gallop_k16_l12_m7():
    verts = read_pc2(HORSE, 24)
    z = verts.reshape(24, -1)
    assert z.shape == (24, 25293)  # d = 3V as in the seed's Table 1
    sp = build_pose_space(z, k=16, l=12, m=7)
    assert (sp.k, sp.l, sp.m) == (16, 12, 7)
    err = sp.reconstruction_error(z)
    size = float(np.linalg.norm(np.ptp(verts.reshape(-1, 3), axis=0)))
    assert np.isfinite(err["rms"]) and np.isfinite(err["max"])
    assert err["rms"] < err["max"] < size
    assert err["rms"] < 0.05 * size
    assert sp.reconstruction_error()["rms"] == pytest.approx(err["rms"], rel=1e-6)


def test_pins_after_time_edits_keep_the_authored_time_signal():
    """Pinning after a sketch / re-timing / control-point edit re-lays the frames and refits g, and keeps
    the time signal the user authored; before any time edit, f is refitted through the new positions."""
    z = smooth_trajectory(n=14, d=12)
    space = build_pose_space(z)
    far = space.positions[3] + np.array([2.0, -1.0])
    plain = space.with_pins({3: far})
    np.testing.assert_allclose(plain.positions[3], far)
    np.testing.assert_allclose(plain.time.evaluate(plain.frames[3:4])[0], far, atol=1e-9)  # f through the pin
    sketched = space.with_stroke(np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0]]), 40)
    pinned = sketched.with_pins({3: far})
    np.testing.assert_array_equal(pinned.time.control, sketched.time.control)
    np.testing.assert_allclose(pinned.positions[3], far)
    assert pinned.reconstructed_frames.shape == (14,) and len(pinned.frames) == 40
    edited = space.with_control_point(2, space.time.control[2] + 0.1)
    np.testing.assert_array_equal(edited.with_pins({3: far}).time.control, edited.time.control)
    slow = space.with_times(np.arange(1.0, 28.0), np.linspace(1.0, 14.0, 27))
    np.testing.assert_allclose(slow.evaluate(np.array([1.0, 27.0])), space.evaluate(np.array([1.0, 14.0])),
                               atol=1e-9 * np.abs(z).max())
    assert slow.with_pins({3: far}).time.frames.shape == (27,)
    back = PoseSpace.from_dict(slow.to_dict())
    assert back.time_authored and np.array_equal(back.reconstructed_frames, space.frames)
