"""Spatial keyframes: projections to 2D, the back-projection RBF and the seed's Algorithm 1,
against closed forms, scipy / hand-written references and properties (exact at markers, never
worse, finite distinct points on degenerate clips)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.interpolate import RBFInterpolator
from scipy.spatial.distance import pdist, squareform
from scipy.spatial.transform import Rotation

from anim_signals.spatialkeys import (
    PROJECTIONS,
    articulated_chain,
    as_matrices,
    classical_mds,
    distance_matrix,
    fit_rotation_rbf,
    force_scheme,
    generated_biped,
    isomap_projection,
    joint_weights,
    log_map,
    optimise_projection,
    pose_distance,
    pose_vectors,
    project,
    rbf_projection,
    rbfp,
    separate_coincident,
    tsne_projection,
)
from anim_signals.spatialkeys.generated import turns_about_z as about_z


def z_angle(m):
    return np.arctan2(m[..., 1, 0], m[..., 0, 0])


@pytest.fixture(scope="module")
def chain():
    clip = articulated_chain(60, 4, seed=1)
    w = joint_weights(clip.parents)
    return clip, w, distance_matrix(clip.quaternions, w), pose_vectors(clip.quaternions, w)


# ---------------------------------------------------------------------------------------------
# projections


def test_classical_mds_matches_eigendecomposition_and_keeps_planar_distances():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(25, 2)) * [3.0, 1.0]
    d = squareform(pdist(x))
    y = classical_mds(d)
    np.testing.assert_allclose(squareform(pdist(y)), d, atol=1e-8)
    # by hand: top eigenvectors of the double-centred squared distances
    j = np.eye(25) - 1.0 / 25
    vals, vecs = np.linalg.eigh(-0.5 * j @ (d ** 2) @ j)
    ref = vecs[:, ::-1][:, :2] * np.sqrt(vals[::-1][:2])
    np.testing.assert_allclose(np.abs(y), np.abs(ref), atol=1e-8)


def test_force_scheme_recovers_a_planar_layout_and_is_deterministic():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 5, size=(30, 2))
    d = squareform(pdist(x))
    y = force_scheme(d, iterations=50, seed=3)
    stress = np.sqrt(np.sum((squareform(pdist(y)) - d) ** 2) / np.sum(d ** 2))
    assert stress < 0.05
    np.testing.assert_array_equal(y, force_scheme(d, iterations=50, seed=3))


def test_isomap_unrolls_a_line_bent_into_an_arc():
    t = np.linspace(0.0, 1.5 * np.pi, 40)
    x = np.c_[np.cos(t), np.sin(t)]
    y = isomap_projection(squareform(pdist(x)), n_neighbors=4)
    first = y[:, 0] * np.sign(y[-1, 0] - y[0, 0])
    assert np.all(np.diff(first) > 0)  # frame order preserved along the first axis


def test_tsne_is_deterministic_with_a_seed(chain):
    _, _, d, _ = chain
    a = tsne_projection(d, seed=2)
    np.testing.assert_array_equal(a, tsne_projection(d, seed=2))
    assert np.all(np.isfinite(a))


@pytest.mark.parametrize("method", [*PROJECTIONS, "rbfp"])
def test_every_projection_on_a_clip(method, chain):
    clip, w, d, v = chain
    y = project(method, distances=d, vectors=v, keys=[0, 15, 30, 45, 59])
    assert y.shape == (60, 2) and np.all(np.isfinite(y))
    assert len(np.unique(np.round(y, 12), axis=0)) == 60
    # nearby poses stay nearer than far ones on average (a sanity check, every method)
    dy = squareform(pdist(y))
    near, far = d < np.quantile(d, 0.1), d > np.quantile(d, 0.9)
    assert dy[near & (d > 0)].mean() < dy[far].mean()


@pytest.mark.parametrize("method", [*PROJECTIONS, "rbfp"])
@pytest.mark.parametrize("kind", ["still", "repeated"])
def test_projections_of_degenerate_clips_are_finite_and_distinct(method, kind):
    if kind == "still":
        q = np.zeros((30, 3, 4))
        q[..., 0] = 1.0
    else:  # three poses, each repeated ten times
        q = np.repeat(articulated_chain(3, 3, seed=5).quaternions, 10, axis=0)
    d = distance_matrix(q)
    y = project(method, distances=d, vectors=pose_vectors(q), keys=[0, 10, 20, 29])
    assert y.shape == (30, 2) and np.all(np.isfinite(y))
    assert len(np.unique(y, axis=0)) == 30


def test_separate_coincident_moves_only_duplicates():
    p = np.array([[0.0, 0.0], [1.0, 2.0], [0.0, 0.0], [np.nan, 1.0]])
    q = separate_coincident(p)
    np.testing.assert_array_equal(q[:2], p[:2])
    assert np.all(np.isfinite(q)) and len(np.unique(q, axis=0)) == 4
    assert np.linalg.norm(q[2]) < 1e-4


def test_rbfp_places_keys_by_the_first_step_and_interpolates(chain):
    _, _, d, _ = chain
    keys = np.array([0, 12, 25, 40, 59])
    y = rbfp(d, keys, "mds")
    np.testing.assert_allclose(y[keys], classical_mds(d[np.ix_(keys, keys)]), atol=1e-12)
    # the RBF step is exact on the keys themselves
    np.testing.assert_allclose(rbf_projection(d[keys][:, keys], d[np.ix_(keys, keys)], y[keys]), y[keys],
                               atol=1e-8)


def test_project_rejects_missing_inputs():
    with pytest.raises(ValueError):
        project("lle", distances=np.zeros((3, 3)))
    with pytest.raises(ValueError):
        project("tsne", vectors=np.zeros((3, 2)))
    with pytest.raises(ValueError):
        project("umap", distances=np.zeros((3, 3)))


# ---------------------------------------------------------------------------------------------
# back-projection


@pytest.mark.parametrize("blend", ["log", "matrix"])
def test_back_projection_is_exact_at_markers(blend):
    clip = generated_biped(90)
    keys = np.arange(0, 90, 9)
    pts = np.random.default_rng(2).uniform(-1, 1, size=(len(keys), 2))
    rbf = fit_rotation_rbf(pts, clip.quaternions[keys], blend=blend)
    np.testing.assert_allclose(rbf.evaluate(pts), as_matrices(clip.quaternions[keys]), atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.floats(-3, 3), st.floats(-3, 3)), min_size=1, max_size=4),
       st.sampled_from(["log", "matrix"]))
def test_back_projection_gives_rotations_anywhere(points, blend):
    clip = articulated_chain(40, 3, seed=9)
    keys = [0, 9, 18, 27, 36]
    markers = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [0.5, 0.3]])
    rbf = fit_rotation_rbf(markers, clip.quaternions[keys], blend=blend)
    r = rbf.evaluate(np.array(points))
    np.testing.assert_allclose(r @ np.swapaxes(r, -1, -2), np.broadcast_to(np.eye(3), r.shape), atol=1e-9)
    np.testing.assert_allclose(np.linalg.det(r), 1.0, atol=1e-9)


def test_back_projection_matches_scipy_rbf_on_rotation_vectors():
    # Igarashi's kernel phi(r) = r with a linear polynomial is scipy's "linear" kernel (-r, degree 1)
    clip = articulated_chain(30, 3, seed=4)
    keys = [0, 6, 13, 20, 29]
    markers = np.random.default_rng(4).uniform(size=(5, 2))
    rbf = fit_rotation_rbf(markers, clip.quaternions[keys])
    ref_vals = log_map(np.swapaxes(rbf.reference, -1, -2)[None] @ as_matrices(clip.quaternions[keys]))
    ref = RBFInterpolator(markers, ref_vals.reshape(5, -1), kernel="linear", degree=1)
    x = np.random.default_rng(5).uniform(-0.5, 1.5, size=(12, 2))
    np.testing.assert_allclose(rbf.values(x), ref(x), atol=1e-9)


def test_back_projection_reproduces_an_affine_rotation_field():
    # angles about z affine in the plane: the log blend (about a z rotation) reproduces it exactly
    markers = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.3, 0.6]])
    angle = lambda p: 0.4 * p[:, 0] - 0.7 * p[:, 1] + 0.2  # noqa: E731
    rbf = fit_rotation_rbf(markers, about_z(angle(markers)))
    x = np.random.default_rng(6).uniform(0, 1, size=(10, 2))
    np.testing.assert_allclose(z_angle(rbf.evaluate(x)[:, 0]), angle(x), atol=1e-9)


def test_one_dimensional_rbf_is_piecewise_linear_in_angle():
    t = np.array([0.0, 3.0, 5.0, 9.0])
    a = np.array([0.1, 0.5, -0.2, 0.3])
    rbf = fit_rotation_rbf(t, about_z(a))
    x = np.linspace(0, 9, 37)
    np.testing.assert_allclose(z_angle(rbf.evaluate(x[:, None])[:, 0]), np.interp(x, t, a), atol=1e-9)


def test_back_projection_rejects_repeated_markers():
    with pytest.raises(ValueError):
        fit_rotation_rbf([[0.0, 0.0], [0.0, 0.0]], about_z([0.0, 1.0]))


# ---------------------------------------------------------------------------------------------
# Algorithm 1


def reference_algorithm1(q, keys, rot, w, alpha=0.5, delta=0.5, max_tries=50):
    """The printed pseudo-code, line by line, with scipy's RBF on rotation vectors and scipy angles."""
    q = q.copy()
    mats = as_matrices(rot)
    ref = None
    from anim_signals.spatialkeys.rotations import project_to_rotation

    ref = project_to_rotation(mats[keys].mean(axis=0))
    vals = log_map(np.swapaxes(ref, -1, -2)[None] @ mats[keys]).reshape(len(keys), -1)
    interp = RBFInterpolator(q[keys], vals, kernel="linear", degree=1)

    def err(i, p):
        v = interp(p[None]).reshape(-1, 3)
        rec = ref @ Rotation.from_rotvec(v).as_matrix()
        return float((Rotation.from_matrix(rec).inv() * Rotation.from_matrix(mats[i])).magnitude() @ w)

    excluded = set(int(k) for k in keys)
    vx, vy = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    for _ in range(max_tries):
        done = True
        for i in range(len(q)):
            if i in excluded:
                continue
            nb = [q[j] for j in (i - 1, i + 1) if 0 <= j < len(q)]
            r = np.mean([np.linalg.norm(q[i] - p) for p in nb])
            e_o = err(i, q[i])
            e_xp, e_xn = err(i, q[i] + delta * r * vx), err(i, q[i] - delta * r * vx)
            e_yp, e_yn = err(i, q[i] + delta * r * vy), err(i, q[i] - delta * r * vy)
            h = np.zeros(2)
            if e_o > e_xp or e_o > e_xn:
                h += vx * (e_xn - e_xp)
            if e_o > e_yp or e_o > e_yn:
                h += vy * (e_yn - e_yp)
            if np.linalg.norm(h) > 0:
                q[i] = q[i] + alpha * r * h / np.linalg.norm(h)
                excluded.add(i)
                done = False
        if done:
            break
    return q


