"""Deformation gradients of triangle meshes, the factorised Poisson solve, and the gradient shape space.

Sumner and Popović, "Deformation Transfer for Triangle Meshes" (SIGGRAPH 2004), §3: a triangle
``(v1, v2, v3)`` gets a fourth vertex ``v4 = v1 + n / sqrt(|n|)`` with ``n = (v2 - v1) x (v3 - v1)``,
so that its frame ``V = [v2 - v1, v3 - v1, v4 - v1]`` is invertible, and the affine map that takes
the reference triangle to a deformed one has the linear part (the *deformation gradient*)
``T = V~ V^-1``.

Given one 3 x 3 matrix ``S_k`` per triangle, the vertices ``x`` minimising
``sum_k ||T_k(x) - S_k||_F^2`` solve a sparse linear system.  In Sumner and Popović's formulation the
fourth vertices are unknowns too; each appears in its own triangle's term only, and minimising it
out leaves, per triangle, ``||grad(x) - S_k P_k||_F^2`` with ``grad`` the piecewise-linear gradient
operator of the reference triangle and ``P_k`` the projector onto its plane (the columns of ``V^-1``'s
dual frame are orthogonal to the normal).  So the solve here uses the ``(3F, V)`` gradient operator
``G``: ``G^T G x = G^T s`` per coordinate, the same optimum with ``V`` instead of ``V + F``
unknowns.  ``G^T G`` is factorised once (:class:`PoissonSolver`) and every frame is two triangular
solves per coordinate; one vertex is held fixed (the solution is defined up to translation).

The deformation-gradient shape space ``R^{9F+3}`` of Cashman and Hormann, "A continuous, editable
representation for deforming mesh sequences with separate signals for time, pose and shape", §5,
stores per triangle the rotation of the polar decomposition ``T = R U`` as a rotation vector
(3 values, ``log R``) and the symmetric stretch ``U`` (6 values), plus the mean of the vertices
(3 values, translation): :class:`GradientSpace`.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from .meshes import TriangleMesh, check_topology

__all__ = [
    "GradientSpace",
    "PoissonSolver",
    "deformation_gradients",
    "frame_matrices",
    "gradient_operator",
    "inverse_frames",
    "polar_decompose",
    "rotation_exp",
    "rotation_log",
]

_STRETCH_INDEX = (np.array([0, 0, 0, 1, 1, 2]), np.array([0, 1, 2, 1, 2, 2]))  # xx xy xz yy yz zz


def frame_matrices(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Per-triangle frames ``[v2 - v1, v3 - v1, v4 - v1]`` (as columns) with Sumner's fourth vertex.

    Parameters
    ----------
    vertices : ndarray, shape (..., V, 3)
        One or more poses of the mesh.
    faces : ndarray of int, shape (F, 3)

    Returns
    -------
    ndarray, shape (..., F, 3, 3)
        ``out[..., k, :, j]`` is the j-th frame vector of triangle k; the third is
        ``n / sqrt(|n|)`` for the unnormalised normal ``n`` (length ``sqrt(2 area)``, so the frame
        scales like the triangle).

    Examples
    --------
    >>> frame_matrices(np.array([[0.0, 0, 0], [2, 0, 0], [0, 2, 0]]), np.array([[0, 1, 2]]))[0]
    array([[2., 0., 0.],
           [0., 2., 0.],
           [0., 0., 2.]])
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces)
    p0 = v[..., f[:, 0], :]
    e1 = v[..., f[:, 1], :] - p0
    e2 = v[..., f[:, 2], :] - p0
    n = np.cross(e1, e2)
    length = np.sqrt(np.linalg.norm(n, axis=-1, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        e3 = n / length
    return np.stack([e1, e2, e3], axis=-1)


def inverse_frames(vertices: np.ndarray, faces: np.ndarray, *, name: str = "reference") -> np.ndarray:
    """Inverted :func:`frame_matrices` ``(F, 3, 3)`` of a reference pose.

    Raises
    ------
    ValueError
        Naming the zero-area triangles (their frames cannot be inverted).
    """
    frames = frame_matrices(vertices, faces)
    det = np.linalg.det(frames)
    bad = np.flatnonzero(~(np.abs(det) > 0.0))
    if bad.size:
        shown = ", ".join(str(b) for b in bad[:8]) + (f", ... ({bad.size} in all)" if bad.size > 8 else "")
        raise ValueError(f"the {name} has zero-area faces: {shown}")
    return np.linalg.inv(frames)


def deformation_gradients(reference: np.ndarray, faces: np.ndarray, deformed: np.ndarray, *,
                          inverse: np.ndarray | None = None) -> np.ndarray:
    """Deformation gradients ``T = V~ V^-1`` of each triangle, from a reference to deformed poses.

    Parameters
    ----------
    reference : ndarray, shape (V, 3)
    faces : ndarray of int, shape (F, 3)
    deformed : ndarray, shape (V, 3) or (n, V, 3)
    inverse : ndarray, shape (F, 3, 3), optional
        The inverted reference frames, when already computed (``inv(frame_matrices(reference))``).

    Returns
    -------
    ndarray, shape (F, 3, 3) or (n, F, 3, 3)
        Dimensionless; the identity for the reference pose, ``R`` for a rigid rotation ``R``.

    Raises
    ------
    ValueError
        If a reference triangle has zero area.

    Examples
    --------
    >>> ref = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    >>> faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    >>> T = deformation_gradients(ref, faces, 2.0 * ref)  # uniform scaling by 2
    >>> bool(np.allclose(T, 2.0 * np.eye(3)))
    True
    """
    inv = inverse_frames(reference, faces) if inverse is None else inverse
    return frame_matrices(deformed, faces) @ inv


def gradient_operator(vertices: np.ndarray, faces: np.ndarray) -> sp.csr_matrix:
    """The piecewise-linear gradient operator of a triangle mesh, ``(3F, V)``.

    Rows ``3k, 3k+1, 3k+2`` give the gradient (a vector in triangle k's plane) of the scalar field
    that is linear on each triangle and takes the given values at the vertices.  Applied to the
    x, y, z coordinates of a deformed pose, the rows of triangle k are the rows of its deformation
    gradient projected onto the reference plane: ``T_k P_k``.

    Parameters
    ----------
    vertices : ndarray, shape (V, 3)
        The reference pose.
    faces : ndarray of int, shape (F, 3)

    Returns
    -------
    scipy.sparse.csr_matrix, shape (3F, V)
        Units: 1 / length.

    Raises
    ------
    ValueError
        If a triangle has zero area.

    Examples
    --------
    >>> ref = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    >>> G = gradient_operator(ref, np.array([[0, 1, 2]]))
    >>> (G @ ref).round(12)  # the gradient of each coordinate: the projector onto the xy-plane
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 0.]])
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    inv = inverse_frames(v, f)  # rows r1, r2, r3: the dual frame
    r1 = inv[:, 0, :]
    r2 = inv[:, 1, :]
    coef = np.stack([-(r1 + r2), r1, r2], axis=2)  # (F, 3 components, 3 corners)
    n_faces = len(f)
    rows = np.repeat(np.arange(3 * n_faces), 3)
    cols = np.repeat(f[:, None, :], 3, axis=1).reshape(-1)
    return sp.csr_matrix((coef.reshape(-1), (rows, cols)), shape=(3 * n_faces, len(v)))


