"""Reading a rig over time without evaluating the rest of the user's scene
(``operators/blender_data/frames.py``, ``evaluation_scene``): the joints read are the ones the user's
scene gives (an independent frame-by-frame oracle), the user's scene never changes frame (its
``frame_change_post`` handler is the witness), and rigs whose drivers read the scene stay in it."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from _bl_helpers import ext_module, keyed, linked_copy, make_armature, motion, run_fit, world_heads


@pytest.fixture()
def frame_changes():
    """The names of the scenes whose frame changed, in order, while the test runs."""
    seen: list[str] = []

    def record(scene, *_args):
        seen.append(scene.name)

    bpy.app.handlers.frame_change_post.append(record)
    try:
        yield seen
    finally:
        bpy.app.handlers.frame_change_post.remove(record)


def _skinned_mesh(rig):
    """A sphere deformed by ``rig`` (bone envelopes): what makes a frame change of the scene costly."""
    mesh = bpy.data.meshes.new("Body")
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 48), np.linspace(0.1, np.pi - 0.1, 24))
    points = np.column_stack([np.cos(u).ravel() * np.sin(v).ravel(), np.sin(u).ravel() * np.sin(v).ravel(),
                              2.0 * np.cos(v).ravel() + 2.0])
    rows, cols = u.shape
    quads = [(r * cols + c, r * cols + c + 1, (r + 1) * cols + c + 1, (r + 1) * cols + c)
             for r in range(rows - 1) for c in range(cols - 1)]
    mesh.from_pydata(points.tolist(), [], quads)
    body = bpy.data.objects.new("Body", mesh)
    bpy.context.scene.collection.objects.link(body)
    body.parent = rig
    modifier = body.modifiers.new("Armature", "ARMATURE")
    modifier.object = rig
    modifier.use_vertex_groups, modifier.use_bone_envelopes = False, True
    return body


def _heads(ob, frames):
    return ext_module("operators.blender_data.armatures").bone_heads_world(bpy.context.scene, ob, frames)


def test_joints_are_the_scenes_and_the_scene_keeps_its_frame(scene, frame_changes):
    ob, frames, _ = make_armature("Walker", n_frames=40)
    _skinned_mesh(ob)
    scene = bpy.context.scene
    scene.frame_set(7)
    scenes = set(bpy.data.scenes)
    want = world_heads(ob, frames[::3])
    scene.frame_set(7)
    frame_changes.clear()
    got = _heads(ob, frames[::3])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert scene.name not in frame_changes, "the user's scene was evaluated at other frames"
    assert frame_changes, "no scene changed frame: the joints were not read over time"
    assert set(bpy.data.scenes) == scenes and scene.frame_current == 7
    assert np.ptp(got[:, 0], axis=0).max() > 0.1  # the rig moves: equal joints mean something


def test_parents_and_constraint_targets_animated_outside_come_along(scene, frame_changes):
    ob, frames, _ = make_armature("Carried", n_frames=30)
    rng = np.random.default_rng(9)
    carrier = bpy.data.objects.new("Carrier", None)
    target = bpy.data.objects.new("Target", None)
    for empty in (carrier, target):
        bpy.context.scene.collection.objects.link(empty)
        keyed(empty, "location", frames, 2.0 * motion(frames, rng, 1.0, 3), id_data=empty)
    ob.parent = carrier
    follow = ob.pose.bones["B2"].constraints.new("COPY_LOCATION")
    follow.target = target
    want = world_heads(ob, frames[::4])
    frame_changes.clear()
    got = _heads(ob, frames[::4])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert bpy.context.scene.name not in frame_changes


def _scene_frame_driver(owner, path, scene, index=None):
    """A driver on ``owner.path`` (``[index]``) that sums the scene's frame (a variable reading the scene)."""
    driver = (owner.driver_add(path) if index is None else owner.driver_add(path, index)).driver
    driver.type = "SUM"
    var = driver.variables.new()
    var.type = "SINGLE_PROP"
    var.targets[0].id_type = "SCENE"
    var.targets[0].id = scene
    var.targets[0].data_path = "frame_current"
    return driver


def test_a_rig_whose_driver_reads_the_scene_is_read_in_the_scene(scene, frame_changes):
    ob, frames, _ = make_armature("Driven", n_frames=30)
    scene = bpy.context.scene
    _scene_frame_driver(ob.pose.bones["B3"], "location", scene, 0)
    want = world_heads(ob, frames[::5])
    frame_changes.clear()
    got = _heads(ob, frames[::5])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert scene.name in frame_changes
    # (the driven bone follows the scene's frame, read elsewhere it would stand still)
    driven_x = []
    for f in (1, 26):
        scene.frame_set(f)
        driven_x.append(ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).pose.bones["B3"].location[0])
    assert driven_x == pytest.approx([1.0, 26.0])


