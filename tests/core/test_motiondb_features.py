"""The motion database's optional velocity query feature (anim_signals.motiondb.features).

Expectations come from a slow reference written here (np.polyfit of a line through each frame and its
past frames, one frame and one channel at a time, at the frames' true times), from closed forms (a
linear ramp has its rate as slope, t^2 has slope 2 x the mean time of the fitted frames), from
invariances (causality, streaming = batch, weight 0 = the plain search) and from the plain
reconstruction called by hand on the augmented database.
"""

from __future__ import annotations

import numpy as np
import pytest

from anim_signals.motiondb import MotionDatabase, OLNGParams, reconstruct
from anim_signals.motiondb.features import (
    FeatureReconstructor,
    MotionFeature,
    causal_slope,
    reconstruct_with_feature,
)


def slow_slope(x: np.ndarray, window: int, times: np.ndarray | None = None) -> np.ndarray:
    """Least-squares slope by np.polyfit over the valid frames among the current and last ``window`` time steps."""
    n, d = x.shape
    times = np.arange(n) if times is None else times
    out = np.full((n, d), np.nan)
    for t in range(n):
        if not np.all(np.isfinite(x[t])):
            continue
        use = [s for s in range(n) if times[t] - window <= times[s] <= times[t] and s <= t
               and np.all(np.isfinite(x[s]))]
        for c in range(d):
            out[t, c] = 0.0 if len(use) < 2 else np.polyfit(times[use].astype(float), x[use, c], 1)[0]
    return out


def loop_clip(phase: np.ndarray, d: int = 6) -> np.ndarray:
    """A closed curve in d dimensions, sampled at ``phase``."""
    k = np.arange(1, d + 1)
    return np.sin(np.outer(phase, k % 3 + 1) + k)


# ------------------------------------------------------------------------------------------------
# the slope


def test_ramp_has_constant_slope_and_quadratic_closed_form():
    t = np.arange(30.0)
    x = np.column_stack([0.25 * t - 3.0, t**2])
    s = causal_slope(x, 5)
    assert s[0, 0] == 0.0 and s[0, 1] == 0.0  # one frame: no slope
    np.testing.assert_allclose(s[1:, 0], 0.25, atol=1e-12)
    # LS slope of s^2 over s = t - m + 1 .. t is 2 x their mean: 2 (t - (m - 1) / 2), m = min(t, 5) + 1
    m = np.minimum(t, 5) + 1
    np.testing.assert_allclose(s[1:, 1], (2.0 * (t - (m - 1) / 2.0))[1:], atol=1e-9)


@pytest.mark.parametrize("window", [1, 3, 8])
def test_slope_matches_slow_reference(window):
    x = np.random.default_rng(window).normal(size=(25, 3))
    np.testing.assert_allclose(causal_slope(x, window), slow_slope(x, window), atol=1e-12)


def test_database_feature_per_clip_with_names():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(12, 2)), rng.normal(size=(9, 2))
    db = MotionDatabase.from_clips([a, b], ["x", "y"], ["A", "B"])
    f = MotionFeature(window=4, weight=3.0)
    aug = f.database(db)
    assert aug.channels == ["x", "y", "d/x", "d/y"]
    assert aug.clip_names == ["A", "B"]
    np.testing.assert_array_equal(aug.clip_starts, db.clip_starts)
    np.testing.assert_array_equal(aug.frames[:, :2], db.frames)
    # clip B's first frames do not see clip A's last ones
    want = np.vstack([3.0 * slow_slope(a, 4), 3.0 * slow_slope(b, 4)])
    np.testing.assert_allclose(aug.frames[:, 2:], want, atol=1e-12)
    assert np.all(aug.frames[12, 2:] == 0.0)


def test_causal_changing_a_future_frame_changes_no_earlier_row():
    rng = np.random.default_rng(2)
    q = rng.normal(size=(40, 3))
    f = MotionFeature(window=6, weight=5.0)
    before = f.queries(q)
    q2 = q.copy()
    q2[25] += 10.0
    after = f.queries(q2)
    np.testing.assert_array_equal(after[:25], before[:25])
    # linear in the frames: the change is the feature of the impulse, reaching the frame and the 6 after it
    impulse = np.zeros_like(q)
    impulse[25] = 10.0
    np.testing.assert_allclose(after - before, f.queries(impulse), atol=1e-9)
    assert np.abs(after[25:32] - before[25:32]).max() > 1.0
    np.testing.assert_allclose(after[32:], before[32:], atol=1e-12)  # out of the window again


