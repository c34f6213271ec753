"""Loop / blend / compare operators (Eslitzbichler, motion manifolds) on generated animation:
``anim_signals.make_cyclic``, ``anim_signals.blend_actions``, ``anim_signals.compare_actions``.

Every check reads the result through Blender itself (``FCurve.evaluate``, evaluated world-space bone
heads), and every bad input is checked to leave the file exactly as it was.
"""

from __future__ import annotations

import math
import os
import sys
import types

import bpy
import numpy as np
import pytest
from _bl_helpers import (
    IS_SLOTTED,
    FakeLayout,
    StepwiseDriver,
    action_fcurves_all,
    assert_same_state,
    evaluate,
    event,
    fcurves_of,
    key_array,
    keyed,
    new_armature,
    shared_data,
    snapshot_action,
    snapshot_all,
    world_heads,
)
from conftest import EXT_MODULE

EXT = EXT_MODULE
TOOL = f"{EXT}.operators.loop_blend_compare"
PERIOD = 24.0


@pytest.fixture
def lbc(extension):
    """The tool package of the installed extension: ``lbc.loop``, ``lbc.clips``, ``lbc.operators``, ..."""
    return types.SimpleNamespace(
        loop=sys.modules[f"{TOOL}.loop"],
        blend=sys.modules[f"{TOOL}.blend"],
        clips=sys.modules[f"{TOOL}.clips"],
        operators=sys.modules[f"{TOOL}.operators"],
    )


# ----------------------------------------------------------------------------------------------
# Generated animation
# ----------------------------------------------------------------------------------------------


def _new_empty(name: str):
    ob = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    ob.select_set(True)
    return ob


def make_walker(name="Walker", n_frames=41, period=PERIOD, speed=0.05, phase=0.0, amp=1.0, start=1):
    """An empty walking along +X: periodic bob and sway rotations (period ``period``), a constant
    rotation channel, and a range that is not a whole number of periods (so there is a seam)."""
    ob = _new_empty(name)
    frames = np.arange(start, start + n_frames, dtype=np.float64)
    w = 2.0 * np.pi * (frames - start) / period + phase
    loc = np.column_stack([speed * (frames - start), 0.02 * np.sin(w), 0.1 * np.sin(2 * w)])
    rot = np.column_stack([0.5 * amp * np.sin(w), 0.3 * amp * np.cos(w), np.full_like(w, 0.25)])
    keyed(ob, "location", frames, loc)
    keyed(ob, "rotation_euler", frames, rot)
    return ob, frames


def make_figure8(name, n_frames=40, period=PERIOD, phase=0.0):
    """Another kind of motion: a figure-eight of X and Z rotations (Y still)."""
    ob = _new_empty(name)
    frames = np.arange(1, n_frames + 1, dtype=np.float64)
    w = 2.0 * np.pi * (frames - 1) / period + phase
    rot = np.column_stack([0.6 * np.sin(w), np.zeros_like(w), 0.6 * np.sin(2 * w)])
    keyed(ob, "rotation_euler", frames, rot)
    return ob, frames


def _curve(ob, path, index):
    return next(fc for fc in fcurves_of(ob) if fc.data_path == path and fc.array_index == index)


HUMANOID = {
    # name: (head, tail, parent)
    "Hips": ((0, 0, 1.0), (0, 0, 1.1), None),
    "Spine": ((0, 0, 1.1), (0, 0, 1.4), "Hips"),
    "Neck": ((0, 0, 1.4), (0, 0, 1.5), "Spine"),
    "Head": ((0, 0, 1.5), (0, 0, 1.7), "Neck"),
    "LeftArm": ((0.2, 0, 1.4), (0.45, 0, 1.4), "Spine"),
    "LeftForeArm": ((0.45, 0, 1.4), (0.7, 0, 1.4), "LeftArm"),
    "LeftHand": ((0.7, 0, 1.4), (0.8, 0, 1.4), "LeftForeArm"),
    "RightArm": ((-0.2, 0, 1.4), (-0.45, 0, 1.4), "Spine"),
    "RightForeArm": ((-0.45, 0, 1.4), (-0.7, 0, 1.4), "RightArm"),
    "RightHand": ((-0.7, 0, 1.4), (-0.8, 0, 1.4), "RightForeArm"),
    "LeftUpLeg": ((0.1, 0, 1.0), (0.1, 0, 0.55), "Hips"),
    "LeftLeg": ((0.1, 0, 0.55), (0.1, 0, 0.1), "LeftUpLeg"),
    "LeftFoot": ((0.1, 0, 0.1), (0.1, -0.15, 0.0), "LeftLeg"),
    "RightUpLeg": ((-0.1, 0, 1.0), (-0.1, 0, 0.55), "Hips"),
    "RightLeg": ((-0.1, 0, 0.55), (-0.1, 0, 0.1), "RightUpLeg"),
    "RightFoot": ((-0.1, 0, 0.1), (-0.1, -0.15, 0.0), "RightLeg"),
}
# The same body with Rigify-like names and other proportions (a different skeleton).
RIGIFY_NAMES = {
    "Hips": "pelvis", "Spine": "spine.001", "Neck": "neck", "Head": "head",
    "LeftArm": "upper_arm.L", "LeftForeArm": "forearm.L", "LeftHand": "hand.L",
    "RightArm": "upper_arm.R", "RightForeArm": "forearm.R", "RightHand": "hand.R",
    "LeftUpLeg": "thigh.L", "LeftLeg": "shin.L", "LeftFoot": "foot.L",
    "RightUpLeg": "thigh.R", "RightLeg": "shin.R", "RightFoot": "foot.R",
}


def make_humanoid(name="Rig", names=None, scale=1.0):
    """A 16-bone humanoid armature (root "Hips" pointing up), no animation yet."""
    names = names or {k: k for k in HUMANOID}
    return new_armature(name, [(names[key], [scale * v for v in head], [scale * v for v in tail],
                                 None if parent is None else names[parent], False)
                                for key, (head, tail, parent) in HUMANOID.items()])


