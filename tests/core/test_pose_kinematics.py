"""The pose model of the "Joints" error space (anim_signals.splines.pose_kinematics).

Against independent expectations: scipy's rotations for every mode, a planar arm in closed form,
and the same rig with its bones listed in another order. (Blender's depsgraph is the reference in
tests/blender/test_fit_spline_object_space.py.)
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from anim_signals.splines.pose_kinematics import (
    largest_distances,
    matrix_vertex_rows,
    pose_matrices,
    pose_vertices,
    rest_relative,
    rotation_matrices,
    shell_points,
)

EULER = ["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"]


@pytest.mark.parametrize("mode", EULER)
def test_euler_modes_are_blenders_order_of_application(mode):
    # Blender's "XYZ" applies X first: R = Rz Ry Rx, scipy's extrinsic "xyz" with the angles in
    # the mode's order
    angles = np.random.default_rng(1).uniform(-3, 3, (20, 3))
    ordered = angles[:, ["XYZ".index(a) for a in mode]]
    reference = Rotation.from_euler(mode.lower(), ordered).as_matrix()
    np.testing.assert_allclose(rotation_matrices(angles, mode), reference, atol=1e-12)


def test_quaternions_of_any_norm_and_axis_angle():
    rng = np.random.default_rng(2)
    q = rng.normal(size=(30, 4)) * rng.uniform(0.1, 5, (30, 1))
    reference = Rotation.from_quat(q[:, [1, 2, 3, 0]]).as_matrix()  # scipy normalises too
    np.testing.assert_allclose(rotation_matrices(q, "QUATERNION"), reference, atol=1e-12)
    axis_angle = np.column_stack([rng.uniform(-3, 3, 30), rng.normal(size=(30, 3))])
    unit = axis_angle[:, 1:] / np.linalg.norm(axis_angle[:, 1:], axis=1, keepdims=True)
    np.testing.assert_allclose(rotation_matrices(axis_angle, "AXIS_ANGLE"),
                               Rotation.from_rotvec(unit * axis_angle[:, :1]).as_matrix(), atol=1e-12)
    # Blender reads a zero axis as no rotation
    np.testing.assert_allclose(rotation_matrices([1.0, 0, 0, 0], "AXIS_ANGLE"), np.eye(3), atol=1e-15)
    with pytest.raises(ValueError, match="unknown rotation mode"):
        rotation_matrices([0.0, 0, 0], "XXY")


def planar_arm(theta, phi, stretch=1.0):
    """Two bones of length 1 up +Y, the second at the first's tail, rotated about Z by theta and
    phi; the first scaled by ``stretch`` along its Y."""
    rest = np.stack([np.eye(4), np.eye(4)])
    rest[1, 1, 3] = 1.0
    n = theta.size
    rotations = np.zeros((n, 2, 4))
    rotations[:, 0] = np.column_stack([np.cos(theta / 2), 0 * theta, 0 * theta, np.sin(theta / 2)])
    rotations[:, 1] = np.column_stack([np.cos(phi / 2), 0 * phi, 0 * phi, np.sin(phi / 2)])
    scales = np.ones((n, 2, 3))
    scales[:, 0, 1] = stretch
    return rest, rotations, scales


def test_a_planar_arm_in_closed_form():
    rng = np.random.default_rng(3)
    theta, phi = rng.uniform(-3, 3, 25), rng.uniform(-3, 3, 25)
    rest, rotations, scales = planar_arm(theta, phi)
    location = np.zeros((25, 2, 3))
    location[:, 0] = [0.5, -0.25, 2.0]  # the root moved
    points = shell_points([1.0, 1.0], 0.1)
    v = pose_vertices([-1, 0], rest, location, rotations, scales, np.eye(4), points)
    elbow = np.column_stack([0.5 - np.sin(theta), -0.25 + np.cos(theta), np.full(25, 2.0)])
    hand = elbow + np.column_stack([-np.sin(theta + phi), np.cos(theta + phi), np.zeros(25)])
    np.testing.assert_allclose(v[:, 1, 6], hand, atol=1e-12)  # the forearm's tail
    np.testing.assert_allclose(v[:, 0, 6], elbow, atol=1e-12)
    # the forearm's +X shell point: 0.1 along its own X, turned by theta + phi
    np.testing.assert_allclose(v[:, 1, 0], elbow + 0.1 * np.column_stack(
        [np.cos(theta + phi), np.sin(theta + phi), np.zeros(25)]), atol=1e-12)
    # the object's world matrix applies last
    world = np.eye(4)
    world[:3, :3] *= 2.0
    world[:3, 3] = [1.0, 2.0, 3.0]
    np.testing.assert_allclose(pose_vertices([-1, 0], rest, location, rotations, scales, world, points),
                               2.0 * v + [1.0, 2.0, 3.0], atol=1e-12)


def test_a_parents_scale_carries_its_children():
    theta = np.array([0.0, 0.4])
    rest, rotations, scales = planar_arm(theta, 0 * theta, stretch=1.5)
    m = pose_matrices([-1, 0], rest, np.zeros((2, 2, 3)), rotations, scales)
    # the child's head sits at the stretched parent's tail: 1.5 along the turned Y
    np.testing.assert_allclose(m[:, 1, :3, 3], np.column_stack([-1.5 * np.sin(theta), 1.5 * np.cos(theta), [0, 0]]),
                               atol=1e-12)


def test_bone_order_does_not_matter():
    rng = np.random.default_rng(4)
    n_bones, n_frames = 9, 6
    parents = np.array([-1, 0, 1, 1, 0, 4, 5, -1, 7])
    rest = np.repeat(np.eye(4)[None], n_bones, axis=0)
    rest[:, :3, :3] = Rotation.random(n_bones, random_state=5).as_matrix()
    rest[:, :3, 3] = rng.normal(size=(n_bones, 3))
    loc, rot, scale = (rng.normal(size=(n_frames, n_bones, 3)), rng.normal(size=(n_frames, n_bones, 4)),
                       rng.uniform(0.5, 2, (n_frames, n_bones, 3)))
    m = pose_matrices(parents, rest, loc, rot, scale)
    perm = rng.permutation(n_bones)  # children may now come before their parents
    where = np.argsort(perm)
    m2 = pose_matrices(np.where(parents[perm] >= 0, where[parents[perm]], -1), rest[perm], loc[:, perm],
                       rot[:, perm], scale[:, perm])
    np.testing.assert_allclose(m2, m[:, perm], atol=1e-12)
    # a slow reference: each bone's chain multiplied out frame by frame
    for f in range(n_frames):
        for b in range(n_bones):
            chain, p = [], b
            while p >= 0:
                chain.append(p)
                p = parents[p]
            total = np.eye(4)
            for j in reversed(chain):
                basis = np.eye(4)
                basis[:3, :3] = rotation_matrices(rot[f, j], "QUATERNION") @ np.diag(scale[f, j])
                basis[:3, 3] = loc[f, j]
                rel = rest[j] if parents[j] < 0 else np.linalg.inv(rest[parents[j]]) @ rest[j]
                total = total @ rel @ basis
            np.testing.assert_allclose(m[f, b], total, atol=1e-10)


def test_rest_relative_is_a_general_inverse_far_from_the_origin():
    # Blender's rest matrices are rigid only to float32 precision: not rigid, sheared a little, and
    # here 40 m from the origin; LAPACK's general solve is the reference
    rng = np.random.default_rng(8)
    n_bones = 12
    parents = np.array([-1, 0, 1, 2, 0, 4, 5, 0, 7, 8, -1, 10])
    rest = np.repeat(np.eye(4)[None], n_bones, axis=0)
    linear = Rotation.random(n_bones, random_state=9).as_matrix() * rng.uniform(0.5, 2.0, (n_bones, 1, 1))
    rest[:, :3, :3] = linear + 1e-3 * rng.normal(size=(n_bones, 3, 3))
    rest[:, :3, 3] = 40.0 + rng.normal(size=(n_bones, 3))
    out = rest_relative(parents, rest)
    child = parents >= 0
    np.testing.assert_allclose(out[child], np.linalg.solve(rest[parents[child]], rest[child]), rtol=0, atol=1e-11)
    np.testing.assert_array_equal(out[~child], rest[~child])
    np.testing.assert_allclose(out[:, 3], np.tile([0.0, 0.0, 0.0, 1.0], (n_bones, 1)), atol=1e-15)


def test_bad_shapes_and_cycles_are_refused():
    one = np.ones((1, 2, 3))
    q = np.zeros((1, 2, 4))
    q[..., 0] = 1.0
    rest = np.stack([np.eye(4)] * 2)
    with pytest.raises(ValueError, match="cycle"):
        pose_matrices([1, 0], rest, one, q, one)
    with pytest.raises(ValueError, match="rest matrices"):
        pose_matrices([-1, 0], rest[:1], one, q, one)
    with pytest.raises(ValueError, match="rotations"):
        pose_matrices([-1, 0], rest, one, q[..., :3], one)


def _slow_model_vertices(model, values):
    """PoseModel.vertices frame by frame, bone by bone: scipy's rotations and each bone's chain
    multiplied out (no level batching, no stacked products)."""
    n_frames, n_bones = values.shape[0], model.parents.size
    out = np.empty((n_frames, n_bones, model.points.shape[1], 3))
    for f in range(n_frames):
        props = {p: model.held[p].copy() for p in model.held}
        for c, (bone, prop, index) in enumerate(model.columns):
            if bone >= 0:
                props[prop][bone, index] = values[f, c]
        local = []
        for b in range(n_bones):
            mode = model.modes[b]
            if mode == "QUATERNION":
                q = props["rotation_quaternion"][b]
                rot = Rotation.from_quat(q[[1, 2, 3, 0]]).as_matrix()
            else:
                angles = props["rotation_euler"][b][["XYZ".index(a) for a in mode]]
                rot = Rotation.from_euler(mode.lower(), angles).as_matrix()
            basis = np.eye(4)
            basis[:3, :3] = rot @ np.diag(props["scale"][b])
            basis[:3, 3] = 0.0 if model.connected[b] else props["location"][b]
            p = model.parents[b]
            rel = model.rest[b] if p < 0 else np.linalg.inv(model.rest[p]) @ model.rest[b]
            local.append(rel @ basis)
        for b in range(n_bones):
            total, p = np.eye(4), b
            while p >= 0:
                total = local[p] @ total
                p = model.parents[p]
            out[f, b] = (model.object_matrix @ total @ model.points[b].T).T[:, :3]
    return out


@pytest.mark.parametrize("n_frames", [3, 400])  # stacked products below ENTRYWISE_FROM matrices, entry by entry above
def test_pose_model_against_a_slow_reference(n_frames):
    from anim_signals.splines.pose_kinematics import ENTRYWISE_FROM, PoseModel, largest_distances

    rng = np.random.default_rng(21)
    parents = np.array([-1, 0, 1, 1, 0, 4, 5, -1, 7])
    n_bones = parents.size
    assert (n_bones * n_frames >= ENTRYWISE_FROM) == (n_frames == 400)
    rest = np.repeat(np.eye(4)[None], n_bones, axis=0)
    rest[:, :3, :3] = Rotation.random(n_bones, random_state=22).as_matrix()
    rest[:, :3, 3] = rng.normal(size=(n_bones, 3))
    modes = ("QUATERNION", "XYZ", "ZYX", "YZX", "QUATERNION", "XZY", "ZXY", "YXZ", "XYZ")
    held = {"location": rng.normal(size=(n_bones, 3)), "rotation_quaternion": rng.normal(size=(n_bones, 4)),
            "rotation_euler": rng.uniform(-3, 3, (n_bones, 3)), "rotation_axis_angle": np.tile([0.0, 0, 1, 0], (n_bones, 1)),
            "scale": rng.uniform(0.5, 2.0, (n_bones, 3))}
    connected = np.zeros(n_bones, bool)
    connected[[2, 5]] = True  # Blender ignores their location
    columns = [(0, "location", 0), (0, "location", 2), (0, "rotation_quaternion", 0), (0, "rotation_quaternion", 3),
               (1, "rotation_euler", 1), (2, "rotation_euler", 0), (2, "location", 1), (3, "scale", 1),
               (5, "rotation_euler", 2), (7, "location", 0), (8, "rotation_euler", 2), (-1, "", 0),
               (0, "rotation_euler", 1), (4, "rotation_axis_angle", 0)]  # modes these bones are not in: ignored
    world = np.eye(4)
    world[:3, :3] = 1.7 * Rotation.random(random_state=23).as_matrix()
    world[:3, 3] = [3.0, -1.0, 40.0]
    model = PoseModel(parents, rest, shell_points(rng.uniform(0.2, 1.0, n_bones), 0.05), modes, connected, held,
                      tuple(columns), world)
    values = rng.normal(size=(n_frames, len(columns)))
    reference = _slow_model_vertices(model, values)
    np.testing.assert_allclose(model.vertices(values), reference, rtol=0, atol=1e-10)
    rows = model.vertex_rows(values)
    np.testing.assert_allclose(rows.transpose(3, 2, 1, 0), reference, rtol=0, atol=1e-10)
    # each bone's largest distance over every point and frame
    moved = model.vertex_rows(values + 0.01 * rng.normal(size=values.shape))
    expected = np.linalg.norm(moved.transpose(3, 2, 1, 0) - reference, axis=-1).max(axis=(0, 2))
    np.testing.assert_allclose(largest_distances(moved, rows), expected, rtol=1e-12, atol=1e-13)
    assert np.all(expected > 0.0)
    # a curve moves its bone and the bones below it only; a curve that drives no bone moves none
    nudged = values.copy()
    nudged[:, 4] += 0.1  # bone 1's Euler Y: bones 1, 2 and 3
    nudged[:, 11] += 5.0
    moved_bones = np.flatnonzero(largest_distances(model.vertex_rows(nudged), rows) > 0.0)
    np.testing.assert_array_equal(moved_bones, [1, 2, 3])


@pytest.mark.parametrize("n_frames", [3, 60])  # numpy's stacked products, and entry by entry
def test_matrix_vertex_rows_against_one_point_at_a_time(n_frames):
    """The depsgraph's matrices to virtual vertices: Blender's float32 column-major storage read as
    a transposed view, a world matrix per frame, against each point placed on its own."""
    rng = np.random.default_rng(5)
    n_bones = 40
    pose = np.zeros((n_frames, n_bones, 4, 4))
    pose[..., :3, :] = rng.normal(size=(n_frames, n_bones, 3, 4))
    pose[..., 3, 3] = 1.0
    world = np.zeros((n_frames, 4, 4))
    world[:, :3, :] = rng.normal(size=(n_frames, 3, 4))
    world[:, 3, 3] = 1.0
    stored = np.ascontiguousarray(pose.swapaxes(-1, -2)).astype(np.float32)  # as foreach_get("matrix") fills it
    points = shell_points(rng.uniform(0.1, 2.0, n_bones), 0.03)
    got = matrix_vertex_rows(stored.swapaxes(-1, -2), world, points)
    assert got.shape == (3, 7, n_bones, n_frames)
    exact = pose.astype(np.float32).astype(float)
    for f in range(n_frames):
        for b in range(n_bones):
            for p in range(7):
                expected = (world[f] @ exact[f, b] @ points[b, p])[:3]
                np.testing.assert_allclose(got[:, p, b, f], expected, rtol=1e-12, atol=1e-12)
    assert largest_distances(got, got).max() == 0.0
