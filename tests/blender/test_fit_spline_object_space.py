"""Fit Spline in the "Joints" error space (object-space bounds): every virtual vertex (each bone's
head moved by the shell distance along its local axes, and its tail) stays within the max joint
error at every original frame, measured here independently through the depsgraph with
``PoseBone.matrix`` and mathutils; a planted foot stays planted; non-armatures are refused."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from _bl_helpers import (
    assert_refused,
    assign_action,
    ext_module,
    fcurves_of,
    keyed,
    make_object,
    motion,
    new_armature,
    quaternion_track,
    run_fit,
    set_dense_keys,
)
from mathutils import Vector

# float32 pose matrices and keys: a little room on top of the bound (cm)
SLACK_CM = 2e-3

# A small biped in metres: (name, head, tail, parent, connected). Every bone points along +Y or
# +-Z; the foot is a child of the root (not of the shin) so it can be planted by location keys.
BONES = [
    ("Hips", (0, 0, 1.0), (0, 0, 1.12), None, False),
    ("Spine", (0, 0, 1.12), (0, 0, 1.35), "Hips", True),
    ("Chest", (0, 0, 1.35), (0, 0, 1.55), "Spine", True),
    ("Head", (0, 0, 1.55), (0, 0, 1.8), "Chest", True),
    ("Arm.L", (0.18, 0, 1.5), (0.45, 0, 1.5), "Chest", False),
    ("Forearm.L", (0.45, 0, 1.5), (0.7, 0, 1.5), "Arm.L", True),
    ("Hand.L", (0.7, 0, 1.5), (0.8, 0, 1.5), "Forearm.L", True),
    ("Arm.R", (-0.18, 0, 1.5), (-0.45, 0, 1.5), "Chest", False),
    ("Forearm.R", (-0.45, 0, 1.5), (-0.7, 0, 1.5), "Arm.R", True),
    ("Thigh.L", (0.1, 0, 0.95), (0.1, 0, 0.5), "Hips", False),
    ("Shin.L", (0.1, 0, 0.5), (0.1, 0, 0.08), "Thigh.L", True),
    ("Foot.R", (-0.1, 0, 0.05), (-0.1, 0.15, 0.05), "Hips", False),
]
PLANT = (20, 50)  # frames over which Foot.R holds still in world space


def _make_rig(n_frames: int = 90, seed: int = 5, *, planted: bool = False):
    ob = new_armature("Biped", BONES)
    frames = np.arange(1, n_frames + 1, dtype=np.float64)
    rng = np.random.default_rng(seed)
    bones = ob.pose.bones
    root_loc = 0.05 * motion(frames, rng, 1.0, 3)
    root_loc[:, 1] += np.linspace(0.0, 1.5, n_frames)  # walks forward
    keyed(bones["Hips"], "location", frames, root_loc, id_data=ob)
    for name in ("Hips", "Spine", "Head", "Arm.L", "Forearm.L", "Hand.L", "Arm.R", "Forearm.R", "Thigh.L", "Shin.L"):
        pb = bones[name]
        pb.rotation_mode = "XYZ" if name != "Arm.L" else "ZXY"
        keyed(pb, "rotation_euler", frames, motion(frames, rng, 0.25, 3), id_data=ob)
    chest = bones["Chest"]
    chest.rotation_mode = "QUATERNION"
    keyed(chest, "rotation_quaternion", frames, quaternion_track(frames, rng), id_data=ob)
    foot = bones["Foot.R"]
    foot_loc = 0.03 * motion(frames, rng, 1.0, 3)
    fcs = keyed(foot, "location", frames, foot_loc, id_data=ob)
    if planted:
        # hold Foot.R's head where it is at the plant's first frame: its location solved from the
        # evaluated Hips matrix (head = hips @ rest offset @ translate(location))
        a, b = PLANT
        rel = ob.data.bones["Hips"].matrix_local.inverted() @ ob.data.bones["Foot.R"].matrix_local
        scene = bpy.context.scene
        target = None
        for i in np.flatnonzero((frames >= a) & (frames <= b)):
            scene.frame_set(int(frames[i]))
            ob_eval = ob.evaluated_get(bpy.context.evaluated_depsgraph_get())
            m = ob_eval.pose.bones["Hips"].matrix @ rel
            if target is None:
                target = m @ Vector(foot_loc[i])
            foot_loc[i] = np.array(m.inverted() @ target)
        for fc in fcs:
            set_dense_keys(fc, frames, foot_loc[:, fc.array_index])
    return ob, frames


def _vertices(ob, frames, shell: float) -> np.ndarray:
    """World-space virtual vertices (frames, bones, 7, 3), bone by bone with mathutils: the head
    +- shell along each local axis, and the tail."""
    scene = bpy.context.scene
    out = []
    offsets = None
    for f in frames:
        scene.frame_set(int(f))
        ob_eval = ob.evaluated_get(bpy.context.evaluated_depsgraph_get())
        mw = ob_eval.matrix_world
        frame = []
        for pb in ob_eval.pose.bones:
            offsets = [Vector((sign * shell * (k == 0), sign * shell * (k == 1), sign * shell * (k == 2)))
                       for sign in (1, -1) for k in range(3)] + [Vector((0, pb.bone.length, 0))]
            frame.append([tuple(mw @ (pb.matrix @ v)) for v in offsets])
        out.append(frame)
    return np.array(out)


def _object_space_error_cm(ob, original, fitted, frames, shell_m: float) -> np.ndarray:
    """Per frame and bone, the largest vertex distance (cm) between the two actions."""
    assign_action(ob, original)
    v0 = _vertices(ob, frames, shell_m)
    assign_action(ob, fitted)
    v1 = _vertices(ob, frames, shell_m)
    return 100.0 * np.linalg.norm(v1 - v0, axis=-1).max(axis=-1)


def _n_keys(ob) -> int:
    return sum(len(fc.keyframe_points) for fc in fcurves_of(ob))


@pytest.mark.parametrize("mode", ["FEWEST", "EDITABLE"])
def test_every_virtual_vertex_within_the_joint_error_at_every_frame(scene, mode):
    ob, frames = _make_rig()
    original = ob.animation_data.action
    keys_before = _n_keys(ob)
    assert run_fit(mode=mode, error_space="JOINTS", max_joint_error=1.0, shell_distance=3.0) == {"FINISHED"}
    fitted = ob.animation_data.action
    assert fitted != original
    keys_after = _n_keys(ob)
    assert keys_after < keys_before / 2
    err = _object_space_error_cm(ob, original, fitted, frames, 0.03)
    assert err.max() <= 1.0 + SLACK_CM, f"max {err.max():.4f} cm at frame {frames[err.max(axis=1).argmax()]}"
    res = scene.anim_signals.last_fit
    assert res.within_tolerance
    assert res.joint_error_cm == pytest.approx(err.max(), abs=1e-3)  # every frame measured, not a sample
    assert 0.0 < res.joint_error_cm <= 1.0 + SLACK_CM


def test_scene_unit_scale_and_tighter_bound(scene):
    """With 1 unit = 1 cm (unit scale 0.01), 1 cm is one unit: a bound ten times tighter in scene
    units than at unit scale 1."""
    scene.unit_settings.scale_length = 0.01
    ob, frames = _make_rig(n_frames=60)
    original = ob.animation_data.action
    # the rig is ~1.8 units tall: 0.5 cm = 0.5 units at this scale
    assert run_fit(error_space="JOINTS", max_joint_error=0.5, shell_distance=3.0) == {"FINISHED"}
    err_units = _object_space_error_cm(ob, original, ob.animation_data.action, frames, 3.0) / 100.0
    assert err_units.max() <= 0.5 + SLACK_CM
    assert scene.anim_signals.last_fit.joint_error_cm == pytest.approx(err_units.max(), abs=1e-3)


def test_planted_foot_stays_planted(scene):
    ob, frames = _make_rig(planted=True)
    original = ob.animation_data.action
    a, b = PLANT
    sel = (frames >= a) & (frames <= b)
    heads = _vertices(ob, frames[sel], 0.0)[:, -1, 0]  # Foot.R's head (shell 0), (frames, 3)
    assert np.ptp(heads, axis=0).max() < 1e-5  # planted in the original
    assert run_fit(error_space="JOINTS", max_joint_error=1.0) == {"FINISHED"}
    fitted_heads = _vertices(ob, frames[sel], 0.0)[:, -1, 0]
    drift_cm = 100.0 * np.linalg.norm(fitted_heads - heads[0], axis=-1).max()
    assert drift_cm <= 1.0 + SLACK_CM
    err = _object_space_error_cm(ob, original, ob.animation_data.action, frames, 0.03)
    assert err.max() <= 1.0 + SLACK_CM


def _object_space_module():
    from _bl_helpers import ext_module

    return ext_module("operators.fit_spline.object_space")


def test_tightening_rounds_meet_a_bound_the_first_fit_misses(scene, monkeypatch):
    """The verification loop: started from tolerances far beyond the bound (the first fit misses),
    the chains that miss are tightened and refitted until every frame is within the bound."""
    osp = _object_space_module()
    monkeypatch.setattr(osp, "RELAX", 40.0)
    ob, frames = _make_rig(n_frames=60)
    original = ob.animation_data.action
    plan = osp.plan_joint_fit(ob, scene, max_joint_error=1.0, shell_distance=3.0)
    for _ in osp.iter_joint_plan(plan, mode="FEWEST"):
        pass
    check = plan.joints
    assert check.rounds >= 1 and check.refitted > 0
    assert check.met and 0.0 < check.error_cm <= 1.0 + SLACK_CM
    # the rounds were steered by the pose model (a plain rig); the depsgraph measured the last fit
    assert check.model is not None and check.model_measures >= 1
    # the model's measures take the values the fit measured, refitted columns updated: the final
    # fit's curves at every frame (float32 keys)
    np.testing.assert_allclose(osp._fitted_values(check, None), check.job.result.evaluate(check.job.frames),
                               rtol=1e-6, atol=1e-6)
    # nothing written yet, and the temporary action is gone
    assert ob.animation_data.action == original
    assert not [a for a in bpy.data.actions if a.name.endswith(".verify")]
    # the same through the operator, measured here
    assert run_fit(error_space="JOINTS", max_joint_error=1.0) == {"FINISHED"}
    err = _object_space_error_cm(ob, original, ob.animation_data.action, frames, 0.03)
    assert err.max() <= 1.0 + SLACK_CM
    assert scene.anim_signals.last_fit.within_tolerance
    assert scene.anim_signals.last_fit.joint_error_cm == pytest.approx(err.max(), abs=1e-3)


def _drain(gen):
    return ext_module("anim_signals.steps").run_steps(gen)[1]


def test_pose_model_reproduces_the_depsgraph(scene):
    """The core's pose model (rest matrices, Euler / quaternion modes, location, scale) against
    Blender's evaluation of the same rig at every frame, and against this test's own mathutils
    measure."""
    osp = _object_space_module()
    ob, frames = _make_rig(n_frames=40)
    rng = np.random.default_rng(12)
    keyed(ob.pose.bones["Forearm.L"], "scale", frames, 1.0 + 0.2 * motion(frames, rng, 1.0, 3), id_data=ob)
    plan = osp.plan_joint_fit(ob, scene, max_joint_error=1.0, shell_distance=3.0)
    check = plan.joints
    check.original = _drain(osp._vertices(check, None, 0.0, 1.0))
    osp._pose_model(check)
    osp._trust_pose_model(check)
    assert check.model is not None
    gap_cm = 100.0 * np.abs(check.original_model - check.original).max()
    assert gap_cm < 1e-3, gap_cm
    mine = _vertices(ob, frames, 0.03)  # (F, B, 7, 3); the check's: coordinates first, frames last
    assert 100.0 * np.abs(check.original_model.transpose(3, 2, 1, 0) - mine).max() < 1e-3


def test_a_rig_the_pose_model_does_not_reproduce_is_measured_by_the_depsgraph(scene, monkeypatch):
    """A constraint the model knows nothing of: the model is not trusted, every measure goes
    through the depsgraph, and the fit still keeps the bound."""
    osp = _object_space_module()
    ob, frames = _make_rig(n_frames=40)
    con = ob.pose.bones["Head"].constraints.new("COPY_ROTATION")
    con.target = ob
    con.subtarget = "Arm.L"
    con.influence = 0.5
    original = ob.animation_data.action
    monkeypatch.setattr(osp, "TRUST_FRAMES", 10)  # a long clip for the first read: constraints read every frame
    calls = _spy_on_vertex_reads(monkeypatch, osp)
    plan = osp.plan_joint_fit(ob, scene, max_joint_error=1.0, shell_distance=3.0)
    for _ in osp.iter_joint_plan(plan, mode="FEWEST"):
        pass
    assert calls[0] == ("original", 40) and not [c for c in calls if c[0] == "both"]
    assert plan.joints.model is None and plan.joints.model_measures == 0
    assert plan.joints.met
    assert run_fit(error_space="JOINTS", max_joint_error=1.0) == {"FINISHED"}
    err = _object_space_error_cm(ob, original, ob.animation_data.action, frames, 0.03)
    assert err.max() <= 1.0 + SLACK_CM
    assert scene.anim_signals.last_fit.joint_error_cm == pytest.approx(err.max(), abs=1e-3)


def test_one_pass_reads_an_armature_and_its_playing_copy_as_separate_passes_do(scene):
    """``virtual_vertices_of`` with :func:`playing_copy`: the armature as it plays and its copy
    playing another action, in one depsgraph pass, against this test's mathutils measure of the
    armature playing each action; the copy is gone afterwards and the frame is back."""
    arm = ext_module("operators.blender_data.armatures")
    ob, frames = _make_rig(n_frames=30)
    original = ob.animation_data.action
    other, _ = _make_rig(n_frames=30, seed=9)  # the same bones, other motion
    other_action = other.animation_data.action
    scene.frame_set(7)
    objects_before = set(bpy.data.objects)
    with arm.playing_copy(scene, ob, other_action) as copy:
        assert copy.name.startswith("Biped") and copy.name.endswith(".verify") and copy.hide_get()
        mine, theirs = (rows.transpose(3, 2, 1, 0) for rows in arm.virtual_vertices_of(scene, [ob, copy], frames, 0.03))
    assert set(bpy.data.objects) == objects_before and scene.frame_current == 7
    assert ob.animation_data.action == original
    np.testing.assert_allclose(mine, _vertices(ob, frames, 0.03), atol=1e-5)
    assign_action(ob, other_action)
    np.testing.assert_allclose(theirs, _vertices(ob, frames, 0.03), atol=1e-5)
    assert np.abs(mine - theirs).max() > 0.05  # two different motions were read


def _spy_on_vertex_reads(monkeypatch, osp) -> list:
    """The frame counts of the object-space loop's depsgraph reads: ("original", n) for the
    original clip alone, ("both", n) for the original with the fitted copy, ("fitted", n)."""
    calls = []
    vertices, both = osp._vertices, osp._original_and_fitted

    def spy_vertices(check, action, lo, hi, rows=None):
        calls.append(("original" if action is None else "fitted", check.job.frames.size if rows is None else rows.size))
        return (yield from vertices(check, action, lo, hi, rows))

    def spy_both(check, lo, hi):
        calls.append(("both", check.job.frames.size))
        return (yield from both(check, lo, hi))

    monkeypatch.setattr(osp, "_vertices", spy_vertices)
    monkeypatch.setattr(osp, "_original_and_fitted", spy_both)
    return calls


def test_a_plain_rig_reads_the_original_at_every_frame_only_in_the_final_check(scene, monkeypatch):
    """Past TRUST_FRAMES, a rig without constraints reads the original at a few frames to trust
    the pose model, and at every frame only in the last measure, beside the fitted copy; that
    measure is still every frame's, against the mathutils one."""
    osp = _object_space_module()
    monkeypatch.setattr(osp, "TRUST_FRAMES", 25)
    calls = _spy_on_vertex_reads(monkeypatch, osp)
    ob, frames = _make_rig(n_frames=90)
    original = ob.animation_data.action
    objects_before = set(bpy.data.objects)
    plan = osp.plan_joint_fit(ob, scene, max_joint_error=1.0, shell_distance=3.0)
    for _ in osp.iter_joint_plan(plan, mode="FEWEST"):
        pass
    check = plan.joints
    assert calls[0] == ("original", 25) and calls[-1] == ("both", 90)
    assert ("original", 90) not in calls
    assert check.model is not None and check.original_rows is None
    assert set(bpy.data.objects) == objects_before
    assert not [a for a in bpy.data.actions if a.name.endswith(".verify")]
    np.testing.assert_allclose(check.original.transpose(3, 2, 1, 0), _vertices(ob, frames, 0.03), atol=1e-5)
    fitted = osp._fitted_copy(check)  # the fitted keys, as the final check played them
    try:
        err = _object_space_error_cm(ob, original, fitted, frames, 0.03)
    finally:
        assign_action(ob, original)
        bpy.data.actions.remove(fitted)
    assert check.error_cm == pytest.approx(err.max(), abs=1e-3) and check.met


