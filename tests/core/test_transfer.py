"""Deformation transfer core (anim_signals.transfer) on generated meshes; no shared data.

Written against issue 11, Sumner and Popović, "Deformation Transfer for Triangle Meshes", and
Cashman and Hormann §4.3/§5 (../shared/seeds/cashman-hormann-time-pose-shape.txt).  Expectations
are independent of the code under test: closed forms (affine and rigid maps, an analytic bend of a
cylinder evaluated on the target's own vertices), Sumner and Popović's original least-squares
problem with the fourth vertices as unknowns, solved densely by numpy here, and invariances.
"""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

from anim_signals.transfer import (
    CorrespondenceTransfer,
    GradientSpace,
    PoissonSolver,
    TriangleMesh,
    check_examples_independent,
    check_frames,
    check_markers,
    check_topology,
    deformation_gradients,
    example_coordinates,
    face_adjacency,
    gradient_operator,
    parse_markers,
    polar_decompose,
    read_obj,
    rotation_exp,
    rotation_log,
    transfer_by_correspondence,
    transfer_by_examples,
    triangle_correspondence,
    write_obj,
)

# ------------------------------------------------------------------------------------------------
# generated meshes
# ------------------------------------------------------------------------------------------------


def cylinder(around=12, along=10, radius=0.3, length=2.0, flip=False, twist=0.0):
    """A closed (capped) cylinder along z from 0 to ``length``, outward-facing triangles.

    ``flip`` splits the side quads along the other diagonal, ``twist`` turns ring j by ``twist * j``
    of a step: together with ``around`` / ``along`` they give differently triangulated cylinders.
    """
    rings = []
    for j in range(along + 1):
        ang = 2 * np.pi * (np.arange(around) + twist * j) / around
        z = np.full(around, length * j / along)
        rings.append(np.stack([radius * np.cos(ang), radius * np.sin(ang), z], axis=1))
    verts = np.concatenate(rings + [np.array([[0.0, 0.0, 0.0], [0.0, 0.0, length]])])
    bottom, top = len(verts) - 2, len(verts) - 1
    faces = []
    for j in range(along):
        for i in range(around):
            a = j * around + i
            b = j * around + (i + 1) % around
            c = (j + 1) * around + (i + 1) % around
            d = (j + 1) * around + i
            faces += [(a, b, d), (b, c, d)] if flip else [(a, b, c), (a, c, d)]
    for i in range(around):
        faces.append((bottom, (i + 1) % around, i))
        faces.append((top, along * around + i, along * around + (i + 1) % around))
    mesh = TriangleMesh(verts, np.array(faces))
    p = mesh.vertices[mesh.faces]
    volume = np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6.0
    assert volume > 0.0  # outward orientation
    return mesh


def bend(points, angle, length=2.0):
    """Bend the z-axis [0, length] into a circular arc of total ``angle`` (radians) in the xz-plane."""
    p = np.asarray(points, dtype=float)
    if abs(angle) < 1e-12:
        return p.copy()
    k = angle / length
    rad = 1.0 / k - p[:, 0]
    phi = k * p[:, 2]
    return np.stack([1.0 / k - rad * np.cos(phi), p[:, 1], rad * np.sin(phi)], axis=1)