class PoissonSolver:
    """Vertices from per-triangle deformation gradients: one sparse least-squares solve, factorised once.

    Minimises ``sum_k ||T_{face_index[k]}(x) - S_k||_F^2`` over the vertex positions ``x`` (see the
    module docstring for the elimination of Sumner and Popović's fourth vertices).  A face may
    appear several times in ``face_index`` (a correspondence that maps several source triangles to
    one target triangle); every vertex must be in at least one listed face.  One vertex, the
    *anchor*, is held at a given position; the solution is otherwise unique for a connected mesh.

    Parameters
    ----------
    vertices : ndarray, shape (V, 3)
        The reference pose the gradients are relative to.
    faces : ndarray of int, shape (F, 3)
    face_index : ndarray of int, shape (K,), optional
        The face each gradient term applies to (default: every face once, ``K = F``).
    anchor : int, optional
        The vertex held fixed (default 0).

    Attributes
    ----------
    factor_seconds : float
        Wall time of the assembly and factorisation.
    n_terms : int
        K, the number of gradients :meth:`solve` expects per frame.

    Raises
    ------
    ValueError
        If a triangle has zero area, ``face_index`` is out of range, or the system is singular
        (a vertex in no listed face, or separate parts).

    Examples
    --------
    >>> ref = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    >>> faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    >>> solver = PoissonSolver(ref, faces)
    >>> stretched = solver.solve(np.tile(np.diag([3.0, 1.0, 1.0]), (4, 1, 1)))  # stretch x by 3
    >>> (stretched.round(9) + 0.0).tolist()
    [[0.0, 0.0, 0.0], [3.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """

    def __init__(self, vertices: np.ndarray, faces: np.ndarray, *, face_index: np.ndarray | None = None,
                 anchor: int = 0) -> None:
        start = time.perf_counter()
        v = np.asarray(vertices, dtype=np.float64)
        f = np.asarray(faces, dtype=np.int64)
        n_v = len(v)
        if not 0 <= anchor < n_v:
            raise ValueError(f"anchor vertex {anchor} is not a vertex (0..{n_v - 1})")
        grad = gradient_operator(v, f)
        if face_index is None:
            op = grad
            self.n_terms = len(f)
        else:
            idx = np.asarray(face_index, dtype=np.int64).reshape(-1)
            if idx.size == 0 or idx.min() < 0 or idx.max() >= len(f):
                raise ValueError(f"face_index must hold faces 0..{len(f) - 1}")
            op = grad[(3 * idx[:, None] + np.arange(3)).reshape(-1)]
            self.n_terms = int(idx.size)
        self._op_t = op.T.tocsr()  # (V, 3K)
        lap = (self._op_t @ op).tocsc()
        free = np.setdiff1d(np.arange(n_v), [anchor])
        reduced = lap[free][:, free].tocsc()
        self._anchor_column = np.asarray(lap[free][:, [anchor]].todense()).reshape(-1)
        try:
            self._lu = splu(reduced, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                            options={"SymmetricMode": True})
        except RuntimeError as exc:
            raise ValueError(
                "the deformation-gradient system is singular: a vertex is in no constrained face or "
                f"the mesh has separate parts ({exc})"
            ) from None
        self._free = free
        self.anchor = int(anchor)
        self.n_vertices = n_v
        self.reference_anchor = v[anchor].copy()
        self.factor_seconds = time.perf_counter() - start

    def solve(self, gradients: np.ndarray, anchor_position: np.ndarray | None = None) -> np.ndarray:
        """Vertex positions whose deformation gradients best match ``gradients``.

        Parameters
        ----------
        gradients : ndarray, shape (K, 3, 3) or (n, K, 3, 3)
            One matrix per term (per face, or per ``face_index`` entry), for one or n frames.
            The right-hand sides of all frames are assembled in one sparse product.
        anchor_position : ndarray, shape (3,) or (n, 3), optional
            Where the anchor vertex goes (default: its reference position).

        Returns
        -------
        ndarray, shape (V, 3) or (n, V, 3)

        Raises
        ------
        ValueError
            If the gradients do not have ``K`` terms.
        """
        s = np.asarray(gradients, dtype=np.float64)
        single = s.ndim == 3
        if single:
            s = s[None]
        if s.ndim != 4 or s.shape[1:] != (self.n_terms, 3, 3):
            raise ValueError(f"expected gradients of shape (n, {self.n_terms}, 3, 3), got {np.shape(gradients)}")
        n = s.shape[0]
        # column (i, c) holds row c of every term's matrix of frame i: (3K, 3n)
        b = s.transpose(1, 3, 0, 2).reshape(3 * self.n_terms, n * 3)
        rhs = self._op_t @ b  # (V, 3n)
        if anchor_position is None:
            anchor = np.broadcast_to(self.reference_anchor, (n, 3))
        else:
            anchor = np.broadcast_to(np.asarray(anchor_position, dtype=np.float64), (n, 3))
        anchor_flat = anchor.reshape(-1)
        rhs_free = rhs[self._free] - self._anchor_column[:, None] * anchor_flat[None, :]
        out = np.empty((self.n_vertices, n * 3))
        # SuperLU's multi-column solve slows down sharply with many columns: one frame at a time
        for i in range(n):
            out[self._free, 3 * i:3 * i + 3] = self._lu.solve(np.asfortranarray(rhs_free[:, 3 * i:3 * i + 3]))
        out[self.anchor] = anchor_flat
        result = out.reshape(self.n_vertices, n, 3).transpose(1, 0, 2)
        return result[0] if single else np.ascontiguousarray(result)