def test_keys_shared_by_every_curve_are_chosen_where_the_joints_stay_within_the_bound(scene, monkeypatch):
    """Share Keys "All Curves" in the Joints space: a segment is taken where the rig's virtual
    vertices stay within X (the pose model), not where every curve keeps its own share of X;
    fewer keyed frames, and every frame still within X as this test measures it."""
    osp = _object_space_module()
    ob, frames = _make_rig(n_frames=90)
    original = ob.animation_data.action
    assert run_fit(error_space="JOINTS", max_joint_error=1.0, share_keys="ALL") == {"FINISHED"}
    res = scene.anim_signals.last_fit
    by_pose, fitted = res.keyed_frames, ob.animation_data.action
    err = _object_space_error_cm(ob, original, fitted, frames, 0.03)
    assert err.max() <= 1.0 + SLACK_CM
    assert res.within_tolerance and res.joint_error_cm == pytest.approx(err.max(), abs=1e-3)
    keyed = {round(k.co.x, 3) for fc in fcurves_of(ob) for k in fc.keyframe_points}
    assert len(keyed) == by_pose  # (every curve keyed on the same frames)
    # the same without the pose check: each curve within its own share of X
    monkeypatch.setattr(osp, "_pose_check", lambda check: None)
    assign_action(ob, original)
    assert run_fit(error_space="JOINTS", max_joint_error=1.0, share_keys="ALL") == {"FINISHED"}
    by_curve = scene.anim_signals.last_fit.keyed_frames
    assert by_pose < by_curve, (by_pose, by_curve)