def test_stream_equals_batch_and_nan_frames_use_true_times():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(30, 4))
    f = MotionFeature(window=5, weight=2.0)
    st = f.stream(4)
    np.testing.assert_allclose(np.vstack([st.push(r) for r in q]), f.queries(q), atol=1e-12)
    qn = q.copy()
    qn[[7, 8, 20]] = np.nan
    rows = f.queries(qn)
    assert np.all(np.isnan(rows[[7, 8, 20]]))
    want = 2.0 * slow_slope(qn, 5)
    ok = np.isfinite(want[:, 0])
    np.testing.assert_allclose(rows[ok, 4:], want[ok], atol=1e-12)
    np.testing.assert_array_equal(rows[ok, :4], q[ok])
    st.reset()
    np.testing.assert_allclose(np.vstack([st.push(r) for r in qn]), rows, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# reconstruction


def small_db(seed: int = 4) -> tuple[MotionDatabase, list[np.ndarray]]:
    speeds = [0.05, -0.05, 0.025, -0.025]
    clips = [loop_clip(0.3 * i + s * np.arange(100)) for i, s in enumerate(speeds)]
    return MotionDatabase.from_clips(clips, [f"c{i}" for i in range(6)]), clips


def test_weight_zero_gives_the_plain_best_index_sequence():
    # random walks: no two frames tie exactly (small_db's clips share poses exactly, and the k-d tree sums
    # 12 squared differences in another order than 6, so an exact tie may break the other way)
    rng = np.random.default_rng(5)
    clips = [np.cumsum(rng.normal(0.0, 0.05, (80, 6)), axis=0) for _ in range(5)]
    db = MotionDatabase.from_clips(clips, [f"c{i}" for i in range(6)])
    p = OLNGParams(k=32, window=12, paths=4)
    for j in (0, 3):
        q = clips[j] + 0.1 * rng.standard_normal(clips[j].shape)
        plain = reconstruct(db, q, p)
        zero = reconstruct_with_feature(db, q, p, MotionFeature(window=8, weight=0.0))
        np.testing.assert_array_equal(zero.best_index, plain.best_index)
        np.testing.assert_allclose(zero.poses, plain.poses, atol=1e-5)  # the synthesis iterates to a tolerance


def test_partial_query_uses_only_its_channels_velocities_and_returns_full_poses():
    db, clips = small_db()
    names = ["c1", "c4", "c2"]
    cols = [1, 4, 2]
    q = clips[2][:60, cols] + 0.05 * np.random.default_rng(6).standard_normal((60, 3))
    f = MotionFeature(window=6, weight=4.0)
    p = OLNGParams(k=24, window=10, paths=4)
    b = reconstruct_with_feature(db, q, p, f, query_channels=names)
    assert b.poses.shape == (60, 6) and b.best.shape == (60, 6)
    # by hand: the augmented database searched over the three channels and their three velocities
    aug = f.database(db)
    qa = np.hstack([q, 4.0 * slow_slope(q, 6)])
    ref = reconstruct(aug, qa, p, names + ["d/c1", "d/c4", "d/c2"])
    np.testing.assert_array_equal(b.best_index, ref.best_index)
    np.testing.assert_allclose(b.poses, ref.poses[:, :6], atol=1e-9)
    np.testing.assert_array_equal(b.best, db.frames[b.best_index])
    # streaming, one frame at a time, gives the same
    fr = FeatureReconstructor(db, p, f, names, db_aug=aug)
    steps = [fr.step(r) for r in q]
    assert [s.best_index for s in steps] == b.best_index.tolist()
    np.testing.assert_allclose(np.vstack([s.pose for s in steps]), b.poses, atol=1e-12)


def test_feature_increases_hits_when_clips_share_poses_but_move_differently():
    # the same closed curve traversed forwards and backwards at two speeds: the pose alone does not
    # say which clip (nor, under noise, which frame); the velocity does
    db, clips = small_db()
    std = db.frames.std(axis=0)
    p = OLNGParams(k=32, window=16, paths=4)
    f = MotionFeature(window=8, weight=8.0)
    aug = f.database(db)
    rng = np.random.default_rng(0)
    hits = np.zeros(2)
    same_clip = np.zeros(2)
    for j, clip in enumerate(clips):
        idx = np.arange(db.clip_starts[j], db.clip_starts[j + 1])
        q = clip + 0.05 * std * rng.standard_normal(clip.shape)
        for i, feature in enumerate((None, f)):
            bi = reconstruct_with_feature(db, q, p, feature, db_aug=aug if feature else None).best_index
            hits[i] += np.sum(bi == idx)
            same_clip[i] += np.sum(db.clip_of(bi) == j)
    n = db.n_frames
    assert hits[1] >= hits[0] + 0.08 * n, (hits / n)  # about 0.81 -> 0.93
    assert same_clip[1] >= 0.99 * n > same_clip[0] + 0.05 * n, (same_clip / n)


def walk_db(seed: int = 5) -> tuple[MotionDatabase, list[np.ndarray]]:
    """Random walks: no two frames tie exactly."""
    rng = np.random.default_rng(seed)
    clips = [np.cumsum(rng.normal(0.0, 0.05, (80, 6)), axis=0) for _ in range(5)]
    return MotionDatabase.from_clips(clips, [f"c{i}" for i in range(6)]), clips


def test_components_are_the_principal_directions_of_the_query_channels_velocities():
    db, clips = walk_db()
    names = ["c0", "c3", "c5", "c2"]
    cols = [0, 3, 5, 2]
    f = MotionFeature(window=5, weight=3.0, components=2)
    b = f.basis(db, names)
    assert b.shape == (4, 2)
    np.testing.assert_allclose(b.T @ b, np.eye(2), atol=1e-12)
    slopes = np.vstack([slow_slope(c[:, cols], 5) for c in clips])
    _, _, vt = np.linalg.svd(slopes, full_matrices=False)
    np.testing.assert_allclose(b @ b.T, vt[:2].T @ vt[:2], atol=1e-9)  # the same subspace (signs aside)
    aug = f.database(db, names)
    assert aug.channels == db.channels + ["d/pc0", "d/pc1"]
    np.testing.assert_allclose(aug.frames[:, 6:], 3.0 * slopes @ b, atol=1e-12)
    assert MotionFeature(components=50).basis(db, names).shape == (4, 4)  # at most Q directions
    assert MotionFeature().basis(db) is None


def test_all_components_are_a_rotation_same_hits_as_per_channel_velocities():
    # with r = Q the projection is orthogonal: every distance, so every neighbour and path, is the same
    db, clips = walk_db()
    rng = np.random.default_rng(7)
    p = OLNGParams(k=24, window=12, paths=4)
    for j in (1, 4):
        q = clips[j] + 0.02 * rng.standard_normal(clips[j].shape)
        per_channel = reconstruct_with_feature(db, q, p, MotionFeature(window=6, weight=6.0))
        rotated = reconstruct_with_feature(db, q, p, MotionFeature(window=6, weight=6.0, components=6))
        np.testing.assert_array_equal(rotated.best_index, per_channel.best_index)


def test_partial_query_with_components_streams_as_batch():
    db, clips = walk_db()
    names = ["c4", "c1"]
    f = MotionFeature(window=4, weight=5.0, components=1)
    q = clips[3][:, [4, 1]] + 0.02 * np.random.default_rng(8).standard_normal((80, 2))
    q[10] = np.nan
    p = OLNGParams(k=16, window=8, paths=4)
    b = reconstruct_with_feature(db, q, p, f, query_channels=names)
    basis = f.basis(db, names)
    aug = f.database(db, names, basis)
    assert aug.channels == db.channels + ["d/pc0"]
    qa = f.queries(q, basis)
    want = 5.0 * slow_slope(q, 4) @ basis
    ok = np.isfinite(want[:, 0])
    np.testing.assert_allclose(qa[ok, 2:], want[ok], atol=1e-12)
    ref = reconstruct(aug, qa, p, names + ["d/pc0"])
    np.testing.assert_array_equal(b.best_index, ref.best_index)
    fr = FeatureReconstructor(db, p, f, names, db_aug=aug)
    steps = [fr.step(r) for r in q]
    assert steps[10] is None
    assert [s.best_index for s in steps if s is not None] == [i for k, i in enumerate(b.best_index) if k != 10]
    with pytest.raises(ValueError, match="no velocity channel 'd/c4'"):
        reconstruct_with_feature(db, q, p, MotionFeature(window=4, weight=5.0), names, db_aug=aug)
    with pytest.raises(ValueError, match="velocity channels differ"):
        reconstruct_with_feature(db, q, p, f, ["c4", "c0"], db_aug=aug)


# ------------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("kwargs, message", [
    (dict(window=0), "window"),
    (dict(window=2.5), "window"),
    (dict(weight=float("nan")), "weight"),
    (dict(weight=float("inf")), "weight"),
    (dict(weight=-1.0), "weight must be >= 0"),
    (dict(components=0), "components"),
])
def test_bad_feature_settings_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MotionFeature(**kwargs)


