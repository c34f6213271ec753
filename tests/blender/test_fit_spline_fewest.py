"""Fit Spline's default mode, Fewest Keys, checked against Blender itself.

Every check reads the keys back from the F-curves and evaluates them with Blender's own
``FCurve.evaluate`` (not the core's model): the max error at every original frame, FREE handles,
keys on original samples, one key for a near-constant curve, no handle longer than its segment
(Blender would shorten it), the last fit's keyed frames and broken handles counted
independently, fewer keys than the Auto Spline mode, one undo step and determinism. Bad input in
the default mode (NaN values, a single key, linked data) is covered by test_fit_spline_bad_input.py
and test_bad_input_fit_loop_transfer.py, which run the operator without a mode.
"""

from __future__ import annotations

import math
import types

import bpy
import numpy as np
import pytest
from _bl_helpers import (
    FakeLayout,
    assert_same_state,
    ext_module,
    fcurves_of,
    key_array,
    keyed,
    motion,
    new_armature,
    quaternion_track,
    run_fit,
    shared_data,
    snapshot_action,
    snapshot_all,
)

ROT = math.radians(0.5)
LOC = 0.01
# Keys are float32 in Blender: allow its rounding on top of the tolerance (as test_fit_spline.py).
SLACK = 2e-5
# A handle's x-extent may pass its segment's by float32 rounding only (frames, at most ~1000).
OVERLAP_SLACK = 1e-4


def _tol(path: str) -> float:
    if "rotation_euler" in path:
        return ROT
    if "rotation_quaternion" in path:
        return ROT / 2  # radians / 2 on quaternion components (the core's tolerances_by_kind)
    return LOC


# ----------------------------------------------------------------------------------------------
# A generated rig: rotation + location, constant and near-constant curves, corners and a step
# ----------------------------------------------------------------------------------------------

CONSTANT = ('pose.bones["B0"].rotation_euler', 1)
NEAR_CONSTANT = ('pose.bones["B2"].rotation_euler', 2)
CONSTANT_SCALE = [('pose.bones["B3"].scale', i) for i in range(3)]
STEP = ('pose.bones["B2"].rotation_euler', 1)
STEP_FRAME = 61  # the step lies between frames 60 and 61


def _rig(name: str = "FewRig", n_frames: int = 120, seed: int = 21):
    """A 4-bone chain, one key per frame (LINEAR, like a bake) on every curve:

    * B0: root location (smooth, z a staircase of holds) and Euler XYZ with y exactly constant;
    * B1: quaternion;
    * B2: Euler XYZ: x a triangle wave (a corner every 10 frames), y a hold-step-hold, z within a
      third of the tolerance of a constant (near-constant);
    * B3: Euler ZXY (smooth) and scale keyed at exactly 1.0.
    """
    ob = new_armature(name, [(f"B{i}", (0.0, 0.0, float(i)), (0.0, 0.0, float(i + 1)), f"B{i - 1}" if i else None, True)
                             for i in range(4)])
    frames = np.arange(1, n_frames + 1, dtype=np.float64)
    rng = np.random.default_rng(seed)
    pb = ob.pose.bones
    loc = 0.5 * motion(frames, rng, 1.0, 3)
    loc[:, 2] = 0.2 * np.floor((frames - 1) / 17.0)  # holds with jumps between them
    keyed(pb[0], "location", frames, loc, id_data=ob)
    pb[0].rotation_mode = "XYZ"
    rot0 = motion(frames, rng, 0.5, 3)
    rot0[:, 1] = 0.25
    keyed(pb[0], "rotation_euler", frames, rot0, id_data=ob)
    pb[1].rotation_mode = "QUATERNION"
    keyed(pb[1], "rotation_quaternion", frames, quaternion_track(frames, rng), id_data=ob)
    pb[2].rotation_mode = "XYZ"
    triangle = 0.6 * (2.0 * np.abs(((frames - 1.0) / 20.0) % 1.0 - 0.5))
    step = np.where(frames < STEP_FRAME, -0.3, 0.4)
    near = 0.1 + (ROT / 3.0) * np.sin(1.7 * frames)
    keyed(pb[2], "rotation_euler", frames, np.column_stack([triangle, step, near]), id_data=ob)
    pb[3].rotation_mode = "ZXY"
    keyed(pb[3], "rotation_euler", frames, motion(frames, rng, 0.4, 3), id_data=ob)
    keyed(pb[3], "scale", frames, np.ones((frames.size, 3)), id_data=ob)
    expected = {(fc.data_path, fc.array_index): key_array(fc)[:, 1] for fc in fcurves_of(ob)}
    assert len(expected) == 19
    return ob, frames, expected


