"""Euler discontinuity filter: flips and wraps removed, rotations unchanged (scipy as the oracle)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from anim_signals.channels import EULER_ORDERS, euler_filter
from anim_signals.manifolds.clips import to_motion_curve


def _matrices(xyz: np.ndarray, order: str) -> np.ndarray:
    # Blender's order "XYZ" applies X first: scipy's extrinsic lower-case sequence, angles in that order
    idx = ["XYZ".index(a) for a in order]
    return Rotation.from_euler(order.lower(), xyz[:, idx]).as_matrix()


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_filter_removes_flips_and_wraps_keeping_rotations(order):
    rng = np.random.default_rng(3)
    t = np.linspace(0.0, 1.0, 200)[:, None]
    smooth = np.column_stack([np.sin(2 * np.pi * t[:, 0] * f + p) for f, p in zip((1, 2, 1.5), rng.random(3))])
    smooth[:, "XYZ".index(order[1])] *= 0.8  # keep the middle angle away from gimbal lock
    raw = smooth.copy()
    axes = ["XYZ".index(a) for a in order]
    flip = rng.random(200) < 0.3
    raw[flip, axes[0]] += np.pi
    raw[flip, axes[1]] = np.pi - raw[flip, axes[1]]
    raw[flip, axes[2]] += np.pi
    raw += 2 * np.pi * rng.integers(-1, 2, size=raw.shape)
    raw = (raw + np.pi) % (2 * np.pi) - np.pi  # as an exporter writes them: in (-180, 180]
    assert np.abs(np.diff(raw, axis=0)).max() > 2.0  # the input really jumps
    out = euler_filter(raw, order)
    np.testing.assert_allclose(_matrices(out, order), _matrices(raw, order), atol=1e-9)  # same rotations
    assert np.abs(np.diff(out, axis=0)).max() < 0.2  # continuous
    # the first frame is kept, so the result is the smooth track up to whole turns
    shift = out[0] - smooth[0]
    np.testing.assert_allclose(shift, 2 * np.pi * np.round(shift / (2 * np.pi)), atol=1e-9)


def test_motion_curve_filters_euler_triples_in_any_component_order():
    order = "ZXY"
    t = np.linspace(0.0, 1.0, 60)
    smooth = np.column_stack([0.5 * np.sin(2 * np.pi * t), 0.3 * np.cos(2 * np.pi * t), t])
    raw = smooth.copy()
    raw[30:, 2] += np.pi  # flip from frame 30 (Z first, X middle, Y last)
    raw[30:, 0] = np.pi - raw[30:, 0]
    raw[30:, 1] += np.pi
    cols = [2, 0, 1]  # stored as z, x, y
    values = raw[:, cols]
    curve = to_motion_curve(values, ["EULER"] * 3, ["bone"] * 3, [order] * 3, indices=cols)
    assert np.abs(np.diff(curve, axis=0)).max() < 0.2
    # without rotation modes only whole turns are removed: the flip stays
    plain = to_motion_curve(values, ["EULER"] * 3)
    assert np.abs(np.diff(plain, axis=0)).max() > 1.0
