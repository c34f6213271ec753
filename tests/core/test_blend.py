"""Blends of clips: travel channels, closed-curve phase, weights at the ends (expectations from construction)."""

from __future__ import annotations

import numpy as np
import pytest

from anim_signals.manifolds.elastic import blend


def _walk(n: int, period: float, phase: float, speed: float, amp: float = 1.0) -> np.ndarray:
    t = np.arange(n, dtype=float)
    w = 2 * np.pi * t / period + phase
    return np.column_stack([speed * t, amp * np.sin(w), 0.6 * amp * np.cos(w), 0.3 * np.sin(2 * w)])


def test_travel_channels_blend_their_displacement():
    a = _walk(61, 60.0, 0.0, 0.05)
    b = _walk(61, 60.0, 0.0, 0.09, amp=1.3)
    half = blend(a, b, [0.5], travel=[0])[0]
    # forward travel is the weighted mean of the two clips' travel, and it keeps increasing
    assert half[-1, 0] - half[0, 0] == pytest.approx(0.5 * (a[-1, 0] - a[0, 0]) + 0.5 * (b[-1, 0] - b[0, 0]), rel=1e-9)
    assert np.all(np.diff(half[:, 0]) > 0)
    # the oscillating channels lie between the inputs' amplitudes
    amp = np.ptp(half[:, 1])
    assert np.ptp(a[:, 1]) < amp < np.ptp(b[:, 1])


def test_closed_blend_weight_one_gives_c2_from_its_own_start():
    n = 81
    a = _walk(n, 80.0, 0.0, 0.0)
    b = _walk(n, 80.0, 1.1, 0.0, amp=0.8)  # same loop shape family, another phase
    a[-1], b[-1] = a[0], b[0]
    zero, one = blend(a, b, [0.0, 1.0], closed=True)
    np.testing.assert_allclose(zero, a, atol=1e-9)
    # the closed projection and lattice warp move samples slightly; the phase must be b's own
    assert np.abs(one - b).max() < 0.08 * np.ptp(b)
    assert np.abs(one[0] - b[0]).max() < 0.08 * np.ptp(b)


def test_open_blend_end_weights():
    a = _walk(50, 45.0, 0.3, 0.0)
    b = _walk(70, 55.0, 0.9, 0.0, amp=1.2)
    zero, one = blend(a, b, [0.0, 1.0])
    assert zero.shape == a.shape and one.shape == b.shape
    np.testing.assert_allclose(zero, a, atol=1e-9)
    assert np.abs(one - b).max() < 0.08 * np.ptp(b)


def test_select_travel_keeps_forward_motion_not_sway():
    from anim_signals.manifolds.loop import select_travel

    t = np.arange(80, dtype=float)
    forward = 0.05 * t + 0.01 * np.sin(t)  # walks on
    sway = 0.3 * np.sin(2 * np.pi * t / 40) + 0.001 * t  # swings side to side, tiny drift
    still = np.zeros_like(t)
    values = np.column_stack([forward, sway, still])
    assert select_travel(values, [0, 1, 2]) == [0]
    assert select_travel(values, [1]) == []


def test_silhouette_closed_form_and_automatic_cut():
    from anim_signals.manifolds.elastic import cluster, silhouette

    # points on a line: 0, 1 | 10, 11 -> a = 1, b = mean distance to the other pair
    x = np.array([0.0, 1.0, 10.0, 11.0])
    d = np.abs(x[:, None] - x[None, :])
    labels = np.array([1, 1, 2, 2])
    expected = np.mean([(10.5 - 1) / 10.5, (9.5 - 1) / 9.5, (9.5 - 1) / 9.5, (10.5 - 1) / 10.5])
    assert silhouette(d, labels) == pytest.approx(expected)
    # three well separated groups of different sizes, one tight pair inside a group: the automatic cut
    # must find the three groups (the largest merge-height gap would split off the tight pair)
    rng = np.random.default_rng(0)
    pts = np.concatenate([rng.normal(0, 1, 5), rng.normal(40, 1, 4), rng.normal(90, 1, 6), [90.001]])
    d = np.abs(pts[:, None] - pts[None, :])
    got = cluster(d).labels
    truth = np.repeat([0, 1, 2], [5, 4, 7])
    assert len(set(got.tolist())) == 3
    for g in range(3):
        assert len(set(got[truth == g].tolist())) == 1
