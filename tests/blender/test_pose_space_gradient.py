"""Pose space in the deformation-gradient shape space (Cashman & Hormann §5): ``build_pose_space``
with ``shape_space="GRADIENT"``, posing by decoded vertex positions and baking to a PC2 point cache.

Generated data only: an open cylinder bending up to 150 degrees, played by a Mesh Cache (PC2 written
here). Expectations come from the bend formula and from Blender's own evaluation of the source and
of the pose-space object (depsgraph vertex positions, the PC2 file's bytes).
"""

from __future__ import annotations

import math
import os
import struct

import bpy
import numpy as np
import pytest
from _bl_helpers import assert_same_state, ext_module, make_armature, snapshot_all
from test_pose_space import run, write_pc2

PROP = "anim_signals_pose_space"
AROUND, ALONG, LENGTH = 12, 10, 2.0


@pytest.fixture
def psd(extension):
    return ext_module("operators.pose_space")


def cylinder() -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """An open quad cylinder along z (120 vertices), radius 0.3, length 2."""
    phi = 2.0 * np.pi * np.arange(AROUND) / AROUND
    z = np.repeat(np.linspace(0.0, LENGTH, ALONG), AROUND)
    verts = np.column_stack([0.3 * np.cos(np.tile(phi, ALONG)), 0.3 * np.sin(np.tile(phi, ALONG)), z])
    faces = [(r * AROUND + s, r * AROUND + (s + 1) % AROUND, (r + 1) * AROUND + (s + 1) % AROUND, (r + 1) * AROUND + s)
             for r in range(ALONG - 1) for s in range(AROUND)]
    return verts, faces


def bent(rest: np.ndarray, angle: float, direction: float = 0.0) -> np.ndarray:
    """The cylinder bent by ``angle`` radians end to end, as an inextensible arc, in the vertical
    plane at ``direction`` radians about z: every cross-section keeps its shape."""
    c, s = math.cos(direction), math.sin(direction)
    x = c * rest[:, 0] + s * rest[:, 1]
    y = -s * rest[:, 0] + c * rest[:, 1]
    h = rest[:, 2]
    if abs(angle) < 1e-12:
        bx, bz = x, h
    else:
        radius = LENGTH / angle
        a = angle * h / LENGTH
        bx = radius * (1.0 - np.cos(a)) + x * np.cos(a)
        bz = radius * np.sin(a) - x * np.sin(a)
    return np.column_stack([c * bx - s * y, s * bx + c * y, bz])


def read_pc2(path) -> tuple[float, np.ndarray]:
    with open(path, "rb") as fh:
        head = fh.read(32)
        _, v, start, _, n = struct.unpack("<iiffi", head[12:32])
        data = np.frombuffer(fh.read(), dtype="<f4")
    return start, data.reshape(n, v, 3).astype(np.float64)


