"""Pose space (Cashman & Hormann) in Blender: ``anim_signals.build_pose_space``,
``anim_signals.pose_space_resample``, ``anim_signals.pose_space_bake`` and the script API of
``operators.pose_space`` (build, load / save, apply_position / apply_time) the canvas uses.

Generated data: a twisting, bending cylinder played by a Mesh Cache (PC2 written here), the same
motion as shape-key animation, an armature action; real data: the shared horse gallop. Results are
read back through Blender itself (evaluated vertex positions, F-curve evaluation, world-space
bones), and every bad input is checked to change nothing.
"""

from __future__ import annotations

import importlib
import math
import struct
import time

import bpy
import numpy as np
import pytest
from _bl_helpers import (
    StepwiseDriver,
    assert_same_state,
    event,
    ext_module,
    fcurves_of,
    keyed,
    linked_copy,
    make_armature,
    shared_data,
    snapshot_all,
    world_heads,
)
from conftest import EXT_MODULE

EXT = EXT_MODULE
PROP = "anim_signals_pose_space"


@pytest.fixture
def psd(extension):
    """operators.pose_space (its script API) of the installed extension."""
    return ext_module("operators.pose_space")


def run(op: str, **kwargs):
    return getattr(bpy.ops.anim_signals, op)("EXEC_DEFAULT", **kwargs)


# ----------------------------------------------------------------------------------------------
# Generated sequences
# ----------------------------------------------------------------------------------------------

RINGS, SEGMENTS = 6, 8


def cylinder_rest() -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """A small open cylinder (48 vertices) along z, radius 0.3, height 2."""
    phi = 2.0 * np.pi * np.arange(SEGMENTS) / SEGMENTS
    z = np.linspace(0.0, 2.0, RINGS)
    verts = np.array([(0.3 * math.cos(a), 0.3 * math.sin(a), h) for h in z for a in phi])
    faces = [
        (r * SEGMENTS + s, r * SEGMENTS + (s + 1) % SEGMENTS, (r + 1) * SEGMENTS + (s + 1) % SEGMENTS, (r + 1) * SEGMENTS + s)
        for r in range(RINGS - 1)
        for s in range(SEGMENTS)
    ]
    return verts, faces


def twist_frames(n: int, period: float = 12.0) -> np.ndarray:
    """(n, V, 3) float32: the cylinder twisting about z and bending along x, non-linearly in time."""
    rest, _ = cylinder_rest()
    out = np.empty((n, rest.shape[0], 3))
    for i in range(n):
        w = 2.0 * np.pi * i / period
        twist = 1.2 * math.sin(w) * rest[:, 2] / 2.0
        c, s = np.cos(twist), np.sin(twist)
        x = c * rest[:, 0] - s * rest[:, 1]
        y = s * rest[:, 0] + c * rest[:, 1]
        bend = 0.25 * math.cos(0.7 * w) * rest[:, 2] ** 2
        bulge = 1.0 + 0.2 * math.sin(1.3 * w) * np.sin(np.pi * rest[:, 2] / 2.0)
        out[i] = np.column_stack([x * bulge + bend, y * bulge, rest[:, 2]])
    return out.astype(np.float32)


def write_pc2(path, frames: np.ndarray) -> None:
    """POINTCACHE2: header (signature, version 1, points, start frame, sample rate, samples) + float32 xyz."""
    n, v, _ = frames.shape
    with open(path, "wb") as fh:
        fh.write(b"POINTCACHE2\0")
        fh.write(struct.pack("<iiffi", 1, v, 0.0, 1.0, n))
        fh.write(np.ascontiguousarray(frames, dtype="<f4").tobytes())


def new_mesh_object(name: str, verts, faces):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(map(float, v)) for v in verts], [], faces)
    ob = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    ob.select_set(True)
    return ob


