"""Recording on the spatial-keyframe canvas and playing the model back
(``anim_signals.spatial_keyframes_record`` / ``spatial_keyframes_play_back``, operators/spatial_keyframes/recording.py).

On the generated walk (bones in every rotation mode): the written curves are read with Blender's
own ``fcurve.evaluate`` and converted with scipy (not the extension's conversions), and compared
with the core's RBF at the core's stroke sampling; bad input changes nothing; the modal drag is
driven with stand-in events (headless Blender delivers none).
"""

from __future__ import annotations

import itertools
import math

import bpy
import numpy as np
import pytest
from _bl_helpers import assert_refused, assert_same_state, ext_module, fcurves_of, linked_copy, snapshot_all
from _sk_helpers import (
    bone_state,
    make_walk,
    matrices_of_values,
    pose_matrices,
    rotation_prop,
    run,
)
from test_pose_space_canvas import RECT, ev, fake_op

PROP = "anim_signals_spatial_keyframes"
ATOL = 3e-5  # float32 keys


@pytest.fixture
def rec(extension):
    return ext_module("operators.spatial_keyframes.recording")


def _built(sk, skf, n_frames: int = 60, count: int = 6):
    ext_module("operators.pose_space.canvas_state").forget_states()
    ob, expected, parents = make_walk(sk, n_frames=n_frames)
    assert run("spatial_keyframes_from_action", key_mode="COUNT", count=count, projection="MDS",
               optimise=False) == {"FINISHED"}
    return ob, expected, parents, skf.load_model(ob)


def _stroke(points) -> list[dict]:
    return [{"name": "", "co": (float(x), float(y))} for x, y in np.asarray(points, dtype=float)]


def _times(seconds) -> list[dict]:
    return [{"name": "", "seconds": float(t)} for t in seconds]


def _curves(ob) -> dict:
    return {(fc.data_path, fc.array_index): fc for fc in fcurves_of(ob)}


def _played(ob, frames) -> np.ndarray:
    """Every bone's rotation matrix at ``frames`` from the assigned action's curves, (F, J, 3, 3)."""
    curves = _curves(ob)
    out = np.empty((len(frames), len(ob.pose.bones), 3, 3))
    for j, pb in enumerate(ob.pose.bones):
        prop = rotation_prop(pb.rotation_mode)
        path = f'pose.bones["{pb.name}"].{prop}'
        size = 3 if prop == "rotation_euler" else 4
        values = np.column_stack([[curves[(path, i)].evaluate(float(f)) for f in frames] for i in range(size)])
        out[:, j] = matrices_of_values(values, pb.rotation_mode)
    return out


def _rotation_key_counts(ob) -> set[int]:
    return {len(fc.keyframe_points) for fc in fcurves_of(ob) if ".rotation_" in fc.data_path}


# ----------------------------------------------------------------------------------------------
# Recording a stroke
# ----------------------------------------------------------------------------------------------