def animate_humanoid(ob, kind="walk", n_frames=41, period=PERIOD, phase=0.0, speed=0.04, names=None, action_name=None):
    """Key a walk (legs and arms swing, root travels along world -Y) or a wave (one arm waves,
    legs still) on every frame; returns the action."""
    names = names or {k: k for k in HUMANOID}
    if ob.animation_data is not None:
        ob.animation_data.action = None
    frames = np.arange(1, n_frames + 1, dtype=np.float64)
    w = 2.0 * np.pi * (frames - 1) / period + phase
    pb = ob.pose.bones
    for p in pb:
        p.rotation_mode = "XYZ"
    zeros = np.zeros_like(w)
    if kind == "walk":
        # Root bone points up: its local X is world X, local Z is world -Y (both horizontal).
        keyed(pb[names["Hips"]], "location", frames, np.column_stack([zeros, 0.03 * np.sin(2 * w), speed * (frames - 1)]), id_data=ob)
        for side, sgn in (("Left", 1.0), ("Right", -1.0)):
            keyed(pb[names[f"{side}UpLeg"]], "rotation_euler", frames, np.column_stack([0.5 * sgn * np.sin(w), zeros, zeros]), id_data=ob)
            keyed(pb[names[f"{side}Leg"]], "rotation_euler", frames, np.column_stack([0.4 + 0.4 * sgn * np.cos(w), zeros, zeros]), id_data=ob)
            keyed(pb[names[f"{side}Arm"]], "rotation_euler", frames, np.column_stack([-0.4 * sgn * np.sin(w), zeros, zeros]), id_data=ob)
    else:
        keyed(pb[names["LeftArm"]], "rotation_euler", frames, np.column_stack([zeros, 1.2 + 0.1 * np.sin(w), zeros]), id_data=ob)
        keyed(pb[names["LeftForeArm"]], "rotation_euler", frames, np.column_stack([zeros, zeros, 0.8 * np.sin(2 * w)]), id_data=ob)
        keyed(pb[names["Spine"]], "rotation_euler", frames, np.column_stack([zeros, 0.1 * np.sin(w), zeros]), id_data=ob)
    action = ob.animation_data.action
    if action_name:
        action.name = action_name
    return action, frames


def _seam(fc, lo, hi):
    v = evaluate(fc, [lo, lo + 1, hi - 1, hi])
    return v[3] - v[0], (v[3] - v[2]) - (v[1] - v[0])


def run(op: str, **kwargs):
    return getattr(bpy.ops.anim_signals, op)("EXEC_DEFAULT", **kwargs)


# ----------------------------------------------------------------------------------------------
# Make cyclic
# ----------------------------------------------------------------------------------------------


def test_make_cyclic_object_closes_the_seam_and_keeps_travelling(scene):
    ob, frames = make_walker()
    original = ob.animation_data.action
    name = original.name
    before = snapshot_action(original)
    lo, hi = int(frames[0]), int(frames[-1])
    rx = _curve(ob, "rotation_euler", 0)
    jump0, _ = _seam(rx, lo, hi)
    assert abs(jump0) > 0.1  # 40 frames is not a whole number of 24-frame periods

    assert run("make_cyclic") == {"FINISHED"}

    looped = ob.animation_data.action
    assert looped != original and looped.name == f"{name}.loop"
    assert bpy.data.actions[name].use_fake_user
    after = snapshot_action(bpy.data.actions[name])
    assert sorted(after) == sorted(before)
    for k, arr in before.items():
        np.testing.assert_array_equal(arr, after[k])
    if IS_SLOTTED:
        assert ob.animation_data.action_slot.identifier == original.slots[0].identifier

    fcs = fcurves_of(ob)
    assert len(fcs) == 6
    for fc in fcs:
        assert len(fc.keyframe_points) == len(frames)
        mods = [m for m in fc.modifiers if m.type == "CYCLES"]
        assert len(mods) == 1 and mods[0].mode_after == "REPEAT_OFFSET" and mods[0].mode_before == "REPEAT_OFFSET"
        pose, vel = _seam(fc, lo, hi)
        if (fc.data_path, fc.array_index) == ("location", 0):
            # Travel: one cycle's displacement kept; the velocity still continuous.
            assert pose == pytest.approx(0.05 * (hi - lo), abs=1e-4)
        else:
            # location Y is horizontal but only sways (net displacement < half its range): closed like
            # the rotations, so the sway does not drift further every cycle.
            assert abs(pose) < 1e-5, (fc.data_path, fc.array_index, pose)
        assert abs(vel) < 0.02, (fc.data_path, fc.array_index, vel)
    # Blender's own playback past the end: the walker is further along, not back at the start.
    lx = _curve(ob, "location", 0)
    ahead = evaluate(lx, [hi, hi + 10, hi + 2 * (hi - lo)])
    assert ahead[1] > ahead[0] + 0.3 and ahead[2] > ahead[1]
    assert ahead[2] == pytest.approx(evaluate(lx, [lo])[0] + 3 * 0.05 * (hi - lo), abs=1e-3)
    # ... and the other channels repeat exactly.
    rx = _curve(ob, "rotation_euler", 0)
    np.testing.assert_allclose(evaluate(rx, frames[:10] + (hi - lo)), evaluate(rx, frames[:10]), atol=1e-5)
    # Constant channel stays constant.
    np.testing.assert_allclose(evaluate(_curve(ob, "rotation_euler", 2), frames), 0.25, atol=1e-6)
    assert looped.use_cyclic and tuple(looped.frame_range) == (lo, hi)

    res = scene.anim_signals.last_loop
    assert res.valid and res.action_name == looped.name and res.curves == 6
    assert res.frame_start == lo and res.frame_end == hi and not res.auto_range
    assert res.pose_before_deg > 5.0 and res.pose_after_deg < 1e-6
    assert res.velocity_after_deg < res.velocity_before_deg
    assert res.velocity_after_deg < 0.5
    assert 0.0 < res.rms_deviation_deg < res.pose_before_deg
    assert res.travel_channels == 1  # location X travels; Y is horizontal but only sways; Z is vertical
    assert res.joint_pose_before_cm < 0.0  # not an armature


