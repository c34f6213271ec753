"""Channel kinds and units (anim_signals.channels): continuity, tolerances, weights and errors by kind.

Expectations are closed forms (degrees, half-angle quaternions) or slow per-frame / per-channel
references written here, independent of the vectorised code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from anim_signals.channels import (
    EULER,
    KINDS,
    LOCATION,
    OTHER,
    QUATERNION,
    QUATERNION_ANGLE,
    SCALE,
    SHAPE_KEY,
    STILL_SPAN,
    errors_by_kind,
    finite_max,
    finite_rms,
    location_mask,
    make_continuous,
    moving_channels,
    radian_weights,
    rotation_degrees,
    tolerances_by_kind,
)
from anim_signals.manifolds import clips


def axis_angle_quat(angle, axis):
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2.0)], math.sin(angle / 2.0) * axis])


def quat_angle(q1, q2):
    """The rotation angle (radians) between two unit quaternions."""
    return 2.0 * math.acos(min(1.0, abs(float(np.dot(q1, q2)))))


# ------------------------------------------------------------------------------------------
# Kinds
# ------------------------------------------------------------------------------------------


def test_kinds_are_one_definition():
    assert KINDS == (LOCATION, EULER, QUATERNION, SCALE, SHAPE_KEY, OTHER)
    assert len(set(KINDS)) == 6
    # the motion manifolds use the same strings, not their own
    assert (clips.EULER, clips.QUATERNION, clips.LOCATION) == (EULER, QUATERNION, LOCATION)
    assert clips.to_motion_curve is make_continuous


def test_location_mask():
    assert location_mask([LOCATION, EULER, LOCATION, OTHER]).tolist() == [True, False, True, False]
    assert location_mask([]).shape == (0,)


# ------------------------------------------------------------------------------------------
# make_continuous against a slow per-frame reference
# ------------------------------------------------------------------------------------------


def slow_unwrap(column):
    """Each frame shifted by the whole turns that bring it nearest the previous (shifted) one."""
    out = [float(column[0])]
    for v in column[1:]:
        k = round((out[-1] - float(v)) / (2.0 * math.pi))
        out.append(float(v) + 2.0 * math.pi * k)
    return np.array(out)


def slow_hemisphere(quats):
    """Each quaternion negated when it points away from the previous (already corrected) one."""
    out = [np.array(quats[0], dtype=float)]
    for q in quats[1:]:
        q = np.array(q, dtype=float)
        out.append(-q if float(np.dot(q, out[-1])) < 0.0 else q)
    return np.array(out)


def wrap(a):
    return np.pi - np.mod(np.pi - a, 2.0 * np.pi)


def test_make_continuous_matches_slow_reference_with_data_path_groups():
    """The fit's grouping: quaternions by data path, so an object's rotation and delta rotation
    quaternions (one owner) are two groups; an incomplete quaternion is left alone."""
    rng = np.random.default_rng(7)
    n = 80
    true_euler = np.cumsum(rng.normal(0.0, 0.4, size=(n, 2)), axis=0) + 3.0
    qa = np.array([axis_angle_quat(a, [1, 2, 0]) for a in np.linspace(0.0, 5.0, n)])
    qb = np.array([axis_angle_quat(a, [0, 1, 1]) for a in np.linspace(1.0, -4.0, n)])
    flips_a = np.where(rng.random(n) < 0.4, -1.0, 1.0)[:, None]
    flips_b = np.where(rng.random(n) < 0.4, -1.0, 1.0)[:, None]
    partial = rng.normal(size=(n, 2))
    values = np.column_stack([
        wrap(true_euler[:, 0]), (qa * flips_a)[:, 0], (qa * flips_a)[:, 1], rng.normal(size=n),
        (qb * flips_b), (qa * flips_a)[:, 2:], wrap(true_euler[:, 1]), partial,
    ])
    kinds = [EULER, QUATERNION, QUATERNION, LOCATION] + [QUATERNION] * 4 + [QUATERNION] * 2 + [EULER] + \
        [QUATERNION] * 2
    paths = ["rotation_euler", "rotation_quaternion", "rotation_quaternion", "location"] + \
        ["delta_rotation_quaternion"] * 4 + ["rotation_quaternion"] * 2 + ["rotation_euler"] + \
        ['pose.bones["b"].rotation_quaternion'] * 2
    before = values.copy()

    out = make_continuous(values, kinds, paths)

    np.testing.assert_array_equal(values, before)  # input untouched
    expected = values.copy()
    for j in (0, 10):
        expected[:, j] = slow_unwrap(values[:, j])
    for cols in ([1, 2, 8, 9], [4, 5, 6, 7]):
        expected[:, cols] = slow_hemisphere(values[:, cols])
    np.testing.assert_allclose(out, expected, rtol=0.0, atol=1e-12)
    # and that is the true motion again: unwrapped angles, quaternions without sign flips
    shift = out[:, [0, 10]] - true_euler  # the true angles up to whole turns, the same on every frame
    np.testing.assert_allclose(shift, np.broadcast_to(shift[0], shift.shape), atol=1e-9)
    np.testing.assert_allclose(shift[0] / (2.0 * np.pi), np.round(shift[0] / (2.0 * np.pi)), atol=1e-12)
    np.testing.assert_allclose(out[:, [1, 2, 8, 9]], qa * flips_a[0], atol=1e-12)
    np.testing.assert_allclose(out[:, 4:8], qb * flips_b[0], atol=1e-12)
    np.testing.assert_array_equal(out[:, [3, 11, 12]], values[:, [3, 11, 12]])  # location, incomplete quaternion


def test_make_continuous_rejects_a_mismatched_shape():
    with pytest.raises(ValueError, match="values must be"):
        make_continuous(np.zeros((5, 3)), [EULER, EULER])


# ------------------------------------------------------------------------------------------
# Units by kind
# ------------------------------------------------------------------------------------------


def test_tolerances_by_kind_closed_form():
    kinds = [EULER, QUATERNION, LOCATION, SCALE, SHAPE_KEY, OTHER]
    tol = tolerances_by_kind(kinds, 0.5, 0.01, 0.02)
    np.testing.assert_allclose(tol, [0.5 * math.pi / 180.0, 0.5 * math.pi / 360.0, 0.01, 0.02, 0.02, 0.02],
                               rtol=1e-15)
    assert tolerances_by_kind([], 1.0, 1.0, 1.0).shape == (0,)


def test_quaternion_tolerance_bounds_the_rotation_like_the_euler_one():
    """A quaternion component error of the quaternion tolerance turns a rotation by about the
    rotation tolerance (the 2e rule), for small tolerances."""
    deg = 0.5
    e = float(tolerances_by_kind([QUATERNION], deg, 0.0, 0.0)[0])
    q = axis_angle_quat(0.7, [1, 1, 0])
    q2 = q + np.array([0.0, 0.0, 0.0, e])  # move one component by e, then renormalise
    angle = quat_angle(q, q2 / np.linalg.norm(q2))
    assert angle <= math.radians(deg) * (1 + 1e-3)
    assert angle > 0.5 * math.radians(deg)


def test_radian_weights_closed_form_and_quaternion_scale():
    kinds = [EULER, QUATERNION, LOCATION, SCALE, OTHER]
    np.testing.assert_array_equal(radian_weights(kinds, 180.0), [1.0, 2.0, 2.0 / 180.0, 1.0, 1.0])
    np.testing.assert_array_equal(radian_weights(kinds), [1.0, 2.0, 1.0, 1.0, 1.0])  # height unknown
    np.testing.assert_array_equal(radian_weights(kinds, -3.0, quaternion=1.0), [1.0, 1.0, 1.0, 1.0, 1.0])
    # weighted, a small turn about one axis reads as its angle in radians on the quaternion components
    a = 1e-3
    dq = axis_angle_quat(a, [1, 0, 0]) - axis_angle_quat(0.0, [1, 0, 0])
    w = radian_weights([QUATERNION] * 4)
    assert float(np.linalg.norm(dq * w)) == pytest.approx(a, rel=1e-6)


def test_rotation_degrees_closed_form_and_the_2e_rule():
    values = np.array([math.pi / 2.0, 0.25, 3.0, 1.0, -0.5])
    kinds = [EULER, QUATERNION, LOCATION, OTHER, EULER]
    out = rotation_degrees(values, kinds)
    np.testing.assert_allclose(out[[0, 1, 4]], [90.0, 0.25 * 2.0 * 180.0 / math.pi, -0.5 * 180.0 / math.pi],
                               rtol=1e-15)
    assert np.isnan(out[[2, 3]]).all()
    assert QUATERNION_ANGLE == 2.0
    # a small component change e is a rotation of about 2e radians
    e = 1e-4
    q = axis_angle_quat(0.0, [0, 0, 1])
    q2 = q + np.array([0.0, 0.0, 0.0, e])
    turned = math.degrees(quat_angle(q, q2 / np.linalg.norm(q2)))
    assert float(rotation_degrees(np.array([e]), [QUATERNION])[0]) == pytest.approx(turned, rel=1e-6)


def slow_errors(max_abs, rms, kinds):
    """Per kind: the largest error and sqrt(mean of squared RMS errors), with exact sums."""
    groups: dict[str, tuple[list[float], list[float]]] = {"rot": ([], []), "loc": ([], []), "other": ([], [])}
    for mx, r, kind in zip(max_abs, rms, kinds, strict=True):
        if kind == EULER:
            key, mx, r = "rot", mx * 180.0 / math.pi, r * 180.0 / math.pi
        elif kind == QUATERNION:
            key, mx, r = "rot", 2.0 * mx * 180.0 / math.pi, 2.0 * r * 180.0 / math.pi
        else:
            key = "loc" if kind == LOCATION else "other"
        groups[key][0].append(mx)
        groups[key][1].append(r)
    out = {}
    for key, (mxs, rs) in groups.items():
        out[key] = (max(mxs) if mxs else 0.0, math.sqrt(math.fsum(x * x for x in rs) / len(rs)) if rs else 0.0)
    return out


def test_errors_by_kind_matches_slow_reference():
    rng = np.random.default_rng(3)
    kinds = list(rng.choice([EULER, QUATERNION, LOCATION, SCALE, SHAPE_KEY], size=40))
    max_abs = rng.uniform(0.0, 0.1, size=40)
    rms = max_abs * rng.uniform(0.1, 1.0, size=40)
    e = errors_by_kind(max_abs, rms, kinds)
    ref = slow_errors(max_abs, rms, kinds)
    assert (e.max_rotation_deg, e.rms_rotation_deg) == pytest.approx(ref["rot"], rel=1e-13)
    assert (e.max_location, e.rms_location) == pytest.approx(ref["loc"], rel=1e-13)
    assert (e.max_other, e.rms_other) == pytest.approx(ref["other"], rel=1e-13)


def test_errors_by_kind_closed_form_and_missing_kinds():
    e = errors_by_kind(np.array([0.5, 0.1]), np.array([3.0, 4.0]), [LOCATION, LOCATION])
    assert e.max_location == 0.5
    assert e.rms_location == pytest.approx(math.sqrt(12.5), rel=1e-15)
    assert (e.max_rotation_deg, e.rms_rotation_deg, e.max_other, e.rms_other) == (0.0, 0.0, 0.0, 0.0)
    e = errors_by_kind(np.array([math.pi / 180.0]), np.array([math.pi / 360.0]), [QUATERNION])
    assert (e.max_rotation_deg, e.rms_rotation_deg) == pytest.approx((2.0, 1.0), rel=1e-15)


# ------------------------------------------------------------------------------------------
# Moving channels; finite maxima and RMS
# ------------------------------------------------------------------------------------------


def test_moving_channels_by_span():
    values = np.zeros((5, 4))
    values[2, 1] = 0.5 * STILL_SPAN
    values[3, 2] = 2.0 * STILL_SPAN
    values[:, 3] = np.linspace(-1.0, 1.0, 5) + 7.0
    assert moving_channels(values).tolist() == [False, False, True, True]
    none = moving_channels(np.zeros((0, 3)))
    assert none.dtype == bool and none.tolist() == [False, False, False]


def test_finite_max_and_rms_skip_non_finite():
    v = np.array([np.nan, -5.0, 2.0, np.inf, 1.0, -np.inf])
    assert finite_max(v) == 2.0
    assert finite_rms(v) == pytest.approx(math.sqrt((25.0 + 4.0 + 1.0) / 3.0), rel=1e-15)
    assert finite_max(np.array([np.nan, np.inf])) == 0.0 and finite_rms(np.array([])) == 0.0
    assert finite_max(np.array([[1.0, 9.0], [np.nan, 3.0]])) == 9.0