def cached_cylinder(tmp_path, frames: np.ndarray, name: str = "Bender"):
    rest, faces = cylinder()
    path = tmp_path / f"{name}.pc2"
    write_pc2(path, frames)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(map(float, v)) for v in rest], [], faces)
    ob = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    ob.select_set(True)
    mod = ob.modifiers.new("Cache", "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = str(path)
    mod.frame_start = 1.0
    return ob


def bending_frames(n: int) -> np.ndarray:
    """(n, V, 3): bending up to 150 degrees while the bend's plane turns."""
    rest, _ = cylinder()
    w = 2.0 * np.pi * (np.arange(n) + 0.25) / n  # no two frames alike (a zero bend in any plane is the rest)
    return np.stack([bent(rest, math.radians(150.0) * math.sin(wi), 0.6 * math.cos(0.7 * wi)) for wi in w])


def evaluated_coords(ob, frame=None) -> np.ndarray:
    if frame is not None:
        bpy.context.scene.frame_set(int(frame))
    me = ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    buf = np.empty(3 * len(me.vertices), dtype=np.float32)
    me.vertices.foreach_get("co", buf)
    return buf.reshape(-1, 3).astype(np.float64)


def edge_strain(ob, coords: np.ndarray) -> float:
    """Mean |length / rest length - 1| over the mesh's edges (rest: the cylinder). Zero for the
    rest and for rigid motions; a bend itself stretches the outside and compresses the inside."""
    rest, _ = cylinder()
    e = np.empty(2 * len(ob.data.edges), dtype=np.int32)
    ob.data.edges.foreach_get("vertices", e)
    e = e.reshape(-1, 2)
    rest_len = np.linalg.norm(rest[e[:, 0]] - rest[e[:, 1]], axis=1)
    return float(np.mean(np.abs(np.linalg.norm(coords[e[:, 0]] - coords[e[:, 1]], axis=1) / rest_len - 1.0)))


def test_gradient_build_reproduces_poses_and_bakes_a_point_cache(scene, psd, tmp_path):
    n = 12
    data = bending_frames(n)
    ob = cached_cylinder(tmp_path, data.astype(np.float32))
    diag = float(np.linalg.norm(np.ptp(data.reshape(-1, 3), axis=0)))
    assert run("build_pose_space", exact=True, shape_space="GRADIENT") == {"FINISHED"}
    ps_ob = bpy.data.objects[ob.name + ".posespace"]
    assert ps_ob.data.shape_keys is None and len(ps_ob.modifiers) == 0
    assert ps_ob[PROP]["shape_space"] == "GRADIENT"
    space = psd.load_space(ps_ob)
    faces = len(ps_ob[PROP]["gradient_faces"]) // 3
    assert faces == 2 * AROUND * (ALONG - 1) and space.shape.h0.size == 9 * faces + 3
    assert (space.n, space.m) == (n, n - 1)
    res = scene.anim_signals.last_pose_space
    assert res.valid and res.max_error < 1e-4 * diag, res.max_error  # decoded vertices, scene units

    # posing at each frame's position gives that frame (vertices written to the mesh, no keys)
    for i in (0, 3, 7, 11):
        psd.apply_position(ps_ob, space, space.positions[i])
        np.testing.assert_allclose(evaluated_coords(ps_ob), data[i], atol=2e-4 * diag)

    # bake: a PC2 of every frame, played by a Mesh Cache modifier; it matches the source frame by frame
    assert run("pose_space_bake") == {"FINISHED"}
    mods = [m for m in ps_ob.modifiers if m.type == "MESH_CACHE"]
    assert len(mods) == 1 and mods[0].name == "Pose Space Bake"
    start, samples = read_pc2(bpy.path.abspath(mods[0].filepath))
    assert start == 1.0 and samples.shape == data.shape
    np.testing.assert_allclose(samples, data, atol=2e-4 * diag)
    worst = max(float(np.abs(evaluated_coords(ps_ob, f) - evaluated_coords(ob, f)).max()) for f in range(1, n + 1))
    assert worst < 2e-4 * diag, worst
    # baking again rewrites the same file and keeps one modifier
    assert run("pose_space_bake") == {"FINISHED"}
    assert [m.name for m in ps_ob.modifiers] == ["Pose Space Bake"]
    os.remove(bpy.path.abspath(mods[0].filepath))


def test_gradient_tolerance_build_reports_decoded_error(scene, psd, tmp_path):
    n = 24
    data = bending_frames(n)
    ob = cached_cylinder(tmp_path, data.astype(np.float32))
    assert run("build_pose_space", shape_space="GRADIENT", tolerance=0.01) == {"FINISHED"}
    ps_ob = bpy.data.objects[ob.name + ".posespace"]
    space = psd.load_space(ps_ob)
    res = scene.anim_signals.last_pose_space
    # the tolerance is on the decoded vertices (scene units), met with fewer components than frames
    assert space.m < n - 1 and res.tolerance == pytest.approx(0.01) and res.rms_error <= 0.01
    assert 0.0 < ps_ob[PROP]["source"]["gradient_tolerance"] < 0.01
    errors = []
    for i in range(n):
        psd.apply_time(ps_ob, space, float(i + 1))
        errors.append(np.linalg.norm(evaluated_coords(ps_ob) - data[i], axis=1))
    measured = np.array(errors)
    # the summary's numbers are the decoded vertices' errors against the frames read
    assert measured.max() == pytest.approx(res.max_error, rel=1e-2, abs=1e-5)
    assert math.sqrt(np.mean(measured**2)) == pytest.approx(res.rms_error, rel=1e-2, abs=1e-5)
    # automatic tolerance: 0.2 % of the mean frame's bounding-box diagonal, on the vertices too
    bpy.context.view_layer.objects.active = ob
    assert run("build_pose_space", shape_space="GRADIENT", tolerance=0.0) == {"FINISHED"}
    diag = float(np.linalg.norm(np.ptp(data.mean(axis=0), axis=0)))
    assert res.tolerance == pytest.approx(0.002 * diag, rel=0.05) and res.rms_error <= res.tolerance


def test_midpoint_keeps_edge_lengths_through_a_150_degree_bend(scene, psd, tmp_path):
    """The seed's Figure 7: blending two strongly rotated poses. Halfway between a +150 and a -150
    degree bend (mirror images) the symmetric answer is the straight tube. Blended rotations give
    it; blended positions squash the tube (its rings shrink by cos of the local bend angle and its
    length folds), distorting the edges more than either bent frame does."""
    rest, _ = cylinder()
    angles = [0.0, 150.0, -150.0, 75.0, -75.0]
    data = np.stack([bent(rest, math.radians(a)) for a in angles])
    ob = cached_cylinder(tmp_path, data.astype(np.float32))
    strain, height = {}, {}
    for shape_space in ("VERTEX", "GRADIENT"):
        bpy.context.view_layer.objects.active = ob
        assert run("build_pose_space", exact=True, shape_space=shape_space) == {"FINISHED"}
        ps_ob = bpy.data.objects[ob.name + ".posespace"]
        space = psd.load_space(ps_ob)
        psd.apply_position(ps_ob, space, 0.5 * (space.positions[1] + space.positions[2]))
        coords = evaluated_coords(ps_ob)
        strain[shape_space] = edge_strain(ps_ob, coords)
        height[shape_space] = float(np.ptp(coords[:, 2]))
        # a rebuild in the other space replaces the keys by the stored rows and back
        assert (ps_ob.data.shape_keys is None) == (shape_space == "GRADIENT")
    frame_strain = edge_strain(ob, data[1])  # a bend stretches the outside, compresses the inside
    assert strain["VERTEX"] > 2.0 * frame_strain > 0.1, (strain, frame_strain)
    assert strain["GRADIENT"] < 0.1 * frame_strain, (strain, frame_strain)
    assert height["GRADIENT"] == pytest.approx(LENGTH, rel=0.02) and height["VERTEX"] < 0.5 * LENGTH, height


def test_gradient_space_refused_for_armatures_and_bad_meshes(scene, psd, tmp_path):
    make_armature()
    before = snapshot_all()
    with pytest.raises(RuntimeError, match="Deformation Gradients shape space needs a mesh"):
        run("build_pose_space", shape_space="GRADIENT")
    assert_same_state(before, snapshot_all())
    with pytest.raises(psd.PoseSpaceInputError, match="Unknown shape space 'SPLINE'"):
        psd.build_plan(bpy.context.active_object, shape_space="SPLINE")
    # the gradient rows (9F + 3 per frame, six times the vertex values) are bounded before anything is read
    data = bending_frames(6)
    big = cached_cylinder(tmp_path, data.astype(np.float32), name="Big")
    sources = ext_module("operators.pose_space.sources")
    limit = 6 * 3 * len(data[0]) + 1  # six frames of vertices fit, their gradient rows do not
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sources, "MAX_VALUES", limit)
        sources.build_plan(big, shape_space="VERTEX")
        with pytest.raises(psd.PoseSpaceInputError, match="deformation-gradient values; a pose space holds at most"):
            sources.build_plan(big, shape_space="GRADIENT")
    # two separate tubes: the Poisson solve has one anchor, so the mesh is refused by name
    data = bending_frames(6)
    ob = cached_cylinder(tmp_path, data.astype(np.float32), name="Twins")
    rest, faces = cylinder()
    shifted = [tuple(i + len(rest) for i in f) for f in faces]
    mesh = bpy.data.meshes.new("Twins2")
    mesh.from_pydata([tuple(map(float, v)) for v in np.vstack([rest, rest + [1.0, 0.0, 0.0]])], [], faces + shifted)
    ob.data = mesh
    write_pc2(tmp_path / "Twins.pc2", np.concatenate([data, data + [1.0, 0.0, 0.0]], axis=1).astype(np.float32))
    before = snapshot_all()
    names = sorted(o.name for o in bpy.data.objects)
    with pytest.raises(RuntimeError, match=r'Deformation Gradients shape space: the mesh "Twins" has .*part'):
        run("build_pose_space", shape_space="GRADIENT")
    assert_same_state(before, snapshot_all())
    assert sorted(o.name for o in bpy.data.objects) == names