def test_make_cyclic_in_place_and_custom_range(scene):
    ob, frames = make_walker(n_frames=50)
    action = ob.animation_data.action
    n_actions = len(bpy.data.actions)
    assert run("make_cyclic", range_mode="CUSTOM", frame_start=5, frame_end=33, keep_original=False,
               add_cycles=False, travel="NONE") == {"FINISHED"}
    assert ob.animation_data.action == action and len(bpy.data.actions) == n_actions
    for fc in fcurves_of(ob):
        co = key_array(fc)
        assert co[0, 0] == 5 and co[-1, 0] == 33 and len(co) == 29
        assert not len(fc.modifiers)
        assert co[-1, 1] == pytest.approx(co[0, 1], abs=1e-6)  # travel NONE: X returns too
    assert not action.use_cyclic


def test_make_cyclic_auto_range_finds_the_period(scene):
    ob, frames = make_walker(n_frames=90, phase=0.7)
    assert run("make_cyclic", range_mode="AUTO") == {"FINISHED"}
    res = scene.anim_signals.last_loop
    assert res.auto_range
    period = res.frame_end - res.frame_start
    assert abs(period - PERIOD) <= 1, (res.frame_start, res.frame_end)
    assert res.pose_before_deg < 3.0  # a true cycle was found: little to fix
    fc = _curve(ob, "rotation_euler", 1)
    co = key_array(fc)
    assert co[0, 0] == res.frame_start and co[-1, 0] == res.frame_end
    pose, _ = _seam(fc, res.frame_start, res.frame_end)
    assert abs(pose) < 1e-5


def test_make_cyclic_armature_world_seam_and_root_travel(scene, ext):
    ob = make_humanoid()
    action, frames = animate_humanoid(ob, n_frames=41)
    lo, hi = int(frames[0]), int(frames[-1])
    specs = ext.data.channels.channel_specs(ob, fcurves_of(ob))
    travel = [specs[j].label for j in ext.data.armatures.travel_channels(ob, specs)]
    # horizontal root axes (data layer); the loop keeps only the one that moves forward (location[0] is still)
    assert travel == ['pose.bones["Hips"].location[0]', 'pose.bones["Hips"].location[2]']

    assert run("make_cyclic") == {"FINISHED"}
    res = scene.anim_signals.last_loop
    assert res.travel_channels == 1
    assert res.joint_pose_before_cm > 5.0
    assert res.joint_pose_after_cm < 0.01
    assert res.joint_velocity_after_cm < res.joint_velocity_before_cm
    # Independent oracle: evaluated world-space joints at the seam, minus one cycle's root travel.
    heads = world_heads(ob, [lo, hi])
    travel_vec = heads[1, 0] - heads[0, 0]
    assert travel_vec[1] == pytest.approx(-0.04 * (hi - lo), abs=1e-3)  # root moved along world -Y
    travel_vec[2] = 0.0
    gap = np.linalg.norm(heads[1] - heads[0] - travel_vec, axis=-1).max()
    assert 100 * gap == pytest.approx(res.joint_pose_after_cm, abs=1e-3)
    # One more cycle later the rig is further along -Y (Cycles with offset).
    later = world_heads(ob, [hi + (hi - lo)])
    assert later[0, 0, 1] < heads[1, 0, 1] - 0.5


def test_make_cyclic_shape_keys(scene):
    mesh = bpy.data.meshes.new("Face")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (1, 1, 0)], [], [(0, 1, 2)])
    ob = bpy.data.objects.new("Face", mesh)
    scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    ob.shape_key_add(name="Basis")
    kb = ob.shape_key_add(name="Smile")
    frames = np.arange(1, 31, dtype=np.float64)
    keyed(kb, "value", frames, 0.5 + 0.4 * np.sin(2 * np.pi * frames / 17.0), id_data=mesh.shape_keys)
    assert run("make_cyclic") == {"FINISHED"}
    fc = fcurves_of(mesh.shape_keys)[0]
    pose, _ = _seam(fc, 1, 30)
    assert abs(pose) < 1e-5
    assert mesh.shape_keys.animation_data.action.name.endswith(".loop")


# ----------------------------------------------------------------------------------------------
# Blend
# ----------------------------------------------------------------------------------------------


def _amp_pair(scene):
    a_ob, frames = make_walker("A", n_frames=48, amp=0.5, speed=0.0)
    b_ob, _ = make_walker("B", n_frames=48, amp=1.0, speed=0.0)
    a, b = a_ob.animation_data.action, b_ob.animation_data.action
    a.name, b.name = "WalkA", "WalkB"
    return a_ob, b_ob, a, b, frames


def _action_values(action, frames):
    return {(fc.data_path, fc.array_index): evaluate(fc, frames) for fc in action_fcurves_all(action)}


def test_blend_weights_zero_one_reproduce_inputs(scene):
    a_ob, b_ob, a, b, frames = _amp_pair(scene)
    for w, src in ((0.0, a), (1.0, b)):
        assert run("blend_actions", action_a="WalkA", action_b="WalkB", weight=w, cyclic="OPEN", assign=False) == {"FINISHED"}
        made = bpy.data.actions[f"WalkA+WalkB {w:.2f}"]
        assert made.use_fake_user
        got, want = _action_values(made, frames), _action_values(src, frames)
        assert sorted(got) == sorted(want)
        for key in want:
            np.testing.assert_allclose(got[key], want[key], atol=2e-3, err_msg=str((w, key)))


def test_blend_half_lies_between_and_is_assigned(scene):
    a_ob, b_ob, a, b, frames = _amp_pair(scene)
    before_a, before_b = snapshot_action(a), snapshot_action(b)
    assert run("blend_actions", action_a="WalkA", action_b="WalkB", weight=0.5, cyclic="OPEN") == {"FINISHED"}
    made = bpy.data.actions["WalkA+WalkB 0.50"]
    assert b_ob.animation_data.action == made  # the active object (B, made last) gets the blend
    assert a.users >= 1 and b.use_fake_user  # B lost its user to the blend: kept by a fake user
    va, vb, vm = (_action_values(x, frames) for x in (a, b, made))
    for key in (("rotation_euler", 0), ("rotation_euler", 1)):
        amp_a, amp_b, amp_m = (np.abs(v[key]).max() for v in (va, vb, vm))
        assert amp_a + 0.05 < amp_m < amp_b - 0.05, (key, amp_a, amp_m, amp_b)
        lo = np.minimum(va[key], vb[key]) - 0.03
        hi = np.maximum(va[key], vb[key]) + 0.03
        assert np.all((vm[key] >= lo) & (vm[key] <= hi)), key
    res = scene.anim_signals.last_blend
    assert res.valid and res.action_names == made.name and res.channels == 6 and res.assigned_to == b_ob.name
    for snap, act in ((before_a, a), (before_b, b)):  # inputs untouched
        after = snapshot_action(act)
        for k, arr in snap.items():
            np.testing.assert_array_equal(arr, after[k])


