"""A clip as one continuous multichannel curve (Euler unwrapped, quaternions sign-continuous) and back."""

from __future__ import annotations

import math

import numpy as np
import pytest

from anim_signals.manifolds.clips import (
    EULER,
    LOCATION,
    QUATERNION,
    from_motion_curve,
    quaternion_groups,
    resample,
    to_motion_curve,
)


def wrap(a):
    """Into (-pi, pi], as Blender / BVH importers store angles."""
    return np.pi - np.mod(np.pi - a, 2 * np.pi)


def axis_angle_quats(angles, axis):
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    half = 0.5 * np.asarray(angles)[:, None]
    return np.hstack([np.cos(half), np.sin(half) * axis])


def test_euler_unwrap_across_pi():
    frames = 60
    true = np.linspace(2.5, 4.5, frames)  # crosses +pi once
    down = np.linspace(-2.0, -5.0, frames)  # crosses -pi once
    values = np.column_stack([wrap(true), wrap(down)])
    assert np.max(np.abs(np.diff(values, axis=0))) > 5.0  # the wrapped input jumps by ~2 pi
    curve = to_motion_curve(values, [EULER, EULER])
    np.testing.assert_allclose(curve, np.column_stack([true, down]), atol=1e-12)
    assert np.max(np.abs(np.diff(curve, axis=0))) < 0.1


def test_euler_many_turns():
    true = np.linspace(0.0, 6 * np.pi, 200)  # three full turns, each wrapped
    curve = to_motion_curve(wrap(true)[:, None], [EULER])
    np.testing.assert_allclose(curve[:, 0], true, atol=1e-10)


def test_location_and_non_euler_columns_untouched():
    rng = np.random.default_rng(0)
    values = rng.normal(0, 5, size=(30, 3))  # jumps larger than pi: must stay (not angles)
    curve = to_motion_curve(values, [LOCATION, LOCATION, "SCALE"])
    np.testing.assert_array_equal(curve, values)


def test_input_not_modified_and_shape_checked():
    values = np.column_stack([wrap(np.linspace(2.5, 4.5, 10))])
    keep = values.copy()
    to_motion_curve(values, [EULER])
    np.testing.assert_array_equal(values, keep)
    with pytest.raises(ValueError):
        to_motion_curve(values, [EULER, EULER])
    with pytest.raises(ValueError):
        to_motion_curve(values[:, 0], [EULER])


def test_quaternion_sign_flips_become_continuous():
    frames = 50
    q = axis_angle_quats(np.linspace(0.0, 1.5 * np.pi, frames), [1.0, 2.0, -0.5])
    rng = np.random.default_rng(1)
    signs = np.where(rng.random(frames) < 0.4, -1.0, 1.0)
    signs[0] = 1.0
    flipped = q * signs[:, None]
    assert np.any(np.einsum("ij,ij->i", flipped[1:], flipped[:-1]) < 0)
    curve = to_motion_curve(flipped, [QUATERNION] * 4)
    np.testing.assert_allclose(curve, q, atol=1e-12)
    assert np.all(np.einsum("ij,ij->i", curve[1:], curve[:-1]) > 0)


def test_rotation_past_360_degrees_stays_continuous():
    """Angle 0..3 pi: the plain axis-angle quaternion is continuous already (a 4 pi cover): kept."""
    q = axis_angle_quats(np.linspace(0.0, 3 * np.pi, 90), [0.0, 0.0, 1.0])
    curve = to_motion_curve(-q * np.sign(q[:, :1] + 1e-300), [QUATERNION] * 4)
    steps = np.linalg.norm(np.diff(curve, axis=0), axis=1)
    assert steps.max() < 0.1
    # every row is still the same rotation (+-q)
    np.testing.assert_allclose(np.abs(np.einsum("ij,ij->i", curve, q)), 1.0, atol=1e-12)


