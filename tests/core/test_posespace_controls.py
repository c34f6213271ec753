"""Pose space as an application's controls and its re-timing: key scales, key targets and values
(meshes), channel values (armatures), the build's static check and default tolerance, resampled
frame times, the re-timed model and the frames a bake keys.

Expectations come from closed forms written here (a blend of relative shape keys, bounding boxes by
hand, piecewise-linear re-timing maps), from round trips (encode then decode) and from psi itself
(a re-timed frame F'_i shows psi(tau_i) of the model before).
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from anim_signals.posespace import (
    DEFAULT_TOLERANCE_FRACTION,
    ShapeSignal,
    bake_frames,
    bbox_diagonal,
    build_pose_space,
    channel_values,
    default_tolerance,
    is_static,
    key_scales,
    key_targets,
    key_values,
    resample_times,
    resampled_space,
    shape_from_keys,
    shape_signal,
)


def wobbling_grid(n=16, side=4, seed=0):
    """Frames of a small vertex grid (side^2 vertices) moved by three smooth modes."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=side * side * 3)
    modes = rng.normal(size=(3, side * side * 3))
    t = np.linspace(0.0, 2 * np.pi, n, endpoint=False)[:, None]
    return base + np.sin(t) * modes[0] + 0.5 * np.cos(2 * t) * modes[1] + 0.2 * np.sin(3 * t) * modes[2]


# ------------------------------------------------------------------------------------------------
# meshes: shape keys
# ------------------------------------------------------------------------------------------------


def test_key_scales_are_the_largest_coordinates():
    x = np.array([[0.5, -3.0, 0.0, 1e-3], [-2.0, 1.0, 0.0, -2e-3], [1.0, 2.5, 0.0, 0.0]])
    expected = [max(abs(v) for v in x[:, j]) or 1.0 for j in range(4)]
    np.testing.assert_array_equal(key_scales(x), expected)
    np.testing.assert_array_equal(key_scales(np.zeros((0, 3))), np.ones(3))  # no frames
    frames = key_values(x, key_scales(x), limit=10.0)
    assert np.abs(frames).max() == 1.0  # the frames' key values fill [-1, 1]


def test_blending_the_keys_is_the_shape_signal():
    """Blender's relative keys: basis + sum_j value_j (target_j - basis) is h(x) at value = x / s."""
    z = wobbling_grid()
    shape, x = shape_signal(z, m=3)
    scales = key_scales(x)
    basis, targets = key_targets(shape, scales)
    assert basis.shape == (16, 3) and targets.shape == (3, 16, 3)
    for j in range(3):  # one key at a time: its target is h0 + s_j H[:, j]
        np.testing.assert_array_equal(targets[j].reshape(-1), shape.h0 + scales[j] * shape.H[:, j])
    values = key_values(x, scales, limit=10.0)
    blended = basis[None] + np.einsum("ij,jvc->ivc", values, targets - basis[None])
    np.testing.assert_allclose(blended.reshape(len(z), -1), shape.decode(x), atol=1e-12)
    np.testing.assert_allclose(blended.reshape(len(z), -1), z, atol=1e-9)  # m = rank: the frames


def test_shape_from_keys_inverts_key_targets():
    z = wobbling_grid(seed=3)
    shape, x = shape_signal(z, m=3)
    scales = key_scales(x)
    basis, targets = key_targets(shape, scales)
    h0, H = shape_from_keys(basis, targets, scales)
    np.testing.assert_array_equal(h0, shape.h0)
    np.testing.assert_allclose(H, shape.H, rtol=0, atol=1e-13)
    # as Blender stores them (float32 coordinates): H back to float32 precision
    h0_32, H_32 = shape_from_keys(basis.astype(np.float32), targets.astype(np.float32), scales)
    np.testing.assert_allclose(H_32, shape.H, atol=1e-6 * np.abs(targets).max() / scales.min())
    with pytest.raises(ValueError):
        key_targets(shape, scales[:2])
    with pytest.raises(ValueError):
        shape_from_keys(basis, targets, scales[:2])