def test_blend_of_an_unassigned_walk_travels_as_far_as_its_sources(scene):
    """Action A played by no object (as Make Cyclic's Keep Original leaves it): the root's travel is
    still found (on B's player) and blended as a trend, so the blend walks as far as both sources
    and stays between them (issue 16, found in the real window: it walked 16 % further)."""
    a_ob, frames = make_walker("A", n_frames=50, speed=0.05)
    stretch = 79.0 / 49.0  # B: the same walk, slower and calmer, over 80 frames, as far
    b_ob, _ = make_walker("B", n_frames=80, speed=0.05 / stretch, period=PERIOD * stretch, amp=0.4)
    a, b = a_ob.animation_data.action, b_ob.animation_data.action
    a.name, b.name = "WalkA", "WalkB"
    a.use_fake_user = b.use_fake_user = True
    a_ob.animation_data.action = None  # A kept by its fake user only: B's player tells the travel
    ax = next(fc for fc in action_fcurves_all(a) if (fc.data_path, fc.array_index) == ("location", 0))
    u = np.linspace(0.0, 1.0, 65)
    for players in ("B plays B", "nothing plays A or B"):
        assert run("blend_actions", action_a="WalkA", action_b="WalkB", weight=0.5, cyclic="OPEN", assign=False) == {"FINISHED"}
        made = bpy.data.actions[scene.anim_signals.last_blend.action_names]
        name = f"{made.name} ({players})"
        lx = next(fc for fc in action_fcurves_all(made) if (fc.data_path, fc.array_index) == ("location", 0))
        first, last = evaluate(lx, [1, 65])
        assert last - first == pytest.approx(0.05 * 49, abs=1e-3), name
        np.testing.assert_allclose(evaluate(lx, 1 + 64 * u), evaluate(ax, 1 + 49 * u), atol=0.03, err_msg=name)
        b_ob.animation_data.action = None  # then neither is played: the active object (A) tells it


@pytest.mark.skipif(not IS_SLOTTED, reason="slotted actions exist from Blender 4.4")
def test_blend_assignment_refused_is_a_warning(scene, lbc):
    a_ob, b_ob, a, b, frames = _amp_pair(scene)
    plan = lbc.blend.plan_blend(b_ob, "WalkA", "WalkB", weight=0.5, cyclic="OPEN")
    mesh = bpy.data.meshes.new("Face")
    face = bpy.data.objects.new("Face", mesh)
    scene.collection.objects.link(face)
    face.shape_key_add(name="Basis")
    plan.target = mesh.shape_keys  # A's slot is for objects: Blender refuses it on a Key
    summary = lbc.blend.write_blend(plan, lbc.blend.run_blend(plan))
    made = bpy.data.actions["WalkA+WalkB 0.50"]
    assert summary.assigned_to == "" and "assigned" not in summary.message()
    assert len(summary.warnings) == 1
    assert summary.warnings[0].startswith(f'"{made.name}" could not be assigned to "{mesh.shape_keys.name}": ')
    assert mesh.shape_keys.animation_data.action is None  # the refused assignment is undone
    assert b_ob.animation_data.action == b and made.use_fake_user


def test_blend_in_betweens_cyclic_and_missing_channels(scene):
    a_ob, frames = make_walker("A", n_frames=25, period=24.0)  # exactly one period: closed
    b_ob, _ = make_walker("B", n_frames=25, period=24.0, amp=0.6, phase=0.4)
    a_ob.keyframe_insert("scale", frame=1)  # A has 3 channels B lacks: left out of the blends
    a, b = a_ob.animation_data.action, b_ob.animation_data.action
    op = bpy.ops.anim_signals.blend_actions
    assert op("EXEC_DEFAULT", action_a=a.name, action_b=b.name, count=3, assign=False) == {"FINISHED"}
    names = [f"{a.name}+{b.name} {s:.2f}" for s in (0.25, 0.5, 0.75)]
    for n in names:
        made = bpy.data.actions[n]
        assert made.use_cyclic
        fcs = action_fcurves_all(made)
        assert len(fcs) == 6  # scale removed from the copy of A
        assert all(any(m.type == "CYCLES" for m in fc.modifiers) for fc in fcs)
        for fc in fcs:
            first, last = evaluate(fc, [1, 25])
            if (fc.data_path, fc.array_index) == ("location", 0):
                assert last - first == pytest.approx(0.05 * 24, abs=1e-3)  # closed blend keeps the travel
            else:
                assert last == pytest.approx(first, abs=1e-5)
    res = scene.anim_signals.last_blend
    assert res.closed and res.missing_in_a == 0 and res.missing_in_b == 3
    assert res.action_names == ", ".join(names)


# ----------------------------------------------------------------------------------------------
# Compare
# ----------------------------------------------------------------------------------------------


def _two_kinds():
    walks = [make_walker(f"Walk{i}", n_frames=n, period=p, phase=ph, speed=0.0)[0]
             for i, (n, p, ph) in enumerate([(40, 24.0, 0.0), (33, 20.0, 1.0), (48, 30.0, 2.5)])]
    eights = [make_figure8(f"Eight{i}", n_frames=n, period=p, phase=ph)[0]
              for i, (n, p, ph) in enumerate([(40, 24.0, 0.0), (36, 22.0, 0.8), (45, 28.0, 2.0)])]
    for ob in walks + eights:
        ob.animation_data.action.name = ob.name + "Action"
    for ob in walks:  # rotation channels only, so both kinds have the same channels
        for fc in [fc for fc in fcurves_of(ob) if fc.data_path == "location"]:
            if IS_SLOTTED:
                for layer in ob.animation_data.action.layers:
                    for strip in layer.strips:
                        cb = strip.channelbag(ob.animation_data.action_slot)
                        if cb is not None and fc in list(cb.fcurves):
                            cb.fcurves.remove(fc)
            else:
                ob.animation_data.action.fcurves.remove(fc)
    return walks, eights