def rotation(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def centred(x):
    return x - x.mean(axis=-2, keepdims=True)


def rel_err(a, b, mesh):
    """Max vertex distance relative to the bounding-box diagonal of ``mesh``."""
    return float(np.linalg.norm(a - b, axis=-1).max() / mesh.bbox_diagonal())


def nearest_markers(source, target, count=8, seed=0):
    """Marker pairs (source vertex, nearest target vertex) of two overlapping meshes."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(source.n_vertices)
    nearest = np.linalg.norm(source.vertices[order, None] - target.vertices[None], axis=2).argmin(axis=1)
    _, first = np.unique(nearest, return_index=True)  # one marker per target vertex
    keep = np.sort(first)[:count]
    return np.stack([order[keep], nearest[keep]], axis=1)


SOURCE = cylinder(16, 12)
TARGET = cylinder(11, 9, flip=True, twist=0.5)  # other vertex count, other connectivity


# ------------------------------------------------------------------------------------------------
# deformation gradients
# ------------------------------------------------------------------------------------------------


def test_rest_pose_gradients_are_identity():
    t = deformation_gradients(SOURCE.vertices, SOURCE.faces, SOURCE.vertices)
    assert t.shape == (SOURCE.n_faces, 3, 3)
    np.testing.assert_allclose(t, np.broadcast_to(np.eye(3), t.shape), atol=1e-12)


def test_gradients_of_rotation_and_uniform_scale():
    r = rotation([1.0, 2.0, -0.5], 1.1)
    moved = 1.7 * SOURCE.vertices @ r.T + [3.0, -1.0, 0.5]
    t = deformation_gradients(SOURCE.vertices, SOURCE.faces, moved)
    np.testing.assert_allclose(t, np.broadcast_to(1.7 * r, t.shape), atol=1e-10)


def test_gradient_operator_is_the_in_plane_part():
    """G x for a linear map A x gives A P_k on every triangle (P_k the projector onto its plane)."""
    a = np.array([[1.0, 0.3, -0.2], [0.1, 0.8, 0.5], [-0.4, 0.2, 1.3]])
    g = gradient_operator(SOURCE.vertices, SOURCE.faces)
    got = (g @ (SOURCE.vertices @ a.T)).reshape(SOURCE.n_faces, 3, 3).transpose(0, 2, 1)
    p = SOURCE.vertices[SOURCE.faces]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    proj = np.eye(3) - n[:, :, None] * n[:, None, :]
    np.testing.assert_allclose(got, a @ proj, atol=1e-10)


def test_poisson_recovers_a_mesh_from_its_own_gradients_up_to_translation():
    frames = np.stack([bend(SOURCE.vertices, a) for a in (0.4, 1.5, -2.5)])
    frames += np.random.default_rng(1).normal(scale=0.01, size=frames.shape)  # not smooth either
    solver = PoissonSolver(SOURCE.vertices, SOURCE.faces)
    got = solver.solve(deformation_gradients(SOURCE.vertices, SOURCE.faces, frames))
    np.testing.assert_allclose(centred(got), centred(frames), atol=1e-9)
    np.testing.assert_allclose(got[:, 0], np.broadcast_to(SOURCE.vertices[0], (3, 3)), atol=1e-12)  # anchor
    one = solver.solve(deformation_gradients(SOURCE.vertices, SOURCE.faces, frames[1]), anchor_position=frames[1, 0])
    np.testing.assert_allclose(one, frames[1], atol=1e-9)


def _sumner_dense_solve(vertices, faces, gradients, anchor=0):
    """Sumner and Popović's problem as written: unknowns are the vertices AND the fourth vertices."""
    n_v, n_f = len(vertices), len(faces)
    a = np.zeros((9 * n_f, 3 * (n_v + n_f)))
    b = np.zeros(9 * n_f)
    for k, (i, j, m) in enumerate(faces):
        v1, v2, v3 = vertices[i], vertices[j], vertices[m]
        n = np.cross(v2 - v1, v3 - v1)
        v4 = v1 + n / np.sqrt(np.linalg.norm(n))
        w = np.linalg.inv(np.column_stack([v2 - v1, v3 - v1, v4 - v1]))
        for r in range(3):  # row r of T_k: sum_c (x_c - x_1)[r] * w[c, col]
            for col in range(3):
                row = 9 * k + 3 * r + col
                for idx, coef in ((i, -w[:, col].sum()), (j, w[0, col]), (m, w[1, col]), (n_v + k, w[2, col])):
                    a[row, 3 * idx + r] += coef
                b[row] = gradients[k, r, col]
    keep = np.ones(a.shape[1], dtype=bool)
    keep[3 * anchor:3 * anchor + 3] = False
    rhs = b - a[:, ~keep] @ vertices[anchor]
    x = np.zeros(a.shape[1])
    x[keep] = np.linalg.lstsq(a[:, keep], rhs, rcond=None)[0]
    x[~keep] = vertices[anchor]
    return x.reshape(-1, 3)[:n_v]


def test_poisson_solve_equals_sumners_formulation_with_fourth_vertices():
    mesh = cylinder(6, 3)
    rng = np.random.default_rng(5)
    grads = np.eye(3) + 0.3 * rng.normal(size=(mesh.n_faces, 3, 3))  # no mesh has these gradients
    expected = _sumner_dense_solve(mesh.vertices, mesh.faces, grads)
    got = PoissonSolver(mesh.vertices, mesh.faces).solve(grads)
    np.testing.assert_allclose(got, expected, atol=1e-9)


def test_poisson_solver_with_repeated_terms():
    """face_index: a face listed twice counts twice (the correspondence case)."""
    mesh = cylinder(6, 3)
    rng = np.random.default_rng(6)
    grads = np.eye(3) + 0.2 * rng.normal(size=(mesh.n_faces, 3, 3))
    idx = np.concatenate([np.arange(mesh.n_faces), [0, 0, 5]])
    terms = np.concatenate([grads, grads[[0, 0, 5]]])
    got = PoissonSolver(mesh.vertices, mesh.faces, face_index=idx).solve(terms)
    # reference: the dense normal equations of the stacked operator rows
    g = gradient_operator(mesh.vertices, mesh.faces).toarray()
    rows = (3 * idx[:, None] + np.arange(3)).reshape(-1)
    m = g[rows]
    keep = np.arange(1, mesh.n_vertices)
    expected = np.zeros((mesh.n_vertices, 3))
    expected[0] = mesh.vertices[0]
    for c in range(3):
        s = terms[:, c, :].reshape(-1) - m[:, 0] * mesh.vertices[0, c]
        expected[keep, c] = np.linalg.lstsq(m[:, keep], s, rcond=None)[0]
    np.testing.assert_allclose(got, expected, atol=1e-9)


# ------------------------------------------------------------------------------------------------
# rotations, polar decomposition, the gradient shape space
# ------------------------------------------------------------------------------------------------


def test_polar_decomposition():
    rng = np.random.default_rng(2)
    m = rng.normal(size=(200, 3, 3))
    r, u = polar_decompose(m)
    np.testing.assert_allclose(r @ u, m, atol=1e-10)
    np.testing.assert_allclose(r @ np.swapaxes(r, 1, 2), np.broadcast_to(np.eye(3), m.shape), atol=1e-10)
    np.testing.assert_allclose(np.linalg.det(r), 1.0, atol=1e-10)
    np.testing.assert_allclose(u, np.swapaxes(u, 1, 2), atol=1e-12)
    pos = np.linalg.det(m) > 0
    assert np.all(np.linalg.eigvalsh(u[pos]) > -1e-12)  # positive definite when det M > 0


def test_rotation_log_exp():
    rng = np.random.default_rng(3)
    axes = rng.normal(size=(300, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    angles = np.concatenate([rng.uniform(0, np.pi - 1e-6, 294), [0.0, 1e-9, 1e-5, np.pi - 1e-4, np.pi - 1e-7, 3.0]])
    w = axes * angles[:, None]
    mats = np.stack([rotation(a, t) if t > 0 else np.eye(3) for a, t in zip(axes, angles)])
    np.testing.assert_allclose(rotation_exp(w), mats, atol=1e-10)
    back = rotation_log(mats)
    np.testing.assert_allclose(rotation_exp(back), mats, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(back, axis=1), angles, atol=1e-6)


def test_gradient_space_round_trip():
    space = GradientSpace(SOURCE)
    assert space.dimension == 9 * SOURCE.n_faces + 3
    frames = np.stack([bend(SOURCE.vertices, a) + [0.1 * a, 0.0, 1.0] for a in (0.0, 0.7, 2.0, -3.0)])
    z = space.encode(frames)
    assert z.shape == (4, space.dimension)
    np.testing.assert_allclose(space.decode(z), frames, atol=1e-9)
    # the rest pose: zero rotation, identity stretch, its vertex mean
    rest = space.encode(SOURCE.vertices)
    per_face = rest[:-3].reshape(-1, 9)
    np.testing.assert_allclose(per_face, np.broadcast_to([0, 0, 0, 1, 0, 0, 1, 0, 1], per_face.shape), atol=1e-12)
    np.testing.assert_allclose(rest[-3:], SOURCE.vertices.mean(axis=0), atol=1e-12)
    # a rigid rotation: the same rotation vector on every triangle, identity stretch
    w = np.array([0.2, -0.5, 0.9])
    z = space.encode(SOURCE.vertices @ rotation(w, np.linalg.norm(w)).T).reshape(-1)[:-3].reshape(-1, 9)
    np.testing.assert_allclose(z[:, :3], np.broadcast_to(w, (SOURCE.n_faces, 3)), atol=1e-10)


# ------------------------------------------------------------------------------------------------
# by examples
# ------------------------------------------------------------------------------------------------


def test_example_coordinates_against_lstsq():
    rng = np.random.default_rng(4)
    q0, q, z = rng.normal(size=20), rng.normal(size=(4, 20)), rng.normal(size=(6, 20))
    w, res = example_coordinates(q0, q, z)
    expected = np.linalg.lstsq((q - q0).T, (z - q0).T, rcond=None)[0].T
    np.testing.assert_allclose(w, expected, atol=1e-10)
    np.testing.assert_allclose(res, z - q0 - expected @ (q - q0), atol=1e-10)


@pytest.mark.parametrize("space", ["vertex", "gradient"])
def test_identity_transfer_reproduces_the_sequence(space):
    """Target = source with the same examples: frames in the examples' span come back unchanged."""
    mesh = SOURCE
    examples = np.stack([mesh.vertices, bend(mesh.vertices, 1.2), bend(mesh.vertices, -0.8),
                         mesh.vertices * [1.0, 1.3, 1.0]])
    if space == "vertex":
        rng = np.random.default_rng(7)
        weights = rng.uniform(-0.5, 1.2, size=(5, 3))
        frames = examples[0] + np.einsum("nj,jvc->nvc", weights, examples[1:] - examples[0])
    else:  # the examples themselves are in the span in every shape space
        weights = np.vstack([np.zeros(3), np.eye(3)])
        frames = examples
    out = transfer_by_examples(frames, examples, examples, space=space, source_faces=mesh.faces,
                               target_faces=mesh.faces)
    np.testing.assert_allclose(out.frames, frames, atol=1e-8)
    np.testing.assert_allclose(out.weights, weights, atol=1e-8)
    np.testing.assert_allclose(out.fit_error, 0.0, atol=1e-8)
    np.testing.assert_allclose(out.fit_relative, 0.0, atol=1e-8)


def test_fit_error_of_a_frame_outside_the_span():
    examples = np.stack([SOURCE.vertices, bend(SOURCE.vertices, 1.0)])
    off = SOURCE.vertices * [1.0, 1.0, 1.5]  # a stretch the bend cannot express
    out = transfer_by_examples([off], examples, examples)
    w, _ = example_coordinates(examples[0].ravel(), examples[1:].reshape(1, -1), off.reshape(1, -1))
    projection = examples[0] + w[0, 0] * (examples[1] - examples[0])
    np.testing.assert_allclose(out.frames[0], projection, atol=1e-10)
    expected = np.sqrt(np.mean(np.sum((projection - off) ** 2, axis=1)))
    assert out.fit_error[0] == pytest.approx(expected, rel=1e-9) and expected > 0.05
    assert 0.0 < out.fit_relative[0] < 1.0


def test_examples_transfer_to_another_triangulation_gradient_space_keeps_rotations():
    """Half of a 150-degree bend: the gradient space gives the half bend, vertex blending shrinks it."""
    big = 2.6
    src = np.stack([SOURCE.vertices, bend(SOURCE.vertices, big)])
    tgt = np.stack([TARGET.vertices, bend(TARGET.vertices, big)])
    frame = bend(SOURCE.vertices, big / 2)
    truth = bend(TARGET.vertices, big / 2)  # the target's own half bend, analytic
    errors, fits = {}, {}
    for space in ("vertex", "gradient"):
        out = transfer_by_examples([frame], src, tgt, space=space, source_faces=SOURCE.faces,
                                   target_faces=TARGET.faces)
        errors[space] = rel_err(centred(out.frames[0]), centred(truth), TARGET)
        fits[space] = out.fit_error[0] / SOURCE.bbox_diagonal()
    assert errors["gradient"] < 0.02, errors
    assert errors["vertex"] > 2 * errors["gradient"], errors
    # the fit error includes the translation, blended linearly in both spaces (the half bend's
    # vertex mean is not halfway), so the gradient space's is smaller but not zero
    assert fits["gradient"] < fits["vertex"], fits


def test_dependent_examples_are_named():
    a = bend(SOURCE.vertices, 0.5)
    b = bend(SOURCE.vertices, -0.5)
    blend = SOURCE.vertices + 0.5 * (a - SOURCE.vertices) + 2.0 * (b - SOURCE.vertices)
    with pytest.raises(ValueError, match=r"example 'mix' is a blend of the others: 'mix' - 'Basis' = "
                                         r"0\.5 \('up' - 'Basis'\) \+ 2 \('down' - 'Basis'\)"):
        transfer_by_examples([a], [SOURCE.vertices, a, b, blend], [TARGET.vertices] * 4,
                             names=["Basis", "up", "down", "mix"])
    with pytest.raises(ValueError, match="example 'same' is the same as 'Basis'"):
        transfer_by_examples([a], [SOURCE.vertices, a, SOURCE.vertices], [TARGET.vertices] * 3,
                             names=["Basis", "up", "same"])
    with pytest.raises(ValueError, match="example 2 is a blend"):
        check_examples_independent(np.array([[1.0, 2.0], [1.0, 2.0]]))


def test_examples_bad_input():
    ex = [SOURCE.vertices, bend(SOURCE.vertices, 1.0)]
    tex = [TARGET.vertices, bend(TARGET.vertices, 1.0)]
    with pytest.raises(ValueError, match="2 source shapes but 3 target shapes"):
        transfer_by_examples([ex[1]], ex, tex + [tex[1]])
    with pytest.raises(ValueError, match=r"target example 'bent' has shape \(10, 3\).*topology differs"):
        transfer_by_examples([ex[1]], ex, [tex[0], tex[1][:10]], names=["rest", "bent"])
    with pytest.raises(ValueError, match="rest pose and at least one example"):
        transfer_by_examples([ex[1]], ex[:1], tex[:1])
    with pytest.raises(ValueError, match="source's frame 7 has 5 vertices.*topology changes"):
        transfer_by_examples([ex[1], ex[1][:5]], ex, tex, frame_numbers=[6, 7])
    nan = ex[1].copy()
    nan[3] = np.nan
    with pytest.raises(ValueError, match="frame 0 has NaN or infinite coordinates at vertices 3"):
        transfer_by_examples([nan], ex, tex)
    with pytest.raises(ValueError, match="source example example 1 has NaN"):
        transfer_by_examples([ex[1]], [ex[0], nan], tex)
    with pytest.raises(ValueError, match="needs the faces of both meshes"):
        transfer_by_examples([ex[1]], ex, tex, space="gradient", source_faces=SOURCE.faces)
    with pytest.raises(ValueError, match="'vertex' or 'gradient'"):
        transfer_by_examples([ex[1]], ex, tex, space="laplacian")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# by correspondence
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scaled_target_correspondence():
    """The target cylinder 1.25 times larger and moved: corresponding triangles from 8 markers."""
    target = TriangleMesh(1.25 * TARGET.vertices + [0.5, 0.2, -0.3], TARGET.faces, name="target")
    markers = nearest_markers(SOURCE, TARGET, 8)  # TARGET overlaps SOURCE before the scaling
    return target, triangle_correspondence(SOURCE, target, markers)


def test_correspondence_covers_both_meshes(scaled_target_correspondence):
    target, corr = scaled_target_correspondence
    pairs = corr.pairs
    assert set(pairs[:, 0]) == set(range(SOURCE.n_faces))
    assert set(pairs[:, 1]) == set(range(target.n_faces))
    # matched triangles lie at the same place of the (scaled) cylinder: same height fraction and angle
    cs = SOURCE.vertices[SOURCE.faces].mean(axis=1)[pairs[:, 0]]
    ct = ((target.vertices - [0.5, 0.2, -0.3]) / 1.25)[target.faces].mean(axis=1)[pairs[:, 1]]
    assert np.median(np.linalg.norm(cs - ct, axis=1)) < 0.1
    # the deformed source lies on the target
    d = np.linalg.norm(corr.deformed[:, None] - target.vertices[None], axis=2).min(axis=1)
    assert d.max() < 0.1 * target.bbox_diagonal()


def test_bending_cylinder_transferred_to_another_triangulation(scaled_target_correspondence):
    target, corr = scaled_target_correspondence
    angles = (0.5, 1.5, -2.0)
    frames = np.stack([bend(SOURCE.vertices, a) for a in angles])
    out = transfer_by_correspondence(SOURCE, frames, target, corr, translation="fixed")
    for a, got in zip(angles, out):
        truth = 1.25 * bend(TARGET.vertices, a)  # the same bend on the target, analytically
        assert rel_err(centred(got), centred(truth), target) < 0.03
    # nothing moves for the rest pose
    rest = transfer_by_correspondence(SOURCE, SOURCE.vertices[None], target, corr, translation="fixed")
    np.testing.assert_allclose(rest[0], target.vertices, atol=1e-9)


def test_rigid_rotation_of_the_source_rotates_the_target(scaled_target_correspondence):
    target, corr = scaled_target_correspondence
    r = rotation([0.3, 1.0, 0.2], 2.2)
    moved = SOURCE.vertices @ r.T + [1.0, 2.0, 3.0]
    transfer = CorrespondenceTransfer(SOURCE, target, corr, translation="follow", translation_scale=1.0)
    got = transfer(moved)
    expected = centred(target.vertices) @ r.T + target.vertices.mean(axis=0)
    expected += moved.mean(axis=0) - SOURCE.vertices.mean(axis=0)
    np.testing.assert_allclose(got, expected, atol=1e-9)
    kept = CorrespondenceTransfer(SOURCE, target, corr, translation=7)(moved)
    np.testing.assert_allclose(kept[7], target.vertices[7], atol=1e-12)
    np.testing.assert_allclose(centred(kept), centred(expected), atol=1e-9)


def test_correspondence_deforming_the_target():
    markers = nearest_markers(SOURCE, TARGET, 8, seed=3)
    corr = triangle_correspondence(SOURCE, TARGET, markers, moving="target")
    assert corr.moving == "target" and corr.deformed.shape == TARGET.vertices.shape
    frames = bend(SOURCE.vertices, 1.0)[None]
    out = transfer_by_correspondence(SOURCE, frames, TARGET, corr, translation="fixed")
    assert rel_err(centred(out[0]), centred(bend(TARGET.vertices, 1.0)), TARGET) < 0.03


def test_face_adjacency():
    adj = face_adjacency(SOURCE.faces)
    # a closed manifold mesh: every edge borders two faces, E = 3F / 2 adjacent pairs
    assert len(adj) == 3 * SOURCE.n_faces // 2
    shared = [len(set(SOURCE.faces[i]) & set(SOURCE.faces[j])) for i, j in adj]
    assert set(shared) == {2}


def test_correspondence_bad_input():
    good = nearest_markers(SOURCE, TARGET, 4)
    with pytest.raises(ValueError, match="at least 3 markers are needed, got 2"):
        triangle_correspondence(SOURCE, TARGET, good[:2])
    bad = good.copy()
    bad[1, 1] = TARGET.n_vertices + 5
    with pytest.raises(ValueError, match=rf"marker 1 \(.*\) is on a missing vertex: the target has {TARGET.n_vertices}"):
        triangle_correspondence(SOURCE, TARGET, bad)
    bad = good.copy()
    bad[1, 0] = -1
    with pytest.raises(ValueError, match="is on a missing vertex: the source has"):
        triangle_correspondence(SOURCE, TARGET, bad)
    bad = np.vstack([good, [good[0, 0], (good[0, 1] + 1) % TARGET.n_vertices]])
    with pytest.raises(ValueError, match=f"source vertex {good[0, 0]} has markers to different vertices"):
        check_markers(bad, SOURCE.n_vertices, TARGET.n_vertices)
    two = TriangleMesh(np.vstack([TARGET.vertices, TARGET.vertices + 5.0]),
                       np.vstack([TARGET.faces, TARGET.faces + TARGET.n_vertices]), name="target")
    with pytest.raises(ValueError, match=rf"the target has 2 separate parts.*from vertex {TARGET.n_vertices}"):
        triangle_correspondence(SOURCE, two, good)
    pairs = np.stack([np.arange(SOURCE.n_faces), np.arange(SOURCE.n_faces) % TARGET.n_faces], axis=1)
    with pytest.raises(ValueError, match="target triangles in no correspondence pair"):
        CorrespondenceTransfer(SOURCE, TARGET, pairs[:10])
    with pytest.raises(ValueError, match="names target triangles outside"):
        CorrespondenceTransfer(SOURCE, TARGET, np.vstack([pairs, [0, TARGET.n_faces]]))
    with pytest.raises(ValueError, match=rf"the source has 2 separate parts.*from vertex {TARGET.n_vertices}"):
        triangle_correspondence(TriangleMesh(two.vertices, two.faces), TARGET, good)
    flat = SOURCE.vertices.copy()
    flat[SOURCE.faces[5, 2]] = 0.5 * (flat[SOURCE.faces[5, 0]] + flat[SOURCE.faces[5, 1]])  # a sliver: area 0
    with pytest.raises(ValueError, match="the source has zero-area faces: 5"):
        CorrespondenceTransfer(TriangleMesh(flat, SOURCE.faces), TARGET, pairs)
    transfer = CorrespondenceTransfer(SOURCE, TARGET, pairs)
    with pytest.raises(ValueError, match="source's frame 2 has 7 vertices, the mesh has"):
        transfer([SOURCE.vertices, SOURCE.vertices, SOURCE.vertices[:7]])
    with pytest.raises(ValueError, match="translation vertex"):
        CorrespondenceTransfer(SOURCE, TARGET, pairs, translation=TARGET.n_vertices)


# ------------------------------------------------------------------------------------------------
# meshes: checks and files
# ------------------------------------------------------------------------------------------------


def test_mesh_checks():
    with pytest.raises(ValueError, match="the target has no faces"):
        TriangleMesh(np.zeros((3, 3)), np.zeros((0, 3), int), name="target")
    nan = SOURCE.vertices.copy()
    nan[[4, 9]] = np.nan
    with pytest.raises(ValueError, match="the target has NaN or infinite coordinates at vertices 4, 9"):
        TriangleMesh(nan, SOURCE.faces, name="target")
    with pytest.raises(ValueError, match="faces using a vertex twice: faces 1"):
        TriangleMesh(np.eye(3), [[0, 1, 2], [0, 0, 1]])
    with pytest.raises(ValueError, match=r"shape \(F, 3\)"):
        TriangleMesh(np.eye(4, 3), [[0, 1, 2, 3]])
    loose = TriangleMesh(np.vstack([SOURCE.vertices, [[9.0, 9, 9], [8.0, 8, 8]]]), SOURCE.faces, name="target")
    n = SOURCE.n_vertices
    with pytest.raises(ValueError, match=f"the target has 2 loose vertices \\(in no face\\): {n}, {n + 1}"):
        check_topology(loose)
    fin = np.vstack([SOURCE.faces, [[0, 1, SOURCE.n_vertices - 1]]])  # a third face on edge (0, 1)
    with pytest.raises(ValueError, match=r"non-manifold edges \(used by more than two faces\): \(0, 1\)"):
        check_topology(TriangleMesh(SOURCE.vertices, fin, name="target"))
    flat = SOURCE.vertices.copy()
    flat[SOURCE.faces[3]] = flat[SOURCE.faces[3][0]] + [[0, 0, 0], [1e-9, 0, 0], [2e-9, 0, 0]]
    with pytest.raises(ValueError, match="zero-area faces: .*3"):
        check_topology(TriangleMesh(flat, SOURCE.faces, name="target"))
    check_topology(SOURCE)
    with pytest.raises(ValueError, match="the source has no frames"):
        check_frames([], 5)


def test_obj_reader(tmp_path):
    path = tmp_path / "m.obj"
    path.write_text(
        "# comment\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0.5 0.5 1\n"
        "vn 0 0 1\ng part\nusemtl x\nf 1/1/1 2/2/1 3/3/1 4/4/1\nf -1 -5 -4\nf 5//1 2//1 3//1\n"
    )
    mesh = read_obj(path)
    assert mesh.name == "m.obj"
    assert mesh.faces.tolist() == [[0, 1, 2], [0, 2, 3], [4, 0, 1], [4, 1, 2]]
    np.testing.assert_array_equal(mesh.vertices[4], [0.5, 0.5, 1.0])
    write_obj(tmp_path / "out.obj", SOURCE.vertices, SOURCE.faces)
    back = read_obj(tmp_path / "out.obj")
    np.testing.assert_allclose(back.vertices, SOURCE.vertices, atol=1e-8)
    np.testing.assert_array_equal(back.faces, SOURCE.faces)
    (tmp_path / "bad.obj").write_text("v 0 0 0\nv 1 0\n")
    with pytest.raises(ValueError, match=r"bad\.obj:2: malformed vertex line"):
        read_obj(tmp_path / "bad.obj")
    (tmp_path / "none.obj").write_text("v 0 0 0\n")
    with pytest.raises(ValueError, match="no faces"):
        read_obj(tmp_path / "none.obj")
    (tmp_path / "range.obj").write_text("v 0 0 0\nv 1 0 0\nf 1 2 3\n")
    with pytest.raises(ValueError, match="vertex indices outside 0..1: 2"):
        read_obj(tmp_path / "range.obj")


def test_markers_parser():
    text = (
        "source:\n  reference: a/ref.obj\n  poses:\n    - a/p1.obj\n    - 'a/p 2.obj'\n\n"
        "target:\n  reference: b/ref.obj  # the lion\n  # no poses\n  poses:\n\n"
        "markers:\n  - \"10:20\"  #nose\n  - '3:4'\n  - 5:6 # tail # tip\n"
    )
    m = parse_markers(text, "/data")
    assert str(m.source_reference) == "/data/a/ref.obj" and str(m.target_reference) == "/data/b/ref.obj"
    assert [p.name for p in m.source_poses] == ["p1.obj", "p 2.obj"] and m.target_poses == ()
    assert m.markers.tolist() == [[10, 20], [3, 4], [5, 6]]
    assert m.comments == ("nose", "", "tail # tip")
    with pytest.raises(ValueError, match="line 2: a marker must be 'source:target' vertex indices, got '12'"):
        parse_markers("markers:\n  - 12\n")
    with pytest.raises(ValueError, match="line 2: a marker must be"):
        parse_markers("markers:\n  - 'a:b'\n")
    with pytest.raises(ValueError, match="no markers"):
        parse_markers("source:\n  reference: x.obj\n")


MODULES = ["meshes", "gradients", "correspondence", "examples"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"anim_signals.transfer.{name}")
    tests = [t for t in doctest.DocTestFinder().find(module) if t.examples]
    assert tests
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).failed == 0


def test_entry_points_have_examples():
    from anim_signals import transfer

    assert isinstance(transfer.__all__, list)
    for name in transfer.__all__:
        assert hasattr(transfer, name)
    for fn in (transfer.transfer_by_examples, transfer.transfer_by_correspondence):
        doc = fn.__doc__ or ""
        for section in ("Parameters\n", "Returns\n", "Raises\n", "Examples\n", ">>> "):
            assert section in doc, (fn.__name__, section)