def _n_keys(ob) -> int:
    return sum(len(fc.keyframe_points) for fc in fcurves_of(ob))


def _curves(ob) -> dict:
    return {(fc.data_path, fc.array_index): fc for fc in fcurves_of(ob)}


def _evaluate(fc, frames) -> np.ndarray:
    ev = fc.evaluate
    return np.array([ev(float(f)) for f in frames])


def _handles(fc) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return key_array(fc, "co"), key_array(fc, "handle_left"), key_array(fc, "handle_right")


# ----------------------------------------------------------------------------------------------
# Independent checks of the written keys (Blender's evaluation, the keys as stored)
# ----------------------------------------------------------------------------------------------


def _assert_within_tolerance(ob, frames, expected) -> dict:
    """Every original frame within the curve's tolerance under ``FCurve.evaluate``; Euler errors
    modulo a whole turn, quaternions compared as 4-vectors up to sign. Returns the worst error per
    kind (rotation in degrees)."""
    fcs = _curves(ob)
    assert set(fcs) == set(expected)
    got = {key: _evaluate(fc, frames) for key, fc in fcs.items()}
    worst = {"rot": 0.0, "quat": 0.0, "loc": 0.0}
    quat_paths = sorted({path for path, _ in fcs if path.endswith("rotation_quaternion")})
    for path in quat_paths:
        fit = np.column_stack([got[(path, i)] for i in range(4)])
        orig = np.column_stack([expected[(path, i)] for i in range(4)])
        err = np.minimum(np.abs(fit - orig).max(axis=1), np.abs(fit + orig).max(axis=1))
        assert err.max() <= ROT / 2 + SLACK, f"{path}: max error {err.max()} at frame {frames[err.argmax()]}"
        worst["quat"] = max(worst["quat"], float(err.max()))
    for key, values in got.items():
        if key[0] in quat_paths:
            continue
        err = values - expected[key]
        if "rotation_euler" in key[0]:
            err = (err + np.pi) % (2 * np.pi) - np.pi
        err = np.abs(err)
        assert err.max() <= _tol(key[0]) + SLACK, f"{key}: max error {err.max()} at frame {frames[err.argmax()]}"
        kind = "rot" if "rotation_euler" in key[0] else "loc"
        worst[kind] = max(worst[kind], float(np.degrees(err.max())) if kind == "rot" else float(err.max()))
    return worst