def test_compare_two_kinds_gives_two_clusters(scene, tmp_path):
    walks, eights = _two_kinds()
    bpy.context.view_layer.objects.active = walks[0]
    png = tmp_path / "dendro.png"
    assert run("compare_actions", n_samples=40, image_path=str(png)) == {"FINISHED"}
    labels = {ob.name: ob.animation_data.action["anim_signals_cluster"] for ob in walks + eights}
    assert len({labels[o.name] for o in walks}) == 1
    assert len({labels[o.name] for o in eights}) == 1
    assert labels[walks[0].name] != labels[eights[0].name]

    root = scene.anim_signals
    res = root.last_compare
    assert res.valid and res.actions == 6 and res.clusters == 2
    assert res.reference == walks[0].animation_data.action.name
    nearest = [p.split(" (")[0] for p in res.nearest.split(", ")]
    assert set(nearest[:2]) == {walks[1].animation_data.action.name, walks[2].animation_data.action.name}
    items = list(root.compare_results)
    assert len(items) == 6 and sum(i.is_reference for i in items) == 1
    by_name = {i.action_name: i for i in items}
    d_walk = max(by_name[o.animation_data.action.name].distance for o in walks[1:])
    d_eight = min(by_name[o.animation_data.action.name].distance for o in eights)
    assert d_walk < d_eight
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert res.image_path == str(png)
    img = bpy.data.images[res.image_name]
    assert res.image_name == "Anim Signals Dendrogram" and img.size[0] == 900 and img.size[1] > 50
    # the full matrix for scripts: symmetric, zero diagonal, its reference row = the listed distances
    import json

    data = json.loads(res.matrix_json)
    d = np.array(data["distances"])
    assert d.shape == (6, 6) and np.allclose(d, d.T) and np.allclose(np.diag(d), 0.0)
    ref = data["actions"].index(res.reference)
    for i, name in enumerate(data["actions"]):
        assert by_name[name].distance == pytest.approx(d[ref, i], rel=1e-6, abs=1e-9)
        assert data["clusters"][i] == by_name[name].cluster


def test_compare_linear_metric_and_named_subset(scene, tmp_path):
    walks, eights = _two_kinds()
    names = ",".join(o.animation_data.action.name for o in (walks[0], walks[1], eights[0], eights[1]))
    assert run("compare_actions", actions=names, metric="LINEAR", cyclic=False, n_samples=30, n_clusters=2,
               image_path=str(tmp_path / "lin.png")) == {"FINISHED"}
    res = scene.anim_signals.last_compare
    assert res.actions == 4 and res.clusters == 2 and res.metric == "LINEAR"
    assert "anim_signals_cluster" not in walks[2].animation_data.action


def test_compare_body_features_across_rigs(scene, tmp_path):
    rig_a = make_humanoid("RigA")
    rig_b = make_humanoid("RigB", names=RIGIFY_NAMES, scale=1.3)
    made = []
    for i, (period, phase) in enumerate([(24.0, 0.0), (20.0, 1.5)]):
        made.append(animate_humanoid(rig_a, "walk", period=period, phase=phase, action_name=f"A_walk{i}")[0])
        made.append(animate_humanoid(rig_a, "wave", period=period, phase=phase, action_name=f"A_wave{i}")[0])
    made.append(animate_humanoid(rig_b, "walk", period=22.0, names=RIGIFY_NAMES, action_name="B_walk")[0])
    made.append(animate_humanoid(rig_b, "wave", period=26.0, names=RIGIFY_NAMES, action_name="B_wave")[0])
    for act in made:
        act.use_fake_user = True
    # RigA plays A_wave1 (its last action), RigB plays B_wave; the others are evaluated on the active RigA.
    bpy.context.view_layer.objects.active = rig_a
    before_actions = (rig_a.animation_data.action, rig_b.animation_data.action)
    names = ",".join(a.name for a in made)
    with pytest.raises(RuntimeError, match="different rotation channels"):
        run("compare_actions", actions=names, features="CHANNELS", n_samples=30)
    assert run("compare_actions", actions=names, features="BODY", n_samples=30, image_path=str(tmp_path / "b.png")) == {"FINISHED"}
    assert (rig_a.animation_data.action, rig_b.animation_data.action) == before_actions
    walk_labels = {bpy.data.actions[n]["anim_signals_cluster"] for n in ("A_walk0", "A_walk1", "B_walk")}
    wave_labels = {bpy.data.actions[n]["anim_signals_cluster"] for n in ("A_wave0", "A_wave1", "B_wave")}
    assert len(walk_labels) == 1 and len(wave_labels) == 1 and walk_labels != wave_labels


# ----------------------------------------------------------------------------------------------
# The modal (UI) path of compare, the panels, registration
# ----------------------------------------------------------------------------------------------


