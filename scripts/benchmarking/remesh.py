"""Reproducible remeshing for mesh benchmarks (numpy/scipy and plain Python, no Blender).

A remeshed copy has other connectivity and another vertex count, and every one of its vertices is
a fixed linear combination of the input's vertices, so any animation of the input gives the exact
animation of the copy (``weights @ frame``): a ground truth for transferring between the two.

The scheme: :func:`midpoint_subdivide` (each triangle into four; the new vertices are the edges'
midpoints) followed by :func:`decimate` (half-edge collapses, shortest jittered edge first, the
surviving vertex keeps its position). So every vertex of the result is an input vertex or an input
edge's midpoint and lies exactly on the input surface; the triangles are new. The collapses keep
the mesh manifold (link condition), never flip or nearly degenerate a triangle (normals within
60 degrees, smallest angle at least ``min_angle`` degrees or
the smallest angle of the triangles it replaces), never touch boundary vertices and
cap vertex valence. The random jitter (``seed``) makes the result irregular and reproducible.

Used by ``benchmark_transfer.py``; the functions take and return plain arrays.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["coincident_markers", "decimate", "farthest_points", "midpoint_subdivide", "remesh"]


def _edges(faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique sorted edges (E, 2) and, per half-edge 3 f + k (faces[f, k] -> faces[f, k+1]), its edge."""
    a = faces.reshape(-1)
    b = np.roll(faces, -1, axis=1).reshape(-1)
    pairs = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)
    edges, inverse = np.unique(pairs, axis=0, return_inverse=True)
    return edges, inverse.reshape(-1)


