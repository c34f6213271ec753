"""Triangle correspondence from markers, and deformation transfer through it.

Sumner and Popović, "Deformation Transfer for Triangle Meshes" (SIGGRAPH 2004), §4-§5.

Correspondence (§5): one mesh (the *moving* one) is deformed onto the other (the *fixed* one) by
minimising, over its vertices and its triangles' fourth vertices,

    w_S E_S + w_I E_I + w_C E_C    subject to the markers,

where ``E_S = sum_i sum_{j in adj(i)} ||T_i - T_j||_F^2`` (edge-adjacent triangles transform alike),
``E_I = sum_i ||T_i - I||_F^2`` (no needless deformation) and ``E_C = sum_i ||v_i - c_i||^2`` pulls each
vertex to the closest *valid* point ``c_i`` of the fixed surface (normals less than 90 degrees
apart).  Marker vertices of the moving mesh are held at their partners' positions.  A first solve
uses ``w_C = 0``; then ``w_C`` grows geometrically from 1 to 5000 over four steps, the closest points
recomputed before each (their paper's ``w_S = 1``, ``w_I = 0.001``).  Triangles are then matched by
centroid distance with compatible normals, in both directions, so every triangle of both meshes
is in at least one pair.

Transfer (§4): every source frame's deformation gradients ``S_s`` (relative to the source
reference) are applied to the target through the pairs, ``min sum_{(s, t)} ||T_t - S_s||_F^2``, one
sparse least-squares solve whose matrix is factorised once
(:class:`~anim_signals.transfer.gradients.PoissonSolver`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu
from scipy.spatial import cKDTree

from .gradients import PoissonSolver, frame_matrices, inverse_frames
from .meshes import TriangleMesh, check_face_areas, check_frames, check_markers, check_topology, edge_faces

__all__ = [
    "Correspondence",
    "CorrespondenceTransfer",
    "closest_valid_points",
    "deform_onto",
    "face_adjacency",
    "match_triangles",
    "transfer_by_correspondence",
    "triangle_correspondence",
]

DEFAULT_WC = (1.0, 5000.0 ** (1.0 / 3.0), 5000.0 ** (2.0 / 3.0), 5000.0)  # 1 .. 5000 in 4 geometric steps


def face_adjacency(faces: np.ndarray) -> np.ndarray:
    """Pairs of triangles sharing an edge.

    Parameters
    ----------
    faces : ndarray of int, shape (F, 3)

    Returns
    -------
    ndarray of int64, shape (P, 2)
        Unordered pairs ``(i, j)`` with ``i < j``, each once (around a non-manifold edge every pair
        of its faces).

    Examples
    --------
    >>> face_adjacency(np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1]])).tolist()
    [[0, 1], [0, 2], [1, 2]]
    """
    f = np.asarray(faces, dtype=np.int64)
    _, he_edge, counts = edge_faces(f)
    order = np.argsort(he_edge, kind="stable")
    face_of = order // 3
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pairs = []
    two = counts == 2
    pairs.append(np.stack([face_of[starts[two]], face_of[starts[two] + 1]], axis=1))
    for e in np.flatnonzero(counts > 2):
        around = face_of[starts[e]:starts[e] + counts[e]]
        ii, jj = np.triu_indices(len(around), 1)
        pairs.append(np.stack([around[ii], around[jj]], axis=1))
    out = np.concatenate(pairs).astype(np.int64)
    out = np.sort(out, axis=1)
    out = out[out[:, 0] != out[:, 1]]
    return np.unique(out, axis=0)


def _face_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    p = vertices[faces]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    length = np.linalg.norm(n, axis=1, keepdims=True)
    return n / np.where(length > 0.0, length, 1.0)


def _vertex_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    p = vertices[faces]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])  # area weighted
    out = np.zeros_like(vertices)
    for k in range(3):
        np.add.at(out, faces[:, k], n)
    length = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(length > 0.0, length, 1.0)


def _vertex_faces(n_vertices: int, faces: np.ndarray) -> np.ndarray:
    """(V, max valence) table of the faces around each vertex, padded with -1."""
    flat = faces.reshape(-1)
    order = np.argsort(flat, kind="stable")
    counts = np.bincount(flat, minlength=n_vertices)
    width = max(int(counts.max()), 1)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(flat.size) - np.repeat(starts, counts)
    table = np.full((n_vertices, width), -1, dtype=np.int64)
    table[flat[order], rank] = order // 3
    return table


def _closest_on_triangles(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Closest points on triangles (a, b, c) to points p, all (..., 3) (Ericson, "Real-Time Collision Detection")."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = np.einsum("...i,...i->...", ab, ap)
    d2 = np.einsum("...i,...i->...", ac, ap)
    bp = p - b
    d3 = np.einsum("...i,...i->...", ab, bp)
    d4 = np.einsum("...i,...i->...", ac, bp)
    cp = p - c
    d5 = np.einsum("...i,...i->...", ab, cp)
    d6 = np.einsum("...i,...i->...", ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    tiny = np.finfo(float).tiny
    # interior (default)
    denom = va + vb + vc
    denom = np.where(np.abs(denom) > tiny, denom, tiny)
    v = vb / denom
    w = vc / denom
    out = a + ab * v[..., None] + ac * w[..., None]
    # edge bc
    e_bc = (va <= 0) & ((d4 - d3) >= 0) & ((d5 - d6) >= 0)
    den = (d4 - d3) + (d5 - d6)
    t = (d4 - d3) / np.where(np.abs(den) > tiny, den, tiny)
    out = np.where(e_bc[..., None], b + (c - b) * t[..., None], out)
    # edge ac
    e_ac = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
    t = d2 / np.where(np.abs(d2 - d6) > tiny, d2 - d6, tiny)
    out = np.where(e_ac[..., None], a + ac * t[..., None], out)
    # edge ab
    e_ab = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
    t = d1 / np.where(np.abs(d1 - d3) > tiny, d1 - d3, tiny)
    out = np.where(e_ab[..., None], a + ab * t[..., None], out)
    # vertices
    out = np.where(((d6 >= 0) & (d5 <= d6))[..., None], c, out)
    out = np.where(((d3 >= 0) & (d4 <= d3))[..., None], b, out)
    out = np.where(((d1 <= 0) & (d2 <= 0))[..., None], a, out)
    return out


class _Surface:
    """The fixed mesh, prepared for closest-valid-point queries."""

    def __init__(self, vertices: np.ndarray, faces: np.ndarray) -> None:
        self.vertices = vertices
        self.faces = faces
        self.tree = cKDTree(vertices)
        self.vertex_faces = _vertex_faces(len(vertices), faces)
        self.face_normals = _face_normals(vertices, faces)

    def closest_valid(self, points: np.ndarray, normals: np.ndarray, *, neighbours: int = 8,
                      chunk: int = 1024) -> tuple[np.ndarray, np.ndarray]:
        k = min(neighbours, len(self.vertices))
        out = np.zeros_like(points)
        valid = np.zeros(len(points), dtype=bool)
        for lo in range(0, len(points), chunk):
            p = points[lo:lo + chunk]
            n = normals[lo:lo + chunk]
            _, idx = self.tree.query(p, k=k)
            idx = np.asarray(idx).reshape(len(p), k)
            cand = self.vertex_faces[idx].reshape(len(p), -1)  # (m, k * valence), -1 padded
            present = cand >= 0
            safe = np.where(present, cand, 0)
            ok = present & (np.einsum("mcj,mj->mc", self.face_normals[safe], n) > 0.0)
            tri = self.vertices[self.faces[safe]]  # (m, c, 3, 3)
            q = _closest_on_triangles(p[:, None, :], tri[..., 0, :], tri[..., 1, :], tri[..., 2, :])
            dist = np.einsum("mcj,mcj->mc", q - p[:, None, :], q - p[:, None, :])
            dist = np.where(ok, dist, np.inf)
            best = np.argmin(dist, axis=1)
            rows = np.arange(len(p))
            out[lo:lo + chunk] = q[rows, best]
            valid[lo:lo + chunk] = np.isfinite(dist[rows, best])
        return out, valid


def closest_valid_points(points: np.ndarray, normals: np.ndarray, mesh: TriangleMesh, *,
                         neighbours: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Closest points of a mesh's surface whose triangle normal is within 90 degrees of a given normal.

    Candidates are the triangles around the ``neighbours`` nearest vertices of the mesh (a k-d tree
    query), so a point far from every compatible triangle may find none.

    Parameters
    ----------
    points : ndarray, shape (N, 3)
    normals : ndarray, shape (N, 3)
        Unit normals at the points.
    mesh : TriangleMesh
    neighbours : int, optional

    Returns
    -------
    closest : ndarray, shape (N, 3)
        Undefined where ``valid`` is False.
    valid : ndarray of bool, shape (N,)

    Examples
    --------
    >>> square = TriangleMesh([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], [[0, 1, 2], [0, 2, 3]])
    >>> up, down = [0.0, 0.0, 1.0], [0.0, 0.0, -1.0]
    >>> c, ok = closest_valid_points(np.array([[0.3, 0.6, 0.5], [2.0, 0.5, 0.0], [0.5, 0.5, 0.1]]),
    ...                              np.array([up, up, down]), square)
    >>> c[:2].round(12).tolist(), ok.tolist()
    ([[0.3, 0.6, 0.0], [1.0, 0.5, 0.0]], [True, True, False])
    """
    surface = _Surface(mesh.vertices, mesh.faces)
    return surface.closest_valid(np.asarray(points, dtype=float), np.asarray(normals, dtype=float),
                                 neighbours=neighbours)