def test_algorithm1_matches_the_printed_pseudocode(chain):
    clip, w, d, _ = chain
    keys = np.array([0, 12, 24, 36, 48, 59])
    q0 = classical_mds(d)
    got, info = optimise_projection(q0, keys, clip.quaternions, w, monotone=False)
    np.testing.assert_allclose(got, reference_algorithm1(q0, keys, clip.quaternions, w), atol=1e-7)
    assert info["moves"] <= 60 - len(keys)  # the printed rule moves a frame at most once


@pytest.mark.parametrize("keep_moving", [False, True])
@pytest.mark.parametrize("method", ["mds", "tsne", "force", "lle"])
def test_algorithm1_never_increases_a_frames_error(method, keep_moving, chain):
    clip, w, d, v = chain
    keys = np.arange(0, 60, 6)
    q0 = project(method, distances=d, vectors=v)
    q1, info = optimise_projection(q0, keys, clip.quaternions, w, keep_moving=keep_moving)
    assert np.all(info["error_after"] <= info["error_before"] + 1e-12)
    assert info["error_after"].sum() < info["error_before"].sum()
    np.testing.assert_array_equal(q1[keys], q0[keys])
    # the reported errors are the back-projection's eq. (1) errors (at the key frames both are
    # rotation angles of rounding errors, about 3e-7 rad: an angle near zero is the square root of
    # a rounding error, which differs with the CPU's BLAS kernels, so the absolute tolerance is 1e-6 rad)
    rbf = fit_rotation_rbf(q1[keys], clip.quaternions[keys])
    np.testing.assert_allclose(info["error_after"], pose_distance(rbf.evaluate(q1), clip.quaternions, w),
                               rtol=1e-7, atol=1e-6)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000))
def test_algorithm1_monotone_on_random_layouts(seed):
    clip = articulated_chain(20, 3, seed=seed % 7)
    q0 = np.random.default_rng(seed).normal(size=(20, 2))
    _, info = optimise_projection(q0, [0, 7, 13, 19], clip.quaternions, keep_moving=True, max_tries=5)
    assert np.all(info["error_after"] <= info["error_before"] + 1e-12)


def test_without_sklearn_a_clear_error_and_the_hand_written_methods_still_work(monkeypatch, chain):
    import sys

    _, _, d, _ = chain
    monkeypatch.setitem(sys.modules, "sklearn", None)  # makes `import sklearn` fail
    with pytest.raises(ImportError, match="scikit-learn"):
        project("tsne", distances=d)
    y = project("rbfp", distances=d, keys=[0, 20, 40, 59], first="force")
    assert y.shape == (60, 2) and np.all(np.isfinite(y))


def test_modified_lle_option(chain):
    _, _, _, v = chain
    y = project("lle", vectors=v)
    from anim_signals.spatialkeys import lle_projection

    ym = lle_projection(v, method="modified")
    assert ym.shape == y.shape and np.all(np.isfinite(ym)) and not np.allclose(np.abs(ym), np.abs(y))