def _assert_fewest_keys(ob, frames, expected) -> None:
    """What every Fewest Keys result must be, read back from the F-curves: FREE handles on both
    sides and BEZIER interpolation; keys on original sample frames where a curve has more than
    one, the first holding its sample's value and every other within the curve's tolerance of its
    sample's (Fewest Keys may place a key's value off its sample);
    every handle's x-extent within its segment (Blender shortens only a longer one; overlapping
    handles are kept as they are); a single key on every curve whose half range is within its tolerance."""
    first, last = frames[0], frames[-1]
    for key, fc in _curves(ob).items():
        kps = fc.keyframe_points
        assert len(kps) >= 1, key
        assert all(k.handle_left_type == "FREE" and k.handle_right_type == "FREE" for k in kps), key
        assert all(k.interpolation == "BEZIER" for k in kps), key
        co, hl, hr = _handles(fc)
        x = co[:, 0]
        assert np.all(np.diff(x) > 0), key
        on_frame = np.abs(x - np.round(x)) < 1e-4
        assert on_frame.all() and x[0] >= first - 1e-4 and x[-1] <= last + 1e-4, (key, x[~on_frame])
        idx = np.searchsorted(frames, np.round(x))
        assert np.array_equal(frames[idx], np.round(x)), key
        if len(kps) > 1:  # (a single key holds the middle of the range, not a sample's value)
            sample = expected[key][idx]
            diff = co[:, 1] - sample
            if "rotation_euler" in key[0]:
                diff = (diff + np.pi) % (2 * np.pi) - np.pi
            if "rotation_quaternion" in key[0]:
                diff = np.minimum(np.abs(diff), np.abs(co[:, 1] + sample))
            precision = 1e-6 * max(1.0, float(np.abs(sample).max()))  # float32 keys
            assert abs(diff[0]) <= precision, (key, diff[0])
            assert np.abs(diff).max() <= _tol(key[0]) + precision, (key, np.abs(diff).max())
            h = np.diff(x)
            alpha = hr[:-1, 0] - x[:-1]
            beta = x[1:] - hl[1:, 0]
            assert alpha.min() >= -OVERLAP_SLACK and beta.min() >= -OVERLAP_SLACK, key
            longer = np.maximum(alpha, beta) - h
            assert longer.max() <= OVERLAP_SLACK, f"{key}: a handle longer than its segment by {longer.max()} frames"
        values = expected[key]
        if "rotation_euler" in key[0]:
            values = np.unwrap(values)
        if (values.max() - values.min()) / 2.0 <= 0.9 * _tol(key[0]):
            assert len(kps) == 1, f"{key}: near-constant curve has {len(kps)} keys"


def _broken(co: np.ndarray, hl: np.ndarray, hr: np.ndarray, angle_deg: float = 0.5) -> int:
    """Inner keys whose incoming and outgoing handles are not on one straight line through the key
    (within ``angle_deg``, in the curve's frame/value units): the operator's "broken handles"."""
    if len(co) < 3:
        return 0
    into, out = co[1:-1] - hl[1:-1], hr[1:-1] - co[1:-1]
    angle = np.degrees(np.abs(np.arctan2(into[:, 0] * out[:, 1] - into[:, 1] * out[:, 0],
                                         np.sum(into * out, axis=1))))
    return int(np.count_nonzero(angle > angle_deg))


def _assert_counts(ob, last_fit) -> tuple[int, int]:
    """last_fit.keyed_frames / broken_keys against counts taken from the written F-curves."""
    keyed_frames: set[float] = set()
    broken = 0
    for fc in fcurves_of(ob):
        co, hl, hr = _handles(fc)
        keyed_frames.update(np.round(co[:, 0], 3).tolist())
        broken += _broken(co, hl, hr)
    assert last_fit.keyed_frames == len(keyed_frames), (last_fit.keyed_frames, len(keyed_frames))
    assert last_fit.broken_keys == broken, (last_fit.broken_keys, broken)
    return len(keyed_frames), broken


# ----------------------------------------------------------------------------------------------
# Tests
# ----------------------------------------------------------------------------------------------


def test_default_mode_is_fewest_and_runs_without_setting_it(scene):
    props = bpy.ops.anim_signals.fit_latent_spline.get_rna_type().properties
    assert props["mode"].default == "FEWEST"
    assert scene.anim_signals.fit.mode == "FEWEST"  # the sidebar's setting, which the button passes
    ob, frames, expected = _rig()
    keys_before = _n_keys(ob)
    assert run_fit() == {"FINISHED"}
    res = scene.anim_signals.last_fit
    assert res.valid and res.mode_used == "FEWEST" and res.within_tolerance
    assert res.keys_before == keys_before and res.keys_after == _n_keys(ob) < keys_before / 4
    _assert_within_tolerance(ob, frames, expected)


