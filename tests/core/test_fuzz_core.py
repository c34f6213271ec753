"""Property-based fuzzing of the core entry points: any finite input gives finite output or a
clean ValueError -- never another exception type, never NaN or inf in what is returned.

Inputs mix ordinary values with extreme magnitudes (up to 1e300), subnormals, constants,
duplicated rows and very short clips. Kept small (few frames, few examples) so the file runs in
seconds; CI runs pytest with --hypothesis-seed=0.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from anim_signals import fit_channels, fit_latent_spline
from anim_signals.manifolds import elastic_distance, find_cycle, make_loop
from anim_signals.motiondb import MotionDatabase, OLNGParams, reconstruct
from anim_signals.posespace import build_pose_space

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Finite floats that include the hostile corners: huge, tiny, subnormal, zero, negative zero.
HOSTILE_FLOATS = st.one_of(
    st.floats(min_value=-10.0, max_value=10.0, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1e-310, -5e-324, 1e-30, 1e20, -1e30, 1e150, 1e300, -1e308]),
    st.floats(allow_nan=False, allow_infinity=False),
)


@st.composite
def clips(draw, min_frames=1, max_frames=24, max_channels=3):
    """A (frames, channels) clip: random, constant, or with duplicated rows, at a random scale."""
    n = draw(st.integers(min_frames, max_frames))
    m = draw(st.integers(1, max_channels))
    kind = draw(st.sampled_from(["random", "smooth", "constant", "duplicates"]))
    scale = draw(st.sampled_from([1.0, 1e-300, 1e-20, 1e20, 1e150, 1e300]))
    if kind == "random":
        base = draw(arrays(np.float64, (n, m), elements=st.floats(min_value=-10.0, max_value=10.0)))
        if draw(st.booleans()):  # one hostile entry among ordinary ones
            base[draw(st.integers(0, n - 1)), draw(st.integers(0, m - 1))] = draw(HOSTILE_FLOATS)
        with np.errstate(over="ignore"):
            scaled = base * scale
        return scaled if draw(st.booleans()) and np.all(np.isfinite(scaled)) else base
    if kind == "constant":
        return np.full((n, m), draw(HOSTILE_FLOATS))
    t = np.linspace(0.0, 2 * np.pi, n)[:, None]
    phase = np.arange(m)[None, :]
    smooth = np.sin(t * (1 + phase) + phase) * scale
    if kind == "duplicates":
        smooth = np.repeat(smooth[: max(1, n // 2)], 2, axis=0)[:n]
    return smooth


def finite_everywhere(*parts):
    return all(np.all(np.isfinite(np.asarray(p, dtype=float))) for p in parts)


def run_quietly(call):
    """The call's result, or None on ValueError; any other exception fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow warnings are fine if we refuse
        try:
            return call()
        except ValueError:
            return None


@FUZZ
@given(values=clips(), tolerance=st.sampled_from([1e-6, 0.01, 1.0, 1e10, 1e200]),
       mode=st.sampled_from(["AUTO", "LATENT", "PER_CHANNEL"]))
def test_fit_channels_is_finite_and_within_tolerance_or_refused(values, tolerance, mode):
    frames = np.arange(float(values.shape[0]))
    fit = run_quietly(lambda: fit_channels(values, frames, tolerance, mode=mode, max_iterations=2))
    if fit is None:
        return
    for curve in fit.curves:
        assert finite_everywhere(curve.co, curve.handle_left, curve.handle_right)
    assert finite_everywhere(fit.max_abs_error, fit.rms_error)
    if fit.within_tolerance:
        # the claim is true: Blender's evaluation of the keys is within tolerance at every frame
        approx = fit.evaluate(frames)
        assert finite_everywhere(approx)
        assert np.all(np.abs(approx - values) <= tolerance * (1 + 1e-6))


@FUZZ
@given(values=clips(max_frames=16), knots=st.integers(0, 4))
def test_fit_latent_spline_fixed_count_is_finite_or_refused(values, knots):
    model = run_quietly(lambda: fit_latent_spline(values, internal_knots=knots, population=4, max_iterations=2))
    if model is None:
        return
    assert finite_everywhere(model.knots, model.control_points, model.rms, model.max_error)
    assert finite_everywhere(model.evaluate(np.arange(float(values.shape[0]))))


@FUZZ
@given(values=clips(min_frames=1, max_frames=30), travel=st.sampled_from([(), (0,)]))
def test_make_loop_is_finite_and_closed_or_refused(values, travel):
    result = run_quietly(lambda: make_loop(values, travel=travel))
    if result is None:
        return
    assert finite_everywhere(result.values, result.deviation_rms, result.before.pose, result.after.pose)
    assert result.values.shape == values.shape


@FUZZ
@given(values=clips(min_frames=3, max_frames=40))
def test_find_cycle_is_inside_the_clip_or_refused(values):
    cycle = run_quietly(lambda: find_cycle(values))
    if cycle is None:
        return
    assert 0 <= cycle.start < cycle.stop <= values.shape[0] - 1
    assert np.isfinite(cycle.score)


@FUZZ
@given(a=clips(min_frames=1, max_frames=20, max_channels=2), b=clips(min_frames=1, max_frames=20, max_channels=2),
       closed=st.booleans())
def test_elastic_distance_is_finite_and_non_negative_or_refused(a, b, closed):
    d = run_quietly(lambda: elastic_distance(a, b, n_samples=16, closed=closed))
    if d is None:
        return
    assert np.isfinite(d) and d >= 0.0


@FUZZ
@given(z=clips(min_frames=3, max_frames=10, max_channels=6), tolerance=st.sampled_from([None, 1e-3, 1.0]))
def test_build_pose_space_is_finite_or_refused(z, tolerance):
    space = run_quietly(lambda: build_pose_space(z, tolerance=tolerance, row_size=1))
    if space is None:
        return
    assert finite_everywhere(space.positions, space.time.control, space.latent)
    assert finite_everywhere(space.evaluate(space.frames))
    edited = run_quietly(lambda: space.with_control_point(0, space.time.control[0] + 0.5))
    if edited is not None:
        assert finite_everywhere(edited.time.control)


@settings(max_examples=20, deadline=None)
@given(clip=clips(min_frames=1, max_frames=30, max_channels=3), query=clips(min_frames=1, max_frames=6, max_channels=3))
def test_reconstruct_is_finite_or_refused(clip, query):
    names = ["a", "b", "c"][: clip.shape[1]]
    db = run_quietly(lambda: MotionDatabase.from_clips([clip], names))
    if db is None or query.shape[1] != clip.shape[1]:
        return
    batch = run_quietly(lambda: reconstruct(db, query, OLNGParams(k=min(4, db.n_frames), window=2, paths=2)))
    if batch is None:
        return
    assert finite_everywhere(batch.poses)


def test_the_strategies_reach_the_extremes():
    """The fuzzing must really try huge, subnormal and constant clips (else it tests little)."""
    seen = {"huge": False, "subnormal": False, "constant": False}

    @settings(max_examples=200, deadline=None, database=None)
    @given(values=clips())
    def look(values):
        peak = float(np.abs(values).max())
        seen["huge"] |= peak >= 1e150
        seen["subnormal"] |= 0.0 < peak < 1e-300
        seen["constant"] |= values.shape[0] > 1 and bool(np.all(values == values[0]))

    look()
    assert all(seen.values()), seen


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q"])