def test_mixed_channels_with_owners():
    frames = 40
    qa = axis_angle_quats(np.linspace(0.0, 2.0, frames), [0, 1, 0])
    qb = axis_angle_quats(np.linspace(1.0, -1.0, frames), [1, 0, 1])
    fa = qa * np.where(np.arange(frames) % 3 == 1, -1.0, 1.0)[:, None]
    fb = qb * np.where(np.arange(frames) % 4 == 2, -1.0, 1.0)[:, None]
    euler = np.linspace(3.0, 3.4, frames)
    loc = np.linspace(0, 1, frames)
    # interleaved columns: owners decide the groups
    values = np.column_stack([fa[:, 0], fb[:, 0], loc, fa[:, 1], fb[:, 1], fa[:, 2], fb[:, 2], wrap(euler),
                              fa[:, 3], fb[:, 3]])
    kinds = [QUATERNION, QUATERNION, LOCATION, QUATERNION, QUATERNION, QUATERNION, QUATERNION, EULER,
             QUATERNION, QUATERNION]
    owners = ["a", "b", "root", "a", "b", "a", "b", "c", "a", "b"]
    groups = quaternion_groups(kinds, owners)
    assert sorted(map(list, groups)) == [[0, 3, 5, 8], [1, 4, 6, 9]]
    curve = to_motion_curve(values, kinds, owners)
    np.testing.assert_allclose(curve[:, [0, 3, 5, 8]], qa, atol=1e-12)
    np.testing.assert_allclose(curve[:, [1, 4, 6, 9]], qb, atol=1e-12)
    np.testing.assert_allclose(curve[:, 7], euler, atol=1e-12)
    np.testing.assert_array_equal(curve[:, 2], loc)


def test_quaternion_groups_without_owners_and_incomplete():
    kinds = [QUATERNION] * 4 + [LOCATION] + [QUATERNION] * 6
    groups = quaternion_groups(kinds)
    assert [list(g) for g in groups] == [[0, 1, 2, 3], [5, 6, 7, 8]]  # 9, 10: incomplete, left out
    owners = ["a"] * 4 + ["r"] + ["b"] * 3 + ["c"] * 3
    assert [list(g) for g in quaternion_groups(kinds, owners)] == [[0, 1, 2, 3]]


def test_from_motion_curve_normalises_quaternion_groups():
    rng = np.random.default_rng(4)
    frames = 25
    quat = rng.normal(size=(frames, 4)) * rng.uniform(0.2, 3.0, size=(frames, 1))
    euler = np.linspace(2.0, 8.0, frames)  # unwrapped angles stay unwrapped
    loc = rng.normal(size=frames) * 10
    curve = np.column_stack([euler, quat, loc])
    kinds = [EULER, QUATERNION, QUATERNION, QUATERNION, QUATERNION, LOCATION]
    out = from_motion_curve(curve, kinds)
    np.testing.assert_allclose(np.linalg.norm(out[:, 1:5], axis=1), 1.0, rtol=1e-13)
    # the direction is kept: out = quat / |quat|
    np.testing.assert_allclose(out[:, 1:5], quat / np.linalg.norm(quat, axis=1, keepdims=True), rtol=1e-13)
    np.testing.assert_array_equal(out[:, 0], euler)
    np.testing.assert_array_equal(out[:, 5], loc)
    np.testing.assert_array_equal(curve[:, 1:5], quat)  # input untouched


def test_from_motion_curve_zero_quaternion_no_nan():
    curve = np.zeros((3, 4))
    curve[1] = [0.0, 0.0, 2.0, 0.0]
    with np.errstate(all="raise"):
        out = from_motion_curve(curve, [QUATERNION] * 4)
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out[1], [0.0, 0.0, 1.0, 0.0])


def test_round_trip_to_and_from_motion_curve():
    frames = 30
    q = axis_angle_quats(np.linspace(0.0, 2.5, frames), [1, 1, 0])
    flipped = q * np.where(np.arange(frames) % 2 == 1, -1.0, 1.0)[:, None]
    values = np.column_stack([wrap(np.linspace(3.0, 3.5, frames)), flipped])
    kinds = [EULER] + [QUATERNION] * 4
    back = from_motion_curve(to_motion_curve(values, kinds), kinds)
    # same rotations: Euler equal modulo 2 pi, quaternions equal up to sign
    np.testing.assert_allclose(wrap(back[:, 0]), values[:, 0], atol=1e-12)
    np.testing.assert_allclose(np.abs(np.einsum("ij,ij->i", back[:, 1:], values[:, 1:])), 1.0, atol=1e-12)


# --------------------------------------------------------------------------------------------------
# resample


@pytest.mark.parametrize("n_old, n_new", [(10, 37), (100, 13), (57, 100), (2, 9), (9, 2)])
def test_resample_linear_data_exact_and_endpoints(n_old, n_new):
    rng = np.random.default_rng(n_old * 1000 + n_new)
    a, b = rng.normal(size=5), rng.normal(size=5)
    t_old = np.linspace(0.0, 1.0, n_old)[:, None]
    t_new = np.linspace(0.0, 1.0, n_new)[:, None]
    out = resample(a + b * t_old, n_new)
    assert out.shape == (n_new, 5)
    np.testing.assert_allclose(out, a + b * t_new, rtol=0, atol=1e-13)
    values = rng.normal(size=(n_old, 5))
    out = resample(values, n_new)
    np.testing.assert_array_equal(out[0], values[0])
    np.testing.assert_allclose(out[-1], values[-1], rtol=0, atol=1e-14)