def test_a_linked_rig_is_read_as_the_scene_gives_it(scene, frame_changes, tmp_path):
    """Library data (read-only) can still be linked into the evaluation scene, or is read in the scene."""
    ob, frames, _ = make_armature("Library", n_frames=20)
    linked = linked_copy(ob, tmp_path, scene)
    assert linked.library is not None
    scenes = set(bpy.data.scenes)
    want = world_heads(linked, frames[::4])
    frame_changes.clear()
    got = _heads(linked, frames[::4])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert scene.name not in frame_changes  # (read in an evaluation scene)
    assert set(bpy.data.scenes) == scenes and linked.users_scene[0] == scene and len(linked.users_scene) == 1


def test_the_evaluation_scene_goes_when_the_work_fails(scene):
    ob, _, _ = make_armature("Failing", n_frames=10)
    frames_module = ext_module("operators.blender_data.frames")
    scenes = set(bpy.data.scenes)
    with pytest.raises(ZeroDivisionError):
        with frames_module.evaluation_scene(bpy.context.scene, [ob]) as where:
            assert where != bpy.context.scene and ob.name in where.objects
            _ = 1 / 0
    assert set(bpy.data.scenes) == scenes


@pytest.mark.parametrize("space", ["PER_CURVE", "JOINTS"])
def test_a_fit_beside_a_skinned_mesh_leaves_the_users_scene_at_its_frame(scene, frame_changes, space):
    ob, _, _ = make_armature("Actor", n_frames=60)
    body = _skinned_mesh(ob)
    bpy.context.view_layer.objects.active = ob
    scenes = set(bpy.data.scenes)
    frame_changes.clear()
    extra = {"error_space": "JOINTS", "max_joint_error": 1.0} if space == "JOINTS" else {"error_space": space}
    assert run_fit(channels="ALL", mode="FEWEST", max_error_rotation=0.5, max_error_location=0.01, **extra) == {"FINISHED"}
    assert bpy.context.scene.name not in frame_changes
    assert set(bpy.data.scenes) == scenes
    assert body.name in bpy.context.scene.objects and len(ob.users_scene) == 1


def test_escape_during_the_joints_check_leaves_no_evaluation_scene(scene, frame_changes):
    """The modal Joints fit holds its evaluation scene across timer steps; Esc there removes it."""
    from _bl_helpers import StepwiseDriver, assert_same_state, event, snapshot_all

    ob, _, _ = make_armature("Escaped", n_frames=120)
    before = snapshot_all()
    scenes = {s.name for s in bpy.data.scenes}
    op = StepwiseDriver(bpy.types.ANIM_SIGNALS_OT_fit_latent_spline, bpy.context, mode="FEWEST",
                        error_space="JOINTS", max_joint_error=1.0, keep_original=False)
    for _ in range(10_000):
        assert op.modal(bpy.context, event("TIMER")) == {"RUNNING_MODAL"}
        if {s.name for s in bpy.data.scenes} != scenes:  # inside a check that reads the rig over time
            break
    else:
        pytest.fail("the fit never opened an evaluation scene")
    assert op.modal(bpy.context, event("ESC", "PRESS")) == {"CANCELLED"}
    assert {s.name for s in bpy.data.scenes} == scenes
    assert [o.name for o in bpy.data.objects] == [ob.name]  # (the check's armature copy went too)
    assert_same_state(before, snapshot_all())
    assert scene.name not in frame_changes


def _mesh_rows_in_the_scene(ob, frames):
    """The evaluated vertex positions frame by frame, read in the user's scene (test oracle)."""
    scene, rows = bpy.context.scene, []
    for f in frames:
        scene.frame_set(int(f))
        me = ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
        co = np.empty(3 * len(me.vertices), dtype=np.float32)
        me.vertices.foreach_get("co", co)
        rows.append(co.astype(np.float64))
    return np.array(rows)


def _mesh_rows_as_the_scene_gives_them(scene, body, frames, frame_changes):
    """``mesh_sequence_rows`` of ``body``, checked against the oracle; ``frame_changes`` then holds the
    scenes whose frame the read changed."""
    want = _mesh_rows_in_the_scene(body, frames)
    scene.frame_set(1)
    frame_changes.clear()
    got = np.array(list(ext_module("operators.blender_data.meshes").mesh_sequence_rows(scene, body, frames)))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-5)
    return got


def test_a_mesh_deformed_by_a_rig_is_read_without_the_rest_of_the_scene(scene, frame_changes):
    rig, frames, _ = make_armature("Puppeteer", n_frames=30)
    body = _skinned_mesh(rig)
    _skinned_mesh(rig).name = "Bystander"  # the rest of the scene, not read
    got = _mesh_rows_as_the_scene_gives_them(scene, body, frames[::5], frame_changes)
    assert scene.name not in frame_changes and frame_changes
    assert np.ptp(got, axis=0).max() > 0.1  # the body moves with the rig