def test_a_stroke_through_three_markers_spread_over_n_frames(scene, skf, sk):
    ob, expected, _, model = _built(sk, skf)
    original = ob.animation_data.action
    scene.frame_start = 5
    hips = ob.pose.bones["Hips"]
    scene.frame_set(12)
    held = np.array(hips.location)
    markers = model.clip.markers
    stroke = markers[[0, 2, 4]]
    n = 31
    assert run("spatial_keyframes_record", stroke=_stroke(stroke), frames=n) == {"FINISHED"}
    written = ob.animation_data.action
    assert written.name == "WalkerAction.sk" and written != original and original.use_fake_user
    assert (scene.frame_start, scene.frame_end) == (5, 5 + n - 1)
    assert _rotation_key_counts(ob) == {n}
    frames = np.arange(5, 5 + n, dtype=float)
    for fc in fcurves_of(ob):
        if ".rotation_" in fc.data_path:
            co = np.array([kp.co[:] for kp in fc.keyframe_points])
            np.testing.assert_array_equal(co[:, 0], frames)
            assert {kp.interpolation for kp in fc.keyframe_points} == {"LINEAR"}
    # every model bone keyed in its own mode; poses equal the core's RBF at the core's sampling
    assert len([fc for fc in fcurves_of(ob) if ".rotation_" in fc.data_path]) == sum(
        3 if rotation_prop(pb.rotation_mode) == "rotation_euler" else 4 for pb in ob.pose.bones)
    points = sk.even_stroke_frames(stroke, n)
    np.testing.assert_allclose(_played(ob, frames), model.clip.rbf().evaluate(points), atol=ATOL)
    # at the ends of the stroke, the markers' key poses
    played = _played(ob, frames[[0, -1]])
    np.testing.assert_allclose(played[0], expected[model.clip.keys[0]], atol=ATOL)
    np.testing.assert_allclose(played[1], expected[model.clip.keys[4]], atol=ATOL)
    # the root holds the location it had (rotations only)
    curves = _curves(ob)
    for i in range(3):
        fc = curves[('pose.bones["Hips"].location', i)]
        assert len(fc.keyframe_points) == n
        np.testing.assert_allclose([fc.evaluate(f) for f in frames], held[i], atol=1e-6)
    assert not any(fc.data_path.endswith(".location") and "Hips" not in fc.data_path for fc in fcurves_of(ob))


def test_a_timed_stroke_takes_its_length_from_the_hand(scene, skf, sk, rec):
    ob, expected, _, model = _built(sk, skf)
    scene.render.fps, scene.render.fps_base = 24, 1.0
    markers = model.clip.markers
    stroke = np.array([markers[1], 0.5 * (markers[1] + markers[3]), markers[3]])
    seconds = [2.0, 2.4, 3.13]  # any origin
    result = bpy.ops.anim_signals.spatial_keyframes_record("EXEC_DEFAULT", stroke=_stroke(stroke),
                                                           seconds=_times(seconds), frames=0)
    assert result == {"FINISHED"}
    n = math.floor(1.13 * 24) + 1
    assert n == 28 and _rotation_key_counts(ob) == {n}
    assert (scene.frame_start, scene.frame_end) == (1, n)
    frames = np.arange(1, n + 1, dtype=float)
    expected_points = sk.timed_stroke_frames(stroke, seconds, 24.0)
    # the point of frame k is where the cursor was k / 24 s after the start (straight between samples)
    u = (5 / 24.0) / 0.4
    np.testing.assert_allclose(expected_points[5], stroke[0] + u * (stroke[1] - stroke[0]), atol=1e-12)
    u = (10 / 24.0 - 0.4) / 0.73
    np.testing.assert_allclose(expected_points[10], stroke[1] + u * (stroke[2] - stroke[1]), atol=1e-12)
    np.testing.assert_allclose(_played(ob, frames), model.clip.rbf().evaluate(expected_points), atol=ATOL)
    np.testing.assert_allclose(_played(ob, frames[:1])[0], expected[model.clip.keys[1]], atol=ATOL)
    # another frame rate, another length: 30000/1001 fps
    scene.render.fps, scene.render.fps_base = 30, 1.001
    assert run("spatial_keyframes_record", stroke=_stroke(stroke), seconds=_times(seconds)) == {"FINISHED"}
    assert _rotation_key_counts(ob) == {math.floor(1.13 * 30 / 1.001) + 1}


def test_recording_again_replaces_the_first_recording(scene, skf, sk):
    ob, _, _, model = _built(sk, skf)
    stroke = _stroke(model.clip.markers[[0, 1, 2]])
    assert run("spatial_keyframes_record", stroke=stroke, frames=20) == {"FINISHED"}
    first = ob.animation_data.action
    assert first.name == "WalkerAction.sk"
    assert run("spatial_keyframes_record", stroke=_stroke(model.clip.markers[[3, 1]]), frames=12) == {"FINISHED"}
    assert sorted(a.name for a in bpy.data.actions) == ["WalkerAction", "WalkerAction.sk"]
    assert ob.animation_data.action.name == "WalkerAction.sk" and _rotation_key_counts(ob) == {12}
    assert bpy.data.actions["WalkerAction"].use_fake_user
    # a recording the user keeps (fake user) is not replaced: the new one takes the next name
    ob.animation_data.action.use_fake_user = True
    assert run("spatial_keyframes_record", stroke=stroke, frames=15) == {"FINISHED"}
    assert ob.animation_data.action.name == "WalkerAction.sk.001" and _rotation_key_counts(ob) == {15}
    assert sorted(a.name for a in bpy.data.actions) == ["WalkerAction", "WalkerAction.sk", "WalkerAction.sk.001"]