def test_generated_rig_within_tolerance_under_blender_evaluation(scene):
    ob, frames, expected = _rig()
    original = ob.animation_data.action
    before = snapshot_action(original)
    assert run_fit() == {"FINISHED"}
    assert ob.animation_data.action != original
    after = snapshot_action(original)  # the original is kept untouched
    for k, arr in before.items():
        np.testing.assert_array_equal(arr, after[k])
    worst = _assert_within_tolerance(ob, frames, expected)
    res = scene.anim_signals.last_fit
    assert res.max_rotation_deg <= 0.5 + 1e-3 and res.max_location <= LOC + 1e-5
    assert worst["rot"] > 0.5 * 0.5  # the tolerance is used, not wasted on extra keys
    _assert_fewest_keys(ob, frames, expected)


def test_constant_curves_one_key_and_the_step_kept_sharp(scene):
    ob, frames, expected = _rig()
    assert run_fit() == {"FINISHED"}
    fcs = _curves(ob)
    for key in (CONSTANT, NEAR_CONSTANT, *CONSTANT_SCALE):
        assert len(fcs[key].keyframe_points) == 1, key
        np.testing.assert_allclose(_evaluate(fcs[key], frames), expected[key], atol=_tol(key[0]) + SLACK)
    # Only the original frames are bound: the step (a jump between frames 60 and 61) and the
    # triangle wave (12 straight pieces) take a few segments each, corners spanned where the samples allow.
    assert len(fcs[STEP].keyframe_points) <= 5, key_array(fcs[STEP])[:, 0]
    triangle = fcs[('pose.bones["B2"].rotation_euler', 0)]
    assert len(triangle.keyframe_points) <= 14, key_array(triangle)[:, 0]
    _assert_within_tolerance(ob, frames, expected)


def test_fewer_keys_than_auto_spline(scene):
    """The old default (Auto Spline) against the new one on the same generated rig."""
    ob_auto, frames, expected = _rig("AutoRig")
    assert run_fit(mode="AUTO") == {"FINISHED"}
    auto_keys = _n_keys(ob_auto)
    assert scene.anim_signals.last_fit.mode_used != "FEWEST"
    _assert_within_tolerance(ob_auto, frames, expected)
    ob, frames, expected = _rig("FewestRig")
    bpy.context.view_layer.objects.active = ob
    assert run_fit() == {"FINISHED"}
    fewest_keys = _n_keys(ob)
    assert scene.anim_signals.last_fit.mode_used == "FEWEST"
    _assert_within_tolerance(ob, frames, expected)
    assert fewest_keys <= auto_keys, (fewest_keys, auto_keys)


def test_last_fit_keyed_frames_and_broken_handles_match_the_curves(scene):
    ob, _, _ = _rig()
    assert run_fit() == {"FINISHED"}
    res = scene.anim_signals.last_fit
    keyed_frames, broken = _assert_counts(ob, res)
    assert 0 < keyed_frames <= 120
    assert broken > 0  # free handles: some keys are corners (the triangle wave's at least)
    assert res.keys_after == _n_keys(ob) >= keyed_frames


def test_mocap_clip_within_tolerance_under_blender_evaluation(scene):
    """One shared clip (171 frames, 306 curves, the iClone-retargeted CMU walk of issue 17)."""
    path = shared_data("mocap", "cmu_iclone_02_01_walk.bvh")
    assert bpy.ops.import_anim.bvh(filepath=str(path)) == {"FINISHED"}
    ob = bpy.context.active_object
    assert ob is not None and ob.type == "ARMATURE"
    co0 = {(fc.data_path, fc.array_index): key_array(fc) for fc in fcurves_of(ob)}
    frames = next(iter(co0.values()))[:, 0]
    assert frames.size <= 200 and all(np.array_equal(c[:, 0], frames) for c in co0.values())
    expected = {key: c[:, 1] for key, c in co0.items()}
    keys_before = sum(len(c) for c in co0.values())

    assert run_fit(max_error_rotation=0.5, max_error_location=LOC) == {"FINISHED"}

    res = scene.anim_signals.last_fit
    assert res.mode_used == "FEWEST" and res.within_tolerance
    assert res.keys_before == keys_before and res.keys_after == _n_keys(ob) < keys_before / 10
    _assert_within_tolerance(ob, frames, expected)
    _assert_fewest_keys(ob, frames, expected)
    _assert_counts(ob, res)