def midpoint_subdivide(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix]:
    """Split every triangle into four at its edge midpoints.

    Returns
    -------
    vertices : ndarray, shape (V + E, 3)
        The input vertices, then one midpoint per edge.
    faces : ndarray of int64, shape (4 F, 3)
        Same orientation as the input.
    weights : scipy.sparse.csr_matrix, shape (V + E, V)
        ``new_vertices = weights @ vertices`` (rows of the identity, then two halves).
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    n_v = len(v)
    edges, he = _edges(f)
    mid = n_v + he.reshape(-1, 3)  # midpoint of edge (k, k + 1) of each face
    a, b, c = f.T
    ab, bc, ca = mid.T
    new_faces = np.concatenate([np.stack(t, axis=1) for t in ((a, ab, ca), (ab, b, bc), (ca, bc, c), (ab, bc, ca))])
    n_e = len(edges)
    rows = np.concatenate([np.arange(n_v), np.repeat(n_v + np.arange(n_e), 2)])
    cols = np.concatenate([np.arange(n_v), edges.reshape(-1)])
    vals = np.concatenate([np.ones(n_v), np.full(2 * n_e, 0.5)])
    weights = sp.csr_matrix((vals, (rows, cols)), shape=(n_v + n_e, n_v))
    return weights @ v, new_faces, weights


def _sub(p, q):
    return (p[0] - q[0], p[1] - q[1], p[2] - q[2])


def _cross(p, q):
    return (p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0])


def _dot(p, q):
    return p[0] * q[0] + p[1] * q[1] + p[2] * q[2]


def _min_sin(a, b, c) -> float:
    """Sine of the smallest angle of triangle (a, b, c) (0 for a degenerate one)."""
    e = (_sub(b, a), _sub(c, b), _sub(a, c))
    ll = [_dot(x, x) for x in e]
    n = _cross(e[0], e[1])
    twice_area = math.sqrt(_dot(n, n))
    if twice_area == 0.0:
        return 0.0
    # the smallest angle is opposite the shortest edge: sin = 2A / (product of the two other edges)
    k = min(range(3), key=ll.__getitem__)
    others = [ll[i] for i in range(3) if i != k]
    return twice_area / math.sqrt(others[0] * others[1])


def decimate(vertices: np.ndarray, faces: np.ndarray, counts: Sequence[int], *, seed: int = 0,
             jitter: float = 0.5, min_angle: float = 15.0, max_valence: int = 12,
             ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Half-edge collapses down to each vertex count in ``counts`` (snapshots of one run).

    Parameters
    ----------
    vertices : ndarray, shape (V, 3)
    faces : ndarray of int, shape (F, 3)
        A consistently oriented manifold triangle mesh (boundaries allowed; they are kept).
    counts : sequence of int
        Vertex counts to stop at, each below V (taken in decreasing order).
    seed, jitter : optional
        Priority of an edge: its length times ``1 + jitter * u`` with ``u`` uniform in [0, 1).
    min_angle, max_valence : optional
        Collapses that would create a triangle with a smaller angle (degrees) or a vertex with more
        neighbours are refused.

    Returns
    -------
    list of (kept, faces)
        Per requested count (in the order given): the input indices of the surviving vertices
        (sorted; their positions are the input positions) and the faces over them (indices into
        ``kept``). When no valid collapse is left before a count is reached the snapshot has more
        vertices than requested.
    """
    pts = [tuple(p) for p in np.asarray(vertices, dtype=float).tolist()]
    tris = [list(t) for t in np.asarray(faces, dtype=np.int64).tolist()]
    n_v = len(pts)
    rng = np.random.default_rng(seed)
    alive_f = [True] * len(tris)
    vf: list[set[int]] = [set() for _ in range(n_v)]
    for fi, t in enumerate(tris):
        for x in t:
            vf[x].add(fi)
    edges, he = _edges(np.asarray(faces, dtype=np.int64))
    boundary = np.zeros(n_v, dtype=bool)
    boundary[edges[np.bincount(he, minlength=len(edges)) == 1].reshape(-1)] = True
    alive_v = [True] * n_v
    version = [0] * n_v
    min_sin = math.sin(math.radians(min_angle))
    cos_flip = 0.5
    cos_flat = math.cos(math.radians(20.0))

    def ring(u: int) -> set[int]:
        return {x for fi in vf[u] for x in tris[fi]} - {u}

    heap: list[tuple[float, int, int, int, int]] = []

    def push_around(u: int) -> None:
        for w in ring(u):
            d = _sub(pts[u], pts[w])
            length = math.sqrt(_dot(d, d))
            for a, b in ((u, w), (w, u)):
                heapq.heappush(heap, (length * (1.0 + jitter * float(rng.random())), a, b, version[a], version[b]))

    for u in range(n_v):
        push_around(u)  # every edge twice from each side: harmless, stale ones are skipped

    def can_collapse(u: int, v: int) -> bool:
        if boundary[u] or boundary[v]:
            return False
        nu, nv = ring(u), ring(v)
        if v not in nu or len(nu & nv) != 2 or len(nu) <= 3 or len(nv) <= 3:
            return False
        if len(nu | nv) - 2 > max_valence:
            return False
        shared = vf[u] & vf[v]
        if len(shared) != 2:
            return False
        pv = pts[v]
        # a triangle may not get worse than the threshold or than the worst one it replaces
        floor = min(min_sin, min(_min_sin(*[pts[x] for x in tris[fi]]) for fi in vf[u]))
        for fi in vf[u] - shared:
            t = tris[fi]
            old = [pts[x] for x in t]
            new = [pv if x == u else pts[x] for x in t]
            n_old = _cross(_sub(old[1], old[0]), _sub(old[2], old[0]))
            n_new = _cross(_sub(new[1], new[0]), _sub(new[2], new[0]))
            den = math.sqrt(_dot(n_old, n_old) * _dot(n_new, n_new))
            if den == 0.0 or _dot(n_old, n_new) < cos_flip * den:
                return False
            if _min_sin(*new) < floor:
                return False
        return True

    targets = sorted(set(int(c) for c in counts), reverse=True)
    snapshots: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    remaining = n_v

    def snapshot() -> tuple[np.ndarray, np.ndarray]:
        kept = np.flatnonzero(alive_v)
        remap = np.full(n_v, -1, dtype=np.int64)
        remap[kept] = np.arange(len(kept))
        f = np.array([tris[i] for i in range(len(tris)) if alive_f[i]], dtype=np.int64)
        return kept, remap[f]

    def angle_at(p, a, b) -> float:
        x, y = _sub(a, p), _sub(b, p)
        n = _cross(x, y)
        return math.atan2(math.sqrt(_dot(n, n)), _dot(x, y))

    def unit_normal(t):
        n = _cross(_sub(t[1], t[0]), _sub(t[2], t[0]))
        length = math.sqrt(_dot(n, n))
        return (n[0] / length, n[1] / length, n[2] / length) if length > 0.0 else (0.0, 0.0, 0.0)

    def flip_pass() -> int:
        """Flip edges that are not locally Delaunay between nearly coplanar triangles."""
        flipped = 0
        for f1 in range(len(tris)):
            if not alive_f[f1]:
                continue
            for k in range(3):
                a, b, c = tris[f1][k], tris[f1][(k + 1) % 3], tris[f1][(k + 2) % 3]
                if boundary[a] and boundary[b]:
                    continue
                other = (vf[a] & vf[b]) - {f1}
                if len(other) != 1:
                    continue
                f2 = other.pop()
                d = next(x for x in tris[f2] if x != a and x != b)
                if d == c or d in ring(c) or len(ring(a)) <= 3 or len(ring(b)) <= 3:
                    continue
                pa, pb, pc, pd = pts[a], pts[b], pts[c], pts[d]
                if angle_at(pc, pa, pb) + angle_at(pd, pa, pb) <= math.pi + 1e-9:
                    continue
                n1, n2 = unit_normal((pa, pb, pc)), unit_normal((pb, pa, pd))
                m1, m2 = unit_normal((pa, pd, pc)), unit_normal((pd, pb, pc))
                if min(_dot(n1, n2), _dot(m1, n1), _dot(m1, n2), _dot(m2, n1), _dot(m2, n2)) < cos_flat:
                    continue
                if min(_min_sin(pa, pd, pc), _min_sin(pd, pb, pc)) <= min(_min_sin(pa, pb, pc), _min_sin(pb, pa, pd)):
                    continue
                tris[f1], tris[f2] = [a, d, c], [d, b, c]
                vf[a].discard(f2)
                vf[b].discard(f1)
                vf[c].add(f2)
                vf[d].add(f1)
                for x in (a, b, c, d):
                    version[x] += 1
                flipped += 1
                break
        return flipped

    for goal in targets:
        while remaining > goal:
            before = remaining
            while remaining > goal and heap:
                _, u, v, vu, vv = heapq.heappop(heap)
                if not (alive_v[u] and alive_v[v]) or version[u] != vu or version[v] != vv:
                    continue
                if not can_collapse(u, v):
                    continue
                shared = vf[u] & vf[v]
                for fi in shared:
                    alive_f[fi] = False
                    for x in tris[fi]:
                        vf[x].discard(fi)
                for fi in list(vf[u]):
                    tris[fi] = [v if x == u else x for x in tris[fi]]
                    vf[v].add(fi)
                vf[u] = set()
                alive_v[u] = False
                remaining -= 1
                for x in ring(v) | {v}:
                    version[x] += 1
                push_around(v)
            if remaining <= goal:
                break
            # stalled: flip towards a Delaunay triangulation, then try every edge again
            if flip_pass() == 0 and remaining == before:
                break
            heap.clear()
            for u in range(n_v):
                if alive_v[u]:
                    push_around(u)
        snapshots[goal] = snapshot()
    return [snapshots[int(c)] for c in counts]


