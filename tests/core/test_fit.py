"""The seed's latent free-knot fit and the tolerance guarantee, on generated signals."""

import numpy as np
import pytest

import anim_signals as A
from anim_signals.channels import check_finite, continuous_quaternions, unwrap_angles

X101 = np.linspace(0, 1, 101)
TEST_FUNCTIONS = {  # Yoshimoto et al. 2003 / Galvez & Iglesias 2011
    "cliff": 90 / (1 + np.exp(-100 * (X101 - 0.4))),
    "big_spike": 100 * np.exp(-np.abs(10 * X101 - 5)) + (10 * X101 - 5) ** 5 / 500,
    "smooth_peak": np.sin(X101) + 2 * np.exp(-30 * X101**2),
}


def burst_clip(n=240, m=6, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    calm = np.sin(2 * np.pi * 2 * t[:, None] + rng.uniform(0, 6, m)) * rng.uniform(0.2, 1, m)
    burst = np.exp(-(((t - 0.7) / 0.02) ** 2))[:, None] * rng.normal(0, 2, m)
    return calm + burst


def test_distortion_hand_computed():
    y = np.array([[0.0], [1.0], [2.0], [3.0]])
    approx = y + np.array([[0.1], [-0.1], [0.1], [-0.1]])
    # 100 * sqrt(4 * 0.01 / (2.25 + 0.25 + 0.25 + 2.25))
    assert A.distortion(y, approx) == pytest.approx(100 * np.sqrt(0.04 / 5.0))


@pytest.mark.parametrize("name", sorted(TEST_FUNCTIONS))
def test_cma_knots_beat_uniform_knots(name):
    y = TEST_FUNCTIONS[name]
    model = A.fit_latent_spline(y, internal_knots=4, population=100, max_iterations=30, seed=1)
    uniform = A.fit_uniform_spline(y, internal_knots=4)
    assert model.distortion(y) < 0.7 * uniform.distortion(y)
    assert model.internal_knots.size == 4 and model.knots.size == 4 + 8


def test_cma_beats_uniform_on_multichannel_burst():
    y = burst_clip()
    model = A.fit_latent_spline(y, internal_knots=10, population=40, max_iterations=40)
    uniform = A.fit_uniform_spline(y, internal_knots=10)
    assert model.distortion(y) < 0.6 * uniform.distortion(y)
    assert model.n_components <= y.shape[1]
    # knots gather around the burst (t = 0.7 of 239 frames)
    near = np.abs(model.internal_knots - 0.7 * 239) < 20
    assert near.sum() >= 3


def test_fixed_seed_is_deterministic():
    y = burst_clip(seed=2)
    a = A.fit_latent_spline(y, internal_knots=6, population=20, max_iterations=15, seed=7)
    b = A.fit_latent_spline(y, internal_knots=6, population=20, max_iterations=15, seed=7)
    np.testing.assert_array_equal(a.knots, b.knots)
    np.testing.assert_array_equal(a.control_points, b.control_points)


def test_exact_recovery_of_spline_data():
    frames = np.arange(121.0)
    internal = np.array([30.0, 55.0, 80.0])
    from scipy.interpolate import BSpline

    knots = A.bspline.clamped_knots(internal, 0.0, 120.0, 3)
    ctrl = np.random.default_rng(1).normal(size=(knots.size - 4, 2))
    y = BSpline(knots, ctrl, 3)(frames)
    model = A.fit_latent_spline(y, frames, max_error=1e-6)
    assert model.max_error <= 1e-6
    assert model.internal_knots.size <= 6


@pytest.mark.parametrize("mode", ["LATENT", "PER_CHANNEL", "AUTO"])
@pytest.mark.parametrize("continuity", ["C2", "C1"])
def test_tolerance_always_met(mode, continuity):
    y = burst_clip(n=180, m=4, seed=3)
    y[:, 0] += np.random.default_rng(0).normal(0, 0.002, 180)  # mocap-like jitter
    frames = np.arange(180.0) + 10
    tol = np.array([0.01, 0.02, 0.05, 0.01])
    fit = A.fit_channels(y, frames, tol, mode=mode, continuity=continuity)
    assert fit.within_tolerance
    err = np.abs(fit.evaluate(frames) - y).max(axis=0)
    assert np.all(err <= tol)
    assert fit.n_keys < 180 * 4  # it reduced something
    assert fit.mode_used in ("LATENT", "PER_CHANNEL")


def test_auto_keeps_the_cheaper_mode():
    y = burst_clip(n=150, m=3, seed=4)
    tol = np.full(3, 0.01)
    counts = {m: A.fit_channels(y, np.arange(150.0), tol, mode=m).n_keys for m in ("LATENT", "PER_CHANNEL")}
    assert A.fit_channels(y, np.arange(150.0), tol, mode="AUTO").n_keys == min(counts.values())


def _runs_of_auto(monkeypatch, y, tol):
    """AUTO's fit of ``y`` and the modes it ran (a spy on the fitting runs)."""
    from anim_signals.splines import fitting

    ran = []
    real = fitting._fit_run

    def spy(samples, tol, moving, mode, *args, **kwargs):
        ran.append(mode)
        return (yield from real(samples, tol, moving, mode, *args, **kwargs))

    monkeypatch.setattr(fitting, "_fit_run", spy)
    fit = A.fit_channels(y, np.arange(float(len(y))), tol, mode="AUTO")
    monkeypatch.undo()
    return fit, ran


def test_auto_skips_a_latent_spline_that_cannot_win(monkeypatch):
    """18 smooth curves and 2 random walks: one shared knot vector would key all 20 curves as often
    as the walks need (fitted on its own, about 5x the per-curve keys); AUTO does not fit it."""
    t = np.linspace(0, 1, 200)
    rng = np.random.default_rng(0)
    y = np.column_stack([np.sin(2 * np.pi * t[:, None] + rng.uniform(0, 6, 18)),
                         np.cumsum(rng.normal(0, 0.05, (200, 2)), axis=0)])
    auto, ran = _runs_of_auto(monkeypatch, y, 0.01)
    per_curve = A.fit_channels(y, np.arange(200.0), 0.01, mode="PER_CHANNEL")
    latent = A.fit_channels(y, np.arange(200.0), 0.01, mode="LATENT")
    assert ran == ["PER_CHANNEL"]
    assert latent.n_keys > 2 * per_curve.n_keys  # skipping it lost nothing
    # both continuities: the per-curve runs, and no latent one
    from anim_signals.splines import fitting

    both = []
    real = fitting._fit_run
    monkeypatch.setattr(fitting, "_fit_run", lambda s, t, mv, mode, *a, **k: both.append(mode) or real(s, t, mv, mode,
                                                                                                        *a, **k))
    A.fit_channels(y, np.arange(200.0), 0.01, mode="AUTO", continuity="AUTO")
    monkeypatch.undo()
    assert both == ["PER_CHANNEL", "PER_CHANNEL"]
    assert auto.mode_used == "PER_CHANNEL"
    for a, b in zip(auto.curves, per_curve.curves, strict=True):
        np.testing.assert_array_equal(a.co, b.co)
        np.testing.assert_array_equal(a.handle_left, b.handle_left)


def test_auto_fits_the_latent_spline_where_it_may_win(monkeypatch):
    """Curves alike in how many keys they need: the latent spline is fitted too (here it writes a
    few more keys than per curve; AUTO keeps the fewer)."""
    y = burst_clip(n=150, m=6, seed=1)
    auto, ran = _runs_of_auto(monkeypatch, y, 0.01)
    assert ran == ["PER_CHANNEL", "LATENT"]
    counts = {m: A.fit_channels(y, np.arange(150.0), 0.01, mode=m).n_keys for m in ("LATENT", "PER_CHANNEL")}
    assert auto.n_keys == min(counts.values()) and auto.mode_used == min(counts, key=counts.get)


def test_auto_keeps_the_latent_spline_on_equal_keys():
    """Two identical curves at one tolerance: both modes write the same keys; AUTO keeps the
    latent spline (listed first), whose keys share their frames."""
    t = np.linspace(0, 1, 120)
    y = np.column_stack([np.sin(5 * t), np.sin(5 * t)])
    counts = {m: A.fit_channels(y, np.arange(120.0), 0.001, mode=m).n_keys for m in ("LATENT", "PER_CHANNEL")}
    fit = A.fit_channels(y, np.arange(120.0), 0.001, mode="AUTO")
    assert counts["LATENT"] == counts["PER_CHANNEL"] == fit.n_keys
    assert fit.mode_used == "LATENT"


def test_noise_beyond_knot_spacing_falls_back_to_exact_keys():
    y = np.random.default_rng(5).normal(0, 1, (60, 1))
    fit = A.fit_channels(y, np.arange(60.0), 1e-4, mode="PER_CHANNEL")
    assert fit.within_tolerance
    np.testing.assert_allclose(fit.evaluate(np.arange(60.0))[:, 0], y[:, 0], atol=1e-4)


def test_constant_channels_become_one_key():
    y = np.column_stack([np.full(50, 2.5), np.linspace(0, 1, 50), 3 + 1e-5 * np.sin(np.arange(50))])
    fit = A.fit_channels(y, np.arange(50.0), 0.001)
    assert fit.curves[0].n_keys == 1 and fit.curves[2].n_keys == 1
    assert fit.curves[1].n_keys == 2  # a straight line is two keys
    assert fit.within_tolerance


def test_snap_to_frames_puts_keys_on_whole_frames():
    y = burst_clip(n=120, m=2, seed=6)
    frames = np.arange(120.0)
    fit = A.fit_channels(y, frames, 0.02, snap_to_frames=True)
    assert fit.within_tolerance
    for curve in fit.curves:
        np.testing.assert_array_equal(curve.co[:, 0], np.round(curve.co[:, 0]))


def test_progress_reports_and_cancel():
    y = burst_clip(n=100, m=3)
    seen = []
    A.fit_channels(y, np.arange(100.0), 0.01, progress=lambda f: seen.append(f))
    assert seen and seen[-1] == 1.0 and all(0 <= f <= 1 for f in seen)
    with pytest.raises(A.FitCancelled):
        A.fit_channels(y, np.arange(100.0), 0.01, progress=lambda f: False)


@pytest.mark.parametrize(
    "values, message",
    [
        (np.array([[0.0], [np.nan], [1.0], [2.0]]), "NaN"),
        (np.array([[0.0], [np.inf], [1.0], [2.0]]), "NaN"),
        (np.array([[0.0], [1.0]]), "needs at least 4"),
    ],
)
def test_bad_input_is_refused_clearly(values, message):
    with pytest.raises(ValueError, match=message):
        A.fit_channels(values, np.arange(float(len(values))), 0.01)


def test_bad_arguments():
    y = burst_clip(n=20, m=1)
    with pytest.raises(ValueError, match="increasing"):
        A.fit_channels(y, np.zeros(20), 0.01)
    with pytest.raises(ValueError, match="positive"):
        A.fit_channels(y, np.arange(20.0), 0.0)
    with pytest.raises(ValueError, match="degree"):
        A.fit_channels(y, np.arange(20.0), 0.1, degree=5)


def test_unwrap_and_quaternion_continuity():
    angles = np.radians(np.array([170.0, 178.0, -176.0, -170.0]))[:, None]
    np.testing.assert_allclose(np.degrees(unwrap_angles(angles))[:, 0], [170, 178, 184, 190])
    q = np.array([[1.0, 0, 0, 0], [0.99, 0.1, 0, 0], [-0.98, -0.2, 0, 0], [-0.95, -0.3, 0, 0]])
    fixed = continuous_quaternions(q)
    assert np.all(np.einsum("ij,ij->i", fixed[1:], fixed[:-1]) > 0)
    np.testing.assert_allclose(np.abs(fixed), np.abs(q))
    with pytest.raises(ValueError, match="bone.x"):
        check_finite(np.array([[0.0, np.nan]]), ["loc", "bone.x"])


def test_model_is_frozen_and_serialisable():
    y = TEST_FUNCTIONS["cliff"]
    model = A.fit_latent_spline(y, internal_knots=3, population=16, max_iterations=5)
    with pytest.raises(AttributeError):
        model.rms = 0.0  # type: ignore[misc]
    clone = A.SplineModel(model.knots.copy(), model.control_points.copy(), model.degree, model.rms, model.max_error)
    np.testing.assert_array_equal(clone.evaluate(X101 * 100), model.evaluate(X101 * 100))


def test_free_handle_pruning_keeps_tolerance_and_removes_keys():
    y = np.column_stack([TEST_FUNCTIONS["smooth_peak"], TEST_FUNCTIONS["cliff"]])
    frames = np.arange(101.0)
    tol = 0.01 * np.ptp(y, axis=0)
    plain = A.fit_channels(y, frames, tol, mode="PER_CHANNEL")
    pruned = A.fit_channels(y, frames, tol, mode="PER_CHANNEL", free_handles=True)
    assert pruned.within_tolerance
    assert np.all(np.abs(pruned.evaluate(frames) - y) <= tol)
    assert pruned.n_keys < plain.n_keys
    for curve in pruned.curves:  # handles never overlap, so Blender never rescales them
        h = np.diff(curve.co[:, 0])
        assert np.all((curve.handle_right[:-1, 0] - curve.co[:-1, 0]) + (curve.co[1:, 0] - curve.handle_left[1:, 0]) <= h + 1e-9)


def test_bezier_evaluation_of_free_handles_matches_parametric_curve():
    from anim_signals.splines.bezier import segment_values

    t = np.linspace(0, 1, 7)
    x0, x1, y0, y1, s0, s1, a, b = 2.0, 10.0, 1.0, -3.0, 0.5, -1.0, 1.0, 5.0
    px = np.array([x0, x0 + a, x1 - b, x1])
    py = np.array([y0, y0 + a * s0, y1 - b * s1, y1])
    basis = np.column_stack([(1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t**2, t**3])
    xs, ys = basis @ px, basis @ py
    got = segment_values(x0, y0, x1, y1, s0, s1, np.array([a]), np.array([b]), xs)[0]
    np.testing.assert_allclose(got, ys, atol=1e-6)
    curve = A.BezierCurve(
        np.array([[x0, y0], [x1, y1]]),
        np.array([[x0 - 1, y0 - s0], [x1 - b, y1 - b * s1]]),
        np.array([[x0 + a, y0 + a * s0], [x1 + 1, y1 + s1]]),
        np.array(["ALIGNED", "ALIGNED"]),
    )
    np.testing.assert_allclose(curve.evaluate(xs), ys, atol=1e-6)


def test_runs_when_the_working_directory_is_gone(tmp_path, monkeypatch):
    """Blender may run scripts from a folder that has since been removed; the fit must not care."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    model = A.fit_latent_spline(TEST_FUNCTIONS["cliff"], internal_knots=4, population=16, max_iterations=5)
    assert model.internal_knots.size == 4


def test_repair_keys_only_where_the_curve_misses():
    from anim_signals.splines.bezier import repair_keys

    frames = np.arange(100.0)
    values = np.sin(frames / 15.0)
    values[40] += 0.5  # one spike the smooth keys cannot follow
    smooth = A.fit_channels(np.sin(frames / 15.0), frames, 0.01).curves[0]
    fixed = repair_keys(smooth, frames, values, 0.01)
    assert np.all(np.abs(fixed.evaluate(frames) - values) <= 0.01)
    assert fixed.n_keys <= smooth.n_keys + 6  # a few local keys, not one per frame
    assert 40.0 in fixed.co[:, 0]


def test_repair_never_adds_a_key_next_to_an_existing_one():
    """A key a hair away from another collapses onto it in Blender's float32 frames."""
    from anim_signals.splines.bezier import hermite_keys, repair_keys

    frames = np.arange(20.0)
    values = np.zeros(20)
    values[10] = 1.0
    curve = hermite_keys(np.array([0.0, 10.0 - 1e-12, 19.0]), np.zeros(3), np.zeros(3))
    fixed = repair_keys(curve, frames, values, 0.01)
    assert np.min(np.diff(fixed.co[:, 0])) > 0.5
    assert np.all(np.abs(fixed.evaluate(frames) - values) <= 0.01)


def _full_repair(monkeypatch, curve, frames, values, tol):
    """repair_keys as a plain reference: the whole curve evaluated every round, every key rebuilt
    from its slope."""
    from anim_signals.splines import bezier

    with monkeypatch.context() as patch:
        patch.setattr(bezier, "_update_changed", lambda got, at, before, after: got.__setitem__(slice(None),
                                                                                               after.evaluate(at)))
        patch.setattr(bezier, "_rebuilt", lambda before, x, y, slopes: bezier.hermite_keys(x, y, slopes))
        return bezier.repair_keys(curve, frames, values, tol)


@pytest.mark.parametrize("seed", range(4))
def test_repair_evaluating_only_the_changed_segments_equals_a_full_evaluation_each_round(monkeypatch, seed):
    """repair_keys evaluates again only the segments next to a new or changed key: the keys it
    gives are those of a repair that evaluates the whole curve every round, and every sample is
    within tolerance of the result."""
    from anim_signals.splines import bezier

    rng = np.random.default_rng(seed)
    frames = np.arange(400.0)
    smooth = np.sin(frames / (20.0 + 10 * seed)) + 0.3 * np.cos(frames / 7.0)
    values = smooth + rng.normal(0.0, 0.01 + 0.01 * seed, frames.size)  # noise the keys cannot follow
    values[rng.integers(0, 400, 3)] += 0.3  # spikes
    values[250 + seed:] += 0.2  # a step
    tol = 0.02
    curve = bezier.hermite_keys(frames[::25], smooth[::25], np.gradient(smooth, frames)[::25])
    rounds = 0
    evaluated = []  # how many frames each evaluation of the repair took
    original_update, original_evaluate = bezier._update_changed, bezier.BezierCurve.evaluate

    def counting(got, at, before, after):
        nonlocal rounds
        rounds += 1
        original_update(got, at, before, after)
        np.testing.assert_array_equal(got, original_evaluate(after, at))  # as evaluated whole

    def sized(curve, at):
        evaluated.append(np.size(at))
        return original_evaluate(curve, at)

    with monkeypatch.context() as patch:
        patch.setattr(bezier, "_update_changed", counting)
        patch.setattr(bezier.BezierCurve, "evaluate", sized)
        got = bezier.repair_keys(curve, frames, values, tol)
    want = _full_repair(monkeypatch, curve, frames, values, tol)
    assert rounds >= 2, "the repair took one round: the test tests nothing"
    assert evaluated[0] == frames.size and min(e for e in evaluated[1:] if e) < frames.size / 4
    np.testing.assert_allclose(got.co, want.co, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.handle_left, want.handle_left, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.handle_right, want.handle_right, rtol=0, atol=1e-12)
    assert np.all(np.abs(got.evaluate(frames) - values) <= tol)
    assert got.n_keys > curve.n_keys + 20


def test_a_repair_keeps_the_corners_it_does_not_touch():
    """A corner (FREE, a slope either side) away from the samples a repair fixes keeps its handles
    and its type; the keys next to the fixed samples get new segments."""
    from anim_signals.splines.bezier_keys import BezierCurve

    x = np.array([0.0, 50.0, 100.0, 150.0, 200.0])
    y = np.array([0.0, 1.0, 2.0, 1.0, 0.0])
    slope_in = np.array([0.02, 0.02, 0.02, -0.02, -0.02])
    slope_out = np.array([0.02, 0.02, -0.02, -0.02, -0.02])  # a corner at frame 100
    third = np.full(5, 50.0 / 3)
    curve = BezierCurve(np.column_stack([x, y]), np.column_stack([x - third, y - third * slope_in]),
                        np.column_stack([x + third, y + third * slope_out]),
                        np.array(["ALIGNED", "ALIGNED", "FREE", "ALIGNED", "ALIGNED"]))
    frames = np.arange(201.0)
    values = curve.evaluate(frames)
    values[20] += 0.5  # a spike the keys miss
    from anim_signals.splines.bezier import repair_keys

    fixed = repair_keys(curve, frames, values, 0.01)
    assert fixed.n_keys > curve.n_keys and np.all(np.abs(fixed.evaluate(frames) - values) <= 0.01)
    at = int(np.flatnonzero(fixed.co[:, 0] == 100.0)[0])
    assert fixed.handle_type[at] == "FREE"
    np.testing.assert_array_equal(fixed.handle_left[at], curve.handle_left[2])
    np.testing.assert_array_equal(fixed.handle_right[at], curve.handle_right[2])
    np.testing.assert_array_equal(fixed.evaluate(frames[50:]), curve.evaluate(frames[50:]))  # untouched


def test_simple_knots_refit_only_the_curves_whose_repair_added_many_keys(monkeypatch):
    """C1 curves that miss samples are fitted again with simple knots only where the repair added at
    least SIMPLE_KNOTS_RETRY_SHARE of their keys (a step: the simple knots' keys are taken); a curve
    missing one spike and a noisy walk keep their repaired C1 keys, and here a refit of them would
    not have given fewer keys either."""
    from anim_signals.splines import fitting

    frames = np.arange(300.0)
    rng = np.random.default_rng(0)
    wavy = np.sin(frames / 6.0) + 0.5 * np.sin(frames / 2.3)
    wavy[150] += 0.05  # one sample the spline cannot reach
    step = np.where(frames < 140, 0.0, 1.0) + 0.2 * np.sin(frames / 40)
    kink = np.abs(frames - 100.0) / 100
    walk = np.cumsum(rng.normal(0, 0.02, 300))
    y = np.column_stack([wavy, step, kink, walk])
    made = []  # (multiplicity, keys, share added by the repair) of every group's keys
    curves_from = fitting._curves_from

    def spy(problem, *args):
        curves, added = curves_from(problem, *args)
        made.append((problem.multiplicity, [c.n_keys for c in curves], added))
        return curves, added

    monkeypatch.setattr(fitting, "_curves_from", spy)
    fit = fitting.fit_channels(y, frames, 0.01, mode="PER_CHANNEL")
    assert fit.within_tolerance
    (c1_mult, c1_keys, added), (c2_mult, c2_keys, _) = made
    assert (c1_mult, c2_mult) == (2, 1)
    assert added[0] > 0 and added[3] > 0, "the spike and the walk must need the repair: the test tests nothing"
    assert added[0] < fitting.SIMPLE_KNOTS_RETRY_SHARE and added[3] < fitting.SIMPLE_KNOTS_RETRY_SHARE
    assert added[1] >= fitting.SIMPLE_KNOTS_RETRY_SHARE and added[2] == 0.0
    assert len(c2_keys) == 1 and c2_keys[0] < c1_keys[1]  # only the step, and its simple knots win
    assert [c.n_keys for c in fit.curves] == [c1_keys[0], c2_keys[0], c1_keys[2], c1_keys[3]]
    # every curve that missed a sample refitted: the spike's and the walk's keys no fewer
    made.clear()
    monkeypatch.setattr(fitting, "SIMPLE_KNOTS_RETRY_SHARE", 0.0)
    every = fitting.fit_channels(y, frames, 0.01, mode="PER_CHANNEL")
    assert len(made[1][1]) == 3
    assert [c.n_keys for c in every.curves] == [c.n_keys for c in fit.curves]


def test_lane_fits_solved_together_equal_one_fit_per_lane(monkeypatch):
    from anim_signals.splines import latent
    from anim_signals.splines.knots import KnotProblem
    from anim_signals.splines.latent import _final_fit, _final_lane_fits

    rng = np.random.default_rng(3)
    tau = np.linspace(0.0, 1.0, 300)
    columns = np.column_stack([np.sin(5 * tau + c) + 0.01 * rng.normal(size=tau.size) for c in range(7)])
    for multiplicity, snapped in ((1, False), (2, False), (2, True)):
        problem = KnotProblem.lanes(tau, columns, 3, multiplicity)
        internal = [np.sort(rng.choice(tau[3:-3], size, replace=False)) for size in (0, 1, 4, 9, 15, 2, 30)]
        together = _final_lane_fits(problem, internal, 1.0, 299.0, snapped=snapped)
        monkeypatch.setattr(latent, "SCORE_CHUNK_ELEMENTS", 2 * tau.size)  # two lanes a chunk, the last alone
        in_chunks = _final_lane_fits(problem, internal, 1.0, 299.0, snapped=snapped)
        monkeypatch.undo()
        for a, b in zip(together, in_chunks, strict=True):
            np.testing.assert_array_equal(a.knots, b.knots)
            np.testing.assert_allclose(a.control_points, b.control_points, rtol=1e-12, atol=1e-12)
        for c, fit in enumerate(together):
            alone = _final_fit(problem, internal[c], 1.0, 299.0, snapped=snapped, lane=c)
            np.testing.assert_array_equal(fit.knots, alone.knots)
            np.testing.assert_allclose(fit.control_points, alone.control_points, rtol=1e-9, atol=1e-9)
            if snapped:
                assert fit.max_error is None and alone.max_error is None
            else:
                np.testing.assert_allclose(fit.max_error, alone.max_error, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("mode", ["PER_CHANNEL", "LATENT"])
def test_curves_clear_of_their_tolerance_skip_only_a_check_that_would_change_nothing(monkeypatch, mode):
    """A spline's keys reproduce it exactly, so curves whose fit stays clear of the tolerance skip the
    check at every sample: repair_keys, run on them anyway, must hand each back unchanged."""
    from anim_signals.splines import bezier, fitting

    repairs = []  # (curve in, curve out) of every check that ran

    def spy(curve, *args):
        repairs.append((curve, bezier.repair_keys(curve, *args)))
        return repairs[-1][1]

    monkeypatch.setattr(fitting, "repair_keys", spy)
    rng = np.random.default_rng(4)
    frames = np.arange(200.0)
    # smooth curves, a random walk, and a step: C1 knots stay two samples apart, so the step's spline
    # misses a sample and its keys must be repaired
    step = np.where(frames < 120, 0.0, 1.0)
    y = np.column_stack([np.sin(frames / 9.0), np.cos(frames / 23.0), np.cumsum(rng.normal(0, 0.02, 200)), step])
    tol = np.array([0.01, 0.01, 0.004, 0.01])
    fit = A.fit_channels(y, frames, tol, mode=mode, continuity="C1")
    assert any(out is not curve for curve, out in repairs), "no check repaired a curve: the test tests nothing"
    skipped = [j for j, curve in enumerate(fit.curves) if not any(curve is out for _, out in repairs)]
    assert skipped, "no curve skipped the check: the test tests nothing"
    for j in skipped:
        curve = fit.curves[j]
        assert bezier.repair_keys(curve, frames, y[:, j], tol[j]) is curve
    assert fit.within_tolerance


def test_keys_are_never_closer_than_a_frame_on_noisy_mocap_like_data():
    rng = np.random.default_rng(11)
    frames = np.arange(300.0)
    y = np.cumsum(rng.normal(0, 0.01, (300, 6)), axis=0) + 0.002 * rng.normal(size=(300, 6))
    fit = A.fit_channels(y, frames, 0.004, mode="PER_CHANNEL")
    assert fit.within_tolerance
    for curve in fit.curves:
        if curve.n_keys > 1:
            assert np.min(np.diff(curve.co[:, 0])) >= 0.999


def _removal_problem(multiplicity, shared):
    """A problem on 400 samples with 14 even knots, and each lane's current global fit."""
    from anim_signals.splines.knots import KnotProblem
    from anim_signals.splines.tolerance import fit_lanes

    rng = np.random.default_rng(5)
    tau = np.linspace(0.0, 1.0, 400)
    sources = np.column_stack([np.sin(9 * tau), np.cos(23 * tau**2)])
    target = 40 * sources @ rng.normal(size=(2, 4)) + 0.05 * rng.normal(size=(400, 4))
    if shared:
        problem = KnotProblem.build(tau, target, 3, multiplicity, 2.0)
        assert problem.basis is not None and problem.basis.shape[0] == 2  # the latent path is exercised
    else:
        problem = KnotProblem.lanes(tau, target, 3, multiplicity)
    internal = [np.linspace(0, 1, 16)[1:-1]] * problem.n_lanes
    return problem, internal, fit_lanes(problem, internal, range(problem.n_lanes))


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("multiplicity", [1, 2])
def test_local_removal_score_is_the_patchwork_refit(multiplicity, shared):
    # independent: dense design matrix of the new knots, control points away from the window kept
    # from the current fit, the others by lstsq on every sample
    from anim_signals.splines.local import score_replacements

    problem, internal, fits = _removal_problem(multiplicity, shared)
    degree, margin, lane = 3, 1, problem.n_lanes - 1
    u = internal[lane]
    for i in (0, 6, u.size - 1):
        new = np.delete(u, i)
        knots = A.bspline.clamped_knots(np.repeat(new, multiplicity), 0.0, 1.0, degree)
        design = A.bspline.design_matrix(knots, problem.tau, degree)
        breaks = np.concatenate([[0.0], u, [1.0]])
        x_lo, x_hi = breaks[max(i - margin, 0)], breaks[min(i + 2 + margin, breaks.size - 1)]
        k = np.arange(design.shape[1])
        free = (knots[k] < x_hi) & (knots[k + degree + 1] > x_lo)
        old = fits[lane].ctrl
        kept = np.where(k[:, None] < k[free][0], old[np.minimum(k, old.shape[0] - 1)],
                        old[np.minimum(k + multiplicity, old.shape[0] - 1)])
        kept[free] = 0.0
        data = problem.latent[0] if problem.n_lanes == 1 else problem.latent[lane]
        coef = np.linalg.lstsq(design[:, free], data - design @ kept, rcond=None)[0]
        ctrl = kept.copy()
        ctrl[free] = coef
        fit = design @ ctrl
        if problem.basis is not None:
            fit = fit @ problem.basis
        err = fit - problem.target[0 if problem.n_lanes == 1 else lane]
        got = score_replacements(fits, problem.tau, problem.latent, problem.target, problem.basis, degree,
                                 multiplicity, [lane], [i], [i + 1], margin=margin)
        assert got.max_error[0] == pytest.approx(np.abs(err).max(), rel=1e-8)
        assert got.rms[0] == pytest.approx(np.sqrt((err**2).sum(axis=1).mean()), rel=1e-8)


@pytest.mark.parametrize("shared", [False, True])
def test_local_scores_with_a_window_over_the_whole_clip_are_the_global_refit(shared):
    from anim_signals.splines.local import score_replacements

    problem, internal, fits = _removal_problem(2, shared)
    lane = 0
    u = internal[lane]
    # removals, and moves: knots 3..5 replaced by two knots at thirds of their gap
    first = np.array([0, 4, u.size - 1, 3])
    stop = np.array([1, 5, u.size, 6])
    moved = np.zeros((4, 2))
    moved[3] = u[2] + (u[6] - u[2]) * np.array([1 / 3, 2 / 3])
    n_moved = np.array([0, 0, 0, 2])
    got = score_replacements(fits, problem.tau, problem.latent, problem.target, problem.basis, 3, 2,
                             np.full(4, lane), first, stop, moved, n_moved, margin=10_000)
    rows = [np.concatenate([u[:a], moved[s, : n_moved[s]], u[b:]]) for s, (a, b) in enumerate(zip(first, stop))]
    want = problem.score(rows, np.full(4, lane))
    np.testing.assert_allclose(got.max_error, want.max_error, rtol=1e-8)
    np.testing.assert_allclose(got.rms, want.rms, rtol=1e-8)


def test_removal_work_does_not_grow_with_the_clip():
    # the removal rounds score knots by local refits: the rows fitted on the whole clip (insertion,
    # one confirmation per round, rescues) stay about the same when the clip is four times longer
    from anim_signals.splines.knots import KnotProblem
    from anim_signals.splines.latent import _drain
    from anim_signals.splines.tolerance import solve_tolerance

    whole_clip_rows = []
    for n in (3000, 12000):
        t = np.arange(n, dtype=float)
        y = np.column_stack([np.sin(t / 23.0) + 0.5 * np.sin(t / 61.0), np.cos(t / 37.0)])
        problem = KnotProblem.build(t / t[-1], y / 0.01, 3, 2, 0.25)
        solution = _drain(solve_tolerance(problem, population=None, max_iterations=20, seed=0, snap=None))
        assert solution.feasible.all()
        assert problem.local_evaluations > solution.internal[0].size  # every knot was scored locally
        whole_clip_rows.append(problem.evaluations)
    # (scoring each round's shortlist on the whole clip took ~800 rows at both lengths)
    assert max(whole_clip_rows) <= 150
    assert whole_clip_rows[1] <= whole_clip_rows[0] + 40