# Two keys 20 frames apart, both handles FREE; (alpha, beta) are the handle x-lengths as fractions
# of the segment. alpha + beta <= 1: nothing to rescale. Above 1 the handles' x-extents overlap.
HANDLES_INSIDE = [(1 / 3, 1 / 3), (0.05, 0.33), (0.5, 0.5), (0.7, 0.15), (0.15, 0.7)]
HANDLES_OVERLAP = [(0.7, 0.7), (0.9, 0.6), (0.95, 0.2), (1.0, 1.0), (1.3, 0.4), (0.3, 1.6)]
# Blender 4.2 and 5.0 (BKE_fcurve_correct_bezpart) only shorten a handle longer than the whole
# segment, each on its own; overlapping handles are kept. (The core once scaled both handles by
# h / (len1 + len2) whenever they overlapped, an older Blender rule: up to 0.75 off here.)


@pytest.mark.parametrize(
    "alpha, beta",
    HANDLES_INSIDE + HANDLES_OVERLAP,
)
def test_core_bezier_evaluation_matches_blender(scene, alpha, beta):
    """The emulation Fewest Keys' final check relies on (``anim_signals.BezierCurve.evaluate``)
    against ``FCurve.evaluate`` on a segment written directly, including handles Blender rescales."""
    core = ext_module("anim_signals")
    ob = bpy.data.objects.new("Seg", None)
    scene.collection.objects.link(ob)
    keyed(ob, "location", np.array([1.0, 21.0]), np.zeros((2, 1)))
    fc = next(f for f in fcurves_of(ob) if f.array_index == 0)
    x0, y0, x1, y1, h = 1.0, 0.0, 21.0, 1.0, 20.0
    slope0, slope1 = 0.3, -0.2  # value per frame at each key
    co = np.array([[x0, y0], [x1, y1]])
    hl = np.array([[x0 - alpha * h, y0 - slope0 * alpha * h], [x1 - beta * h, y1 - slope1 * beta * h]])
    hr = np.array([[x0 + alpha * h, y0 + slope0 * alpha * h], [x1 + beta * h, y1 + slope1 * beta * h]])
    kps = fc.keyframe_points
    for i, k in enumerate(kps):
        k.interpolation = "BEZIER"
        k.handle_left_type = k.handle_right_type = "FREE"
        k.co, k.handle_left, k.handle_right = co[i], hl[i], hr[i]
    fc.update()
    co, hl, hr = _handles(fc)  # float32, as Blender stores them
    np.testing.assert_allclose(hr[0, 0] - co[0, 0], alpha * h, atol=1e-5)  # written as given
    np.testing.assert_allclose(co[1, 0] - hl[1, 0], beta * h, atol=1e-5)
    curve = core.BezierCurve(co=co, handle_left=hl, handle_right=hr, handle_type=np.array(["FREE", "FREE"]))
    dense = np.linspace(x0 - 2.0, x1 + 2.0, 401)
    blender = _evaluate(fc, dense)
    assert np.ptp(blender) > 0.5  # a real curve, not a flat one
    np.testing.assert_allclose(curve.evaluate(dense), blender, atol=2e-5)


