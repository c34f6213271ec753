"""Blender rotation modes <-> quaternions (anim_signals.spatialkeys.rotation_modes), against scipy's
own conversions, and the continuity the writers rely on."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from anim_signals.spatialkeys import rotation_modes
from anim_signals.spatialkeys.rotation_modes import (
    EULER_MODES,
    ROTATION_MODES,
    mode_size,
    mode_values_to_quaternions,
    quaternions_to_mode_values,
)


def _matrices(q: np.ndarray) -> np.ndarray:
    return Rotation.from_quat(np.concatenate([q[..., 1:], q[..., :1]], axis=-1).reshape(-1, 4)).as_matrix()


def test_examples_run():
    assert doctest.testmod(rotation_modes).failed == 0


@pytest.mark.parametrize("mode", EULER_MODES)
def test_euler_orders_apply_the_first_letter_first(mode):
    # Blender's XYZ: X first, so R = Rz Ry Rx (each order likewise, built here from single-axis rotations)
    angles = np.array([0.3, -0.7, 1.1])
    expected = np.eye(3)
    for axis in mode:
        expected = Rotation.from_euler(axis.lower(), angles["XYZ".index(axis)]).as_matrix() @ expected
    np.testing.assert_allclose(_matrices(mode_values_to_quaternions(angles, mode))[0], expected, atol=1e-12)


@pytest.mark.parametrize("mode", ROTATION_MODES)
def test_round_trip_keeps_the_rotation_and_stays_near_the_reference(mode):
    rng = np.random.default_rng(3)
    values = rng.normal(size=(50, mode_size(mode)))
    q = mode_values_to_quaternions(values, mode)
    assert np.all(q[:, 0] >= 0) and np.allclose(np.linalg.norm(q, axis=1), 1.0)
    back = quaternions_to_mode_values(q, mode, reference=values)
    np.testing.assert_allclose(_matrices(mode_values_to_quaternions(back, mode)), _matrices(q), atol=1e-12)
    if mode in EULER_MODES:  # the very values (no turn, no gimbal flip)
        np.testing.assert_allclose(back, values, atol=1e-9)
    if mode == "QUATERNION":
        assert np.all(np.sum(back * values, axis=1) >= 0)


def test_continuous_euler_has_no_jumps():
    t = np.linspace(0.0, 4.0 * np.pi, 200)
    angles = np.column_stack([0.2 * np.sin(t), 0.3 * np.cos(t), t])  # z winds twice
    q = mode_values_to_quaternions(angles, "XYZ")
    out = quaternions_to_mode_values(q, "XYZ", continuous=True)
    assert np.abs(np.diff(out, axis=0)).max() < 0.1
    np.testing.assert_allclose(out - out[0] + angles[0], angles, atol=1e-9)


def test_bad_modes_and_sizes():
    with pytest.raises(ValueError, match="mode must be one of"):
        mode_size("EULER")
    with pytest.raises(ValueError, match="values has a NaN"):
        mode_values_to_quaternions([0.0, np.nan, 0.0], "XYZ")
    with pytest.raises(ValueError, match="XYZ rotations have 3 values"):
        mode_values_to_quaternions(np.zeros((2, 4)), "XYZ")
