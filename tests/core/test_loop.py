"""Seamless loops (seed §4.1): make_loop, find_cycle, crossfade_loop, seam_jump, median_frame_change.

Written against the API contract in docs/motion_manifolds.md.  Expectations come from the
contract's formulas (evaluated by hand here), from closed forms and from invariances.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from anim_signals.manifolds.loop import crossfade_loop, find_cycle, make_loop, median_frame_change, seam_jump


def ref_seam(c, travel=()):
    """The contract's formula, one channel at a time."""
    c = np.asarray(c, dtype=float)
    n_frames, n = c.shape
    pose = np.zeros(n)
    vel = np.zeros(n)
    for j in range(n):
        offset = c[n_frames - 1, j] - c[0, j] if j in travel else 0.0
        pose[j] = abs(c[n_frames - 1, j] - c[0, j] - offset)
        vel[j] = abs((c[n_frames - 1, j] - c[n_frames - 2, j]) - (c[1, j] - c[0, j]))
    return pose, vel


def polyline_length(c):
    return float(np.sum(np.linalg.norm(np.diff(c, axis=0), axis=1)))


def walk_like(n_frames=97, n_channels=6, seed=0, gap=0.15, noise=0.0, travel=None):
    """One 'stride' of a periodic multichannel motion, made slightly non-periodic (drift and a
    phase error), optionally with a travel channel (steady forward motion plus a bob)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n_frames)[:, None]
    c = np.zeros((n_frames, n_channels))
    for h in (1, 2, 3):
        c += rng.normal(0.0, 1.0 / h, n_channels) * np.sin(2 * np.pi * h * t * (1 + 0.03 * h)
                                                           + rng.uniform(0, 6, n_channels))
    c += gap * t * rng.normal(size=n_channels)
    if noise:
        c += noise * rng.normal(size=c.shape)
    if travel is not None:
        c[:, travel] = 2.5 * t[:, 0] + 0.05 * np.sin(4 * np.pi * t[:, 0])
    return c


# --------------------------------------------------------------------------------------------------
# seam_jump and median_frame_change: hand-computed


def test_seam_jump_hand_computed():
    c = np.array([
        [0.0, 1.0, 10.0],
        [1.0, 1.5, 11.0],
        [2.0, 1.0, 12.5],
        [2.5, 0.0, 14.0],
        [0.5, 2.0, 16.0],
    ])
    sj = seam_jump(c)
    # pose: |c4 - c0|; velocity: |(c4 - c3) - (c1 - c0)|
    np.testing.assert_allclose(sj.pose, [0.5, 1.0, 6.0])
    np.testing.assert_allclose(sj.velocity, [abs(-2.0 - 1.0), abs(2.0 - 0.5), abs(2.0 - 1.0)])
    sj = seam_jump(c, travel=[2])
    np.testing.assert_allclose(sj.pose, [0.5, 1.0, 0.0])  # Repeat with Offset: no pose jump
    np.testing.assert_allclose(sj.velocity, [3.0, 1.5, 1.0])


def test_seam_jump_matches_formula_on_random_data():
    rng = np.random.default_rng(1)
    c = rng.normal(size=(20, 7))
    for travel in ((), (0,), (2, 5)):
        sj = seam_jump(c, travel=travel)
        pose, vel = ref_seam(c, travel)
        np.testing.assert_allclose(sj.pose, pose, rtol=1e-14, atol=0)
        np.testing.assert_allclose(sj.velocity, vel, rtol=1e-14, atol=0)
        assert np.all(sj.pose >= 0) and np.all(sj.velocity >= 0)


def test_seam_jump_of_a_sampled_period():
    """One period sampled with N samples (last = first): no pose jump; the velocity jump is the
    seam's second difference |(c[N-1]-c[N-2]) - (c[1]-c[0])|: 0 for a sine, 2 (1 - cos w) for a cosine."""
    n = 41
    w = 2 * np.pi / (n - 1)
    c = np.sin(w * np.arange(n))[:, None]
    sj = seam_jump(c)
    assert sj.pose[0] == pytest.approx(0.0, abs=1e-14)
    # (0 - sin(-w)) - (sin(w) - 0) = 0 for a sine: its second difference at 0 vanishes
    assert sj.velocity[0] == pytest.approx(0.0, abs=1e-14)
    c = np.cos(w * np.arange(n))[:, None]
    # (1 - cos w) - (cos w - 1) = 2 (1 - cos w)
    assert seam_jump(c).velocity[0] == pytest.approx(2 * (1 - math.cos(w)), rel=1e-12)