# ----------------------------------------------------------------------------------------------
# Playing the model back
# ----------------------------------------------------------------------------------------------


def test_play_back_writes_the_reconstruction_and_follows_marker_edits(scene, skf, sk, rec):
    ob, expected, parents, model = _built(sk, skf, n_frames=50, count=5)
    info = skf.model_info(ob)
    scene.frame_start, scene.frame_end = 10, 20
    assert run("spatial_keyframes_play_back") == {"FINISHED"}
    written = ob.animation_data.action
    assert written.name == "WalkerAction.skc" and bpy.data.actions["WalkerAction"].use_fake_user
    assert (scene.frame_start, scene.frame_end) == (1, 50)
    frames = np.arange(1, 51, dtype=float)
    before = _played(ob, frames)
    np.testing.assert_allclose(before, model.clip.reconstruct(), atol=ATOL)
    # the error against the original is the build's (the markers were not edited)
    done = rec.play_back(ob, scene)
    assert done.error == pytest.approx(info["error"], rel=1e-4)
    w = sk.joint_weights(parents)
    assert done.error == pytest.approx(sk.error_per_frame_per_joint(expected, model.clip.reconstruct(), w), rel=1e-4)
    # move a marker: the played-back motion changes there, and equals the edited clip's
    transaction = ext_module("operators.common.transaction").transaction
    moved = model.clip.with_marker_moved(2, model.clip.markers[2] + 0.3 * (model.clip.markers[3] - model.clip.markers[2]))
    with transaction():
        ext_module("operators.spatial_keyframes.storage").store_edited(ob, moved)
    assert run("spatial_keyframes_play_back") == {"FINISHED"}
    assert sorted(a.name for a in bpy.data.actions) == ["WalkerAction", "WalkerAction.skc"]
    after = _played(ob, frames)
    np.testing.assert_allclose(after, moved.reconstruct(), atol=ATOL)
    key = int(model.clip.keys[2])
    assert np.abs(after[key] - before[key]).max() > 1e-2
    assert rec.play_back(ob, scene).error > info["error"]
    # the root's travel is copied from the original, as Compact Action does
    curves = _curves(ob)
    travel = [curves[('pose.bones["Hips"].location', 1)].evaluate(f) for f in (1.0, 50.0)]
    np.testing.assert_allclose(travel, [0.02, 1.0], atol=1e-6)
    # a recording over the play-back leaves it unused (play back writes it again, no fake user);
    # playing back over a recording keeps the recording (fake user) and replaces the earlier .skc
    assert run("spatial_keyframes_record", stroke=_stroke(model.clip.markers[[0, 1]]), frames=8) == {"FINISHED"}
    skc = bpy.data.actions["WalkerAction.skc"]
    assert skc.users == 0 and not skc.use_fake_user
    assert run("spatial_keyframes_play_back") == {"FINISHED"}
    assert bpy.data.actions["WalkerAction.sk"].use_fake_user and ob.animation_data.action.name == "WalkerAction.skc"
    assert sorted(a.name for a in bpy.data.actions) == ["WalkerAction", "WalkerAction.sk", "WalkerAction.skc"]


def test_play_back_without_the_original_action(scene, skf, sk, rec):
    ob, _, _, model = _built(sk, skf, n_frames=40, count=4)
    original = ob.animation_data.action
    ob.animation_data.action = None
    bpy.data.actions.remove(original)
    done = rec.play_back(ob, scene)
    assert done.error is None and "no longer exists" in done.message()
    assert ob.animation_data.action.name == "WalkerAction.skc"
    np.testing.assert_allclose(_played(ob, np.arange(1, 41, dtype=float)), model.clip.reconstruct(), atol=ATOL)