@pytest.mark.parametrize("keep_original", [True, False])
def test_one_undo_step_restores_the_original_keys(scene, keep_original):
    """Ctrl+Z after the fit (memfile undo in the bpy module's window): every key, action and
    assignment as before the fit; redo brings the fitted keys back."""
    _rig()
    window = bpy.context.window_manager.windows[0]
    with bpy.context.temp_override(window=window):
        bpy.ops.ed.undo_push(message="rig built")
        before = snapshot_all()
        keys_before = _n_keys(bpy.data.objects["FewRig"])
        assert bpy.ops.anim_signals.fit_latent_spline("EXEC_DEFAULT", True, keep_original=keep_original) == {"FINISHED"}
        fitted = snapshot_all()
        assert _n_keys(bpy.data.objects["FewRig"]) < keys_before / 4
        assert bpy.ops.ed.undo() == {"FINISHED"}
        assert_same_state(before, snapshot_all())
        assert _n_keys(bpy.data.objects["FewRig"]) == keys_before
        assert not bpy.context.scene.anim_signals.last_fit.valid
        assert bpy.ops.ed.redo() == {"FINISHED"}
        assert_same_state(fitted, snapshot_all())
        assert bpy.context.scene.anim_signals.last_fit.mode_used == "FEWEST"


def test_two_runs_write_identical_keys(scene):
    runs = []
    for name in ("RunA", "RunB"):
        ob, _, _ = _rig(name)
        bpy.context.view_layer.objects.active = ob
        assert run_fit() == {"FINISHED"}
        fcs = fcurves_of(ob)
        types_ = {(fc.data_path, fc.array_index): [(k.handle_left_type, k.handle_right_type, k.interpolation)
                                                   for k in fc.keyframe_points] for fc in fcs}
        runs.append((snapshot_action(ob.animation_data.action), types_))
    (keys_a, types_a), (keys_b, types_b) = runs
    assert sorted(keys_a) == sorted(keys_b) and types_a == types_b
    for key, arr in keys_a.items():
        np.testing.assert_array_equal(arr, keys_b[key], err_msg=str(key))


class _ActiveLayout(FakeLayout):
    """FakeLayout that also records, for every drawn property, whether it is drawn active (not
    greyed out): its own layout's ``active`` and every parent's."""

    def __init__(self, calls: list, parent=None):
        super().__init__(calls)
        self.parent = parent
        self.active = True

    def _child(self, *args, **kwargs):
        child = _ActiveLayout(self.calls, self)
        self.calls.append(("child", child))
        return child

    column = row = box = split = _child

    def panel(self, idname, default_closed=False):
        return _ActiveLayout(self.calls, self), _ActiveLayout(self.calls, self)

    def is_active(self) -> bool:
        return self.active and (self.parent is None or self.parent.is_active())

    def prop(self, data, name, **kwargs):
        super().prop(data, name, **kwargs)
        self.calls.append(("active", name, self.is_active()))


SPLINE_ONLY = {"continuity", "snap_to_frames", "free_handles", "internal_knots", "degree", "population",
               "max_iterations", "seed"}
ALWAYS = {"target", "channels", "mode", "max_error_rotation", "max_error_location", "max_error_other", "keep_original"}


@pytest.mark.parametrize("mode", ["FEWEST", "AUTO", "LATENT", "PER_CHANNEL"])
def test_panel_greys_out_the_spline_settings_in_fewest_mode(scene, mode):
    scene.anim_signals.fit.mode = mode
    calls: list = []
    panel = bpy.types.ANIM_SIGNALS_PT_fit_spline
    panel.draw(types.SimpleNamespace(layout=_ActiveLayout(calls), _draw_result=panel._draw_result),
               types.SimpleNamespace(scene=scene))
    active = {c[1]: c[2] for c in calls if c[0] == "active"}
    assert SPLINE_ONLY | ALWAYS <= set(active)
    assert all(active[name] for name in ALWAYS), active
    assert all(active[name] == (mode != "FEWEST") for name in SPLINE_ONLY), active
    assert ("set", "mode", mode) in calls  # the button passes the sidebar's mode


# ----------------------------------------------------------------------------------------------
# Editable Keys and shared key frames
# ----------------------------------------------------------------------------------------------