def test_median_frame_change_hand_computed():
    c = np.array([[0.0, 5.0], [1.0, 5.0], [3.0, 5.0], [6.0, 5.0], [10.0, 5.0], [10.0, 5.0]])
    step, accel = median_frame_change(c)
    # |diff| = 1, 2, 3, 4, 0 -> median 2; |diff2| = 1, 1, 1, 4 -> median 1
    np.testing.assert_allclose(step, [2.0, 0.0])
    np.testing.assert_allclose(accel, [1.0, 0.0])


# --------------------------------------------------------------------------------------------------
# make_loop


@pytest.mark.parametrize("n_channels", [1, 3, 12])
def test_make_loop_closes_pose_and_velocity_seam(n_channels):
    c = walk_like(n_channels=n_channels, seed=n_channels)
    res = make_loop(c)
    out = res.values
    assert out.shape == c.shape and np.all(np.isfinite(out))
    length = polyline_length(c)
    np.testing.assert_allclose(out[-1], out[0], rtol=0, atol=1e-9 * length)
    pose, vel = ref_seam(out)
    # the seam is gone: no pose jump; the velocity seam is equal (first and last frame steps agree)
    assert np.all(pose <= 1e-9 * length)
    np.testing.assert_allclose(out[-1] - out[-2], out[1] - out[0], rtol=0, atol=1e-5 * length)
    # the reported seams are the contract's formula on the input and on the output
    np.testing.assert_allclose(res.before.pose, ref_seam(c)[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(res.before.velocity, ref_seam(c)[1], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(res.after.pose, pose, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res.after.velocity, vel, rtol=1e-9, atol=1e-12)
    assert np.all(res.after.pose <= 1e-6 * res.before.pose.max())
    _, accel = median_frame_change(c)
    assert np.all(res.after.velocity <= accel + 1e-5 * length)  # below one typical frame's change
    assert res.converged and res.residual < 1e-6


def test_make_loop_deviation_is_reported():
    c = walk_like(seed=5, gap=0.05)
    res = make_loop(c)
    rms = np.sqrt(np.mean((res.values - c) ** 2, axis=0))
    assert res.deviation_rms.shape == (c.shape[1],)
    np.testing.assert_allclose(res.deviation_rms, rms, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("velocity_window", [None, 0])
def test_make_loop_deviation_is_of_the_order_of_the_seam(velocity_window):
    """Spreading the pose gap g linearly over the clip already closes it with an RMS change of
    |g| / sqrt(3): a loop should not move the clip (over all channels) by more than |g|."""
    c = walk_like(seed=5, gap=0.05)
    res = make_loop(c, velocity_window=velocity_window)
    gap = np.linalg.norm(c[-1] - c[0])
    assert np.linalg.norm(res.deviation_rms) <= gap


@pytest.mark.parametrize("velocity_window", [None, 0])
def test_make_loop_nearly_periodic_input_barely_changes(velocity_window):
    """A smooth periodic clip with a drift of 1e-3 (relative gap ~4e-4): the loop should change each
    channel by far less than its range (here: RMS < 1 % of the range; the gap itself is 0.04 %)."""
    n_frames = 121
    t = np.linspace(0.0, 1.0, n_frames)[:, None]
    c = np.sin(2 * np.pi * t + np.array([0.0, 1.0, 2.0])) + 0.5 * np.cos(4 * np.pi * t + np.array([0.3, 0.0, 2.0]))
    c += 1e-3 * t * np.array([1.0, -2.0, 0.5])
    res = make_loop(c, velocity_window=velocity_window)
    assert np.all(res.deviation_rms < 0.01 * np.ptp(c, axis=0))
    np.testing.assert_allclose(res.values[-1], res.values[0], atol=1e-8)


def test_make_loop_leaves_a_closed_period_nearly_unchanged():
    n_frames = 101
    t = np.linspace(0.0, 1.0, n_frames)[:, None]
    c = np.sin(2 * np.pi * t + np.array([0.2, 1.1, 2.9, 4.0])) * np.array([1.0, 0.5, 2.0, 0.1])
    c[-1] = c[0]
    res = make_loop(c)
    assert np.max(np.abs(res.values - c)) < 5e-3 * np.ptp(c)
    assert np.all(res.deviation_rms < 0.01 * np.ptp(c, axis=0))
    np.testing.assert_allclose(res.values[0], c[0], atol=1e-12)  # start pose kept


def test_make_loop_exact_period_without_velocity_easing_is_a_fixed_point():
    """velocity_window=0: only the closure projection runs, and a closed curve is already closed."""
    n_frames = 81
    t = np.linspace(0.0, 1.0, n_frames)[:, None]
    c = np.column_stack([np.cos(2 * np.pi * t[:, 0]), np.sin(2 * np.pi * t[:, 0]), 0.3 * np.sin(4 * np.pi * t[:, 0])])
    c[-1] = c[0]
    res = make_loop(c, velocity_window=0)
    np.testing.assert_allclose(res.values, c, rtol=0, atol=1e-10)


@pytest.mark.parametrize("velocity_window", [None, 0, 4])
def test_make_loop_keeps_start_pose_and_length(velocity_window):
    """docs/motion_manifolds.md: the projection restores start pose and length exactly; the local
    velocity-seam bend (window > 0) changes the length only a little."""
    c = walk_like(seed=8)
    res = make_loop(c, velocity_window=velocity_window)
    np.testing.assert_allclose(res.values[0], c[0], atol=1e-12)
    rel = 1e-4 if velocity_window == 0 else 0.02
    assert polyline_length(res.values) == pytest.approx(polyline_length(c), rel=rel)


@pytest.mark.parametrize("travel", [[0], [0, 2]])
def test_make_loop_travel_channels_keep_displacement(travel):
    c = walk_like(n_channels=5, seed=11, travel=None)
    t = np.linspace(0.0, 1.0, c.shape[0])
    for j, d in zip(travel, (2.5, -1.2)):
        c[:, j] = d * t + 0.05 * np.sin(4 * np.pi * t) + 0.01 * t**2
    res = make_loop(c, travel=travel)
    out = res.values
    length = polyline_length(c)
    others = [j for j in range(5) if j not in travel]
    np.testing.assert_allclose(out[-1, travel] - out[0, travel], c[-1, travel] - c[0, travel], atol=1e-9 * length)
    np.testing.assert_allclose(out[-1, others], out[0, others], atol=1e-9 * length)
    pose, vel = ref_seam(out, travel)
    np.testing.assert_allclose(res.after.pose, pose, atol=1e-12)
    assert np.all(res.after.pose <= 1e-9 * length)
    # travel: the per-frame step is continuous across the seam too
    np.testing.assert_allclose(out[-1] - out[-2], out[1] - out[0], atol=1e-5 * length)


def test_make_loop_invariances():
    """Translation: loop(c + a) = loop(c) + a; uniform scale: loop(s c) = s loop(c) (SRV equivariance)."""
    c = walk_like(n_channels=4, seed=13)
    base = make_loop(c).values
    a = np.array([10.0, -3.0, 0.5, 100.0])
    np.testing.assert_allclose(make_loop(c + a).values, base + a, rtol=0, atol=1e-8)
    np.testing.assert_allclose(make_loop(3.0 * c).values, 3.0 * base, rtol=0, atol=1e-8)


def test_make_loop_channel_order_does_not_matter():
    c = walk_like(n_channels=5, seed=14)
    perm = np.array([3, 0, 4, 1, 2])
    np.testing.assert_allclose(make_loop(c[:, perm]).values, make_loop(c).values[:, perm], rtol=0, atol=1e-9)


def test_make_loop_constant_channels():
    c = walk_like(n_channels=4, seed=15)
    c[:, 1] = 0.75
    with np.errstate(divide="raise", invalid="raise"):
        res = make_loop(c)
    assert np.all(np.isfinite(res.values))
    np.testing.assert_allclose(res.values[:, 1], 0.75, atol=1e-12)
    assert res.after.pose[1] == pytest.approx(0.0, abs=1e-12)


def test_make_loop_all_constant_clip_does_not_crash():
    c = np.tile(np.array([1.0, 2.0, -3.0]), (30, 1))
    try:
        res = make_loop(c)
    except ValueError:
        return  # a clear refusal is fine
    np.testing.assert_allclose(res.values, c)


def test_make_loop_travel_only_motion():
    """Only the root travels (a straight glide): already a loop with offset, nothing to change."""
    t = np.linspace(0.0, 1.0, 40)
    c = np.column_stack([3.0 * t, np.zeros(40), np.full(40, 0.5)])
    res = make_loop(c, travel=[0])
    np.testing.assert_allclose(res.values, c, atol=1e-9)


def test_make_loop_100_frames_96_channels():
    c = walk_like(n_frames=100, n_channels=96, seed=17, noise=0.002)
    res = make_loop(c, travel=[0])
    assert res.values.shape == (100, 96) and np.all(np.isfinite(res.values))
    assert res.converged
    np.testing.assert_allclose(res.values[-1, 1:], res.values[0, 1:], atol=1e-9 * polyline_length(c))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("func", ["make_loop", "find_cycle", "crossfade_loop", "seam_jump"])
def test_non_finite_input_raises(func, bad):
    c = walk_like(seed=19)
    c[10, 2] = bad
    call = {
        "make_loop": lambda: make_loop(c),
        "find_cycle": lambda: find_cycle(c),
        "crossfade_loop": lambda: crossfade_loop(c, 8),
        "seam_jump": lambda: seam_jump(c),
    }[func]
    with pytest.raises(ValueError):
        call()


def test_make_loop_does_not_modify_input():
    c = walk_like(seed=20)
    keep = c.copy()
    make_loop(c, travel=[0])
    np.testing.assert_array_equal(c, keep)


# --------------------------------------------------------------------------------------------------
# find_cycle


def periodic_clip(period, n_periods=3.4, n_channels=5, noise=0.01, seed=0, travel=None):
    """A sum of sines with period ``period`` frames, sampled over ``n_periods`` periods, plus noise."""
    rng = np.random.default_rng(seed)
    n_frames = int(round(n_periods * period))
    k = np.arange(n_frames)[:, None]
    c = np.zeros((n_frames, n_channels))
    for h in (1, 2, 3):
        c += rng.normal(0, 1.0 / h, n_channels) * np.sin(2 * np.pi * h * k / period + rng.uniform(0, 6, n_channels))
    c += noise * rng.normal(size=c.shape)
    if travel is not None:
        c[:, travel] = 0.05 * k[:, 0] + 0.1 * np.sin(4 * np.pi * k[:, 0] / period)
    return c


@pytest.mark.parametrize("period", [30, 40, 47, 64])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_find_cycle_recovers_known_period(period, seed):
    """3.4 periods of a sum of sines (amplitudes ~1) plus noise sigma = 0.01."""
    c = periodic_clip(period, seed=seed)
    cyc = find_cycle(c)
    assert abs((cyc.stop - cyc.start) - period) <= 1
    assert 0 <= cyc.start < cyc.stop <= c.shape[0] - 1
    assert np.isfinite(cyc.score)
    # the chosen ends really are close poses (a loopable range)
    pose_gap = np.linalg.norm(c[cyc.stop] - c[cyc.start])
    assert pose_gap < 0.25 * np.median(np.linalg.norm(c - c.mean(axis=0), axis=1))


def test_find_cycle_with_travel_channel():
    period = 36
    c = periodic_clip(period, n_channels=4, seed=4, travel=0)
    cyc = find_cycle(c, travel=[0])
    assert abs((cyc.stop - cyc.start) - period) <= 1
    assert 0 <= cyc.start < cyc.stop <= c.shape[0] - 1


def test_find_cycle_respects_period_bounds():
    period = 30
    c = periodic_clip(period, n_periods=3.4, seed=6)
    cyc = find_cycle(c, min_period=50, max_period=70)
    assert 50 - 1 <= cyc.stop - cyc.start <= 70 + 1
    assert abs((cyc.stop - cyc.start) - 2 * period) <= 1  # two periods is the only true cycle there
    assert 0 <= cyc.start < cyc.stop <= c.shape[0] - 1


@pytest.mark.parametrize("period", [30, 40, 47, 64])
def test_find_cycle_noise_free(period):
    c = periodic_clip(period, seed=period, noise=0.0)
    cyc = find_cycle(c)
    assert abs((cyc.stop - cyc.start) - period) <= 1
    assert 0 <= cyc.start < cyc.stop <= c.shape[0] - 1
    # the two ends are the same pose up to one frame's step (the period is found to +-1 frame)
    step = np.abs(np.diff(c, axis=0)).max(axis=0)
    assert np.all(np.abs(c[cyc.stop] - c[cyc.start]) <= step)


def test_find_cycle_with_constant_channel():
    c = periodic_clip(40, seed=7, noise=0.0)
    c[:, 2] = -1.0
    cyc = find_cycle(c)
    assert abs((cyc.stop - cyc.start) - 40) <= 1


def test_find_cycle_loop_pipeline():
    """find_cycle then make_loop: the cut is already nearly seamless, the loop changes it little."""
    c = periodic_clip(44, seed=8, noise=0.005)
    cyc = find_cycle(c)
    seg = c[cyc.start:cyc.stop + 1]
    res = make_loop(seg)
    assert np.all(res.deviation_rms < 0.05 * np.ptp(seg, axis=0) + 1e-12)


# --------------------------------------------------------------------------------------------------
# crossfade_loop (the baseline)


@pytest.mark.parametrize("window", [1, 5, 20])
def test_crossfade_closes_the_pose_seam(window):
    c = walk_like(n_channels=4, seed=21, gap=0.4)
    out = crossfade_loop(c, window)
    assert out.shape == c.shape
    np.testing.assert_allclose(out[-1], out[0], atol=1e-12)
    np.testing.assert_allclose(out[0], c[0])
    pose, _ = ref_seam(out)
    assert np.all(pose <= 1e-12)
    # frames before the window are untouched
    np.testing.assert_array_equal(out[: c.shape[0] - window - 1], c[: c.shape[0] - window - 1])


def test_crossfade_is_a_linear_fade():
    """Fading a ramp c[k] = k into c[0] = 0: each faded frame lies between its value and the target,
    and the correction (out - c) grows monotonically (linearly) to -c[-1] at the last frame."""
    n_frames, window = 30, 10
    c = np.arange(n_frames, dtype=float)[:, None]
    out = crossfade_loop(c, window)
    corr = (out - c)[:, 0]
    assert corr[-1] == pytest.approx(-(n_frames - 1))
    tail = corr[n_frames - window - 1:]
    assert np.all(np.diff(tail) < 0)
    np.testing.assert_allclose(np.diff(tail, 2), 0.0, atol=1e-12)  # linear
    assert np.all(corr[: n_frames - window - 1] == 0)


def test_crossfade_travel_channel_keeps_one_cycles_travel():
    c = walk_like(n_channels=3, seed=22, travel=0)
    out = crossfade_loop(c, 12, travel=[0])
    assert out[-1, 0] - out[0, 0] == pytest.approx(c[-1, 0] - c[0, 0], abs=1e-12)
    np.testing.assert_allclose(out[-1, 1:], out[0, 1:], atol=1e-12)


def test_crossfade_constant_channel():
    c = walk_like(n_channels=3, seed=23)
    c[:, 1] = 4.0
    out = crossfade_loop(c, 8)
    np.testing.assert_array_equal(out[:, 1], 4.0)


def test_nearly_closed_threshold_closed_form():
    """Allowed seam: 3 median frame steps + 1 % of the range + 1e-6 (here: 3 + 0.01 * range)."""
    from anim_signals.manifolds.loop import nearly_closed

    zigzag = [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]  # steps of 1: median step 1
    assert nearly_closed(np.array(zigzag + [3.0])[:, None])  # jump 3 <= 3 + 0.03
    assert not nearly_closed(np.array(zigzag + [3.1])[:, None])  # jump 3.1 > 3 + 0.031
    # every channel must close
    two = np.column_stack([zigzag + [0.0], zigzag + [3.1]])
    assert not nearly_closed(two)
    assert nearly_closed(two[:, :1])


def test_nearly_closed_travel_counts_net_of_the_travel():
    from anim_signals.manifolds.loop import nearly_closed

    t = np.linspace(0.0, 1.0, 40)
    walk = np.column_stack([np.sin(2.0 * np.pi * t), 5.0 * t])  # a cycle, and forward travel
    assert not nearly_closed(walk)
    assert nearly_closed(walk, [1])


def test_joint_seam_closed_form():
    from anim_signals.manifolds.loop import joint_seam

    lo = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 2.0]])  # root, and a second joint
    step_lo = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.5]])
    travel = np.array([10.0, 2.0, 0.3])  # the root's travel lo -> hi, z too
    step_hi = np.array([[1.0, 0.0, 0.0], [1.0, 0.3, 0.5]])
    hi = lo + travel + np.array([[0.0, 0.0, 0.0], [0.0, 0.4, 0.0]])
    heads = np.stack([lo, lo + step_lo, hi - step_hi, hi])
    pose, velocity = joint_seam(heads, [0])
    # horizontal travel taken out, the vertical 0.3 is not; the second joint is also off by 0.4 in y
    assert pose == pytest.approx(math.hypot(0.4, 0.3), rel=1e-12)
    assert velocity == pytest.approx(0.3, rel=1e-12)  # the second joint's step differs by 0.3 in y
    pose_in_place, velocity_in_place = joint_seam(heads, None)
    assert pose_in_place == pytest.approx(float(np.linalg.norm(travel + [0.0, 0.4, 0.0])), rel=1e-12)
    assert velocity_in_place == velocity