def test_joints_mode_refuses_a_non_armature(scene):
    make_object()
    assert_refused(lambda: run_fit(error_space="JOINTS"), "needs an armature")


def test_bad_distances_are_refused_by_the_plan(scene):
    """The properties clamp their values; a script calling the plan directly is refused."""
    osp = _object_space_module()
    ob, _ = _make_rig(n_frames=30)
    for kwargs, match in (({"max_joint_error": 0.0, "shell_distance": 3.0}, "positive"),
                          ({"max_joint_error": 1.0, "shell_distance": float("nan")}, "shell distance")):
        with pytest.raises(osp.FitInputError, match=match):
            osp.plan_joint_fit(ob, scene, **kwargs)


def test_a_rig_of_implausible_height_is_named_with_its_height(scene):
    """A BVH in cm imported as is (a 100 times too large figure, scene units metres) gets a warning
    naming its height and the Unit Scale; the same rig at its size, or in a scene whose unit scale
    makes it so, gets none."""
    osp = _object_space_module()
    ob, _ = _make_rig(n_frames=30)
    height_m = float(osp.figure_height(ob)) * 1.0  # the test rig: scene units as metres
    assert 0.1 <= height_m <= 10.0
    assert osp.plan_joint_fit(ob, scene, max_joint_error=1.0, shell_distance=3.0).warnings == []
    ob.scale = (100.0,) * 3
    bpy.context.view_layer.update()
    warnings = osp.plan_joint_fit(ob, scene, max_joint_error=1.0, shell_distance=3.0).warnings
    assert len(warnings) == 1 and f"{100 * height_m:.3g} m tall" in warnings[0] and "Unit Scale" in warnings[0]
    scene.unit_settings.scale_length = 0.01  # units are cm: the figure is its own size again
    try:
        assert osp.plan_joint_fit(ob, scene, max_joint_error=1.0, shell_distance=3.0).warnings == []
    finally:
        scene.unit_settings.scale_length = 1.0