def test_editable_keys_are_aligned_except_at_corners(scene):
    ob, frames, expected = _rig()
    assert run_fit(mode="EDITABLE") == {"FINISHED"}
    _assert_within_tolerance(ob, frames, expected)
    res = scene.anim_signals.last_fit
    assert res.mode_used == "EDITABLE"
    corners = 0
    for key, fc in _curves(ob).items():
        kps = fc.keyframe_points
        co, hl, hr = _handles(fc)
        for i, k in enumerate(kps):
            assert k.handle_left_type == k.handle_right_type, key
            if k.handle_left_type == "ALIGNED" and 0 < i < len(kps) - 1:
                into, out = co[i] - hl[i], hr[i] - co[i]
                angle = math.degrees(abs(math.atan2(into[0] * out[1] - into[1] * out[0], into @ out)))
                assert angle < 0.05, (key, i, angle)  # collinear up to float32
            corners += k.handle_left_type == "FREE" and 0 < i < len(kps) - 1
    # broken handles only at the corners the mode allows
    assert res.broken_keys <= corners
    assert corners <= 0.2 * res.keys_after
    run_fit(mode="FEWEST")
    assert scene.anim_signals.last_fit.keys_after <= res.keys_after


@pytest.mark.parametrize("mode", ["FEWEST", "LATENT"])
@pytest.mark.parametrize("share", ["BONE", "ALL"])
def test_shared_key_frames(scene, mode, share):
    ob, frames, expected = _rig()
    assert run_fit(mode=mode, share_keys=share) == {"FINISHED"}
    _assert_within_tolerance(ob, frames, expected)
    by_owner: dict[str, set] = {}
    for (path, _), fc in _curves(ob).items():
        x = tuple(np.round(key_array(fc)[:, 0], 3))
        if len(x) > 1:  # near-constant curves keep one key
            owner = path.split("]")[0] if share == "BONE" else "all"
            by_owner.setdefault(owner, set()).add(x)
    assert by_owner and all(len(v) == 1 for v in by_owner.values()), by_owner
    res = scene.anim_signals.last_fit
    shared = set().union(*(next(iter(v)) for v in by_owner.values()))
    assert res.keyed_frames == len(shared | {float(frames[0])})


def test_aligned_keys_that_blender_turns_past_the_tolerance_are_written_free(scene, ext):
    """Blender re-aligns ALIGNED handles on update (float32): a short right handle at frame ~1200
    turns the long left one. keep_fitted_handles frees such keys where a sample would miss."""
    fcurves = ext_module("operators.blender_data.fcurves")
    core = ext_module("anim_signals")
    ob = bpy.data.objects.new("Turn", None)
    scene.collection.objects.link(ob)
    keyed(ob, "location", np.array([1190.0, 1194.0, 1198.0]), np.zeros((3, 1)))
    fc = next(f for f in fcurves_of(ob) if f.array_index == 0)
    slope = -1.5637
    co = np.array([[1190.0, 2.0], [1194.0, -4.3108], [1198.0, -2.0]])
    hl = np.array([[1189.0, 2.0], co[1] - [4.0, 4.0 * slope], [1197.0, -2.5]])
    hr = np.array([[1191.0, 1.0], co[1] + [0.2, 0.2 * slope], [1199.0, -1.5]])
    types = np.array(["FREE", "ALIGNED", "FREE"])
    frames = np.arange(1190.0, 1199.0, 0.25)
    intended = core.BezierCurve(co, hl, hr, types).evaluate(frames)
    fcurves.write_bezier(fc, co, hl, hr, types)
    turned = np.abs(np.array([fc.evaluate(f) for f in frames]) - intended).max()
    assert turned > 1e-5, turned  # Blender turned the long handle
    tol = turned / 4  # a tolerance the turned curve misses
    freed = fcurves.keep_fitted_handles(fc, hl, hr, frames, intended, tol)
    after = np.abs(np.array([fc.evaluate(f) for f in frames]) - intended).max()
    assert freed == 1 and fc.keyframe_points[1].handle_left_type == "FREE"
    assert after <= max(tol, 2e-6), (turned, after)
    # a curve within its tolerance is left as Blender has it
    fcurves.write_bezier(fc, co, hl, hr, types)
    assert fcurves.keep_fitted_handles(fc, hl, hr, frames, intended, 1.0) == 0
    assert fc.keyframe_points[1].handle_left_type == "ALIGNED"