def test_bad_inputs_refused_with_clear_messages():
    db, clips = small_db()
    f = MotionFeature(window=4, weight=2.0)
    with pytest.raises(ValueError, match="window"):
        causal_slope(clips[0], 0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        causal_slope(np.array([[0.0], [np.nan]]), 2)
    with pytest.raises(ValueError, match=r"queries must be \(frames, 6\)"):
        reconstruct_with_feature(db, clips[0][:, :3], None, f)
    with pytest.raises(ValueError, match="not in the database: nose"):
        reconstruct_with_feature(db, clips[0][:, :1], None, f, query_channels=["nose"])
    with pytest.raises(ValueError, match="infinite"):
        f.queries(np.array([[0.0, np.inf]]))
    other = MotionDatabase.from_clips([clips[0]], db.channels)
    with pytest.raises(ValueError, match="db_aug is not this database"):
        reconstruct_with_feature(db, clips[0], None, f, db_aug=f.database(other))
    with pytest.raises(ValueError, match="velocity channels differ"):
        reconstruct_with_feature(db, clips[0], None, f, db_aug=MotionFeature(window=5, weight=2.0).database(db))
    with pytest.raises(ValueError, match="frame has 2 values, the stream 6"):
        f.stream(6).push(np.zeros(2))


# ------------------------------------------------------------------------------------------------
# the benchmark helper (scripts/benchmarking/motion_features.py)


def test_benchmark_helper_reproduces_the_benchmark_scenarios():
    """Without the feature, the helper's #1 / #3 / #4 are the benchmark's own rows (same random draws)."""
    import importlib
    import sys
    from pathlib import Path

    scripts = str(Path(__file__).resolve().parents[2] / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    bm = importlib.import_module("benchmark_motion_db")
    mf = importlib.import_module("benchmarking.motion_features")
    ds = bm.Dataset("generated", bm.synthetic_facial(3, n_recordings=2, frames=150), list(bm.ARKIT_BLENDSHAPES))
    params = OLNGParams(k=32, window=16, paths=8)
    theirs = [r for r in bm.scenarios(ds, params, True, 11, partial=False) if r["scenario"] != "#2"]
    ours = mf.compare(ds, params, {"off": None, "on": MotionFeature(window=8, weight=8.0)}, seed=11, quick=True)
    off = [r for r in ours if r["feature"] == "off"]
    assert [r["scenario"] for r in theirs] == [r["scenario"] for r in off] == ["#1", "#3", "#4"]
    for t, o in zip(theirs, off):
        assert o["frames"] == t["frames"]
        assert o["olng"] == pytest.approx(t["olng"], rel=1e-12) and o["synth"] == pytest.approx(t["synth"], rel=1e-9)
    assert (off[0]["hits"], off[0]["near"], off[0]["total"]) == (theirs[0]["hits_olng"], theirs[0]["near_olng"],
                                                                 theirs[0]["hits_total"])
    on = [r for r in ours if r["feature"] == "on"]
    assert [r["frames"] for r in on] == [r["frames"] for r in off] and on[0]["total"] == off[0]["total"]
    lines = mf.markdown(ours)
    assert len(lines) == 2 + 6 and lines[3].startswith("| generated | #1 | on | 8 | 8 |")


def test_docstring_examples_run():
    """The module's Examples (test_docstrings.py does not list this module yet)."""
    import doctest
    import importlib

    module = importlib.import_module("anim_signals.motiondb.features")
    tests = [t for t in doctest.DocTestFinder().find(module) if t.examples]
    assert len(tests) >= 3
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).failed == 0