def _transformation_operator(vertices: np.ndarray, faces: np.ndarray, name: str) -> sp.csr_matrix:
    """(3F, V + F): rows 3k..3k+2 give row c of T_k from coordinate c of [vertices, fourth vertices]."""
    n_v = len(vertices)
    n_f = len(faces)
    inv = inverse_frames(vertices, faces, name=name)  # W[j, d]
    coef = np.stack([-(inv[:, 0] + inv[:, 1] + inv[:, 2]), inv[:, 0], inv[:, 1], inv[:, 2]], axis=2)  # (F, d, 4)
    cols4 = np.concatenate([faces, (n_v + np.arange(n_f))[:, None]], axis=1)  # (F, 4)
    rows = np.repeat(np.arange(3 * n_f), 4)
    cols = np.repeat(cols4[:, None, :], 3, axis=1).reshape(-1)
    return sp.csr_matrix((coef.reshape(-1), (rows, cols)), shape=(3 * n_f, n_v + n_f))


@dataclass(frozen=True, eq=False)
class _DeformSystem:
    smooth_identity: sp.csc_matrix  # w_S Q^T Ds^T Ds Q + w_I Q^T Q, (V+F, V+F)
    identity_rhs: np.ndarray  # w_I Q^T b_c, (V+F, 3)
    free: np.ndarray
    fixed: np.ndarray
    fixed_values: np.ndarray  # (len(fixed), 3)