def make_cached_cylinder(tmp_path, name="Twister", n=16, frame_start=1, frames=None):
    """The cylinder played by a Mesh Cache modifier (PC2): scene frame frame_start + i = sample i."""
    data = twist_frames(n) if frames is None else frames
    path = tmp_path / f"{name}.pc2"
    write_pc2(path, data)
    rest, faces = cylinder_rest()
    ob = new_mesh_object(name, rest, faces)
    mod = ob.modifiers.new("Cache", "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = str(path)
    mod.frame_start = float(frame_start)
    return ob, data


def make_shape_key_cylinder(name="Keyed", n=20):
    """The cylinder with three shape keys (twist, bend, bulge) whose values are animated."""
    rest, faces = cylinder_rest()
    ob = new_mesh_object(name, rest, faces)
    ob.shape_key_add(name="Basis")
    full = twist_frames(13)
    targets = {"Twist": full[3], "Bend": full[9], "Bulge": full[6]}
    frames = np.arange(1, n + 1, dtype=np.float64)
    w = 2.0 * np.pi * (frames - 1) / 10.0
    values = {"Twist": 0.5 + 0.5 * np.sin(w), "Bend": 0.5 + 0.5 * np.cos(0.6 * w), "Bulge": np.clip(np.sin(1.7 * w), 0, 1)}
    for kname, co in targets.items():
        kb = ob.shape_key_add(name=kname, from_mix=False)
        kb.data.foreach_set("co", co.ravel())
        keyed(kb, "value", frames, values[kname], id_data=ob.data.shape_keys)
    return ob, frames


def evaluated_coords(ob, frame=None) -> np.ndarray:
    """Evaluated vertex positions (V, 3), read independently of the extension's data layer."""
    scene = bpy.context.scene
    if frame is not None:
        scene.frame_set(int(frame))
    dg = bpy.context.evaluated_depsgraph_get()
    me = ob.evaluated_get(dg).data
    buf = np.empty(3 * len(me.vertices), dtype=np.float32)
    me.vertices.foreach_get("co", buf)
    return buf.reshape(-1, 3).astype(np.float64)


def file_state() -> dict:
    """Objects, meshes, their modifiers / shape keys / pose-space properties, and every action."""
    state = snapshot_all()
    state["objects"] = sorted(
        (ob.name, ob.type, PROP in ob.keys(), tuple(m.type for m in getattr(ob, "modifiers", [])),
         len(ob.data.shape_keys.key_blocks) if getattr(getattr(ob, "data", None), "shape_keys", None) else 0)
        for ob in bpy.data.objects
    )
    state["meshes"] = sorted(m.name for m in bpy.data.meshes)
    return state


def assert_same_file(before: dict, after: dict) -> None:
    assert before["objects"] == after["objects"]
    assert before["meshes"] == after["meshes"]
    assert_same_state(before, after)


# ----------------------------------------------------------------------------------------------
# Building, posing, baking: meshes
# ----------------------------------------------------------------------------------------------


def test_mesh_cache_exact_build_apply_and_bake_reproduce_frames(scene, psd, tmp_path):
    ob, data = make_cached_cylinder(tmp_path, n=16, frame_start=1)
    rest_before = evaluated_coords(ob, 1)
    assert run("build_pose_space", exact=True) == {"FINISHED"}
    ps_ob = bpy.data.objects[ob.name + ".posespace"]
    assert bpy.context.view_layer.objects.active == ps_ob
    # the source is untouched: still its modifier, no shape keys, no property
    assert [m.type for m in ob.modifiers] == ["MESH_CACHE"] and ob.data.shape_keys is None and PROP not in ob.keys()
    np.testing.assert_array_equal(evaluated_coords(ob, 1), rest_before)
    # the copy: no modifiers, Basis + m component keys, sliders widened
    assert len(ps_ob.modifiers) == 0
    space = psd.load_space(ps_ob)
    n = 16
    assert (space.n, space.k, space.l, space.m) == (n, n + 2, n, n - 1)
    names = [kb.name for kb in ps_ob.data.shape_keys.key_blocks]
    assert names == ["Basis"] + [f"PoseSpace.{j:02d}" for j in range(1, n)]
    assert all(kb.slider_min == -10.0 and kb.slider_max == 10.0 for kb in ps_ob.data.shape_keys.key_blocks[1:])
    info = ps_ob[PROP]
    assert info["source"]["type"] == "MESH" and info["source"]["object"] == ob.name
    np.testing.assert_array_equal(np.asarray(info["source_frames"]), np.arange(1, n + 1))  # the cache's range
    scales = np.asarray(info["scales"])
    assert np.all(np.abs(space.latent / scales).max(axis=0) <= 1.0 + 1e-12)  # key values of frames in [-1, 1]
    res = scene.anim_signals.last_pose_space
    assert res.valid and (res.n, res.k, res.l, res.m) == (n, n + 2, n, n - 1) and res.source == "MESH"
    assert res.max_error < 1e-6 and res.values == 3 * data.shape[1]
    diag = float(np.linalg.norm(np.ptp(data[0], axis=0)))

    # apply_position at each frame's pose-space position reproduces the frame (Blender blends the keys)
    for i in (0, 5, 15):
        psd.apply_position(ps_ob, space, space.positions[i])
        np.testing.assert_allclose(evaluated_coords(ps_ob), data[i], atol=2e-6 * diag)
    psd.apply_time(ps_ob, space, 8.0)  # frame 8 = sample 7
    np.testing.assert_allclose(evaluated_coords(ps_ob), data[7], atol=2e-6 * diag)

    # bake: keys on every frame; the evaluated copy matches the cache at every frame (float32)
    assert run("pose_space_bake") == {"FINISHED"}
    key = ps_ob.data.shape_keys
    action = key.animation_data.action
    assert action.name == ps_ob.name + ".bake" and len(fcurves_of(key)) == n - 1
    assert all(len(fc.keyframe_points) == n for fc in fcurves_of(key))
    assert scene.anim_signals.last_pose_space.baked_action == action.name
    worst = max(float(np.abs(evaluated_coords(ps_ob, f) - evaluated_coords(ob, f)).max()) for f in range(1, n + 1))
    assert worst < 2e-6 * diag, worst
    # baking again replaces the previous bake (no pile of unused actions)
    assert run("pose_space_bake") == {"FINISHED"}
    assert [a.name for a in bpy.data.actions if a.get("anim_signals_pose_space_bake")] == [key.animation_data.action.name]


def test_shape_keys_tolerance_build_and_fast_apply(scene, psd):
    ob, frames = make_shape_key_cylinder(n=20)
    scene.frame_set(1)
    before = {kb.name: kb.value for kb in ob.data.shape_keys.key_blocks}
    assert run("build_pose_space") == {"FINISHED"}  # AUTO: shape keys, the action's range, 0.2 % tolerance
    ps_ob = psd.space_object(ob)
    assert ps_ob.name == "Keyed.posespace" and psd.space_object(ps_ob) == ps_ob
    info = ps_ob[PROP]
    assert info["source"]["type"] == "SHAPE_KEYS" and list(info["source_frames"]) == list(frames)
    space = psd.load_space(ps_ob)
    assert space.m <= 3  # three shape keys span the motion
    res = scene.anim_signals.last_pose_space
    assert res.tolerance > 0.0 and res.rms_error <= res.tolerance + 1e-12
    # the source's shape keys are untouched; the copy holds only the pose-space keys
    assert {kb.name: kb.value for kb in ob.data.shape_keys.key_blocks} == before
    assert [kb.name for kb in ps_ob.data.shape_keys.key_blocks][0] == "Basis"
    # the frames, blended by Blender from the source's keys, are reproduced within a few tolerances
    src = np.array([evaluated_coords(ob, f) for f in frames])
    diag = float(np.linalg.norm(np.ptp(src[0], axis=0)))
    assert res.tolerance == pytest.approx(0.002 * np.linalg.norm(np.ptp(src.mean(axis=0), axis=0)), rel=1e-3)
    assert run("pose_space_bake") == {"FINISHED"}
    baked = np.array([evaluated_coords(ps_ob, f) for f in frames])
    per_vertex = np.linalg.norm(baked - src, axis=2)
    assert float(np.sqrt(np.mean(per_vertex**2))) <= res.tolerance * 1.01 + 1e-6 * diag
    # apply_position writes m key values (value = g_j(p) / s_j) and nothing else
    p = space.positions.mean(axis=0)
    values = psd.apply_position(ps_ob, space, p)
    expected = space.weights_at(p) / np.asarray(info["scales"])
    np.testing.assert_allclose(values, expected, rtol=1e-12)
    blocks = ps_ob.data.shape_keys.key_blocks
    np.testing.assert_allclose([blocks[f"PoseSpace.{j + 1:02d}"].value for j in range(space.m)], expected, atol=1e-6)


def test_rebuild_from_the_pose_space_object_keeps_pins(scene, psd, tmp_path):
    ob, _ = make_cached_cylinder(tmp_path, n=12)
    ps_ob, space, _ = psd.build(ob, exact=True)
    pinned = psd.load_space(ps_ob).with_pins({0: [0.0, 0.0], 11: [1.0, 0.5]})
    psd.save_space(ps_ob, pinned)
    bpy.context.view_layer.objects.active = ps_ob  # rebuild with the pose-space object active
    assert run("build_pose_space", exact=True) == {"FINISHED"}
    assert bpy.data.objects.get("Twister.posespace.posespace") is None
    again = psd.load_space(ps_ob)
    assert sorted(again.pins) == [0, 11]
    np.testing.assert_allclose(again.positions[0], [0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(again.positions[11], [1.0, 0.5], atol=1e-12)
    assert run("build_pose_space", exact=True, keep_pins=False) == {"FINISHED"}
    assert psd.load_space(ps_ob).pins == {}


def test_shape_key_blend_matches_blender(scene, psd, ext):
    """The SHAPE_KEYS reader blends like Blender: relative-to-another key, vertex group, muted key,
    slider clamping, and driven values (read through the depsgraph)."""
    ob, frames = make_shape_key_cylinder("Blend", n=12)
    blocks = ob.data.shape_keys.key_blocks
    vg = ob.vertex_groups.new(name="Top")
    vg.add([i for i in range(len(ob.data.vertices)) if ob.data.vertices[i].co.z > 1.0], 0.7, "REPLACE")
    blocks["Bend"].vertex_group = "Top"
    blocks["Bulge"].relative_key = blocks["Twist"]
    blocks["Bulge"].slider_max = 0.6
    extra = ob.shape_key_add(name="Muted", from_mix=False)
    extra.data.foreach_set("co", (twist_frames(5)[2] * 1.5).ravel())
    extra.value, extra.mute = 1.0, True
    z = ext.data.shape_keys.read_shape_key_matrix(scene, ob, frames)
    expected = np.array([evaluated_coords(ob, f).ravel() for f in frames])
    np.testing.assert_allclose(z, expected, atol=2e-6)
    # a driven key: values come from the depsgraph
    extra.mute = False
    fcu = extra.driver_add("value")
    fcu.driver.type = "SCRIPTED"
    fcu.driver.expression = "frame / 24"
    z = ext.data.shape_keys.read_shape_key_matrix(scene, ob, frames)
    expected = np.array([evaluated_coords(ob, f).ravel() for f in frames])
    np.testing.assert_allclose(z, expected, atol=2e-6)


def test_alembic_and_cloth_sequences(scene, psd, tmp_path):
    """Mesh Sequence Cache (Alembic written here) and a cloth simulation, read through the depsgraph."""
    ob, data = make_cached_cylinder(tmp_path, "Abc", n=12)
    path = str(tmp_path / "cylinder.abc")
    assert bpy.ops.wm.alembic_export(filepath=path, start=1, end=12, selected=False, as_background_job=False) == {"FINISHED"}
    bpy.data.objects.remove(ob)
    assert bpy.ops.wm.alembic_import(filepath=path, as_background_job=False) == {"FINISHED"}
    abc = bpy.data.objects["Abc"]
    assert [m.type for m in abc.modifiers] == ["MESH_SEQUENCE_CACHE"]
    bpy.context.view_layer.objects.active = abc
    scene.frame_start, scene.frame_end = 1, 12
    assert run("build_pose_space", exact=True) == {"FINISHED"}  # AUTO: the scene range
    ps_ob = psd.space_object(abc)
    assert psd.load_space(ps_ob).n == 12 and len(ps_ob.modifiers) == 0
    assert run("pose_space_bake") == {"FINISHED"}
    worst = max(float(np.abs(evaluated_coords(ps_ob, f) - data[f - 1]).max()) for f in range(1, 13))
    assert worst < 1e-5, worst

    # a cloth sheet hanging from two pinned corners, simulated frame by frame from the start
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=6, y_subdivisions=6, size=1.0, location=(3.0, 0.0, 1.0))
    sheet = bpy.context.active_object
    pin = sheet.vertex_groups.new(name="Pin")
    corners = [v.index for v in sheet.data.vertices if v.co.y > 0.49 and abs(v.co.x) > 0.49]
    pin.add(corners, 1.0, "REPLACE")
    cloth = sheet.modifiers.new("Cloth", "CLOTH")
    cloth.settings.vertex_group_mass = "Pin"
    cloth.point_cache.frame_start, cloth.point_cache.frame_end = 1, 16
    scene.frame_set(1)
    assert run("build_pose_space", range_mode="CUSTOM", frame_start=1, frame_end=16) == {"FINISHED"}
    res = scene.anim_signals.last_pose_space
    assert res.source == "MESH" and res.n == 16 and res.m >= 2 and res.rms_error <= res.tolerance + 1e-9
    sim = np.array([evaluated_coords(sheet, f) for f in range(1, 17)])
    assert np.ptp(sim[:, :, 2]) > 0.05  # it falls and swings


# ----------------------------------------------------------------------------------------------
# Armatures
# ----------------------------------------------------------------------------------------------


def _bone_rotations(ob, frames) -> np.ndarray:
    """Evaluated pose-bone matrices (frames, bones, 4, 4), read independently of the data layer."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(int(f))
        ob_eval = ob.evaluated_get(bpy.context.evaluated_depsgraph_get())
        out.append([np.array(pb.matrix) for pb in ob_eval.pose.bones])
    return np.array(out)


def test_armature_action_exact_build_apply_and_bake(scene, psd):
    ob, frames, _ = make_armature(n_frames=18)
    original = ob.animation_data.action
    heads = world_heads(ob, frames)
    mats = _bone_rotations(ob, frames)
    assert run("build_pose_space", exact=True) == {"FINISHED"}
    assert psd.space_object(ob) == ob and bpy.data.objects.get("Rig.posespace") is None  # stored on the armature
    info = ob[PROP]
    assert info["kind"] == "ARMATURE" and info["source"]["type"] == "ACTION" and info["source"]["action"] == original.name
    n_channels = len(fcurves_of(ob))
    assert info["d"] == n_channels and len(info["h0"]) == n_channels and len(info["H"]) == n_channels * info["m"]
    space = psd.load_space(ob)
    n = frames.size
    assert (space.n, space.k, space.l) == (n, n + 2, n) and space.m <= n - 1
    res = scene.anim_signals.last_pose_space
    assert res.error_units == "deg" and res.max_error < 1e-6

    # apply_position writes bone transforms (foreach_set): the pose of frame i, until the frame changes
    scene.frame_set(3)
    for i in (0, 7, n - 1):
        psd.apply_position(ob, space, space.positions[i])
        np.testing.assert_allclose(world_heads_now(ob), heads[i], atol=1e-5)
    psd.apply_time(ob, space, 9.0)
    np.testing.assert_allclose(world_heads_now(ob), heads[8], atol=1e-5)
    scene.frame_set(5)  # the action plays again
    np.testing.assert_allclose(world_heads_now(ob), heads[4], atol=1e-6)

    # bake: a new action with one curve per channel, every frame; the original keeps a fake user
    assert run("pose_space_bake") == {"FINISHED"}
    baked = ob.animation_data.action
    assert baked.name == original.name + ".posespace" and baked != original
    assert original.use_fake_user and original.name in bpy.data.actions
    assert len(fcurves_of(ob)) == n_channels
    np.testing.assert_allclose(world_heads(ob, frames), heads, atol=1e-5)
    np.testing.assert_allclose(_bone_rotations(ob, frames), mats, atol=1e-5)
    # slow motion x2: a new bake with 2n - 1 frames; every second frame is an original pose
    assert run("pose_space_resample", mode="SPEED", speed=0.5) == {"FINISHED"}
    slow = ob.animation_data.action
    assert slow.name == original.name + ".posespace"  # the previous bake was replaced, not kept
    assert [a.name for a in bpy.data.actions] == sorted([original.name, slow.name])
    assert {len(fc.keyframe_points) for fc in fcurves_of(ob)} == {2 * n - 1}
    np.testing.assert_allclose(world_heads(ob, 1 + 2 * (frames - 1))[::3], heads[::3], atol=1e-5)
    # rebuilding reads the original action behind the bake, not the bake
    assert run("build_pose_space", exact=True) == {"FINISHED"}
    assert ob[PROP]["source"]["action"] == original.name and psd.load_space(ob).n == n


def world_heads_now(ob) -> np.ndarray:
    ob_eval = ob.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mw = np.array(ob_eval.matrix_world)
    return np.array([(mw @ np.append(np.array(pb.head), 1.0))[:3] for pb in ob_eval.pose.bones])


def test_armature_tolerance_build(scene, psd):
    ob, frames, _ = make_armature(n_frames=30)
    ob.keyframe_insert("location", frame=1)  # an object channel: not part of the pose vector
    plan = psd.build_plan(ob, scene)
    assert any("Left out 3 curve(s)" in w for w in plan.warnings)
    assert len(plan.fcurves) == len(fcurves_of(ob)) - 3
    assert run("build_pose_space", tolerance_rotation=1.0) == {"FINISHED"}
    res = scene.anim_signals.last_pose_space
    assert res.tolerance == pytest.approx(1.0) and res.rms_error <= 1.0 + 1e-9
    assert res.m < 29 and res.k < 32


# ----------------------------------------------------------------------------------------------
# Pins, save / reload, resampling
# ----------------------------------------------------------------------------------------------


def test_pins_survive_save_and_reload(scene, psd, tmp_path):
    ob, data = make_cached_cylinder(tmp_path, n=14)
    ps_ob, space, _ = psd.build(ob, exact=True, pins={3: (0.25, -0.5)})
    assert space.pins.keys() == {3}
    np.testing.assert_allclose(space.positions[3], [0.25, -0.5], atol=1e-12)
    moved = space.with_pins({9: (-0.4, 0.3)}).with_control_point(4, (0.1, 0.2))
    psd.save_space(ps_ob, moved)
    stamp = psd.space_stamp(ps_ob)
    assert stamp is not None and psd.space_stamp(ob) == stamp  # the source finds its pose space
    path = str(tmp_path / "pose_space.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, check_existing=False)
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    ps_ob = bpy.data.objects["Twister.posespace"]
    back = psd.load_space(ps_ob)
    assert sorted(back.pins) == [3, 9]
    stored, original = back.to_dict(), moved.to_dict()
    assert stored.keys() == original.keys()
    for name, value in original.items():  # every entry exact (doubles), but h0 / H (float32 shape keys)
        if name not in ("h0", "H"):
            np.testing.assert_array_equal(np.asarray(stored[name]), np.asarray(value), err_msg=name)
    info = psd.space_info(bpy.data.objects["Twister"])  # the source finds it after reload too
    assert info["object"] == ps_ob.name and info["pins"] == 2 and info["n"] == 14 and info["source"]["type"] == "MESH"
    # h0 and H come back from the float32 shape keys
    scale = float(np.abs(data).max())
    t = np.linspace(1.0, 14.0, 27)
    np.testing.assert_allclose(back.evaluate(t), moved.evaluate(t), atol=2e-6 * scale)
    assert psd.space_stamp(ps_ob) == stamp


def test_resample_speed_frame_rate_range_and_count(scene, psd, tmp_path):
    n = 13
    ob, data = make_cached_cylinder(tmp_path, n=n, frame_start=1)
    ps_ob, _, _ = psd.build(ob, exact=True)
    diag = float(np.linalg.norm(np.ptp(data[0], axis=0)))
    bpy.context.view_layer.objects.active = ps_ob

    # slow motion x2: 2n - 1 frames; every second frame is an original frame, and the scene's range
    # follows by default (issue 16: it stayed at n, cutting the new frames off)
    assert (scene.frame_start, scene.frame_end) != (1, 2 * n - 1)
    assert run("pose_space_resample", mode="SPEED", speed=0.5) == {"FINISHED"}
    space = psd.load_space(ps_ob)
    np.testing.assert_array_equal(space.time.frames, np.arange(1, 2 * n))
    assert (scene.frame_start, scene.frame_end) == (1, 2 * n - 1)
    key = ps_ob.data.shape_keys
    assert all(len(fc.keyframe_points) == 2 * n - 1 for fc in fcurves_of(key))
    for i in (0, 4, n - 1):
        np.testing.assert_allclose(evaluated_coords(ps_ob, 1 + 2 * i), data[i], atol=2e-6 * diag)
    between = evaluated_coords(ps_ob, 4)  # time 2.5: between samples 1 and 2, near their mean
    assert np.abs(between - 0.5 * (data[1] + data[2])).max() < 0.25 * np.abs(data[2] - data[1]).max() + 1e-9

    # back to normal speed (x2): the original frames again
    assert run("pose_space_resample", mode="SPEED", speed=2.0) == {"FINISHED"}
    np.testing.assert_array_equal(psd.load_space(ps_ob).time.frames, np.arange(1, n + 1))
    assert (scene.frame_start, scene.frame_end) == (1, n)
    for i in (0, 6, n - 1):
        np.testing.assert_allclose(evaluated_coords(ps_ob, 1 + i), data[i], atol=2e-6 * diag)

    # frame-rate conversion 24 -> 48 fps: the same as slow motion x2 in frames
    assert run("pose_space_resample", mode="FRAME_RATE", fps_from=24.0, fps_to=48.0, bake=False) == {"FINISHED"}
    np.testing.assert_array_equal(psd.load_space(ps_ob).time.frames, np.arange(1, 2 * n))
    assert (scene.frame_start, scene.frame_end) == (1, n)  # nothing baked: the range is left alone
    assert run("pose_space_resample", mode="FRAME_RATE", fps_from=48.0, fps_to=24.0) == {"FINISHED"}

    # a range played at half speed: frames before it unchanged, the range twice as long, the rest shifted
    assert run("pose_space_resample", mode="RANGE", range_start=5.0, range_end=9.0, speed=0.5) == {"FINISHED"}
    frames = psd.load_space(ps_ob).time.frames
    assert frames.size == n + 4
    for f, sample in ((3, 2), (5, 4), (7, 5), (13, 8), (n + 4, n - 1)):
        np.testing.assert_allclose(evaluated_coords(ps_ob, f), data[sample], atol=2e-6 * diag)

    # a frame count over the whole sequence (ends kept)
    assert run("pose_space_resample", mode="FRAME_COUNT", frame_count=5) == {"FINISHED"}
    np.testing.assert_array_equal(psd.load_space(ps_ob).time.frames, np.arange(1, 6))
    np.testing.assert_allclose(evaluated_coords(ps_ob, 1), data[0], atol=2e-6 * diag)
    np.testing.assert_allclose(evaluated_coords(ps_ob, 5), data[-1], atol=2e-6 * diag)

    # pure helper: times for a frame-rate conversion
    core = importlib.import_module(f"{EXT}.anim_signals.posespace")
    new, taus = core.resample_times(psd.load_space(ps_ob).time, mode="FRAME_RATE", fps_from=30.0, fps_to=24.0)
    np.testing.assert_allclose(taus, 1.0 + np.arange(new.size) * 1.25)


def test_build_iterator_closed_midway_changes_nothing(scene, psd, tmp_path):
    """What Esc does in the modal build: the reading generator is closed; the frame is restored."""
    ob, _ = make_cached_cylinder(tmp_path, n=10)
    scene.frame_set(7)
    before = file_state()
    plan = psd.build_plan(ob, scene, exact=True)
    gen = psd.iter_build(plan)
    assert 0.0 < next(gen) < 0.8 and next(gen) < 0.8
    gen.close()
    assert scene.frame_current == 7
    assert_same_file(before, file_state())
    # INVOKE without a window runs synchronously (headless: Blender calls execute())
    assert bpy.ops.anim_signals.build_pose_space("INVOKE_DEFAULT", exact=True) == {"FINISHED"}
    assert psd.load_space(ob).l == 10


def test_registered_settings_and_tooltips(scene):
    settings = scene.anim_signals
    for group, names in ((settings.pose_space, ("source", "exact", "tolerance", "tolerance_rotation", "k", "l", "m")),
                         (settings.pose_space_resample, ("mode", "speed", "fps_from", "fps_to", "bake")),
                         (settings.pose_space_bake, ("set_scene_range",)),
                         (settings.last_pose_space, ("n", "k", "l", "m", "rms_error", "max_error", "baked_action"))):
        for name in names:
            assert group.bl_rna.properties[name].description, name
    for op in ("build_pose_space", "pose_space_resample", "pose_space_bake"):
        rna = getattr(bpy.ops.anim_signals, op).get_rna_type()
        assert rna.description
        for prop in rna.properties:
            if prop.identifier != "rna_type":
                assert prop.description, (op, prop.identifier)


# ----------------------------------------------------------------------------------------------
# The shared horse gallop (8,431 vertices): build, exact frames, and the per-drag update time
# ----------------------------------------------------------------------------------------------


def test_horse_gallop_build_bake_and_drag_latency(scene, psd):
    folder = shared_data("mesh", "horse_gallop")
    bpy.ops.wm.obj_import(filepath=str(folder / "horse_gallop_reference.obj"))
    horse = bpy.context.selected_objects[0]
    bpy.context.view_layer.objects.active = horse
    mod = horse.modifiers.new("Gallop", "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = str(folder / "horse_gallop.pc2")
    mod.frame_start = 0.0
    assert len(horse.data.vertices) == 8431
    plan = psd.build_plan(horse, scene)
    assert (plan.frames[0], plan.frames[-1]) == (0.0, 47.0)  # the cache's 48 samples
    # one stride (frames 0-23, the seed's n = 24), exact
    assert run("build_pose_space", range_mode="CUSTOM", frame_start=0, frame_end=23, exact=True) == {"FINISHED"}
    ps_ob = psd.space_object(horse)
    space = psd.load_space(ps_ob)
    assert (space.n, space.l, space.m, space.k) == (24, 24, 23, 26)
    assert run("pose_space_bake") == {"FINISHED"}
    src = np.array([evaluated_coords(horse, f) for f in (0, 7, 23)])
    out = np.array([evaluated_coords(ps_ob, f) for f in (0, 7, 23)])
    assert float(np.abs(out - src).max()) < 1e-5 * float(np.abs(src).max())

    # the per-drag update: g(p) and m shape-key values (Blender blends the vertices itself)
    ps_ob.data.shape_keys.animation_data.action = None
    rng = np.random.default_rng(0)
    lo, hi = space.positions.min(axis=0), space.positions.max(axis=0)
    points = lo + (hi - lo) * rng.random((200, 2))
    psd.apply_position(ps_ob, space, points[0])  # binding cached
    times = []
    for p in points:
        t0 = time.perf_counter()
        psd.apply_position(ps_ob, space, p)
        times.append(time.perf_counter() - t0)
    median_ms = 1000.0 * float(np.median(times))
    t0 = time.perf_counter()
    for p in points[:50]:
        psd.apply_position(ps_ob, space, p)
        bpy.context.evaluated_depsgraph_get()  # Blender re-blends 8,431 vertices from 23 keys
    with_eval_ms = 1000.0 * (time.perf_counter() - t0) / 50
    print(f"\nhorse apply_position: median {median_ms:.3f} ms, max {1000 * max(times):.3f} ms; "
          f"with depsgraph evaluation {with_eval_ms:.2f} ms")
    assert median_ms < 1.0
    # a tolerance build over the whole gallop, every second frame
    assert run("build_pose_space", frame_step=2) == {"FINISHED"}
    res = scene.anim_signals.last_pose_space
    assert res.n == 24 and res.m < 23 and res.rms_error <= res.tolerance + 1e-9


# ----------------------------------------------------------------------------------------------
# Bad input: a clear message, nothing changed
# ----------------------------------------------------------------------------------------------


def _refused(match: str, op: str = "build_pose_space", **kwargs) -> None:
    before = file_state()
    with pytest.raises(RuntimeError, match=match):
        run(op, **kwargs)
    assert_same_file(before, file_state())


def test_no_active_object(scene, psd):
    make_shape_key_cylinder()
    bpy.context.view_layer.objects.active = None
    _refused("No active object")
    _refused("No active object", "pose_space_bake")
    _refused("No active object", "pose_space_resample")
    with pytest.raises(psd.PoseSpaceInputError, match="No active object"):
        psd.build_plan(None)


def test_no_animation_or_no_pose_space(scene, psd):
    rest, faces = cylinder_rest()
    still = new_mesh_object("Still", rest, faces)
    _refused("no animation to build a pose space from")
    _refused("has no pose space", "pose_space_bake")
    _refused("has no pose space", "pose_space_resample")
    still.animation_data_create()
    still.keyframe_insert("location", frame=1)
    still.location.x = 1.0
    still.keyframe_insert("location", frame=10)
    _refused("object transforms are animated")
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    scene.collection.objects.link(cam)
    bpy.context.view_layer.objects.active = cam
    _refused("camera object")
    arm = bpy.data.objects.new("Bare", bpy.data.armatures.new("Bare"))
    scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    _refused("no animation data")
    bpy.context.view_layer.objects.active = still
    _refused("Shape Keys source needs|has no shape keys", source="SHAPE_KEYS")
    _refused("Action source needs an armature", source="ACTION")


def test_too_few_frames_and_bad_counts(scene, psd, tmp_path):
    make_cached_cylinder(tmp_path, n=10)
    _refused("Too few frames: 3", range_mode="CUSTOM", frame_start=2, frame_end=4)
    _refused("empty", range_mode="CUSTOM", frame_start=5, frame_end=2)
    _refused("Too few frames", frame_step=4)
    _refused(r"m \(shape components\) must be between 1 and n - 1 = 9", m=10)
    _refused(r"l \(RBF sites\)", l=2)
    _refused(r"k \(control points\)", k=20)
    ob, _ = make_shape_key_cylinder("Short", n=3)
    _refused("Too few frames")


def test_topology_change_names_the_frame(scene, psd):
    rest, faces = cylinder_rest()
    ob = new_mesh_object("Growing", rest, faces)
    build = ob.modifiers.new("Build", "BUILD")  # faces (and their vertices) appear over frames 1-10
    build.frame_start, build.frame_duration = 1.0, 10.0
    scene.frame_start, scene.frame_end = 1, 12
    _refused(r"topology changes over time: frame 2 has \d+ vertices, frame 1 has \d+")
    with pytest.raises(psd.PoseSpaceInputError, match="frame 2 has"):
        psd.build(ob, scene)
    assert scene.frame_current == 1


def test_static_sequence_zero_variance(scene, psd, tmp_path):
    rest, _ = cylinder_rest()
    make_cached_cylinder(tmp_path, "Frozen", n=8, frames=np.repeat(rest[None].astype(np.float32), 8, axis=0))
    _refused("Nothing moves.*static sequence, zero variance")
    ob, frames = make_shape_key_cylinder("Held", n=12)
    for fc in fcurves_of(ob.data.shape_keys):
        for kp in fc.keyframe_points:
            kp.co.y = 0.3
        fc.update()
    bpy.context.view_layer.objects.active = ob
    _refused("Nothing moves")
    ob2, _, _ = make_armature("Statue", n_frames=10)
    for fc in fcurves_of(ob2):
        for kp in fc.keyframe_points:
            kp.co.y = 0.1
        fc.update()
    _refused("same pose")


def test_damaged_pose_space(scene, psd, tmp_path):
    ob, _ = make_cached_cylinder(tmp_path, n=8)
    ps_ob, _, _ = psd.build(ob, exact=True)
    ps_ob.shape_key_remove(ps_ob.data.shape_keys.key_blocks["PoseSpace.03"])
    bpy.context.view_layer.objects.active = ps_ob
    _refused("lost the shape keys of its pose space", "pose_space_bake")
    _refused("lost the shape keys", "pose_space_resample")
    with pytest.raises(psd.PoseSpaceDataError, match="PoseSpace.03"):
        psd.load_space(ps_ob, use_cache=False)


def test_contradicting_pins(scene, psd, tmp_path):
    ob, _ = make_cached_cylinder(tmp_path, n=10)
    before = file_state()
    with pytest.raises(psd.PoseSpaceInputError, match="pinned to the same point"):
        psd.build(ob, exact=True, pins={0: (0.0, 0.0), 5: (0.0, 0.0)})
    with pytest.raises(psd.PoseSpaceInputError, match="outside"):
        psd.build(ob, exact=True, pins={12: (0.0, 0.0)})
    assert_same_file(before, file_state())


def test_linked_data_is_read_only(scene, psd, tmp_path):
    # an armature linked from a library cannot hold the pose space
    ob, _, _ = make_armature("LinkedRig", n_frames=12)
    linked_copy(ob, tmp_path, scene)
    _refused("linked from library")
    # a pose-space object linked from a library cannot be baked or resampled
    cyl, _ = make_cached_cylinder(tmp_path, n=8)
    ps_ob, _, _ = psd.build(cyl, exact=True)
    linked_copy(ps_ob, tmp_path, scene)
    _refused("linked from library", "pose_space_bake")
    _refused("linked from library", "pose_space_resample", speed=0.5)


def test_build_modal_steps_to_the_end_and_escape_changes_nothing(scene, psd, tmp_path):
    ob, _ = make_cached_cylinder(tmp_path, n=10)
    bpy.context.view_layer.objects.active = ob
    scene.frame_set(5)
    before = file_state()
    build_op = bpy.types.ANIM_SIGNALS_OT_build_pose_space
    op = StepwiseDriver(build_op, bpy.context, exact=True)
    assert op.modal(bpy.context, event("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(bpy.context, event("ESC", "PRESS")) == {"CANCELLED"}
    assert op._timer is None and op._gen is None and scene.frame_current == 5
    assert any("cancelled" in msg for _, msg in op.reports)
    assert_same_file(before, file_state())
    op = StepwiseDriver(build_op, bpy.context, exact=True)
    assert op.run_to_end(bpy.context, limit=1000) == {"FINISHED"}, op.reports
    assert psd.load_space(ob).l == 10