# ------------------------------------------------------------------------------------------------
# rotations and the polar decomposition
# ------------------------------------------------------------------------------------------------


def polar_decompose(matrices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Polar decomposition ``M = R U`` with ``R`` a rotation (det +1) and ``U`` symmetric.

    Computed from the SVD ``M = W diag(s) Z^T``: ``R = W Z^T``, ``U = Z diag(s) Z^T``.  When
    ``det M < 0`` (an inverted triangle) the smallest singular value's sign is flipped, so ``R`` stays
    a rotation and ``U`` gets one negative eigenvalue.

    Parameters
    ----------
    matrices : ndarray, shape (..., 3, 3)

    Returns
    -------
    rotation : ndarray, shape (..., 3, 3)
    stretch : ndarray, shape (..., 3, 3)
        Symmetric.

    Examples
    --------
    >>> R, U = polar_decompose(np.array([[0.0, -2, 0], [1, 0, 0], [0, 0, 1]]))
    >>> R.round(12).tolist(), U.round(12).tolist()
    ([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    """
    m = np.asarray(matrices, dtype=np.float64)
    w, s, zt = np.linalg.svd(m)
    flip = np.linalg.det(w @ zt) < 0.0
    if np.any(flip):
        w = w.copy()
        s = s.copy()
        w[flip, :, 2] *= -1.0
        s[flip, 2] *= -1.0
    rotation = w @ zt
    stretch = np.swapaxes(zt, -1, -2) @ (s[..., :, None] * zt)
    stretch = 0.5 * (stretch + np.swapaxes(stretch, -1, -2))
    return rotation, stretch


def _skew(w: np.ndarray) -> np.ndarray:
    z = np.zeros(w.shape[:-1])
    return np.stack([
        np.stack([z, -w[..., 2], w[..., 1]], axis=-1),
        np.stack([w[..., 2], z, -w[..., 0]], axis=-1),
        np.stack([-w[..., 1], w[..., 0], z], axis=-1),
    ], axis=-2)


def rotation_exp(vectors: np.ndarray) -> np.ndarray:
    """Rotation matrices from rotation vectors (axis times angle in radians), by Rodrigues' formula.

    Parameters
    ----------
    vectors : ndarray, shape (..., 3)

    Returns
    -------
    ndarray, shape (..., 3, 3)

    Examples
    --------
    >>> rotation_exp(np.array([0.0, 0.0, np.pi / 2])).round(12).tolist()
    [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    w = np.asarray(vectors, dtype=np.float64)
    theta2 = np.einsum("...i,...i->...", w, w)
    theta = np.sqrt(theta2)
    small = theta < 1e-4
    safe = np.where(small, 1.0, theta)
    a = np.where(small, 1.0 - theta2 / 6.0 + theta2 * theta2 / 120.0, np.sin(safe) / safe)
    b = np.where(small, 0.5 - theta2 / 24.0 + theta2 * theta2 / 720.0, (1.0 - np.cos(safe)) / (safe * safe))
    k = _skew(w)
    eye = np.broadcast_to(np.eye(3), k.shape)
    return eye + a[..., None, None] * k + b[..., None, None] * (k @ k)


def rotation_log(rotations: np.ndarray) -> np.ndarray:
    """Rotation vectors (axis times angle, angle in [0, pi]) of rotation matrices.

    Parameters
    ----------
    rotations : ndarray, shape (..., 3, 3)
        Proper rotations (det +1).

    Returns
    -------
    ndarray, shape (..., 3)
        Radians.  At an angle of exactly pi the sign of the axis is arbitrary.

    Examples
    --------
    >>> w = np.array([[0.3, -0.2, 0.1], [0.0, 0.0, 0.0], [0.0, 3.1, 0.0]])
    >>> bool(np.allclose(rotation_log(rotation_exp(w)), w))
    True
    """
    r = np.asarray(rotations, dtype=np.float64)
    trace = np.trace(r, axis1=-2, axis2=-1)
    cos = np.clip(0.5 * (trace - 1.0), -1.0, 1.0)
    theta = np.arccos(cos)
    vee = 0.5 * np.stack([r[..., 2, 1] - r[..., 1, 2], r[..., 0, 2] - r[..., 2, 0], r[..., 1, 0] - r[..., 0, 1]],
                         axis=-1)  # sin(theta) * axis
    sin = np.sin(theta)
    small = theta < 1e-4
    factor = np.where(small, 1.0 + theta * theta / 6.0, theta / np.where(small, 1.0, sin))
    out = vee * factor[..., None]
    near_pi = theta > np.pi - 1e-3
    if np.any(near_pi):
        rp = r[near_pi]
        c = cos[near_pi]
        sym = 0.5 * (rp + np.swapaxes(rp, -1, -2)) - c[:, None, None] * np.eye(3)  # (1 - cos) a a^T
        col = np.argmax(np.diagonal(sym, axis1=-2, axis2=-1), axis=-1)
        axis = sym[np.arange(len(rp)), :, col]
        axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
        v = vee[near_pi]
        sign = np.where(np.einsum("ij,ij->i", axis, v) < 0.0, -1.0, 1.0)
        out[near_pi] = axis * (sign * theta[near_pi])[:, None]
    return out


# ------------------------------------------------------------------------------------------------
# the deformation-gradient shape space R^{9F+3}
# ------------------------------------------------------------------------------------------------


class GradientSpace:
    """The deformation-gradient shape space ``R^{9F+3}`` of a mesh (Cashman and Hormann §5).

    A pose maps to, per triangle, the rotation vector ``log R`` (3 values, radians) and the
    symmetric stretch ``U`` (6 values: xx, xy, xz, yy, yz, zz) of the polar decomposition
    ``T = R U`` of its deformation gradient relative to ``reference``, followed by the mean of its
    vertices (3 values, scene units).  The inverse map rebuilds ``T = exp(w) U``, solves for the
    vertices with the factorised :class:`PoissonSolver` and restores the mean.  Linear combinations
    of feature vectors blend rotations by their rotation vectors, which avoids the shrinking of
    linearly blended vertex positions (the seed's Figure 7).

    Parameters
    ----------
    reference : TriangleMesh
        Its vertices are the reference pose (identity gradients, features ``[0, 0, 0, 1, 0, 0, 1,
        0, 1]`` per triangle).
    check : bool, optional
        Run :func:`check_topology` on the reference (default True).

    Attributes
    ----------
    dimension : int
        ``9 F + 3``.
    solver : PoissonSolver

    Raises
    ------
    ValueError
        From :func:`check_topology`.

    Examples
    --------
    >>> from anim_signals.transfer.meshes import TriangleMesh
    >>> ref = TriangleMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]],
    ...                    [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    >>> space = GradientSpace(ref)
    >>> space.dimension
    39
    >>> pose = ref.vertices @ rotation_exp(np.array([0.0, 0.0, 0.5])).T + 2.0
    >>> z = space.encode(pose)
    >>> z[:3].round(12).tolist(), bool(np.allclose(space.decode(z), pose))
    ([0.0, 0.0, 0.5], True)
    """

    def __init__(self, reference: TriangleMesh, *, check: bool = True) -> None:
        if check:
            check_topology(reference)
        self.reference = reference
        self._inverse = inverse_frames(reference.vertices, reference.faces, name=reference.name)
        self.solver = PoissonSolver(reference.vertices, reference.faces)
        self.n_faces = reference.n_faces
        self.dimension = 9 * reference.n_faces + 3

    def gradients(self, frames: np.ndarray) -> np.ndarray:
        """Deformation gradients ``(…, F, 3, 3)`` of poses ``(…, V, 3)`` relative to the reference."""
        return frame_matrices(frames, self.reference.faces) @ self._inverse

    def encode(self, frames: np.ndarray) -> np.ndarray:
        """Feature vectors of poses.

        Parameters
        ----------
        frames : ndarray, shape (V, 3) or (n, V, 3)

        Returns
        -------
        ndarray, shape (9F+3,) or (n, 9F+3)
        """
        x = np.asarray(frames, dtype=np.float64)
        single = x.ndim == 2
        if single:
            x = x[None]
        if x.ndim != 3 or x.shape[1:] != self.reference.vertices.shape:
            raise ValueError(f"expected poses of shape (n, {self.reference.n_vertices}, 3), got {np.shape(frames)}")
        rot, stretch = polar_decompose(self.gradients(x))
        w = rotation_log(rot)  # (n, F, 3)
        u = stretch[..., _STRETCH_INDEX[0], _STRETCH_INDEX[1]]  # (n, F, 6)
        per_face = np.concatenate([w, u], axis=-1).reshape(len(x), 9 * self.n_faces)
        out = np.concatenate([per_face, x.mean(axis=1)], axis=1)
        return out[0] if single else out

    def decode(self, features: np.ndarray) -> np.ndarray:
        """Poses of feature vectors (the inverse of :meth:`encode` on its image).

        Parameters
        ----------
        features : ndarray, shape (9F+3,) or (n, 9F+3)

        Returns
        -------
        ndarray, shape (V, 3) or (n, V, 3)
        """
        z = np.asarray(features, dtype=np.float64)
        single = z.ndim == 1
        if single:
            z = z[None]
        if z.ndim != 2 or z.shape[1] != self.dimension:
            raise ValueError(f"expected features of length {self.dimension}, got shape {np.shape(features)}")
        n = len(z)
        per_face = z[:, :-3].reshape(n, self.n_faces, 9)
        rot = rotation_exp(per_face[..., :3])
        stretch = np.empty((n, self.n_faces, 3, 3))
        i, j = _STRETCH_INDEX
        stretch[..., i, j] = per_face[..., 3:]
        stretch[..., j, i] = per_face[..., 3:]
        poses = self.solver.solve(rot @ stretch)
        poses += (z[:, -3:] - poses.mean(axis=1))[:, None, :]
        return poses[0] if single else poses