def test_canvas_drag_poses_vertices_and_escape_puts_them_back(scene, psd, tmp_path):
    from test_pose_space_canvas import _free_xy, _view, ev, fake_op

    pc = ext_module("operators.pose_space.canvas_state")
    data = bending_frames(8)
    ob = cached_cylinder(tmp_path, data.astype(np.float32))
    assert run("build_pose_space", exact=True, shape_space="GRADIENT") == {"FINISHED"}
    ps_ob = bpy.data.objects[ob.name + ".posespace"]
    space = psd.load_space(ps_ob)
    before = evaluated_coords(ps_ob)
    op = fake_op("pose_space_navigate", ps_ob, space)
    view = _view(pc, ps_ob, space)
    xy0 = _free_xy(pc, ps_ob, space, view)
    xy1 = (xy0[0] + 25.0, xy0[1] - 15.0)
    ctx = bpy.context
    assert op.modal(ctx, ev("LEFTMOUSE", "PRESS", xy0)) == {"RUNNING_MODAL"}
    assert op.modal(ctx, ev("MOUSEMOVE", xy=xy1)) == {"RUNNING_MODAL"}
    dragged = evaluated_coords(ps_ob)
    assert np.abs(dragged - before).max() > 1e-3  # the drag wrote decoded vertices
    # the same point posed directly gives the same vertices (navigation holds it near the frames)
    p1, _ = pc.cv.near_the_frames(space.positions, view.to_pose(np.array(xy1)))
    psd.apply_position(ps_ob, space, p1)
    np.testing.assert_allclose(evaluated_coords(ps_ob), dragged, atol=1e-6)
    assert op.modal(ctx, ev("ESC", "PRESS")) == {"CANCELLED"}
    np.testing.assert_array_equal(evaluated_coords(ps_ob), before)