def test_compare_modal_steps_and_escape_cancels(scene, tmp_path):
    _two_kinds()
    before = snapshot_all()
    png = tmp_path / "esc.png"
    cls = bpy.types.ANIM_SIGNALS_OT_compare_actions
    op = StepwiseDriver(cls, bpy.context, n_samples=30, image_path=str(png))
    assert op.modal(bpy.context, event("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(bpy.context, event("MOUSEMOVE")) == {"RUNNING_MODAL"}
    assert op.modal(bpy.context, event("ESC", "PRESS")) == {"CANCELLED"}
    assert op._timer is None and op._gen is None
    assert_same_state(before, snapshot_all())
    assert not any("anim_signals_cluster" in a for a in bpy.data.actions)
    assert not scene.anim_signals.last_compare.valid and not png.exists()

    op = StepwiseDriver(cls, bpy.context, n_samples=30, image_path=str(png))
    assert op.run_to_end(bpy.context, limit=1000) == {"FINISHED"}
    assert all("anim_signals_cluster" in a for a in bpy.data.actions)
    assert scene.anim_signals.last_compare.valid and png.exists()


class _TaggedArea:
    tagged = 0

    def tag_redraw(self):
        self.tagged += 1


class _WindowContext:
    """bpy.context with a window whose screen has one stand-in area (headless Blender has no window)."""

    def __init__(self, area):
        self.window = types.SimpleNamespace(screen=types.SimpleNamespace(areas=[area]))

    def __getattr__(self, name):
        return getattr(bpy.context, name)


def test_compare_modal_end_redraws_the_window(scene, tmp_path):
    """The sidebar shows the results (or the state kept by Esc) as soon as the modal run ends: the
    scene properties it writes send no notifier (issue 16, found in the real window: the Compare
    panel was not redrawn after the run)."""
    _two_kinds()
    cls = bpy.types.ANIM_SIGNALS_OT_compare_actions
    for end in ("finished", "esc"):
        area = _TaggedArea()
        op = StepwiseDriver(cls, bpy.context, n_samples=30, image_path=str(tmp_path / f"{end}.png"))
        context = _WindowContext(area)
        assert op.modal(context, event("TIMER")) == {"RUNNING_MODAL"}
        assert area.tagged == 0
        if end == "esc":
            assert op.modal(context, event("ESC", "PRESS")) == {"CANCELLED"}
        else:
            assert op.run_to_end(context, limit=1000) == {"FINISHED"}
            assert scene.anim_signals.last_compare.valid
        assert area.tagged >= 1, end


def _draw(panel_name, scene):
    calls: list = []
    panel_cls = getattr(bpy.types, panel_name)
    panel_cls.draw(types.SimpleNamespace(layout=FakeLayout(calls)), types.SimpleNamespace(scene=scene))
    return calls


def test_panels_draw_settings_and_results(scene, tmp_path):
    for panel in ("ANIM_SIGNALS_PT_loop", "ANIM_SIGNALS_PT_blend", "ANIM_SIGNALS_PT_compare"):
        cls = getattr(bpy.types, panel)
        assert cls.bl_space_type == "DOPESHEET_EDITOR" and cls.bl_region_type == "UI" and cls.bl_category == "Signals"
    calls = _draw("ANIM_SIGNALS_PT_loop", scene)
    assert ("operator", "anim_signals.make_cyclic") in calls
    assert {"range_mode", "travel", "keep_original", "add_cycles"} <= {c[1] for c in calls if c[0] == "set"}
    assert not any(c[0] == "label" and "Seam" in c[1] for c in calls)

    ob, _ = make_walker()
    run("make_cyclic")
    calls = _draw("ANIM_SIGNALS_PT_loop", scene)
    assert any(c[0] == "label" and "Seam pose" in c[1] for c in calls)

    a_ob, _ = make_walker("A2", amp=0.4)
    scene.anim_signals.blend.action_a = ob.animation_data.action.name
    scene.anim_signals.blend.action_b = a_ob.animation_data.action.name
    calls = _draw("ANIM_SIGNALS_PT_blend", scene)
    assert ("operator", "anim_signals.blend_actions") in calls
    assert ("set", "action_a", ob.animation_data.action.name) in calls

    _two_kinds()
    run("compare_actions", n_samples=20, image_path=str(tmp_path / "p.png"))
    calls = _draw("ANIM_SIGNALS_PT_compare", scene)
    assert ("operator", "anim_signals.compare_actions") in calls
    assert ("list", "ANIM_SIGNALS_UL_compare_results") in calls
    assert any(c[0] == "label" and "Dendrogram" in c[1] for c in calls)
    # the Compare list's rows give the numbers the width their text needs and the name the rest,
    # and the selected row's whole name is written on a line of its own under the list (issue 16:
    # a fixed share cut names to 16 characters and distances to "0.0..." in the default sidebar)
    root = scene.anim_signals
    root.compare_index = len(root.compare_results) - 1
    chosen = root.compare_results[root.compare_index]
    calls = _draw("ANIM_SIGNALS_PT_compare", scene)
    assert ("label", chosen.action_name) in calls and ("label", root.last_compare.reference) in calls
    assert any(c[0] == "label" and c[1].startswith(f"Cluster #{chosen.cluster}") for c in calls)
    other = next(r for r in root.compare_results if not r.is_reference)
    row_calls: list = []
    bpy.types.ANIM_SIGNALS_UL_compare_results.draw_item(None, bpy.context, FakeLayout(row_calls), root, other, 0, root,
                                                        "compare_index")
    assert row_calls[1] == ("label", other.action_name)
    numbers = row_calls[2][1]
    text = row_calls[3][1]
    assert text == f"#{other.cluster} {other.distance:.2g}" and numbers.alignment == "RIGHT"
    # 11 px UI text: the characters of numbers are at most 7 px wide, a UI unit is 20 px
    assert numbers.ui_units_x * 20 >= 7 * len(text)


def test_registered_with_tooltips_and_menus(scene):
    def has_entry(menu):
        return any(getattr(f, "__module__", "") == f"{TOOL}.operators" for f in getattr(menu.draw, "_draw_funcs", []))

    assert has_entry(bpy.types.DOPESHEET_MT_key) and has_entry(bpy.types.GRAPH_MT_key)
    expected = {
        "make_cyclic": {"range_mode", "frame_start", "frame_end", "min_period", "max_period", "velocity_window",
                        "travel", "add_cycles", "keep_original"},
        "blend_actions": {"action_a", "action_b", "weight", "count", "cyclic", "align", "assign"},
        "compare_actions": {"actions", "features", "metric", "cyclic", "n_samples", "n_clusters", "image_path"},
    }
    for op, names in expected.items():
        cls = getattr(bpy.types, f"ANIM_SIGNALS_OT_{op}")
        assert {"REGISTER", "UNDO"} <= set(cls.bl_options)
        props = getattr(bpy.ops.anim_signals, op).get_rna_type().properties
        assert names <= set(props.keys()), op
        for n in names:
            assert props[n].description, f"{op}.{n} has no tooltip"
    root = scene.anim_signals
    assert root.loop.keep_original and root.loop.add_cycles and root.blend.weight == 0.5
    assert root.compare.n_samples == 100 and not root.last_loop.valid and len(root.compare_results) == 0


def test_menu_calls_take_sidebar_settings(scene, lbc):
    """invoke() (menus, F3) fills every property not given explicitly from the sidebar settings.
    Headless, bpy.ops never calls invoke(): drive the operator's own fill on a stand-in."""
    settings = scene.anim_signals.loop
    settings.range_mode, settings.frame_start, settings.frame_end, settings.travel = "CUSTOM", 3, 30, "NONE"
    cls = lbc.operators.ANIM_SIGNALS_OT_make_cyclic
    op = types.SimpleNamespace(
        properties=types.SimpleNamespace(is_property_set=lambda name: name == "travel"),
        SETTINGS=cls.SETTINGS, stored_settings=cls.stored_settings,
        range_mode="ACTION", frame_start=1, frame_end=100, travel="AUTO",
    )
    cls.fill_settings(op, bpy.context)
    assert (op.range_mode, op.frame_start, op.frame_end, op.travel) == ("CUSTOM", 3, 30, "AUTO")
    assert op.keep_original == settings.keep_original and op.velocity_window == settings.velocity_window
    ob, _ = make_walker(n_frames=50)
    # INVOKE_DEFAULT without a window runs synchronously.
    assert bpy.ops.anim_signals.make_cyclic("INVOKE_DEFAULT") == {"FINISHED"}
    assert scene.anim_signals.last_loop.valid


# ----------------------------------------------------------------------------------------------
# Bad input: a clear message, nothing changed
# ----------------------------------------------------------------------------------------------


def _refused(op: str, match: str, **kwargs) -> None:
    before = snapshot_all()
    with pytest.raises(RuntimeError, match=match):
        run(op, **kwargs)
    assert_same_state(before, snapshot_all())


def test_loop_no_active_object_or_no_action(scene, lbc):
    make_walker()
    bpy.context.view_layer.objects.active = None
    _refused("make_cyclic", "No active object")
    still = _new_empty("Still")
    _refused("make_cyclic", "no action")
    with pytest.raises(lbc.clips.MotionInputError, match="no animation data"):
        lbc.loop.plan_loop(still)
    with pytest.raises(lbc.clips.MotionInputError, match="No active object"):
        lbc.loop.plan_loop(None)


def test_loop_clip_too_short(scene, lbc):
    make_walker(n_frames=3)
    _refused("make_cyclic", "too short")
    ob, _ = make_walker("Long", n_frames=30)
    _refused("make_cyclic", "too short", range_mode="CUSTOM", frame_start=5, frame_end=7)
    _refused("make_cyclic", "empty", range_mode="CUSTOM", frame_start=9, frame_end=7)
    with pytest.raises(lbc.clips.MotionInputError, match="at least 4"):
        lbc.loop.plan_loop(ob, range_mode="CUSTOM", frame_start=1, frame_end=3)


def test_loop_constant_channels(scene):
    ob = _new_empty("Constant")
    frames = np.arange(1, 31, dtype=np.float64)
    keyed(ob, "location", frames, np.tile([1.0, 2.0, 3.0], (30, 1)))
    _refused("make_cyclic", "Nothing moves")
    _refused("make_cyclic", "Nothing moves", range_mode="AUTO")
    # One moving channel among constant ones (zero velocity elsewhere) loops fine.
    fc = _curve(ob, "location", 2)
    vals = key_array(fc)[:, 1] + 0.3 * np.sin(frames / 4.0)
    from _bl_helpers import set_dense_keys

    set_dense_keys(fc, frames, vals)
    assert run("make_cyclic", travel="NONE") == {"FINISHED"}
    for f in fcurves_of(ob):
        pose, _ = _seam(f, 1, 30)
        assert abs(pose) < 1e-5
    np.testing.assert_allclose(evaluate(_curve(ob, "location", 0), frames), 1.0, atol=1e-6)


def test_loop_nan_values(scene):
    ob, _ = make_walker(n_frames=30)
    fc = _curve(ob, "rotation_euler", 1)
    co = key_array(fc)
    co[7, 1] = np.nan
    fc.keyframe_points.foreach_set("co", co.astype(np.float32).ravel())
    fc.update()
    _refused("make_cyclic", r"rotation_euler\[1\]'.* value nan at frame 8")


def test_loop_linked_action_is_read_only(scene, tmp_path):
    ob, _ = make_walker(n_frames=30)
    action = ob.animation_data.action
    name = action.name
    lib = str(tmp_path / "lib.blend")
    bpy.data.libraries.write(lib, {action}, fake_user=True)
    ob.animation_data.action = None
    bpy.data.actions.remove(action)
    with bpy.data.libraries.load(lib, link=True) as (_src, dst):
        dst.actions = [name]
    linked = dst.actions[0]
    ob.animation_data.action = linked
    if IS_SLOTTED:
        ob.animation_data.action_slot = linked.slots[0]
    _refused("make_cyclic", "linked")
    _refused("make_cyclic", "linked", keep_original=False)


def test_blend_bad_input(scene):
    a_ob, _ = make_walker("A", n_frames=30)
    sk = bpy.data.meshes.new("M")
    sk.from_pydata([(0, 0, 0), (1, 0, 0), (1, 1, 0)], [], [(0, 1, 2)])
    m_ob = bpy.data.objects.new("M", sk)
    scene.collection.objects.link(m_ob)
    m_ob.shape_key_add(name="Basis")
    kb = m_ob.shape_key_add(name="K")
    frames = np.arange(1, 21, dtype=np.float64)
    keyed(kb, "value", frames, 0.5 + 0.5 * np.sin(frames / 3.0), id_data=sk.shape_keys)
    a = a_ob.animation_data.action.name
    b = sk.shape_keys.animation_data.action.name
    _refused("blend_actions", "no channels in common", action_a=a, action_b=b)
    _refused("blend_actions", 'No action named "Nope"', action_a=a, action_b="Nope")
    _refused("blend_actions", "Pick two actions", action_a=a, action_b="")
    short_ob, _ = make_walker("Short", n_frames=3)
    _refused("blend_actions", "too short", action_a=a, action_b=short_ob.animation_data.action.name)
    still = _new_empty("Still")
    keyed(still, "rotation_euler", frames, np.zeros((20, 3)))
    keyed(still, "location", frames, np.ones((20, 3)))
    _refused("blend_actions", "Nothing moves", action_a=a, action_b=still.animation_data.action.name)


def test_compare_bad_input(scene, tmp_path):
    ob, _ = make_walker("Only", n_frames=30)
    _refused("compare_actions", "at least 2 actions", image_path=str(tmp_path / "x.png"))
    _refused("compare_actions", 'No action named "Ghost"', actions=f"{ob.animation_data.action.name}, Ghost")
    rig = make_humanoid("Rig")
    act1, _ = animate_humanoid(rig, "walk", action_name="RigWalk")
    act1.use_fake_user = True
    rig2 = make_humanoid("Rig2", names=RIGIFY_NAMES)
    animate_humanoid(rig2, "walk", names=RIGIFY_NAMES, action_name="Rig2Walk")
    # Different skeletons by channel: the message names the action and the bones.
    _refused("compare_actions", r'"Rig2Walk".*missing bones .*LeftArm.*extra bones .*thigh\.L',
             actions="RigWalk,Rig2Walk", features="CHANNELS")
    _refused("compare_actions", r'"RigWalk".*extra bones .*LeftArm.*missing channels rotation_euler\[0\]',
             actions=f"{ob.animation_data.action.name},RigWalk")
    # Mixed frame counts are fine (resampled).
    act3, _ = animate_humanoid(rig, "walk", n_frames=55, period=30.0, action_name="RigWalkLong")
    assert run("compare_actions", actions="RigWalk,RigWalkLong", n_samples=20,
               image_path=str(tmp_path / "y.png")) == {"FINISHED"}
    # Body features need an armature: an object action has none to play on.
    bpy.context.view_layer.objects.active = ob
    _refused("compare_actions", "No armature", actions=f"{ob.animation_data.action.name},RigWalk", features="BODY")
    # ... and a humanoid one: a plain bone chain has no canonical joints.
    chain = bpy.data.objects.new("Chain", bpy.data.armatures.new("Chain"))
    scene.collection.objects.link(chain)
    bpy.context.view_layer.objects.active = chain
    bpy.ops.object.mode_set(mode="EDIT")
    for i in range(3):
        eb = chain.data.edit_bones.new(f"B{i}")
        eb.head, eb.tail = (0, 0, i), (0, 0, i + 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    frames = np.arange(1, 21, dtype=np.float64)
    keyed(chain.pose.bones["B1"], "rotation_euler", frames, np.column_stack([np.sin(frames / 3), 0 * frames, 0 * frames]), id_data=chain)
    chain.animation_data.action.name = "ChainWave"
    _refused("compare_actions", r'"Chain".*lacks the canonical joints hips', actions="ChainWave,RigWalk", features="BODY")
    # NaN in one clip: named.
    clean = chain.animation_data.action.copy()
    clean.name = "ChainClean"
    clean.use_fake_user = True
    fc = next(f for f in fcurves_of(chain))
    co = key_array(fc)
    co[4, 1] = np.nan
    fc.keyframe_points.foreach_set("co", co.astype(np.float32).ravel())
    fc.update()
    _refused("compare_actions", r'rotation_euler\[0\]\' of action "ChainWave" has a key with the value nan at frame 5',
             actions="ChainWave,RigWalk")
    _refused("blend_actions", r'rotation_euler\[0\]\' of action "ChainWave" has a key with the value nan at frame 5',
             action_a="ChainClean", action_b="ChainWave")


# ----------------------------------------------------------------------------------------------
# Real mocap (skipped without ../shared/data)
# ----------------------------------------------------------------------------------------------


def test_loop_auto_range_on_mocap(scene):
    path = shared_data("mocap", "angry_13_000.bvh")
    bpy.ops.import_anim.bvh(filepath=str(path), update_scene_fps=False, update_scene_duration=False)
    ob = bpy.context.active_object
    assert ob.type == "ARMATURE"
    src = {(fc.data_path, fc.array_index): key_array(fc)[:, 1] for fc in fcurves_of(ob)}
    assert run("make_cyclic", range_mode="AUTO") == {"FINISHED"}
    res = scene.anim_signals.last_loop
    lo, hi = res.frame_start, res.frame_end
    assert hi - lo >= 20
    # Median frame-to-frame change of the clip's rotation channels (degrees) and of its joints (cm).
    steps = np.concatenate([np.abs(np.diff(np.degrees(v))) for k, v in src.items() if "rotation" in k[0]])
    med_deg = float(np.median(steps))
    frames_all = np.arange(lo, hi + 1)
    heads = world_heads(ob, frames_all)
    local = heads - heads[:, :1]  # joints relative to the root: the body's own motion, not its travel
    med_cm = 100 * float(np.median(np.linalg.norm(np.diff(local, axis=0), axis=-1)))
    print(f"mocap loop {lo}-{hi}: pose {res.pose_before_deg:.3g}->{res.pose_after_deg:.3g} deg, velocity "
          f"{res.velocity_before_deg:.3g}->{res.velocity_after_deg:.3g} deg/frame, joints {res.joint_pose_before_cm:.3g}->"
          f"{res.joint_pose_after_cm:.3g} cm, {res.joint_velocity_before_cm:.3g}->{res.joint_velocity_after_cm:.3g} cm/frame; "
          f"median step {med_deg:.3g} deg, {med_cm:.3g} cm; rms {res.rms_deviation_deg:.3g} deg")
    assert res.pose_after_deg <= med_deg
    assert res.velocity_after_deg <= max(med_deg, 1e-9) * 2.0
    assert res.joint_pose_after_cm <= med_cm
    assert res.joint_velocity_after_cm <= med_cm
    for fc in fcurves_of(ob):
        if "rotation" in fc.data_path:
            pose, _ = _seam(fc, lo, hi)
            assert math.degrees(abs(pose)) < 1e-3
    assert os.path.basename(str(path)).startswith("angry")