def test_per_curve_mode_is_unchanged_by_the_joint_settings(scene):
    ob, frames = _make_rig(n_frames=40)
    assert run_fit(error_space="PER_CURVE", max_joint_error=0.01) == {"FINISHED"}
    res = scene.anim_signals.last_fit
    assert res.within_tolerance and res.max_rotation_deg <= 0.5 + 1e-3
    assert math.isfinite(res.joint_error_cm)


@pytest.mark.parametrize("options", [{"mode": "LATENT"}, {"mode": "FEWEST", "share_keys": "BONE"}])
def test_shared_key_modes_and_the_objects_own_transform_stay_within_the_bound(scene, options):
    """The armature object's own location and rotation keys act as a root above every bone; curves
    sharing key frames are refitted whole."""
    ob, frames = _make_rig(n_frames=50)
    rng = np.random.default_rng(9)
    for prop, values in (("location", 0.02 * motion(frames, rng, 1.0, 3)), ("rotation_euler", motion(frames, rng, 0.1, 3))):
        ob.keyframe_insert(prop, frame=1.0)
        for fc in fcurves_of(ob):
            if fc.data_path == prop:  # the object's own curves, not the bones'
                set_dense_keys(fc, frames, values[:, fc.array_index])
    assert len(fcurves_of(ob)) == 40 + 6
    original = ob.animation_data.action
    assert run_fit(error_space="JOINTS", max_joint_error=1.0, **options) == {"FINISHED"}
    err = _object_space_error_cm(ob, original, ob.animation_data.action, frames, 0.03)
    assert err.max() <= 1.0 + SLACK_CM
    assert scene.anim_signals.last_fit.joint_error_cm == pytest.approx(err.max(), abs=1e-3)
    assert scene.anim_signals.last_fit.within_tolerance


def test_panel_shows_the_error_space_and_the_cm_fields_only_for_joints(scene):
    from _bl_helpers import draw_fit_panel

    def drawn() -> set:
        return {c[1] for c in draw_fit_panel(scene) if c[0] == "prop"}

    settings = scene.anim_signals.fit
    assert settings.error_space == "PER_CURVE"
    names = drawn()
    assert "error_space" in names and "max_joint_error" not in names
    settings.error_space = "JOINTS"
    names = drawn()
    assert {"error_space", "max_joint_error", "shell_distance"} <= names
    assert settings.max_joint_error == 1.0 and settings.shell_distance == 3.0