def deform_onto(moving: TriangleMesh, fixed: TriangleMesh, markers: np.ndarray, *,
                smoothness: float = 1.0, identity: float = 0.001,
                closest: Sequence[float] = DEFAULT_WC, neighbours: int = 8) -> np.ndarray:
    """Deform one mesh onto another (Sumner and Popović §5): the iterated closest-point problem.

    Parameters
    ----------
    moving : TriangleMesh
        The mesh to deform.
    fixed : TriangleMesh
        The mesh to deform onto.
    markers : ndarray of int, shape (K, 2)
        ``(moving vertex, fixed vertex)`` pairs: the moving vertex is held at its partner.
    smoothness, identity : float, optional
        ``w_S`` and ``w_I``.
    closest : sequence of float, optional
        The ``w_C`` of the steps after the first (markers-only) solve.
    neighbours : int, optional
        Vertices of the fixed mesh searched for closest valid points.

    Returns
    -------
    ndarray, shape (V_moving, 3)
        The moving mesh's deformed vertices.

    Raises
    ------
    ValueError
        From :func:`~anim_signals.transfer.meshes.check_markers`.
    """
    m = check_markers(markers, moving.n_vertices, fixed.n_vertices)
    v, f = moving.vertices, moving.faces
    n_v, n_f = len(v), len(f)
    q = _transformation_operator(v, f, moving.name)
    adj = face_adjacency(f)
    d = sp.csr_matrix((np.concatenate([np.ones(len(adj)), -np.ones(len(adj))]),
                       (np.tile(np.arange(len(adj)), 2), np.concatenate([adj[:, 0], adj[:, 1]]))),
                      shape=(len(adj), n_f))
    ds = sp.kron(d, sp.identity(3), format="csr")
    dq = ds @ q
    # adj(i) counts each edge-adjacent pair from both sides: factor 2 on the unordered pairs
    base = (2.0 * smoothness) * (dq.T @ dq) + identity * (q.T @ q)
    eye_rows = np.tile(np.eye(3), (n_f, 1))  # (3F, 3): column c is the stacked row c of I
    identity_rhs = identity * (q.T @ eye_rows)
    fixed_idx = m[:, 0]
    free = np.setdiff1d(np.arange(n_v + n_f), fixed_idx)
    system = _DeformSystem(base.tocsc(), np.asarray(identity_rhs), free, fixed_idx, fixed.vertices[m[:, 1]])
    surface = _Surface(fixed.vertices, fixed.faces)

    x = _solve_deform(system, None, None, 0.0, n_v)
    for wc in closest:
        current = x[:n_v]
        normals = _vertex_normals(current, f)
        target, valid = surface.closest_valid(current, normals, neighbours=neighbours)
        x = _solve_deform(system, target, valid, float(wc), n_v)
    return x[:n_v]


