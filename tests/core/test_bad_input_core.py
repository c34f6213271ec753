"""Every public core entry point the tools use, walked through hostile input.

Each row: an entry point called with one bad argument (the others valid) must raise ValueError
whose message names the argument (or the problem) -- never an IndexError, a LinAlgError, a
numpy/pycma message, or a result holding NaN/inf.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from anim_signals import fit_channels, fit_latent_spline, fit_uniform_spline, iter_fit_channels
from anim_signals.manifolds import (
    blend,
    cluster,
    distance_matrix,
    elastic_distance,
    find_cycle,
    iter_distance_matrix,
    karcher_mean,
    linear_distance,
    make_loop,
    nearest,
    resample,
)
from anim_signals.meshio import read_mdd, read_pc2, write_pc2
from anim_signals.motiondb import MotionDatabase, OLNGParams, iter_reconstruct, read_csv, reconstruct
from anim_signals.posespace import build_pose_space, resample_times, resampled_space
from anim_signals.splines import interpolating_curve
from anim_signals.transfer import open_cylinder, transfer_by_examples

NAN, INF = float("nan"), float("inf")
FRAMES = np.arange(40.0)
WAVE = np.column_stack([np.sin(FRAMES / 5.0), np.cos(FRAMES / 7.0), 0.5 * np.sin(FRAMES / 3.0)])


def with_value(array, index, value):
    out = np.array(array, dtype=float, copy=True)
    out[index] = value
    return out


def loop_clip(n=60):
    t = np.linspace(0.0, 3.0 * 2 * np.pi, n)
    return np.column_stack([np.sin(t), np.cos(2 * t), 0.2 * t])


def pose_frames(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 12))


POSE = pose_frames()


def pose_space():
    return build_pose_space(POSE)


def database():
    t = np.linspace(0.0, 4 * np.pi, 120)
    return MotionDatabase.from_clips([np.column_stack([np.sin(t), np.cos(t), np.sin(2 * t)])], ["a", "b", "c"])


def cylinder_examples():
    verts, _ = open_cylinder(8, 3, triangles=True)
    verts = np.asarray(verts, dtype=float)
    bent = verts + np.array([0.1, 0.0, 0.0]) * verts[:, 2:3]
    twisted = verts + np.array([0.0, 0.1, 0.0]) * verts[:, 2:3] ** 2
    return np.stack([verts, bent, twisted])


EXAMPLES = cylinder_examples()

# (id, call, words the message must contain)
CASES = [
    # -- splines: the fit ------------------------------------------------------------------
    ("fit empty (0, 3)", lambda: fit_latent_spline(np.zeros((0, 3)), max_error=0.1), "values"),
    ("fit max_error nan", lambda: fit_latent_spline(WAVE, max_error=NAN), "max_error"),
    ("fit max_error -1", lambda: fit_latent_spline(WAVE, max_error=-1.0), "max_error"),
    ("fit max_error 0", lambda: fit_latent_spline(WAVE, max_error=0.0), "max_error"),
    ("fit max_error wrong length", lambda: fit_latent_spline(WAVE, max_error=[0.1, 0.1]), "max_error"),
    ("fit NaN frame", lambda: fit_latent_spline(with_value(WAVE, (5, 1), NAN), max_error=0.1), "values"),
    ("fit inf value", lambda: fit_latent_spline(with_value(WAVE, (5, 1), INF), max_error=0.1), "values"),
    ("fit 1e308 value", lambda: fit_latent_spline(with_value(WAVE, (5, 1), 1e308), max_error=0.1), "values"),
    ("fit population 1", lambda: fit_latent_spline(WAVE, internal_knots=3, population=1), "population"),
    ("fit population 0", lambda: fit_latent_spline(WAVE, max_error=0.1, population=0), "population"),
    ("fit internal_knots -3", lambda: fit_latent_spline(WAVE, internal_knots=-3), "internal_knots"),
    ("fit internal_knots 2.5", lambda: fit_latent_spline(WAVE, internal_knots=2.5), "internal_knots"),
    ("fit max_iterations -1", lambda: fit_latent_spline(WAVE, internal_knots=3, max_iterations=-1), "max_iterations"),
    ("fit degree 4", lambda: fit_latent_spline(WAVE, max_error=0.1, degree=4), "degree"),
    ("fit multiplicity 3", lambda: fit_latent_spline(WAVE, max_error=0.1, multiplicity=3), "multiplicity"),
    ("fit pca_tolerance nan", lambda: fit_latent_spline(WAVE, max_error=0.1, pca_tolerance=NAN), "pca_tolerance"),
    ("fit one frame", lambda: fit_latent_spline(WAVE[:1], max_error=0.1), "values"),
    ("fit frames NaN", lambda: fit_latent_spline(WAVE, with_value(FRAMES, 3, NAN), max_error=0.1), "frames"),
    ("fit frames duplicated", lambda: fit_latent_spline(WAVE, with_value(FRAMES, 3, 2.0), max_error=0.1), "frames"),
    ("fit frames wrong length", lambda: fit_latent_spline(WAVE, FRAMES[:-1], max_error=0.1), "frames"),
    ("fit strings", lambda: fit_latent_spline([["a", "b"]] * 5, max_error=0.1), "values"),
    ("fit ragged", lambda: fit_latent_spline([[1.0, 2.0], [3.0]], max_error=0.1), "values"),
    ("fit 3-d values", lambda: fit_latent_spline(np.zeros((5, 2, 2)), max_error=0.1), "values"),
    ("fit 1e30 within 0.01", lambda: fit_channels(1e30 * WAVE, FRAMES, 0.01), "tolerance"),
    ("fit tolerance inf", lambda: fit_channels(WAVE, FRAMES, INF), "tolerance"),
    ("fit tolerance subnormal", lambda: fit_channels(WAVE, FRAMES, 5e-324), "tolerance"),
    ("fit mode", lambda: fit_channels(WAVE, FRAMES, 0.1, mode="FAST"), "mode"),
    ("fit continuity", lambda: fit_channels(WAVE, FRAMES, 0.1, continuity="C3"), "continuity"),
    ("fit channels internal_knots -1", lambda: fit_channels(WAVE, FRAMES, 0.1, internal_knots=-1), "internal_knots"),
    ("iter_fit_channels refuses when called", lambda: iter_fit_channels(WAVE, FRAMES, -1.0), "tolerance"),
    ("uniform too many knots", lambda: fit_uniform_spline(WAVE, internal_knots=100), "internal_knots"),
    ("uniform knots nan", lambda: fit_uniform_spline(WAVE, internal_knots=NAN), "internal_knots"),
    ("interpolating mismatched", lambda: interpolating_curve(FRAMES, FRAMES[:-2]), "values"),
    ("interpolating empty", lambda: interpolating_curve([], []), "frames"),
    # -- manifolds: loop, cycle, elastic, blend, clustering ---------------------------------
    ("loop 3 frames", lambda: make_loop(np.zeros((3, 2))), "values"),
    ("loop NaN", lambda: make_loop(with_value(loop_clip(), (4, 0), NAN)), "values"),
    ("loop 1e308", lambda: make_loop(with_value(loop_clip(), (4, 0), 1e308)), "values"),
    ("loop travel out of range", lambda: make_loop(loop_clip(), travel=[5]), "travel"),
    ("loop travel negative", lambda: make_loop(loop_clip(), travel=[-1]), "travel"),
    ("loop weights zero", lambda: make_loop(loop_clip(), weights=[1.0, 0.0, 1.0]), "weights"),
    ("loop weights nan", lambda: make_loop(loop_clip(), weights=[1.0, NAN, 1.0]), "weights"),
    ("loop tol -1", lambda: make_loop(loop_clip(), tol=-1.0), "tol"),
    ("loop max_iter 0", lambda: make_loop(loop_clip(), max_iter=0), "max_iter"),
    ("loop velocity_window -2", lambda: make_loop(loop_clip(), velocity_window=-2), "velocity_window"),
    ("cycle empty", lambda: find_cycle(np.zeros((0, 3))), "values"),
    ("cycle inf", lambda: find_cycle(with_value(loop_clip(), (2, 1), INF)), "values"),
    ("cycle constant", lambda: find_cycle(np.ones((50, 2))), "does not move"),
    ("cycle min_period -3", lambda: find_cycle(loop_clip(), min_period=-3), "min_period"),
    ("cycle max_period 2.5", lambda: find_cycle(loop_clip(), max_period=2.5), "max_period"),
    ("cycle bounds crossed", lambda: find_cycle(loop_clip(), min_period=50, max_period=10), "period"),
    ("elastic one frame", lambda: elastic_distance(loop_clip()[:1], loop_clip()), "c1"),
    ("elastic NaN", lambda: elastic_distance(loop_clip(), with_value(loop_clip(), (3, 2), NAN)), "c2"),
    ("elastic channel mismatch", lambda: elastic_distance(loop_clip(), loop_clip()[:, :2]), "channels"),
    ("elastic constant", lambda: elastic_distance(np.ones((20, 3)), loop_clip()), "does not move"),
    ("elastic n_samples 1", lambda: elastic_distance(loop_clip(), loop_clip(), n_samples=1), "n_samples"),
    ("linear n_samples -5", lambda: linear_distance(loop_clip(), loop_clip(), n_samples=-5), "n_samples"),
    ("matrix one clip", lambda: distance_matrix([loop_clip()]), "curves"),
    ("matrix NaN clip", lambda: distance_matrix([loop_clip(), with_value(loop_clip(), (1, 1), NAN)]), "curves[1]"),
    ("matrix metric", lambda: distance_matrix([loop_clip(), loop_clip()], metric="cosine"), "metric"),
    ("iter matrix refuses when called", lambda: iter_distance_matrix([loop_clip()]), "curves"),
    ("blend weight 2", lambda: blend(loop_clip(), loop_clip(), [0.5, 2.0]), "weights"),
    ("blend weight nan", lambda: blend(loop_clip(), loop_clip(), [NAN]), "weights"),
    ("blend travel out of range", lambda: blend(loop_clip(), loop_clip(), [0.5], travel=[7]), "travel"),
    ("karcher empty", lambda: karcher_mean([]), "curves"),
    ("karcher iterations -1", lambda: karcher_mean([loop_clip(), loop_clip()], iterations=-1), "iterations"),
    ("resample n_samples 1", lambda: resample(loop_clip(), 1), "n_samples"),
    ("resample NaN", lambda: resample(with_value(loop_clip(), (0, 0), NAN), 10), "values"),
    ("cluster NaN", lambda: cluster(np.array([[0.0, NAN], [NAN, 0.0]])), "dist"),
    ("cluster not square", lambda: cluster(np.zeros((2, 3))), "dist"),
    ("cluster negative", lambda: cluster(np.array([[0.0, -1.0], [-1.0, 0.0]])), "dist"),
    ("cluster n_clusters -2", lambda: cluster(np.array([[0.0, 1.0], [1.0, 0.0]]), n_clusters=-2), "n_clusters"),
    ("cluster method", lambda: cluster(np.array([[0.0, 1.0], [1.0, 0.0]]), method="best"), "method"),
    ("nearest index out of range", lambda: nearest(np.array([[0.0, 1.0], [1.0, 0.0]]), 5), "index"),
    # -- pose space -------------------------------------------------------------------------
    ("pose 3 frames", lambda: build_pose_space(POSE[:3]), "frames"),
    ("pose NaN frame", lambda: build_pose_space(with_value(POSE, (2, 2), NAN)), "NaN"),
    ("pose 1e308", lambda: build_pose_space(with_value(POSE, (2, 2), 1e308)), "too large"),
    ("pose tolerance 0", lambda: build_pose_space(POSE, tolerance=0.0), "tolerance"),
    ("pose k -1", lambda: build_pose_space(POSE, k=-1), "k"),
    ("pose row_size 0", lambda: build_pose_space(POSE, row_size=0), "row_size"),
    ("pose frames NaN", lambda: build_pose_space(POSE, frames=with_value(np.arange(8.0), 2, NAN)), "frames"),
    ("pose frames decreasing", lambda: build_pose_space(POSE, frames=np.arange(8.0)[::-1]), "frames"),
    ("pose pins out of range", lambda: build_pose_space(POSE, pins={20: (0.0, 0.0)}), "pins"),
    ("pose pins NaN", lambda: build_pose_space(POSE, pins={1: (NAN, 0.0)}), "pins[1]"),
    ("edit control point NaN", lambda: pose_space().with_control_point(1, (NAN, 0.0)), "xy"),
    ("edit control point 3 numbers", lambda: pose_space().with_control_point(1, (0.0, 0.0, 1.0)), "xy"),
    ("edit control point index", lambda: pose_space().with_control_point(99, (0.0, 0.0)), "control point"),
    ("edit pins NaN", lambda: pose_space().with_pins({0: (INF, 0.0)}), "pins[0]"),
    ("edit times NaN frame", lambda: pose_space().with_times([1.0, NAN, 3.0], [1.0, 2.0, 3.0]), "frames"),
    ("edit times NaN tau", lambda: pose_space().with_times([1.0, 2.0, 3.0], [1.0, NAN, 3.0]), "taus"),
    ("stroke NaN", lambda: pose_space().with_stroke([[0.0, 0.0], [NAN, 1.0]], 10), "stroke"),
    ("stroke n_frames 1", lambda: pose_space().with_stroke([[0.0, 0.0], [1.0, 1.0]], 1), "n_frames"),
    ("stroke n_frames 1e12", lambda: pose_space().with_stroke([[0.0, 0.0], [1.0, 1.0]], 10**12), "n_frames"),
    ("loop after_time NaN", lambda: pose_space().with_loop(NAN, [[0.0, 0.0]]), "after_time"),
    ("loop frames_added 1e12", lambda: pose_space().with_loop(3.5, [[0.0, 0.0]], frames_added=10**12),
     "frames_added"),
    ("resample NaN taus", lambda: pose_space().resample([1.0, NAN]), "taus"),
    ("retime speed 0", lambda: resample_times(pose_space().time, mode="SPEED", speed=0.0), "speed"),
    ("retime speed 1e-300", lambda: resample_times(pose_space().time, mode="SPEED", speed=1e-300), "frames"),
    ("retime fps nan", lambda: resample_times(pose_space().time, mode="FRAME_RATE", fps_to=NAN), "fps_to"),
    ("retime range NaN", lambda: resample_times(pose_space().time, mode="RANGE", range_start=NAN), "range_start"),
    ("retime mode", lambda: resample_times(pose_space().time, mode="FAST"), "mode"),
    ("resampled_space NaN", lambda: resampled_space(pose_space(), [1.0, 2.0], [1.0, NAN]), "taus"),
    ("resampled_space shapes", lambda: resampled_space(pose_space(), [1.0, 2.0, 3.0], [1.0, 2.0]), "taus"),
    # -- motion database --------------------------------------------------------------------
    ("db no frames", lambda: MotionDatabase.from_clips([np.zeros((0, 3))], ["a", "b", "c"]), "empty"),
    ("db NaN", lambda: MotionDatabase.from_clips([with_value(np.zeros((5, 3)), (1, 1), NAN)], ["a", "b", "c"]),
     "clip 0"),
    ("db 1e308", lambda: MotionDatabase.from_clips([with_value(np.zeros((5, 3)), (1, 1), 1e308)], ["a", "b", "c"]),
     "clip 0"),
    ("db width", lambda: MotionDatabase.from_clips([np.zeros((5, 2))], ["a", "b", "c"]), "channels"),
    ("reconstruct k 0", lambda: reconstruct(database(), np.zeros((3, 3)), OLNGParams(k=0)), "k"),
    ("reconstruct k nan", lambda: reconstruct(database(), np.zeros((3, 3)), OLNGParams(k=NAN)), "k"),
    ("reconstruct k > frames", lambda: reconstruct(database(), np.zeros((3, 3)), OLNGParams(k=10**6)), "k"),
    ("reconstruct stay 1", lambda: reconstruct(database(), np.zeros((3, 3)), OLNGParams(stay=1.0)), "stay"),
    ("reconstruct inf query", lambda: reconstruct(database(), with_value(np.zeros((3, 3)), (1, 1), INF),
                                                  OLNGParams(k=8, window=4, paths=2)), "queries"),
    ("reconstruct width", lambda: iter_reconstruct(database(), np.zeros((3, 2)), OLNGParams(k=8)), "queries"),
    # -- deformation transfer ---------------------------------------------------------------
    ("transfer NaN frame", lambda: transfer_by_examples(with_value(EXAMPLES[:1], (0, 3, 1), NAN), EXAMPLES,
                                                        EXAMPLES), "NaN"),
    ("transfer vertex mismatch", lambda: transfer_by_examples(EXAMPLES[:, :-1], EXAMPLES, EXAMPLES), "vertices"),
    ("transfer examples mismatch", lambda: transfer_by_examples(EXAMPLES, EXAMPLES, EXAMPLES[:2]), "example"),
]


@pytest.mark.parametrize(("call", "words"), [pytest.param(c, w, id=i) for i, c, w in CASES])
def test_hostile_input_gives_a_value_error_naming_it(call, words):
    with pytest.raises(ValueError) as caught:
        call()
    assert words.lower() in str(caught.value).lower(), str(caught.value)


def test_fit_is_refused_not_wrong_at_1e30():
    """The fit reported "within tolerance, max 0" at 1e30 while writing keys that miss the data."""
    with pytest.raises(ValueError, match=r"channel 0 reaches 1e\+30.*tolerance 0.01"):
        fit_channels(1e30 * WAVE, FRAMES, 0.01)
    # the same shape at a scale float64 can fit: finite keys, truly within tolerance
    fit = fit_channels(1e6 * WAVE, FRAMES, 1.0)
    assert fit.within_tolerance
    assert np.abs(fit.evaluate(FRAMES) - 1e6 * WAVE).max() <= 1.0 + 1e-6
    for curve in fit.curves:
        assert np.isfinite(curve.handle_left).all() and np.isfinite(curve.handle_right).all()


def test_a_constant_huge_channel_is_still_one_exact_key():
    values = np.column_stack([np.full(40, 1e30), np.sin(FRAMES / 5.0)])
    fit = fit_channels(values, FRAMES, 0.01)
    assert fit.knot_counts[0] == 1 and fit.curves[0].co[0, 1] == 1e30


def test_control_point_edit_with_nan_leaves_the_space_unchanged():
    space = pose_space()
    before = space.time.control.copy()
    with pytest.raises(ValueError, match="xy"):
        space.with_control_point(2, (0.0, NAN))
    np.testing.assert_array_equal(space.time.control, before)


def test_live_link_cells_at_1e308_are_missing_not_infinite(tmp_path):
    path = tmp_path / "take.csv"
    header = "Timecode,BlendShapeCount,JawOpen,MouthClose\n"
    rows = [f"00:00:00:{i:02d}.000,2,{v},0.1\n" for i, v in enumerate(["0.2", "1e308", "inf", "0.3"])]
    path.write_text(header + "".join(rows))
    rec = read_csv(path)
    assert np.isfinite(rec.values[[0, 3]]).all()
    assert np.isnan(rec.values[[1, 2], 0]).all()
    assert list(rec.nan_rows) == [1, 2]
    assert any("2 cell(s)" in w for w in rec.warnings)


def _pc2_bytes(n_verts, n_samples, points):
    return b"POINTCACHE2\0" + struct.pack("<iiffi", 1, n_verts, 0.0, 1.0, n_samples) + points.astype("<f4").tobytes()


@pytest.mark.parametrize(
    ("header", "points", "words"),
    [
        ((2, 3), np.zeros((3, 2, 3))[:2], "truncated"),  # cut short: refused, not padded with the rest pose
        ((-2, 3), np.zeros((3, 2, 3)), "not a PC2 file with points"),
        ((2, 0), np.zeros((0, 2, 3)), "not a PC2 file with points"),
        ((2, 3), with_value(np.zeros((3, 2, 3)), (1, 0, 0), NAN), "sample 1"),
    ],
)
def test_point_cache_readers_refuse_bad_files(tmp_path, header, points, words):
    path = tmp_path / "bad.pc2"
    path.write_bytes(_pc2_bytes(*header, points))
    with pytest.raises(ValueError, match=words):
        read_pc2(path)


def test_mdd_reader_refuses_nan_coordinates(tmp_path):
    path = tmp_path / "bad.mdd"
    body = np.zeros((2, 1, 3))
    body[1, 0, 2] = NAN
    path.write_bytes(struct.pack(">ii", 2, 1) + np.array([0.0, 1.0], ">f4").tobytes() + body.astype(">f4").tobytes())
    with pytest.raises(ValueError, match="sample 1"):
        read_mdd(path)


def test_point_cache_round_trip_still_reads(tmp_path):
    samples = np.arange(18.0).reshape(3, 2, 3)
    write_pc2(tmp_path / "ok.pc2", samples, start=2.0, rate=1.0)
    back, start, rate = read_pc2(tmp_path / "ok.pc2")
    np.testing.assert_array_equal(back, samples)


def test_find_cycle_on_a_clip_with_every_frame_held_twice():
    """More than half the steps are zero: the clip still moves (it was refused as 'does not move')."""
    k = np.arange(120)
    clip = np.column_stack([np.sin(2 * np.pi * k / 30), np.cos(2 * np.pi * k / 30)])
    doubled = np.repeat(clip, 2, axis=0)
    cycle = find_cycle(doubled)
    assert abs(cycle.period - 60) <= 2


def test_find_cycle_on_a_long_clip_is_searched_coarse_to_fine():
    """Beyond MAX_SEARCH_FRAMES the quadratic search runs on every k-th frame (said in the result)
    and still finds the period to the frame after the full-resolution refinement."""
    from anim_signals.manifolds.loop import MAX_SEARCH_FRAMES

    n = 3 * MAX_SEARCH_FRAMES
    k = np.arange(n)
    period = 97
    clip = np.column_stack([np.sin(2 * np.pi * k / period), np.cos(4 * np.pi * k / period + 1.0)])
    cycle = find_cycle(clip, min_period=60, max_period=4 * period)
    assert cycle.search_step == 3
    assert cycle.period % period in (0, 1, period - 1)
    assert np.abs(clip[cycle.stop] - clip[cycle.start]).max() < 0.1
    short = find_cycle(clip[:600])
    assert short.search_step == 1
