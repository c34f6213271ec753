"""Spatial keyframes in Blender (Costa and Esperança): ``anim_signals.spatial_keyframes_from_action``,
``anim_signals.compact_action``, the model stored on the armature and ``pose_from_point``.

Generated data: the core's walking-then-reaching biped keyed on an armature whose bones use every
kind of rotation mode (quaternion, Euler XYZ and ZXY, axis-angle) and whose root travels. The
expected rotations are converted here with scipy (not the extension's conversions), poses are read
back through Blender (``PoseBone.matrix_basis``), and every bad input is checked to change nothing.
"""

from __future__ import annotations

import time

import bpy
import numpy as np
import pytest
from _bl_helpers import (
    FakeLayout,
    StepwiseDriver,
    assert_refused,
    assert_same_state,
    event,
    ext_module,
    fcurves_of,
    keyed,
    linked_copy,
    shared_data,
    snapshot_all,
)
from _sk_helpers import (
    make_walk,
    matrices_of_values,
    pose_matrices,
    quaternions_of,
    rotation_prop,
    run,
)

PROP = "anim_signals_spatial_keyframes"


# ----------------------------------------------------------------------------------------------
# Build, store, reload, pose
# ----------------------------------------------------------------------------------------------


def test_build_stores_the_cores_model(scene, skf, sk):
    ob, expected, parents = make_walk(sk)
    assert run("spatial_keyframes_from_action", key_mode="COUNT", count=8, projection="MDS", optimise=True) == {"FINISHED"}
    info = skf.model_info(ob)
    assert info["markers"] == 8 and info["frames"] == 90 and info["joints"] == 17 and info["action"] == "WalkerAction"
    assert (info["frame_start"], info["frame_end"]) == (1, 90) and info["projection"] == "mds" and info["optimised"]
    core = sk.compact_clip(quaternions_of(expected), parents, count=8, selection="uniform", projection="mds",
                           optimise=True)
    model = skf.load_model(ob)
    np.testing.assert_array_equal(model.clip.keys, core.keys)
    np.testing.assert_allclose(model.clip.trajectory, core.trajectory, atol=1e-6)
    np.testing.assert_allclose(model.clip.key_rotations, core.key_rotations, atol=1e-9)
    result = scene.anim_signals.last_spatial_keyframes
    assert result.valid and not result.compacted and result.markers == 8 and result.frames == 90
    w = sk.joint_weights(parents)
    assert result.error == pytest.approx(sk.error_per_frame_per_joint(expected, core.reconstruct(), w), rel=1e-5)
    assert info["error"] == pytest.approx(result.error, rel=1e-6)
    assert ob.animation_data.action.name == "WalkerAction"  # building writes no animation


def test_pose_from_point_is_exact_at_every_marker(scene, skf, sk):
    ob, expected, _ = make_walk(sk)
    assert run("spatial_keyframes_from_action", key_mode="COUNT", count=6, optimise=False) == {"FINISHED"}
    model = skf.load_model(ob)
    modes_before = [pb.rotation_mode for pb in ob.pose.bones]
    for marker, key in enumerate(model.clip.keys):
        skf.pose_from_point(ob, model.clip.markers[marker])
        np.testing.assert_allclose(pose_matrices(ob), expected[key], atol=2e-5, err_msg=f"marker {marker}")
    assert [pb.rotation_mode for pb in ob.pose.bones] == modes_before
    # between two markers: a valid pose, unlike either key pose
    mid = 0.5 * (model.clip.markers[1] + model.clip.markers[2])
    skf.pose_from_point(ob, mid)
    between = pose_matrices(ob)
    np.testing.assert_allclose(between @ np.swapaxes(between, -1, -2), np.broadcast_to(np.eye(3), between.shape),
                               atol=1e-5)
    assert np.abs(between - expected[model.clip.keys[1]]).max() > 1e-3
    with pytest.raises(ValueError, match="xy has a NaN or infinite value"):
        skf.pose_from_point(ob, (float("nan"), 0.0))
    with pytest.raises(ValueError, match="xy must be a plane point"):
        skf.pose_from_point(ob, (0.0, 0.0, 1.0))