# ----------------------------------------------------------------------------------------------
# Bad input: a clear message, nothing changed
# ----------------------------------------------------------------------------------------------


def test_bad_strokes_are_refused(scene, skf, sk):
    _, _, _, model = _built(sk, skf, n_frames=40, count=4)
    m = model.clip.markers
    max_frames = sk.MAX_RECORDED_FRAMES

    def refused(match, **kwargs):
        assert_refused(lambda: run("spatial_keyframes_record", **kwargs), match)

    refused("at least 2 points, got 1", stroke=_stroke(m[:1]), frames=10)
    refused("at least 2 points, got 0", frames=10)
    refused("no length", stroke=_stroke([m[0], m[0], m[0]]), frames=10)
    refused("stroke point 1 .* must be finite", stroke=_stroke([m[0], (float("nan"), 0.0)]), frames=10)
    refused("more than 1000 times", stroke=_stroke([m[0], m[1] * 1e9]), frames=10)
    refused("timestamps go backwards", stroke=_stroke(m[:3]), seconds=_times([0.0, 0.5, 0.4]))
    refused("timestamps hold NaN", stroke=_stroke(m[:2]), seconds=_times([0.0, float("nan")]))
    refused("2 timestamps for 3 stroke points", stroke=_stroke(m[:3]), seconds=_times([0.0, 1.0]))
    refused("No time elapsed", stroke=_stroke(m[:2]), seconds=_times([1.0, 1.0]))
    refused("without timestamps needs Frames", stroke=_stroke(m[:2]))
    refused(f"more than {max_frames}", stroke=_stroke(m[:2]), seconds=_times([0.0, 5000.0]))
    refused(f"2 to {max_frames} frames", stroke=_stroke(m[:2]), frames=max_frames + 1)
    refused(f"2 to {max_frames} frames, got 1", stroke=_stroke(m[:2]), frames=1)


@pytest.mark.parametrize("op", ["spatial_keyframes_record", "spatial_keyframes_play_back"])
def test_no_model_and_a_model_that_no_longer_fits(scene, skf, sk, op):
    kwargs = {"stroke": _stroke([(0.0, 0.0), (1.0, 0.0)]), "frames": 5} if op.endswith("record") else {}
    ob, _, _ = make_walk(sk, n_frames=30)
    assert_refused(lambda: run(op, **kwargs), "has no spatial keyframes: build them first")
    assert run("spatial_keyframes_from_action", key_mode="COUNT", count=4) == {"FINISHED"}
    ob.data.bones["Head"].name = "Skull"
    assert_refused(lambda: run(op, **kwargs), "no bone 'Head'.*rebuild")
    bpy.context.view_layer.objects.active = None
    assert_refused(lambda: run(op, **kwargs), "No active object")


@pytest.mark.parametrize("op", ["spatial_keyframes_record", "spatial_keyframes_play_back"])
def test_linked_armature_is_refused(scene, skf, sk, tmp_path, op):
    ob, _, _ = make_walk(sk, "LinkedWalker", n_frames=30)
    assert run("spatial_keyframes_from_action", key_mode="COUNT", count=4) == {"FINISHED"}
    markers = skf.load_model(ob).clip.markers
    linked_copy(ob, tmp_path, scene)
    kwargs = {"stroke": _stroke(markers[:2]), "frames": 5} if op.endswith("record") else {}
    assert_refused(lambda: run(op, **kwargs), "linked from library")


# ----------------------------------------------------------------------------------------------
# The drag, with stand-in events
# ----------------------------------------------------------------------------------------------