def test_a_simulated_mesh_is_read_in_the_scene(scene, frame_changes):
    rig, frames, _ = make_armature("Dresser", n_frames=12)
    cloth = _skinned_mesh(rig)
    cloth.modifiers.new("Cloth", "CLOTH")
    meshes = ext_module("operators.blender_data.meshes")
    frame_changes.clear()
    rows = list(meshes.mesh_sequence_rows(scene, cloth, frames[:4]))
    assert len(rows) == 4
    assert frame_changes.count(scene.name) >= 4  # the simulation advanced in the user's scene


def test_drivers_that_may_read_the_scene_keep_the_evaluation_there(scene):
    frames_module = ext_module("operators.blender_data.frames")
    rig, _, _ = make_armature("Scripted", n_frames=10)
    driver = rig.pose.bones["B1"].driver_add("location", 0).driver
    driver.type = "SCRIPTED"
    driver.expression = "frame % 7"  # the modulo is not a simple expression: Python evaluates it
    assert not driver.is_simple_expression
    face = _skinned_mesh(make_armature("Plain", n_frames=10)[0])
    face.shape_key_add(name="Basis")
    _scene_frame_driver(face.shape_key_add(name="Smile"), "value", scene)
    for ob in (rig, face):
        with frames_module.evaluation_scene(scene, [ob]) as where:
            assert where == scene, ob.name


def test_a_body_whose_rig_reads_the_scene_is_read_in_the_scene(scene, frame_changes):
    """The rig comes along with the body: its driver of the scene's frame counts too."""
    rig, frames, _ = make_armature("Clocked", n_frames=20)
    _scene_frame_driver(rig.pose.bones["B3"], "location", scene, 0)
    body = _skinned_mesh(rig)
    _mesh_rows_as_the_scene_gives_them(scene, body, frames[::6], frame_changes)
    assert scene.name in frame_changes


def test_simplify_caps_subdivision_in_both_scenes(scene, frame_changes):
    """The evaluation scene takes the scene's Simplify settings: the same vertex count and positions."""
    rig, frames, _ = make_armature("Simple", n_frames=20)
    body = _skinned_mesh(rig)
    body.modifiers.new("Subdivision", "SUBSURF").levels = 2
    scene.render.use_simplify, scene.render.simplify_subdivision = True, 0
    try:
        got = _mesh_rows_as_the_scene_gives_them(scene, body, frames[::6], frame_changes)
        assert got.shape == (len(frames[::6]), 3 * len(body.data.vertices))  # (Simplify: no subdivision)
        assert scene.name not in frame_changes
    finally:
        scene.render.use_simplify = False


def test_a_rig_disabled_in_viewports_is_read_in_the_scene(scene, frame_changes):
    """A rig the scene evaluates only for the mesh it deforms: an evaluation scene would not evaluate it."""
    rig, frames, _ = make_armature("Hidden", n_frames=20)
    _skinned_mesh(rig)
    rig.hide_viewport = True
    want = world_heads(rig, frames[::5])
    frame_changes.clear()
    got = _heads(rig, frames[::5])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.ptp(got[:, 0], axis=0).max() > 0.1  # (it moves: a constant pose would fail)


def test_closing_a_mesh_read_part_way_removes_the_evaluation_scene(scene):
    rig, frames, _ = make_armature("Interrupted", n_frames=20)
    body = _skinned_mesh(rig)
    scenes = set(bpy.data.scenes)
    rows = ext_module("operators.blender_data.meshes").mesh_sequence_rows(scene, body, frames)
    next(rows)
    assert set(bpy.data.scenes) != scenes  # (inside the read: the evaluation scene exists)
    rows.close()
    assert set(bpy.data.scenes) == scenes and scene.frame_current == 1


def test_shape_keys_driven_by_a_rig_are_read_without_the_rest_of_the_scene(scene, frame_changes):
    rig, frames, _ = make_armature("Jaw", n_frames=24)
    face = _skinned_mesh(rig)
    _skinned_mesh(rig).name = "Bystander"
    face.shape_key_add(name="Basis")
    smile = face.shape_key_add(name="Smile")
    driver = smile.driver_add("value").driver
    driver.type = "SUM"
    var = driver.variables.new()
    var.type = "TRANSFORMS"
    var.targets[0].id = rig
    var.targets[0].bone_target = "B2"
    var.targets[0].transform_type = "ROT_X"
    var.targets[0].transform_space = "LOCAL_SPACE"
    key = face.data.shape_keys
    want = []
    for f in frames[::4]:
        scene.frame_set(int(f))
        want.append([kb.value for kb in key.evaluated_get(bpy.context.evaluated_depsgraph_get()).key_blocks])
    scene.frame_set(1)
    frame_changes.clear()
    got = ext_module("operators.blender_data.shape_keys")._key_values(scene, face, key, frames[::4])
    np.testing.assert_allclose(got, np.array(want), atol=1e-6)
    assert np.ptp(got[:, 1]) > 0.05  # the driven value moves with the bone
    assert scene.name not in frame_changes