def test_model_survives_save_and_reload(scene, skf, sk, tmp_path):
    ob, expected, _ = make_walk(sk)
    assert run("spatial_keyframes_from_action", key_mode="COUNT", count=7, projection="PCA") == {"FINISHED"}
    before = skf.load_model(ob).clip
    path = str(tmp_path / "spatial_keyframes.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, check_existing=False)
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    ob = bpy.data.objects["Walker"]
    info = skf.model_info(ob)
    assert info["markers"] == 7 and info["projection"] == "pca"
    after = skf.load_model(ob).clip
    np.testing.assert_array_equal(after.keys, before.keys)
    np.testing.assert_array_equal(after.trajectory, before.trajectory)
    np.testing.assert_allclose(after.key_rotations, before.key_rotations, atol=1e-12)
    skf.pose_from_point(ob, after.markers[3])
    np.testing.assert_allclose(pose_matrices(ob), expected[after.keys[3]], atol=2e-5)


# ----------------------------------------------------------------------------------------------
# Compaction
# ----------------------------------------------------------------------------------------------


def _read_rotations(ob, action, n_frames: int) -> np.ndarray:
    """Rotation matrices (N, J, 3, 3) of ``action``'s curves in each bone's mode (test oracle)."""
    curves = {(fc.data_path, fc.array_index): fc for fc in fcurves_of(ob)}
    out = np.empty((n_frames, len(ob.pose.bones), 3, 3))
    frames = np.arange(1, n_frames + 1, dtype=float)
    for j, pb in enumerate(ob.pose.bones):
        prop = rotation_prop(pb.rotation_mode)
        size = 3 if prop == "rotation_euler" else 4
        path = f'pose.bones["{pb.name}"].{prop}'
        values = np.column_stack([[curves[(path, i)].evaluate(f) for f in frames] for i in range(size)])
        out[:, j] = matrices_of_values(values, pb.rotation_mode)
    return out


def test_compaction_reports_the_cores_errors_and_writes_the_clip(scene, skf, sk):
    ob, expected, parents = make_walk(sk, n_frames=100)
    original = ob.animation_data.action
    root_location = {i: [fc.evaluate(f) for f in range(1, 101)] for fc in fcurves_of(ob)
                     if fc.data_path.endswith(".location") for i in [fc.array_index]}
    keys_before = {(fc.data_path, fc.array_index): len(fc.keyframe_points) for fc in fcurves_of(ob)}
    assert run("compact_action", key_mode="RATIO", ratio=0.05, projection="MDS", selection="UNIFORM",
               optimise=True) == {"FINISHED"}
    written = ob.animation_data.action
    assert written.name == "WalkerAction.skc" and original.use_fake_user
    result = scene.anim_signals.last_spatial_keyframes
    assert result.valid and result.compacted and result.written_action == written.name and result.markers == 5
    rows = sk.compare_schemes(quaternions_of(expected), parents, count=5, selections=("uniform",),
                              projections=("mds",), optimise=(True,))
    spatial = [r for r in rows if r["kind"] == "spatial"]
    temporal = [r for r in rows if r["kind"] == "temporal"]
    assert result.error == pytest.approx(spatial[0]["error"], rel=1e-5)
    assert result.size == pytest.approx(spatial[0]["size"]) and result.size_ratio == pytest.approx(spatial[0]["size_ratio"])
    stored = {(r.kind, r.scheme): r for r in result.schemes}
    for row in temporal:
        assert stored[("TEMPORAL", row["scheme"])].error == pytest.approx(row["error"], rel=1e-5), row["scheme"]
    assert result.best_temporal == min(temporal, key=lambda r: r["error"])["scheme"]
    # the written curves play the compacted clip back (float32 keys)
    played = _read_rotations(ob, written, 100)
    w = sk.joint_weights(parents)
    assert sk.error_per_frame_per_joint(expected, played, w) == pytest.approx(result.error, abs=2e-5)
    # the root's location is copied as it was; the original action is untouched
    for fc in fcurves_of(ob):
        if fc.data_path.endswith(".location"):
            np.testing.assert_allclose([fc.evaluate(f) for f in range(1, 101)], root_location[fc.array_index],
                                       atol=1e-6)
    ob.animation_data.action = original
    if hasattr(ob.animation_data, "action_slot"):
        ob.animation_data.action_slot = original.slots[0]
    assert {(fc.data_path, fc.array_index): len(fc.keyframe_points) for fc in fcurves_of(ob)} == keys_before
    np.testing.assert_allclose(_read_rotations(ob, original, 100), expected, atol=1e-6)


def test_compacting_again_redoes_it_from_the_original(scene, skf, sk):
    ob, expected, parents = make_walk(sk, n_frames=60)
    original = ob.animation_data.action
    assert run("compact_action", key_mode="COUNT", count=4, optimise=False) == {"FINISHED"}
    first_error = scene.anim_signals.last_spatial_keyframes.error
    assert ob.animation_data.action.name == "WalkerAction.skc"
    # other settings, the compaction assigned: read from the original, the earlier compaction replaced
    assert run("compact_action", key_mode="COUNT", count=8) == {"FINISHED"}
    result = scene.anim_signals.last_spatial_keyframes
    assert result.action_name == "WalkerAction" and result.written_action == "WalkerAction.skc"
    assert ob.animation_data.action.name == "WalkerAction.skc" and result.error < first_error
    assert sorted(a.name for a in bpy.data.actions) == ["WalkerAction", "WalkerAction.skc"]
    assert original.use_fake_user
    rows = sk.compare_schemes(quaternions_of(expected), parents, count=8, projections=("mds",), optimise=(True,))
    assert result.error == pytest.approx([r for r in rows if r["kind"] == "spatial"][0]["error"], rel=1e-5)
    # building (not compacting) from the compacted action models the played-back clip itself
    assert run("spatial_keyframes_from_action", key_mode="COUNT", count=8) == {"FINISHED"}
    assert skf.model_info(ob)["action"] == "WalkerAction.skc"


def test_shared_mocap_clip_matches_the_core_on_the_bvh_file(scene, sk):
    # Blender's BVH importer stores each joint's rotation relative to its bone's rest orientation
    # (R -> B^T R B) and turns the root to Z-up: eq. (1) compares R1^T R2, which neither changes, so
    # the spatial error (and slerp's, and the 1D RBF's) must equal the core's on the file itself.
    # Linear / Hermite interpolate Euler angles, which do change with the rest orientation.
    path = shared_data("mocap", "neutral_01_000.bvh")
    bpy.ops.import_anim.bvh(filepath=str(path))
    ob = bpy.context.active_object
    assert run("compact_action", key_mode="RATIO", ratio=0.03, projection="MDS") == {"FINISHED"}
    result = scene.anim_signals.last_spatial_keyframes
    clip = sk.read_bvh(path)
    assert (result.frames, result.joints, result.markers) == (327, 31, 10)
    assert [pb.name for pb in ob.pose.bones] == list(clip.names)
    rows = sk.compare_schemes(clip.quaternions, clip.parents, count=10, projections=("mds",), optimise=(True,))
    core = {r["scheme"]: r["error"] for r in rows}
    ours = {r.scheme: r.error for r in result.schemes}
    for scheme in ("mds", "slerp", "rbf"):
        assert ours[scheme] == pytest.approx(core[scheme], rel=1e-5), scheme
    assert ours["mds"] < min(ours[s] for s in ("linear", "hermite", "slerp", "rbf"))


# ----------------------------------------------------------------------------------------------
# Modal runs: Esc leaves everything as it was
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op_name", ["spatial_keyframes_from_action", "compact_action"])
def test_escape_changes_nothing_and_a_full_run_finishes(scene, skf, sk, op_name):
    ob, _, _ = make_walk(sk, n_frames=60)
    cls = getattr(bpy.types, f"ANIM_SIGNALS_OT_{op_name}")
    before = snapshot_all()
    op = StepwiseDriver(cls, bpy.context, key_mode="COUNT", count=5)
    assert op.modal(bpy.context, event("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(bpy.context, event("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(bpy.context, event("ESC", "PRESS")) == {"CANCELLED"}
    assert any("nothing changed" in msg for _, msg in op.reports)
    assert_same_state(before, snapshot_all())
    assert PROP not in ob.keys() and not scene.anim_signals.last_spatial_keyframes.valid
    op = StepwiseDriver(cls, bpy.context, key_mode="COUNT", count=5)
    assert op.run_to_end(bpy.context) == {"FINISHED"}
    assert skf.model_info(ob)["markers"] == 5
    assert any(level == {"INFO"} and "5 markers, 60 frames, 17 joints, error" in msg for level, msg in op.reports)
    assert (ob.animation_data.action.name == "WalkerAction.skc") == (op_name == "compact_action")


def test_escape_during_a_long_core_call_returns_at_once(scene, skf, sk, monkeypatch):
    # a core call that takes seconds (t-SNE on a long clip) runs on a worker thread: Esc need not wait
    building = ext_module("operators.spatial_keyframes.building")
    slow_seconds = 1.5
    original = building.distance_matrix

    def slow_distances(*args, **kwargs):
        time.sleep(slow_seconds)
        return original(*args, **kwargs)

    monkeypatch.setattr(building, "distance_matrix", slow_distances)
    make_walk(sk, n_frames=40)
    before = snapshot_all()
    op = StepwiseDriver(bpy.types.ANIM_SIGNALS_OT_compact_action, bpy.context, key_mode="COUNT", count=4)
    t0 = time.perf_counter()
    for _ in range(3):
        assert op.modal(bpy.context, event("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(bpy.context, event("ESC", "PRESS")) == {"CANCELLED"}
    assert time.perf_counter() - t0 < 0.5 * slow_seconds
    assert_same_state(before, snapshot_all())
    # run to the end, the slow call included: the worker's result arrives
    op = StepwiseDriver(bpy.types.ANIM_SIGNALS_OT_spatial_keyframes_from_action, bpy.context, key_mode="COUNT",
                        count=4)
    assert op.run_to_end(bpy.context) == {"FINISHED"}


# ----------------------------------------------------------------------------------------------
# Bad input: one clear message, nothing changed
# ----------------------------------------------------------------------------------------------


def _refused(match: str, op: str = "spatial_keyframes_from_action", **kwargs) -> None:
    assert_refused(lambda: run(op, **kwargs), match)


@pytest.mark.parametrize("op", ["spatial_keyframes_from_action", "compact_action"])
def test_bad_objects_and_actions_are_refused(scene, sk, op):
    mesh = bpy.data.meshes.new("Plane")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (1, 1, 0)], [], [(0, 1, 2)])
    plane = bpy.data.objects.new("Plane", mesh)
    scene.collection.objects.link(plane)
    bpy.context.view_layer.objects.active = plane
    _refused("mesh object: spatial keyframes are built from an armature", op)

    ob, _, _ = make_walk(sk, n_frames=40)
    action = ob.animation_data.action
    ob.animation_data.action = None
    _refused("has no action", op)
    ob.animation_data.action = action
    if hasattr(ob.animation_data, "action_slot"):
        ob.animation_data.action_slot = action.slots[0]
    _refused(r"ratio of 0.05 gives 2 markers on 40 frames: at least 3", op, key_mode="RATIO", ratio=0.05)
    _refused("40 frames \\(poses\\): fewer than the 41 markers", op, key_mode="COUNT", count=41)


def test_an_action_without_rotations_is_refused_and_custom_properties_are_kept(scene, sk):
    ob, _, _ = make_walk(sk, n_frames=30)
    frames = np.arange(1, 31, dtype=float)
    ob.pose.bones["Head"]["wobble"] = 0.0
    keyed(ob.pose.bones["Head"], '["wobble"]', frames, np.sin(frames), id_data=ob)
    assert run("compact_action", key_mode="COUNT", count=4) == {"FINISHED"}  # not a transform: kept
    assert any(fc.data_path.endswith('["wobble"]') for fc in fcurves_of(ob))
    travel = bpy.data.actions.new("TravelOnly")
    ob.animation_data.action = travel
    if hasattr(ob.animation_data, "action_slot"):
        ob.animation_data.action_slot = None
    ob.pose.bones["Hips"].keyframe_insert("location", frame=1.0)
    ob.pose.bones["Hips"].location = (0.0, 1.0, 0.0)
    ob.pose.bones["Hips"].keyframe_insert("location", frame=10.0)
    _refused("animates no bone rotation", key_mode="COUNT", count=3)


def test_repeated_identical_poses_are_refused(scene, sk):
    make_walk(sk, n_frames=30, still=True)
    _refused("holds only 1 distinct pose on 30 frames", key_mode="COUNT", count=4)
    _refused("holds only 1 distinct pose", "compact_action", key_mode="COUNT", count=4)


def test_scale_and_child_location_animation_are_refused(scene, sk):
    ob, _, _ = make_walk(sk, n_frames=30)
    frames = np.arange(1, 31, dtype=float)
    spine = ob.pose.bones["Spine"]
    keyed(spine, "scale", frames, np.column_stack([1.0 + 0.1 * np.sin(frames)] * 3), id_data=ob)
    _refused(r"keep every bone's rotation and the root bone's location only, but \"Spine\" scale", key_mode="COUNT",
             count=4)
    # a constant scale key (importers key 1.0 everywhere) is fine; a moving child location is not
    keyed(spine, "scale", frames, np.ones((30, 3)), id_data=ob)
    keyed(ob.pose.bones["Head"], "location", frames, np.column_stack([0.01 * frames] * 3), id_data=ob)
    _refused(r"\"Head\" location also move", "compact_action", key_mode="COUNT", count=4)


def test_linked_armature_is_refused(scene, sk, tmp_path):
    ob, _, _ = make_walk(sk, "LinkedWalker", n_frames=20)
    linked_copy(ob, tmp_path, scene)
    _refused("linked from library", key_mode="COUNT", count=4)
    _refused("linked from library", "compact_action", key_mode="COUNT", count=4)


def test_nla_tweak_mode_is_refused(scene, sk):
    ob, _, _ = make_walk(sk, n_frames=20)
    adt = ob.animation_data
    track = adt.nla_tracks.new()
    track.strips.new("strip", 1, adt.action).select = True
    adt.use_tweak_mode = True
    assert adt.use_tweak_mode
    _refused("NLA tweak mode", key_mode="COUNT", count=4)
    _refused("NLA tweak mode", "compact_action", key_mode="COUNT", count=4)


def test_no_model_and_no_object(scene, skf, sk):
    ob, _, _ = make_walk(sk, n_frames=20)
    with pytest.raises(ValueError, match="has no spatial keyframes"):
        skf.pose_from_point(ob, (0.0, 0.0))
    bpy.context.view_layer.objects.active = None
    before = snapshot_all()
    with pytest.raises(RuntimeError, match="No active object"):
        run("spatial_keyframes_from_action")
    assert_same_state(before, snapshot_all())


# ----------------------------------------------------------------------------------------------
# Registration and the sidebar
# ----------------------------------------------------------------------------------------------


def test_registered_with_tooltips_and_panel_draws(scene, skf, sk):
    for name in ("spatial_keyframes_from_action", "compact_action"):
        rna = getattr(bpy.ops.anim_signals, name).get_rna_type()
        for prop in ("projection", "selection", "key_mode", "ratio", "count", "optimise"):
            assert rna.properties[prop].description, prop
    panel = bpy.types.ANIM_SIGNALS_PT_spatial_keyframes
    assert panel.bl_space_type == "VIEW_3D" and panel.bl_category == "Signals" and panel.bl_order > 1
    calls: list = []

    class _Self:
        layout = FakeLayout(calls)
        draw_model = staticmethod(panel.draw_model)
        draw_comparison = staticmethod(panel.draw_comparison)

    class _Ctx:
        pass

    ctx = _Ctx()
    ctx.scene = scene
    ob, _, _ = make_walk(sk, n_frames=60)
    ctx.active_object = ob
    panel.draw(_Self(), ctx)
    assert ("operator", "anim_signals.spatial_keyframes_from_action") in calls
    assert ("operator", "anim_signals.compact_action") in calls
    # the buttons carry the sidebar's settings (headless INVOKE skips invoke(), so the panel passes them)
    settings = scene.anim_signals.spatial_keyframes
    settings.key_mode, settings.count, settings.projection = "COUNT", 5, "FORCE"
    calls.clear()
    panel.draw(_Self(), ctx)
    sets = [c[1:] for c in calls if c[0] == "set"]
    assert sets.count(("key_mode", "COUNT")) == 2 and sets.count(("count", 5)) == 2
    assert sets.count(("projection", "FORCE")) == 2
    assert any(c[0] == "label" and "has no spatial keyframes" in c[1] for c in calls)
    op = [c for c in calls if c[0] == "operator"][-1][1]
    kwargs = {c[1]: c[2] for c in calls[calls.index(("operator", op)):] if c[0] == "set"}
    assert run("compact_action", **kwargs) == {"FINISHED"}
    calls.clear()
    panel.draw(_Self(), ctx)
    labels = [c[1] for c in calls if c[0] == "label"]
    assert any(t.startswith("Markers 5   Frames 60") for t in labels), labels
    assert any("slerp (temporal)" in t for t in labels), labels