def test_modal_recording_follows_the_cursor_escape_restores_release_writes(scene, skf, sk, rec, monkeypatch):
    ob, expected, _, model = _built(sk, skf)
    pc = ext_module("operators.pose_space.canvas_state")
    view = pc.view_for(pc.state_of(ob, pc.SPATIAL_KEYFRAMES), model.shown, RECT)
    pixels = view.to_pixels(model.clip.markers)
    ctx = bpy.context
    state = snapshot_all()
    bones = bone_state(ob)
    op = fake_op("spatial_keyframes_record", ob, model.shown, frames=16)
    assert op.modal(ctx, ev("MOUSEMOVE", xy=pixels[0])) == {"PASS_THROUGH"}  # waiting for a press
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", pixels[0])) == {"RUNNING_MODAL"} and op._dragging
    np.testing.assert_allclose(pose_matrices(ob), expected[model.clip.keys[0]], atol=ATOL)  # live
    assert op.modal(ctx, ev("MOUSEMOVE", xy=pixels[2])) == {"RUNNING_MODAL"}
    np.testing.assert_allclose(pose_matrices(ob), expected[model.clip.keys[2]], atol=ATOL)
    st = pc.state_of(ob, pc.SPATIAL_KEYFRAMES)
    np.testing.assert_allclose(st.stroke, model.clip.markers[[0, 2]], atol=1e-9)  # drawn while dragging
    # far off: held at the edge of the trajectory's and markers' box grown by a quarter of its larger side
    assert op.modal(ctx, ev("MOUSEMOVE", xy=(pixels[2][0] + 5000.0, pixels[2][1]))) == {"RUNNING_MODAL"}
    near = np.vstack([model.shown.positions, model.clip.markers])
    edge = near[:, 0].max() + 0.25 * np.ptp(near, axis=0).max()
    assert st.stroke.shape == (3, 2) and st.stroke[-1][0] == pytest.approx(edge)
    assert op.modal(ctx, ev("ESC", "PRESS")) == {"CANCELLED"}
    assert st.stroke is None and st.cursor is None
    np.testing.assert_array_equal(bone_state(ob), bones)
    assert_same_state(state, snapshot_all())

    # timed by the clock: 0.5 s from marker 1 to marker 3 at 24 fps
    clock = itertools.count(10.0, 0.25)
    monkeypatch.setattr(rec, "CLOCK", lambda: next(clock))
    scene.render.fps, scene.render.fps_base = 24, 1.0
    op = fake_op("spatial_keyframes_record", ob, model.shown, frames=0)
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", pixels[1])) == {"RUNNING_MODAL"}
    assert op.modal(ctx, ev("MOUSEMOVE", xy=0.5 * (pixels[1] + pixels[3]))) == {"RUNNING_MODAL"}
    assert op.modal(ctx, ev("LEFTMOUSE", "RELEASE", pixels[3])) == {"FINISHED"}
    assert ob.animation_data.action.name == "WalkerAction.sk" and _rotation_key_counts(ob) == {13}
    assert [p.seconds for p in op.seconds] == [0.0, 0.25, 0.5] and len(op.stroke) == 3
    assert any("13 frames, 0.50 s at 24 fps" in msg for _, msg in op.reports)
    played = _played(ob, np.array([1.0, 13.0]))
    np.testing.assert_allclose(played, expected[model.clip.keys[[1, 3]]], atol=ATOL)
    assert pc.state_of(ob, pc.SPATIAL_KEYFRAMES).stroke is None

    # a press and release on one spot records nothing and puts the pose back
    state, bones = snapshot_all(), bone_state(ob)
    op = fake_op("spatial_keyframes_record", ob, model.shown, frames=10)
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", pixels[2])) == {"RUNNING_MODAL"}
    assert op.modal(ctx, ev("LEFTMOUSE", "RELEASE", pixels[2])) == {"CANCELLED"}
    assert any("no length" in msg for _, msg in op.reports)
    np.testing.assert_array_equal(bone_state(ob), bones)
    assert_same_state(state, snapshot_all())


def test_registered_with_tooltips(scene):
    rna = bpy.ops.anim_signals.spatial_keyframes_record.get_rna_type()
    for prop in ("stroke", "seconds", "frames"):
        assert rna.properties[prop].description, prop
    assert "rotations only" in rna.properties["frames"].description.lower()
    assert bpy.ops.anim_signals.spatial_keyframes_play_back.get_rna_type().description
    setting = scene.anim_signals.spatial_keyframes.bl_rna.properties["record_frames"]
    assert setting.default == 0 and "root bone holds its location" in setting.description