def test_key_values_clip_to_the_slider_range():
    w = np.array([[3.0, -50.0], [-4.0, 0.25]])
    np.testing.assert_array_equal(key_values(w, [2.0, 0.5], limit=10.0), [[1.5, -10.0], [-2.0, 0.5]])
    np.testing.assert_array_equal(key_values(w[0], [2.0, 0.5], limit=10.0), [1.5, -10.0])  # one point


# ------------------------------------------------------------------------------------------------
# armatures: channel values
# ------------------------------------------------------------------------------------------------


def test_channel_values_undo_the_weights_and_normalise_quaternions():
    rng = np.random.default_rng(5)
    n = 10
    quat = rng.normal(size=(n, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    loc = rng.normal(size=(n, 3))
    values = np.hstack([loc, quat])  # 3 locations, then one quaternion (w, x, y, z)
    weight = np.array([0.5, 0.5, 0.5, 2.0, 2.0, 2.0, 2.0])
    shape, x = shape_signal(values * weight, row_size=1)  # exact: m = rank
    got = channel_values(shape, x, weight, [np.arange(3, 7)])
    np.testing.assert_allclose(got, values, atol=1e-12)
    # a coordinate off the frames: the quaternion comes back with unit length, in its direction
    off = x[0] * 1.7
    raw = shape.decode(off) / weight
    got = channel_values(shape, off, weight, [np.arange(3, 7)])
    np.testing.assert_allclose(np.linalg.norm(got[3:]), 1.0, rtol=1e-15)
    np.testing.assert_allclose(got[3:], raw[3:] / np.linalg.norm(raw[3:]), rtol=1e-14)
    np.testing.assert_array_equal(got[:3], raw[:3])
    # a zero quaternion stays zero; no groups: just the weights divided out
    zero = ShapeSignal(np.zeros(4), np.eye(4)[:, :1] * 0.0)
    np.testing.assert_array_equal(channel_values(zero, [1.0], np.ones(4), [np.arange(4)]), np.zeros(4))
    np.testing.assert_array_equal(channel_values(shape, x[2], weight), shape.decode(x[2]) / weight)


# ------------------------------------------------------------------------------------------------
# build: static sequences and the default tolerance
# ------------------------------------------------------------------------------------------------


def test_bbox_diagonal_and_default_tolerance_by_hand():
    # two vertices, mean positions (0, 0, 0) and (1, 2, 2): diagonal 3
    z = np.array([[0.0, 0.0, 0.0, 1.0, 2.0, 2.0], [0.2, 0.0, 0.0, 1.0, 2.0, 2.0], [-0.2, 0.0, 0.0, 1.0, 2.0, 2.0]])
    assert bbox_diagonal(z) == pytest.approx(3.0, rel=1e-15)
    assert default_tolerance(z) == pytest.approx(DEFAULT_TOLERANCE_FRACTION * 3.0, rel=1e-15)
    assert bbox_diagonal(np.ones((4, 3))) == 1.0  # one vertex: no size, taken as 1
    with pytest.raises(ValueError):
        bbox_diagonal(np.ones((4, 4)))


def test_is_static():
    z = np.tile(np.array([1.0, -2.0, 3.0]), (6, 1))
    assert is_static(z) and is_static(np.zeros((5, 2)))
    moved = z.copy()
    moved[3, 1] += 3e-6 * 3.0  # more than 1e-6 of the largest value (3)
    assert not is_static(moved)
    moved[3, 1] = z[3, 1] + 2e-6  # less than 1e-6 x 3
    assert is_static(moved)
    assert not is_static(moved, span=1e-7)


# ------------------------------------------------------------------------------------------------
# re-timing
# ------------------------------------------------------------------------------------------------


def frames_signal(a, b):
    """A stand-in time signal: resample_times only reads the frame numbers."""
    return types.SimpleNamespace(frames=np.arange(a, b + 1, dtype=float))


def test_resample_times_modes_by_hand():
    ts = frames_signal(1, 9)
    frames, taus = resample_times(ts, mode="SPEED", speed=2.0)
    np.testing.assert_array_equal(frames, [1, 2, 3, 4, 5])
    np.testing.assert_allclose(taus, [1, 3, 5, 7, 9], rtol=0, atol=1e-12)
    frames, taus = resample_times(ts, mode="SPEED", speed=0.5)
    np.testing.assert_array_equal(frames, np.arange(1, 18))
    np.testing.assert_allclose(taus, 1.0 + 0.5 * np.arange(17), rtol=0, atol=1e-12)
    frames, taus = resample_times(ts, mode="FRAME_COUNT", frame_count=5)
    np.testing.assert_array_equal(frames, [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(taus, [1, 3, 5, 7, 9])
    frames, taus = resample_times(frames_signal(1, 31), mode="FRAME_RATE", fps_from=30.0, fps_to=24.0)
    assert frames.size == 25  # 30 frames at 30 fps = 24 frames at 24 fps, ends included
    np.testing.assert_allclose(taus, 1.0 + 1.25 * np.arange(25), rtol=0, atol=1e-12)


def test_resample_times_range_plays_a_part_at_another_speed():
    frames, taus = resample_times(frames_signal(1, 11), mode="RANGE", range_start=3.0, range_end=5.0, speed=0.5)
    expected = [1, 2, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 11]  # 3..5 twice as long, the rest as it was
    np.testing.assert_array_equal(frames, np.arange(1, 14))
    np.testing.assert_allclose(taus, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "FAST"}, "mode must be one of"),
        ({"mode": "SPEED", "speed": 0.0}, "speed must be positive"),
        ({"mode": "SPEED", "speed": float("nan")}, "speed must be finite"),
        ({"mode": "SPEED", "speed": 1e-300}, "more than 1000000 frames"),
        ({"mode": "FRAME_COUNT", "frame_count": 10**9}, "at most 1000000 frames"),
        ({"mode": "SPEED", "speed": 100.0}, "leaves 1 frame"),
        ({"mode": "FRAME_COUNT", "frame_count": 1}, "at least 2"),
        ({"mode": "FRAME_RATE", "fps_from": 0.0}, "fps_from must be positive"),
        ({"mode": "RANGE", "range_start": 5.0, "range_end": 5.0}, "not be empty"),
        ({"mode": "RANGE", "range_start": 0.0, "range_end": 5.0}, "inside the frames"),
    ],
)
def test_resample_times_refuses(kwargs, message):
    with pytest.raises(ValueError, match=message):
        resample_times(frames_signal(1, 9), **kwargs)


def test_resampled_space_shows_psi_at_the_old_times():
    z = wobbling_grid(n=12, seed=7)
    space = build_pose_space(z, k=10, l=8, m=3)
    frames, taus = resample_times(space.time, mode="RANGE", range_start=4.0, range_end=8.0, speed=0.4)
    new = resampled_space(space, frames, taus)
    np.testing.assert_array_equal(new.time.frames, frames)
    np.testing.assert_allclose(new.evaluate(frames), space.evaluate(taus), atol=1e-12)
    assert new.shape is space.shape and new.pose is space.pose and new.positions is space.positions
    np.testing.assert_array_equal(new.time.control, space.time.control)
    assert np.all(np.diff(new.time.params) >= 0)


def test_bake_frames_are_the_whole_frames_covered():
    def with_frames(frames):
        return types.SimpleNamespace(time=types.SimpleNamespace(frames=np.asarray(frames, dtype=float)))

    np.testing.assert_array_equal(bake_frames(with_frames([1.2, 3.0, 5.7])), [2, 3, 4, 5])
    np.testing.assert_array_equal(bake_frames(with_frames([1.0 - 1e-9, 3.0 + 1e-9])), [1, 2, 3])  # slack
    assert bake_frames(with_frames([1.2, 1.8])).size == 0
    assert bake_frames(with_frames([1.0, 4.0])).dtype == np.float64