@pytest.mark.parametrize("n_old, n_new", [(10, 37), (40, 23), (7, 7), (101, 100)])
def test_resample_equals_piecewise_linear_interpolation(n_old, n_new):
    rng = np.random.default_rng(n_old + n_new)
    values = np.cumsum(rng.normal(size=(n_old, 3)), axis=0)
    t_old = np.linspace(0.0, 1.0, n_old)
    t_new = np.linspace(0.0, 1.0, n_new)
    expected = np.column_stack([np.interp(t_new, t_old, values[:, j]) for j in range(3)])
    np.testing.assert_allclose(resample(values, n_new), expected, rtol=0, atol=1e-12)


def test_resample_same_size_is_a_copy():
    values = np.arange(12.0).reshape(4, 3)
    out = resample(values, 4)
    np.testing.assert_array_equal(out, values)
    out[0, 0] = 99.0
    assert values[0, 0] == 0.0


def test_resample_rejects_fewer_than_two_samples():
    with pytest.raises(ValueError):
        resample(np.zeros((5, 2)), 1)


def test_resample_keeps_the_time_span_of_a_sine():
    """Up-sampling a finely sampled sine stays on the sine to second order (h^2 / 8 * max|f''|)."""
    n_old = 200
    t = np.linspace(0.0, 1.0, n_old)
    out = resample(np.sin(2 * np.pi * t)[:, None], 731)[:, 0]
    h = 1.0 / (n_old - 1)
    bound = h * h / 8 * (2 * math.pi) ** 2
    assert np.max(np.abs(out - np.sin(2 * np.pi * np.linspace(0, 1, 731)))) <= bound * (1 + 1e-9)


def test_harmonise_undoes_whole_turns_and_quaternion_signs():
    """A second clip stored k turns away, with its quaternion negated, is moved back next to the
    reference: the same poses, the reference's numbers (up to the clip's own motion)."""
    from anim_signals.manifolds.clips import harmonise

    rng = np.random.default_rng(11)
    ref = np.column_stack([
        np.linspace(0.2, 1.0, 30), np.linspace(-2.0, -2.5, 30), axis_angle_quats(np.linspace(0.0, 1.0, 30), [0, 0, 1]),
        np.linspace(0.0, 5.0, 30), axis_angle_quats(np.linspace(0.5, 0.7, 30), [1, 0, 0]),
    ])
    kinds = [EULER, EULER] + [QUATERNION] * 4 + [LOCATION] + [QUATERNION] * 4
    owners = ["a", "b"] + ["q"] * 4 + ["root"] + ["p"] * 4
    # another take: a little different, 3 and -2 turns away, first quaternion negated, the second not
    other = ref[::2] + rng.normal(0.0, 0.05, size=ref[::2].shape)
    moved = other.copy()
    moved[:, 0] += 3 * 2.0 * np.pi
    moved[:, 1] -= 2 * 2.0 * np.pi
    moved[:, 2:6] *= -1.0
    before = moved.copy()
    out = harmonise(moved, ref, kinds, owners)
    np.testing.assert_array_equal(moved, before)
    np.testing.assert_allclose(out, other, atol=1e-12)
    # a curve already next to the reference stays as it is
    np.testing.assert_array_equal(harmonise(other, ref, kinds, owners), other)


def test_harmonise_rounds_to_the_nearest_turn():
    from anim_signals.manifolds.clips import harmonise

    ref = np.zeros((4, 1))
    curve = np.full((3, 1), 2.0 * np.pi * 2 + 3.0)  # mean 3 rad + 2 turns away: nearest is 3.0, not 3 - 2 pi
    np.testing.assert_allclose(harmonise(curve, ref, [EULER], ["a"]), 3.0, atol=1e-12)
    curve = np.full((3, 1), -2.0 * np.pi + 3.3)  # -2.98 rad is nearer to 0 than 3.3 rad: left as it is
    np.testing.assert_allclose(harmonise(curve, ref, [EULER], ["a"]), 3.3 - 2.0 * np.pi, atol=1e-12)
