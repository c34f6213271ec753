"""anim_signals.fit_latent_spline on generated dense animation: fewer keys, every original frame
within the max error through Blender's own ``FCurve.evaluate``, exact agreement with the core model."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from _bl_helpers import (
    IS_SLOTTED,
    assign_action,
    evaluate,
    fcurves_of,
    key_array,
    keyed,
    make_armature,
    make_object,
    make_shape_keys,
    run_fit,
    set_dense_keys,
    snapshot_action,
    world_heads,
)

ROT = math.radians(0.5)
# Keys are float32 in Blender: allow its rounding on top of the tolerance.
SLACK = 2e-5


def _tol(path: str) -> float:
    if "rotation_euler" in path:
        return ROT
    if "rotation_quaternion" in path:
        return ROT / 2
    if path.endswith("location"):
        return 0.01
    return 0.01


def _assert_within(ob_or_id, frames, expected, *, wrap_euler=False):
    fcs = fcurves_of(ob_or_id)
    assert fcs
    for fc in fcs:
        key = (fc.data_path, fc.array_index)
        got = evaluate(fc, frames)
        want = expected[key]
        err = got - want
        if wrap_euler and "rotation_euler" in fc.data_path:
            err = (err + np.pi) % (2 * np.pi) - np.pi
        worst = np.abs(err).max()
        assert worst <= _tol(fc.data_path) + SLACK, f"{key}: max error {worst} at frame {frames[np.abs(err).argmax()]}"


def _n_keys(fcs) -> int:
    return sum(len(fc.keyframe_points) for fc in fcs)


def test_object_fit_keeps_original_and_matches_blender(scene, ext):
    ob, frames, expected = make_object(n_frames=72)
    original = ob.animation_data.action
    orig_name = original.name
    before = snapshot_action(original)
    keys_before = _n_keys(fcurves_of(ob))

    assert run_fit(mode="LATENT", keep_original=True) == {"FINISHED"}

    fitted = ob.animation_data.action
    assert fitted != original and fitted.name == f"{orig_name}.fit"
    if IS_SLOTTED:
        assert ob.animation_data.action_slot is not None
        assert ob.animation_data.action_slot.identifier == original.slots[0].identifier
    # The original is untouched (every key and handle) and protected by a fake user.
    after = snapshot_action(bpy.data.actions[orig_name])
    assert sorted(before) == sorted(after)
    for k, arr in before.items():
        np.testing.assert_array_equal(arr, after[k])
    assert bpy.data.actions[orig_name].use_fake_user

    fcs = fcurves_of(ob)
    keys_after = _n_keys(fcs)
    assert keys_after < keys_before / 2, (keys_before, keys_after)
    _assert_within(ob, frames, expected)

    # Blender evaluates the written keys exactly like the core model does (float32 rounding).
    columns = [(fc.data_path, fc.array_index) for fc in fcs]
    values = np.column_stack([expected[c] for c in columns])
    tol = np.array([_tol(c[0]) for c in columns])
    op_props = bpy.ops.anim_signals.fit_latent_spline.get_rna_type().properties
    continuity = op_props["continuity"].default
    model = ext.core.fit_channels(values, frames, tol, mode="LATENT", seed=0, continuity=continuity)
    assert model.n_keys == keys_after
    dense = np.linspace(frames[0], frames[-1], 4 * len(frames) - 3)
    ours = model.evaluate(dense)
    for j, fc in enumerate(fcs):
        diff = np.abs(evaluate(fc, dense) - ours[:, j]).max()
        assert diff < 1e-4, (columns[j], diff)
        np.testing.assert_allclose(evaluate(fc, frames), model.evaluate(frames)[:, j], atol=2e-5)

    res = scene.anim_signals.last_fit
    assert res.valid and res.keys_before == keys_before and res.keys_after == keys_after
    assert 0.0 < res.max_rotation_deg <= 0.5 + 1e-3
    assert 0.0 < res.max_location <= 0.01 + 1e-5
    assert res.distortion > 0.0 and res.joint_error_cm < 0.0  # not an armature


def test_fit_in_place_when_not_keeping_original(scene, ext):
    ob, frames, expected = make_object(n_frames=60, seed=5)
    action = ob.animation_data.action
    name = action.name
    n_actions = len(bpy.data.actions)
    keys_before = _n_keys(fcurves_of(ob))
    assert run_fit(mode="PER_CHANNEL", keep_original=False) == {"FINISHED"}
    assert ob.animation_data.action == action and action.name == name
    assert len(bpy.data.actions) == n_actions
    assert _n_keys(fcurves_of(ob)) < keys_before / 2
    _assert_within(ob, frames, expected)


def test_selected_channels_only(scene, ext):
    ob, frames, expected = make_object(n_frames=60, seed=6)
    fcs = fcurves_of(ob)
    for fc in fcs:
        fc.select = fc.data_path == "location"
    untouched = {(fc.data_path, fc.array_index): key_array(fc) for fc in fcs if fc.data_path != "location"}
    assert run_fit(channels="SELECTED", mode="LATENT", keep_original=False) == {"FINISHED"}
    for fc in fcurves_of(ob):
        key = (fc.data_path, fc.array_index)
        if fc.data_path == "location":
            assert len(fc.keyframe_points) < len(frames) / 2
        else:
            np.testing.assert_array_equal(key_array(fc), untouched[key])
    _assert_within(ob, frames, expected)


def test_armature_euler_and_quaternion_bones(scene, ext):
    ob, frames, expected = make_armature(n_frames=60)
    original = ob.animation_data.action
    keys_before = _n_keys(fcurves_of(ob))
    assert run_fit(mode="LATENT") == {"FINISHED"}
    fitted = ob.animation_data.action
    assert fitted != original
    assert _n_keys(fcurves_of(ob)) < keys_before / 2

    fcs = {(fc.data_path, fc.array_index): fc for fc in fcurves_of(ob)}
    assert len(fcs) == len(expected)
    for key, fc in fcs.items():
        if "rotation_quaternion" in key[0]:
            continue
        err = np.abs(evaluate(fc, frames) - expected[key]).max()
        assert err <= _tol(key[0]) + SLACK, (key, err)
    # Quaternions: compare the whole 4-vector up to sign (both signs are the same rotation).
    qpath = next(k[0] for k in expected if "rotation_quaternion" in k[0])
    q_orig = np.column_stack([expected[(qpath, i)] for i in range(4)])
    q_fit = np.column_stack([evaluate(fcs[(qpath, i)], frames) for i in range(4)])
    err = np.minimum(np.abs(q_fit - q_orig).max(axis=1), np.abs(q_fit + q_orig).max(axis=1))
    assert err.max() <= ROT / 2 + SLACK

    # World-space joints: the reported error (sampled frames) is bounded by the full comparison.
    res = scene.anim_signals.last_fit
    heads_fit = world_heads(ob, frames)
    assign_action(ob, original)
    heads_orig = world_heads(ob, frames)
    assign_action(ob, fitted)
    full_cm = 100.0 * np.linalg.norm(heads_fit - heads_orig, axis=-1).max()
    assert 0.0 < res.joint_error_cm <= full_cm + 1e-3
    assert full_cm < 5.0  # 0.5 deg on a 4-unit chain + 0.01 root location


def test_euler_wraparound_is_fitted_without_spikes(scene, ext):
    ob = bpy.data.objects.new("Spinner", None)
    scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    frames = np.arange(1, 121, dtype=np.float64)
    # Oscillates around 180 deg: the stored angle jumps between +pi and -pi many times.
    angle = np.pi + 0.5 * np.sin(2 * np.pi * frames / 40.0)
    wrapped = (angle + np.pi) % (2 * np.pi) - np.pi
    assert np.abs(np.diff(wrapped)).max() > 5.0  # the input really wraps
    rot = np.column_stack([0.1 * np.sin(frames / 10.0), np.zeros_like(frames), wrapped])
    keyed(ob, "rotation_euler", frames, rot)
    expected = {(fc.data_path, fc.array_index): key_array(fc)[:, 1] for fc in fcurves_of(ob)}
    assert run_fit(mode="PER_CHANNEL") == {"FINISHED"}
    fz = next(fc for fc in fcurves_of(ob) if fc.array_index == 2)
    assert len(fz.keyframe_points) < 30
    _assert_within(ob, frames, expected, wrap_euler=True)
    dense = evaluate(fz, np.linspace(1, 120, 477))
    assert np.abs(np.diff(dense)).max() < 0.1  # no swing through the whole circle


def test_quaternion_sign_flips_are_fitted_without_spikes(scene, ext):
    ob, frames, _ = make_object(n_frames=90, seed=9, quaternion=True)
    fcs = fcurves_of(ob)
    qfc = sorted((fc for fc in fcs if fc.data_path == "rotation_quaternion"), key=lambda f: f.array_index)
    q = np.column_stack([key_array(fc)[:, 1] for fc in qfc])
    sign = np.where((frames // 7) % 2 == 0, 1.0, -1.0)  # flip the hemisphere every 7 frames
    flipped = q * sign[:, None]
    for i, fc in enumerate(qfc):
        kp = key_array(fc)
        kp[:, 1] = flipped[:, i]
        fc.keyframe_points.foreach_set("co", kp.astype(np.float32).ravel())
        fc.update()
    q_orig = np.column_stack([key_array(fc)[:, 1] for fc in qfc])
    assert run_fit(mode="LATENT") == {"FINISHED"}
    qfc = sorted((fc for fc in fcurves_of(ob) if fc.data_path == "rotation_quaternion"), key=lambda f: f.array_index)
    assert sum(len(fc.keyframe_points) for fc in qfc) < 4 * len(frames) / 3
    q_fit = np.column_stack([evaluate(fc, frames) for fc in qfc])
    err = np.minimum(np.abs(q_fit - q_orig).max(axis=1), np.abs(q_fit + q_orig).max(axis=1))
    assert err.max() <= ROT / 2 + SLACK
    dense = np.column_stack([evaluate(fc, np.linspace(1, 90, 357)) for fc in qfc])
    assert np.abs(np.diff(dense, axis=0)).max() < 0.1


def test_shape_key_animation(scene, ext):
    ob, frames, expected = make_shape_keys(n_frames=80)
    keys = ob.data.shape_keys
    original = keys.animation_data.action
    before = snapshot_action(original)
    assert run_fit(target="SHAPE_KEYS", mode="AUTO") == {"FINISHED"}
    assert keys.animation_data.action != original
    after = snapshot_action(original)
    for k, arr in before.items():
        np.testing.assert_array_equal(arr, after[k])
    fcs = fcurves_of(keys)
    assert _n_keys(fcs) < len(fcs) * len(frames) / 2
    _assert_within(keys, frames, expected)
    assert scene.anim_signals.last_fit.max_other <= 0.01 + 1e-6


def test_auto_target_fits_object_and_shape_keys(scene, ext):
    ob, frames, sk_expected = make_shape_keys(n_frames=50, seed=4)
    keyed(ob, "location", frames, 0.3 * np.column_stack([np.sin(frames / 5.0), np.cos(frames / 7.0), frames / 50.0]))
    ob_expected = {(fc.data_path, fc.array_index): key_array(fc)[:, 1] for fc in fcurves_of(ob)}
    ob_action, sk_action = ob.animation_data.action, ob.data.shape_keys.animation_data.action
    assert run_fit(mode="LATENT") == {"FINISHED"}
    assert ob.animation_data.action != ob_action
    assert ob.data.shape_keys.animation_data.action != sk_action
    _assert_within(ob, frames, ob_expected)
    _assert_within(ob.data.shape_keys, frames, sk_expected)


def test_short_curves_are_left_as_they_are(scene, ext):
    ob, frames, expected = make_object(n_frames=50, seed=8)
    short = next(fc for fc in fcurves_of(ob) if fc.data_path == "scale" and fc.array_index == 1)
    co = np.array([[1.0, 1.0], [25.0, 2.0]], dtype=np.float32)
    short.keyframe_points.clear()
    short.keyframe_points.add(2)
    short.keyframe_points.foreach_set("co", co.ravel())
    short.update()
    short_keys = key_array(short)
    assert run_fit(mode="LATENT", keep_original=False) == {"FINISHED"}
    short = next(fc for fc in fcurves_of(ob) if fc.data_path == "scale" and fc.array_index == 1)
    np.testing.assert_array_equal(key_array(short), short_keys)
    del expected[("scale", 1)]
    for fc in fcurves_of(ob):
        key = (fc.data_path, fc.array_index)
        if key in expected:
            assert np.abs(evaluate(fc, frames) - expected[key]).max() <= _tol(key[0]) + SLACK


def test_snap_to_frames_puts_keys_on_whole_frames(scene, ext):
    ob, frames, expected = make_object(n_frames=48, seed=11)
    assert run_fit(mode="LATENT", snap_to_frames=True) == {"FINISHED"}
    for fc in fcurves_of(ob):
        x = key_array(fc)[:, 0]
        np.testing.assert_allclose(x, np.round(x), atol=1e-4)
    _assert_within(ob, frames, expected)


def test_ten_thousand_frames_finish_within_tolerance(scene, ext):
    ob = bpy.data.objects.new("Long", None)
    scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    frames = np.arange(0, 10000, dtype=np.float64)
    t = frames / 24.0
    loc = np.column_stack([np.sin(2 * np.pi * 0.3 * t), 0.5 * np.sin(2 * np.pi * 0.2 * t + 1.0)])
    keyed(ob, "location", frames, loc)
    expected = {(fc.data_path, fc.array_index): key_array(fc)[:, 1] for fc in fcurves_of(ob)}
    assert run_fit(mode="LATENT") == {"FINISHED"}
    fcs = fcurves_of(ob)
    assert _n_keys(fcs) < 2 * len(frames)
    for fc in fcs:
        key = (fc.data_path, fc.array_index)
        if fc.array_index < 2:
            got = evaluate(fc, frames[::7])
            assert np.abs(got - expected[key][::7]).max() <= 0.01 + SLACK


@pytest.mark.skipif(not IS_SLOTTED, reason="slotted actions exist from Blender 4.4")
@pytest.mark.parametrize("keep_original", [True, False])
def test_one_action_shared_by_object_and_shape_keys_through_slots(scene, ext, keep_original):
    ob, frames, sk_expected = make_shape_keys(n_frames=60, seed=12)
    keyed(ob, "location", frames, 0.4 * np.column_stack([np.sin(frames / 6.0), np.cos(frames / 9.0), frames / 60.0]))
    ob_expected = {(fc.data_path, fc.array_index): key_array(fc)[:, 1] for fc in fcurves_of(ob)}
    action = ob.animation_data.action
    keys = ob.data.shape_keys
    old = keys.animation_data.action
    if old == action:  # Blender 5.0 keys an object and its data into one action already
        key_slot = keys.animation_data.action_slot
    else:  # 4.4/4.5: move the shape-key curves into a second slot of the object's action
        key_slot = action.slots.new(id_type="KEY", name="FaceKeys")
        cb = action.layers[0].strips[0].channelbag(key_slot, ensure=True)
        for (path, idx), vals in sk_expected.items():
            set_dense_keys(cb.fcurves.new(path, index=idx), frames, vals)
        keys.animation_data.action = action
        keys.animation_data.action_slot = key_slot
        bpy.data.actions.remove(old)
    assert len(action.slots) == 2
    before = snapshot_action(action)
    n_actions = len(bpy.data.actions)

    assert run_fit(mode="LATENT", keep_original=keep_original) == {"FINISHED"}

    fitted = ob.animation_data.action
    assert keys.animation_data.action == fitted  # still one action for both
    assert keys.animation_data.action_slot.identifier == key_slot.identifier
    assert ob.animation_data.action_slot.identifier != key_slot.identifier
    if keep_original:
        assert fitted != action and len(bpy.data.actions) == n_actions + 1
        after = snapshot_action(action)
        for k, arr in before.items():
            np.testing.assert_array_equal(arr, after[k])
    else:
        assert fitted == action and len(bpy.data.actions) == n_actions
    _assert_within(ob, frames, ob_expected)
    _assert_within(keys, frames, sk_expected)
    assert _n_keys(fcurves_of(keys)) < len(sk_expected) * len(frames) / 2


def test_constant_curve_in_a_moving_clip_becomes_one_key(scene, ext):
    ob, frames, expected = make_object(n_frames=50, seed=13)
    flat = next(fc for fc in fcurves_of(ob) if fc.data_path == "scale" and fc.array_index == 2)
    set_dense_keys(flat, frames, np.full(frames.size, 1.25))
    expected[("scale", 2)] = np.full(frames.size, 1.25)
    assert run_fit(mode="PER_CHANNEL", keep_original=False) == {"FINISHED"}
    flat = next(fc for fc in fcurves_of(ob) if fc.data_path == "scale" and fc.array_index == 2)
    assert len(flat.keyframe_points) == 1
    np.testing.assert_allclose(evaluate(flat, frames), 1.25, atol=1e-6)
    _assert_within(ob, frames, expected)


def test_free_handle_lengths_survive_blender_evaluation(scene, ext):
    """Keys whose handles are not at thirds: Blender solves x(t) = frame itself; it must agree."""
    ob, frames, expected = make_object(n_frames=96)
    assert run_fit(mode="LATENT", keep_original=False) == {"FINISHED"}
    thirds_keys = _n_keys(fcurves_of(ob))
    ob2, frames2, expected2 = make_object(n_frames=96)
    bpy.context.view_layer.objects.active = ob2
    assert run_fit(mode="LATENT", keep_original=False, free_handles=True) == {"FINISHED"}
    fcs = fcurves_of(ob2)
    assert _n_keys(fcs) <= thirds_keys
    _assert_within(ob2, frames2, expected2)
    # at least one segment really uses non-third handles, so Blender's own root finder was exercised
    non_thirds = 0
    for fc in fcs:
        keys = key_array(fc)
        if len(keys) < 2:
            continue
        co = np.array([k.co[:] for k in fc.keyframe_points])
        hr = np.array([k.handle_right[:] for k in fc.keyframe_points])
        h = np.diff(co[:, 0])
        non_thirds += int(np.sum(~np.isclose(hr[:-1, 0] - co[:-1, 0], h / 3, atol=1e-3)))
    assert non_thirds > 0, (thirds_keys, _n_keys(fcs))