def test_gradient_build_from_shape_key_animation(scene, psd):
    from test_pose_space import make_shape_key_cylinder

    ob, frames = make_shape_key_cylinder(n=12)
    expected = [evaluated_coords(ob, f) for f in frames]
    bpy.context.view_layer.objects.active = ob
    assert run("build_pose_space", exact=True, shape_space="GRADIENT", source="SHAPE_KEYS") == {"FINISHED"}
    ps_ob = bpy.data.objects[ob.name + ".posespace"]
    assert ps_ob.data.shape_keys is None and ob.data.shape_keys is not None  # the source keeps its keys
    space = psd.load_space(ps_ob)
    for i in (0, 5, 11):
        psd.apply_position(ps_ob, space, space.positions[i])
        np.testing.assert_allclose(evaluated_coords(ps_ob), expected[i], atol=1e-5)


def test_gradient_resample_bakes_the_new_frames_to_the_cache(scene, psd, tmp_path):
    n = 10
    data = bending_frames(n)
    ob = cached_cylinder(tmp_path, data.astype(np.float32))
    ps_ob, _, summary = psd.build(ob, exact=True, shape_space="GRADIENT")
    assert summary.shape_space == "GRADIENT"
    # the build's factorisation is kept for posing: no second factorisation on the first drag
    assert psd.storage.cached(ps_ob)[1]._gradient is not None
    bpy.context.view_layer.objects.active = ps_ob
    diag = float(np.linalg.norm(np.ptp(data.reshape(-1, 3), axis=0)))
    # slow motion x2: 2n - 1 samples in the cache; every second one is an original frame
    assert run("pose_space_resample", mode="SPEED", speed=0.5, set_scene_range=True) == {"FINISHED"}
    assert (scene.frame_start, scene.frame_end) == (1, 2 * n - 1)
    mod = ps_ob.modifiers["Pose Space Bake"]
    start, samples = read_pc2(bpy.path.abspath(mod.filepath))
    assert start == 1.0 and samples.shape == (2 * n - 1, *data.shape[1:])
    np.testing.assert_allclose(samples[::2], data, atol=2e-4 * diag)
    for i in (0, 3, n - 1):
        np.testing.assert_allclose(evaluated_coords(ps_ob, 1 + 2 * i), data[i], atol=2e-4 * diag)
    # a sample between two frames lies between them (closer to their mean than they are to each other)
    gap = np.abs(data[4] - data[3]).max()
    assert np.abs(samples[7] - 0.5 * (data[3] + data[4])).max() < 0.5 * gap
    os.remove(bpy.path.abspath(mod.filepath))