def _solve_deform(system: _DeformSystem, target: np.ndarray | None, valid: np.ndarray | None,
                  wc: float, n_v: int) -> np.ndarray:
    a = system.smooth_identity
    rhs = system.identity_rhs.copy()
    if wc > 0.0 and target is not None and valid is not None:
        diag = np.zeros(a.shape[0])
        diag[:n_v] = wc * valid
        a = (a + sp.diags(diag)).tocsc()
        rhs[:n_v] += wc * valid[:, None] * target
    free, fixed = system.free, system.fixed
    a_free = a[free][:, free].tocsc()
    a_fixed = a[free][:, fixed]
    b = rhs[free] - a_fixed @ system.fixed_values
    lu = splu(a_free, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    x = np.empty((a.shape[0], 3))
    x[free] = lu.solve(np.asfortranarray(b))
    x[fixed] = system.fixed_values
    return x


def match_triangles(vertices_a: np.ndarray, faces_a: np.ndarray, vertices_b: np.ndarray,
                    faces_b: np.ndarray, *, neighbours: int = 16) -> np.ndarray:
    """Match triangles of two overlapping meshes by centroid distance with compatible normals.

    Each triangle of A is paired with the triangle of B whose centroid is closest among those
    with normals less than 90 degrees apart (among the ``neighbours`` nearest centroids; the
    nearest one if none is compatible), and each triangle of B likewise with one of A.

    Parameters
    ----------
    vertices_a, vertices_b : ndarray, shape (V_a, 3), (V_b, 3)
    faces_a, faces_b : ndarray of int, shape (F_a, 3), (F_b, 3)
    neighbours : int, optional

    Returns
    -------
    ndarray of int64, shape (P, 2)
        Unique ``(triangle of A, triangle of B)`` pairs, sorted; every triangle of both meshes is in
        at least one.

    Examples
    --------
    Two triangulations of a unit square, the second shifted by 0.1 along x:

    >>> va = np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]])
    >>> vb = va + [0.1, 0.0, 0.0]
    >>> match_triangles(va, np.array([[0, 1, 2], [0, 2, 3]]), vb, np.array([[0, 1, 3], [1, 2, 3]])).tolist()
    [[0, 0], [0, 1], [1, 0]]
    """
    fa = np.asarray(faces_a, dtype=np.int64)
    fb = np.asarray(faces_b, dtype=np.int64)
    ca = np.asarray(vertices_a, dtype=float)[fa].mean(axis=1)
    cb = np.asarray(vertices_b, dtype=float)[fb].mean(axis=1)
    na = _face_normals(np.asarray(vertices_a, dtype=float), fa)
    nb = _face_normals(np.asarray(vertices_b, dtype=float), fb)

    def one_way(c_from, n_from, c_to, n_to) -> np.ndarray:
        k = min(neighbours, len(c_to))
        _, idx = cKDTree(c_to).query(c_from, k=k)
        idx = np.asarray(idx).reshape(len(c_from), k)
        ok = np.einsum("mkj,mj->mk", n_to[idx], n_from) > 0.0
        first = np.argmax(ok, axis=1)
        first[~ok.any(axis=1)] = 0
        return idx[np.arange(len(c_from)), first]

    ab = np.stack([np.arange(len(fa)), one_way(ca, na, cb, nb)], axis=1)
    ba = np.stack([one_way(cb, nb, ca, na), np.arange(len(fb))], axis=1)
    return np.unique(np.concatenate([ab, ba]), axis=0)


@dataclass(frozen=True, eq=False)
class Correspondence:
    """A triangle correspondence between a source and a target mesh.

    Attributes
    ----------
    pairs : ndarray of int64, shape (P, 2)
        ``(source triangle, target triangle)``; every triangle of both meshes is in at least one.
    deformed : ndarray, shape (V, 3)
        The moving mesh (see ``moving``) deformed onto the other.
    moving : str
        ``"source"`` or ``"target"``: which reference was deformed.
    seconds : float
        Wall time of the deformation and matching.
    """

    pairs: np.ndarray
    deformed: np.ndarray
    moving: str
    seconds: float


def triangle_correspondence(source: TriangleMesh, target: TriangleMesh, markers: np.ndarray, *,
                            moving: Literal["source", "target"] = "source", smoothness: float = 1.0,
                            identity: float = 0.001, closest: Sequence[float] = DEFAULT_WC) -> Correspondence:
    """Triangle correspondence of two references from marker pairs (Sumner and Popović §5).

    Parameters
    ----------
    source, target : TriangleMesh
        The two meshes in their reference poses, roughly alike in size and orientation (the markers
        pull one onto the other; they need not overlap).
    markers : ndarray of int, shape (K >= 3, 2)
        ``(source vertex, target vertex)`` pairs, zero-based.
    moving : {"source", "target"}, optional
        Which reference is deformed onto the other (the paper deforms the source).
    smoothness, identity, closest : optional
        ``w_S``, ``w_I`` and the ``w_C`` steps (see :func:`deform_onto`).

    Returns
    -------
    Correspondence

    Raises
    ------
    ValueError
        On bad markers (fewer than 3, on missing vertices, contradictory) or a mesh with loose
        vertices or parts, non-manifold edges or zero-area faces
        (:func:`~anim_signals.transfer.meshes.check_topology`, on both meshes).
    """
    start = time.perf_counter()
    source = source.named("source")
    target = target.named("target")
    check_topology(target)
    check_topology(source)
    markers = check_markers(markers, source.n_vertices, target.n_vertices)
    if moving == "source":
        deformed = deform_onto(source, target, markers, smoothness=smoothness, identity=identity, closest=closest)
        pairs = match_triangles(deformed, source.faces, target.vertices, target.faces)
    elif moving == "target":
        deformed = deform_onto(target, source, markers[:, ::-1], smoothness=smoothness, identity=identity,
                               closest=closest)
        pairs = match_triangles(source.vertices, source.faces, deformed, target.faces)
    else:
        raise ValueError(f"moving must be 'source' or 'target', got {moving!r}")
    return Correspondence(pairs, deformed, moving, time.perf_counter() - start)


class CorrespondenceTransfer:
    """Deformation transfer through a triangle correspondence, factorised once for many frames.

    Parameters
    ----------
    source_reference, target_reference : TriangleMesh
    correspondence : Correspondence or ndarray of int, shape (P, 2)
        ``(source triangle, target triangle)`` pairs covering every target triangle.
    translation : {"follow", "fixed"} or int, optional
        The solve fixes the shape up to a translation.  ``"follow"`` (default): the target's
        vertex mean moves with the source's, scaled by ``translation_scale``; ``"fixed"``: it stays
        at the target reference's; a vertex index: that target vertex stays at its reference
        position (what Sumner and Popović's published target poses do, with the last vertex).
    translation_scale : float, optional
        Default: the ratio of the bounding-box diagonals (target / source).
    check : bool, optional
        Run :func:`~anim_signals.transfer.meshes.check_topology` on the target and
        :func:`~anim_signals.transfer.meshes.check_face_areas` on the source (default True).

    Attributes
    ----------
    solver : PoissonSolver
    setup_seconds : float

    Raises
    ------
    ValueError
        On a target that cannot be solved for, pairs out of range or target triangles in no pair.
    """

    def __init__(self, source_reference: TriangleMesh, target_reference: TriangleMesh,
                 correspondence: Correspondence | np.ndarray, *,
                 translation: Literal["follow", "fixed"] | int = "follow", translation_scale: float | None = None,
                 check: bool = True) -> None:
        start = time.perf_counter()
        source_reference = source_reference.named("source")
        target_reference = target_reference.named("target")
        if check:
            check_topology(target_reference)
            check_face_areas(source_reference)
        pairs = correspondence.pairs if isinstance(correspondence, Correspondence) else correspondence
        pairs = np.asarray(pairs, dtype=np.int64)
        if pairs.ndim != 2 or pairs.shape[1] != 2 or len(pairs) == 0:
            raise ValueError(f"the correspondence must be (source triangle, target triangle) pairs, got {pairs.shape}")
        if pairs[:, 0].min() < 0 or pairs[:, 0].max() >= source_reference.n_faces:
            raise ValueError(f"the correspondence names source triangles outside 0..{source_reference.n_faces - 1}")
        if pairs[:, 1].min() < 0 or pairs[:, 1].max() >= target_reference.n_faces:
            raise ValueError(f"the correspondence names target triangles outside 0..{target_reference.n_faces - 1}")
        missing = np.setdiff1d(np.arange(target_reference.n_faces), pairs[:, 1])
        if missing.size:
            shown = ", ".join(str(i) for i in missing[:8])
            raise ValueError(f"target triangles in no correspondence pair: {shown}"
                             + (f", ... ({missing.size} in all)" if missing.size > 8 else ""))
        if isinstance(translation, str):
            if translation not in ("follow", "fixed"):
                raise ValueError(f"translation must be 'follow', 'fixed' or a vertex index, got {translation!r}")
        elif not 0 <= int(translation) < target_reference.n_vertices:
            raise ValueError(f"translation vertex {translation} is not a target vertex "
                             f"(0..{target_reference.n_vertices - 1})")
        self.source_reference = source_reference
        self.target_reference = target_reference
        self.pairs = pairs
        self.translation = translation
        self.translation_scale = (target_reference.bbox_diagonal() / source_reference.bbox_diagonal()
                                  if translation_scale is None else float(translation_scale))
        self._source_inverse = inverse_frames(source_reference.vertices, source_reference.faces, name="source")
        self.solver = PoissonSolver(target_reference.vertices, target_reference.faces, face_index=pairs[:, 1])
        self.setup_seconds = time.perf_counter() - start

    def __call__(self, source_frames: np.ndarray | Sequence[np.ndarray], *,
                 frame_numbers: Sequence[int] | None = None) -> np.ndarray:
        """Target frames ``(n, V_target, 3)`` for source frames ``(n, V_source, 3)`` (or one ``(V, 3)``)."""
        raw = np.asarray(source_frames) if isinstance(source_frames, np.ndarray) else None
        single = raw is not None and raw.ndim == 2
        frames = check_frames(source_frames, self.source_reference.n_vertices, name="source",
                              frame_numbers=frame_numbers)
        grads = frame_matrices(frames, self.source_reference.faces) @ self._source_inverse
        out = self.solver.solve(grads[:, self.pairs[:, 0]])
        if not isinstance(self.translation, str):
            vertex = int(self.translation)
            out += (self.target_reference.vertices[vertex] - out[:, vertex])[:, None, :]
        else:
            centre = self.target_reference.vertices.mean(axis=0)
            if self.translation == "follow":
                shift = (frames.mean(axis=1) - self.source_reference.vertices.mean(axis=0)) * self.translation_scale
                centre = centre + shift
            out += (centre - out.mean(axis=1))[:, None, :]
        return out[0] if single else out


def transfer_by_correspondence(source_reference: TriangleMesh, source_frames: np.ndarray,
                               target_reference: TriangleMesh, correspondence: Correspondence | np.ndarray, *,
                               translation: Literal["follow", "fixed"] | int = "follow",
                               translation_scale: float | None = None) -> np.ndarray:
    """Transfer a source animation to a target mesh through a triangle correspondence (Sumner and Popović).

    Every source frame's deformation gradients relative to ``source_reference`` are applied to
    the corresponding target triangles; the target vertices come from one sparse least-squares
    solve per frame, with the matrix factorised once.  Use :class:`CorrespondenceTransfer` to keep
    the factorisation for later calls.

    Parameters
    ----------
    source_reference : TriangleMesh
        The source in its reference pose.
    source_frames : ndarray, shape (n, V_source, 3), or sequence of (V_source, 3) arrays
        The source animation (same topology as the reference).
    target_reference : TriangleMesh
        The target in its reference pose (one connected, manifold part without loose vertices).
    correspondence : Correspondence or ndarray of int, shape (P, 2)
        From :func:`triangle_correspondence`, or ``(source triangle, target triangle)`` pairs.
    translation, translation_scale : optional
        See :class:`CorrespondenceTransfer`.

    Returns
    -------
    ndarray, shape (n, V_target, 3)
        The target animation, in the target reference's units.

    Raises
    ------
    ValueError
        On a target with non-manifold edges, loose vertices or parts, or zero-area faces; source
        frames with another vertex count or NaN; pairs that leave a target triangle out.

    Examples
    --------
    A mesh transferred onto itself (one pair per triangle) follows a rotation of the source:

    >>> mesh = TriangleMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]],
    ...                     [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    >>> turn = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])  # 90 degrees about z
    >>> pairs = np.stack([np.arange(4), np.arange(4)], axis=1)
    >>> out = transfer_by_correspondence(mesh, [mesh.vertices @ turn.T], mesh, pairs)
    >>> bool(np.allclose(out[0], mesh.vertices @ turn.T))
    True
    """
    transfer = CorrespondenceTransfer(source_reference, target_reference, correspondence,
                                      translation=translation, translation_scale=translation_scale)
    frames = source_frames if not isinstance(source_frames, np.ndarray) or source_frames.ndim == 3 else [source_frames]
    return transfer(frames)