def remesh(vertices: np.ndarray, faces: np.ndarray, counts: Sequence[int], *, seed: int = 0,
           ) -> list[tuple[np.ndarray, np.ndarray, sp.csr_matrix]]:
    """The input subdivided once at edge midpoints, then decimated to each of ``counts`` vertices.

    Returns
    -------
    list of (vertices, faces, weights)
        ``weights`` (V_new, V_input) sparse: ``vertices == weights @ input_vertices``, and the same
        for every pose of an animation of the input.
    """
    sub_v, sub_f, w = midpoint_subdivide(vertices, faces)
    out = []
    for kept, f in decimate(sub_v, sub_f, counts, seed=seed):
        wk = w[kept].tocsr()
        out.append((sub_v[kept], f, wk))
    return out


def farthest_points(points: np.ndarray, count: int, *, start: int = 0) -> np.ndarray:
    """Indices of ``count`` points picked greedily, each farthest from those already picked."""
    p = np.asarray(points, dtype=float)
    picked = [int(start)]
    dist = np.linalg.norm(p - p[start], axis=1)
    for _ in range(1, min(count, len(p))):
        i = int(np.argmax(dist))
        picked.append(i)
        dist = np.minimum(dist, np.linalg.norm(p - p[i], axis=1))
    return np.array(picked, dtype=np.int64)


def coincident_markers(source_weights: sp.spmatrix, target_weights: sp.spmatrix, base_vertices: np.ndarray,
                       count: int) -> np.ndarray:
    """Marker pairs ``(source vertex, target vertex)`` of two remeshes of one base mesh that sit on the
    same base vertex, ``count`` of them spread over the surface by :func:`farthest_points`.

    ``*_weights``: ``(V_remesh, V_base)`` as returned by :func:`remesh` (the identity for the base
    mesh itself).
    """
    def on_base_vertex(w) -> dict[int, int]:
        w = sp.csr_matrix(w)
        single = np.flatnonzero(np.diff(w.indptr) == 1)
        return dict(zip(w.indices[w.indptr[single]].tolist(), single.tolist()))

    src, tgt = on_base_vertex(source_weights), on_base_vertex(target_weights)
    common = np.array(sorted(set(src) & set(tgt)), dtype=np.int64)
    pick = common[farthest_points(np.asarray(base_vertices)[common], count)]
    return np.array([[src[b], tgt[b]] for b in pick.tolist()], dtype=np.int64)
