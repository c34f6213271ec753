"""Projections of a clip's poses to the plane (Costa and Esperança §3.2).

From scikit-learn (imported inside the functions, so the extension loads where it is absent):
PCA (:class:`sklearn.decomposition.PCA`), classical MDS (Torgerson's scaling, as
:class:`sklearn.decomposition.KernelPCA` of the double-centred squared distances, which is what
Isomap does on its geodesic distances), Isomap, LLE (15 neighbours) and t-SNE (perplexity 50).
Written here, because no maintained library has them: the Force Scheme (Tejada, Minghim and
Nonato, "On improved projection techniques to support visual exploration of multidimensional data
sets", 50 iterations) and the two-step RBF projection (Amorim et al., "Multidimensional projection
with radial basis function and control points selection": key poses projected first, the rest
placed by an RBF over the pose distances).

Methods that accept distances (MDS, Isomap, t-SNE, Force, RBFP) get eq. (1)'s distance matrix;
PCA and LLE need coordinates and get :func:`~anim_signals.spatialkeys.distance.pose_vectors`.
Every result is finite and its points distinct (coincident points, from repeated poses or a still
clip, are spread by a tiny deterministic offset), and fixed seeds make every method deterministic.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["PROJECTIONS", "classical_mds", "force_scheme", "isomap_projection", "lle_projection",
           "multiquadric", "pca_projection", "project", "rbf_projection", "rbfp", "separate_coincident",
           "tsne_projection"]

PROJECTIONS: tuple[str, ...] = ("pca", "mds", "force", "isomap", "lle", "tsne")


def _require_sklearn(what: str) -> None:
    """Fail with a clear message where scikit-learn is missing (the hand-written methods still work)."""
    try:
        import sklearn  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"the {what} projection needs scikit-learn (bundled with the Blender extension; "
                          "elsewhere: pip install scikit-learn); force and rbfp with first='force' "
                          "work without it") from exc


def _check_distances(distances: ArrayLike) -> np.ndarray:
    d = np.asarray(distances, dtype=float)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise ValueError(f"distances must be a square matrix, got shape {d.shape}")
    if not np.all(np.isfinite(d)) or np.any(d < 0):
        raise ValueError("distances must be finite and non-negative")
    return 0.5 * (d + d.T)


def separate_coincident(points: ArrayLike, min_separation: float = 1e-6) -> np.ndarray:
    """Make projected points finite and distinct, moving as little as possible.

    Non-finite coordinates become 0; points closer than ``min_separation`` times the layout's
    extent (at least 1) are spread on a small golden-angle spiral around their first point, in
    index order, so the result is deterministic.  The canvas and the back-projection need distinct
    markers; repeated poses would otherwise land on one point.

    Parameters
    ----------
    points : array_like, shape (N, 2)
    min_separation : float
        Relative to ``max(extent, 1)``.

    Returns
    -------
    ndarray, shape (N, 2)

    Examples
    --------
    >>> p = separate_coincident(np.zeros((3, 2)))
    >>> len({tuple(r) for r in p.tolist()})
    3
    """
    p = np.array(points, dtype=float)
    p[~np.isfinite(p)] = 0.0
    if len(p) < 2:
        return p
    extent = float(np.ptp(p, axis=0).max())
    eps = min_separation * max(extent, 1.0)
    cell = np.floor(p / eps).astype(np.int64)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, c in enumerate(map(tuple, cell)):
        groups.setdefault((int(c[0]), int(c[1])), []).append(i)
    golden = np.pi * (3.0 - np.sqrt(5.0))
    occupied = set(groups)
    for members in groups.values():
        k = 0
        for i in members[1:]:
            while True:  # next spiral slot whose cell is free (an earlier group's spread may sit there)
                k += 1
                a = k * golden
                cand = p[members[0]] + 3.0 * eps * np.sqrt(k) * np.array([np.cos(a), np.sin(a)])
                c = np.floor(cand / eps).astype(np.int64)
                key = (int(c[0]), int(c[1]))
                if key not in occupied:
                    break
            occupied.add(key)
            p[i] = cand
    return p


def _finish(points: np.ndarray) -> np.ndarray:
    return separate_coincident(np.asarray(points, dtype=float)[:, :2])


def pca_projection(vectors: ArrayLike) -> np.ndarray:
    """The first two principal components (scikit-learn ``PCA``, full SVD).

    Parameters
    ----------
    vectors : array_like, shape (N, D)
        Pose coordinates (:func:`~anim_signals.spatialkeys.distance.pose_vectors`).

    Returns
    -------
    ndarray, shape (N, 2)

    Examples
    --------
    >>> x = np.c_[np.arange(4.0), np.zeros(4), np.zeros(4)]
    >>> np.abs(pca_projection(x)[:, 0]).round(6).tolist()
    [1.5, 0.5, 0.5, 1.5]
    """
    _require_sklearn("PCA")
    from sklearn.decomposition import PCA

    x = np.asarray(vectors, dtype=float)
    out = np.zeros((len(x), 2))
    k = min(2, x.shape[1], len(x))
    if k > 0 and np.ptp(x, axis=0).max(initial=0.0) > 0:
        out[:, :k] = PCA(n_components=k, svd_solver="full").fit_transform(x)
    return _finish(out)


def classical_mds(distances: ArrayLike) -> np.ndarray:
    """Classical (Torgerson) MDS: the top two eigenvectors of ``-J D^2 J / 2``.

    Computed as scikit-learn ``KernelPCA(kernel="precomputed")`` of ``-D^2 / 2`` (it centres the
    kernel itself); with Euclidean distances this is PCA (the seed's remark).

    Parameters
    ----------
    distances : array_like, shape (N, N)

    Returns
    -------
    ndarray, shape (N, 2)

    Examples
    --------
    >>> x = np.array([0.0, 1.0, 3.0])
    >>> d = np.abs(x[:, None] - x[None])
    >>> np.abs(classical_mds(d)[:, 0] - classical_mds(d)[0, 0]).round(6).tolist()
    [0.0, 1.0, 3.0]
    """
    _require_sklearn("MDS")
    from sklearn.decomposition import KernelPCA

    d = _check_distances(distances)
    out = np.zeros((len(d), 2))
    if len(d) > 2 and d.max() > 0:
        out = KernelPCA(n_components=2, kernel="precomputed", eigen_solver="dense").fit_transform(-0.5 * d ** 2)
    elif len(d) == 2:
        out[1, 0] = d[0, 1]
    return _finish(out)


def force_scheme(distances: ArrayLike, iterations: int = 50, *, seed: int = 0,
                 init: ArrayLike | None = None, step: float = 0.5) -> np.ndarray:
    """Force Scheme projection (Tejada, Minghim and Nonato 2003).

    Points start at random in the unit square (or at ``init``); in each iteration every point ``i``
    (in a seeded random order) pushes or pulls every other point ``j`` along ``y_j - y_i`` by
    ``step_k * (d_ij - |y_j - y_i|)``, with the distances scaled to at most 1 and the step
    decreasing linearly to 0 over the iterations (so the layout settles).

    Parameters
    ----------
    distances : array_like, shape (N, N)
    iterations : int
        The seed uses 50.
    seed : int
    init : array_like, shape (N, 2), optional
    step : float
        Initial fraction of the residual applied per pair.

    Returns
    -------
    ndarray, shape (N, 2)
        In units of the input distances.

    Examples
    --------
    >>> x = np.array([0.0, 1.0, 2.0])
    >>> y = force_scheme(np.abs(x[:, None] - x[None]), 200)
    >>> bool(abs(np.linalg.norm(y[0] - y[2]) - 2.0) < 0.05)
    True
    """
    d = _check_distances(distances)
    n = len(d)
    scale = float(d.max())
    if n < 2 or scale == 0.0:
        return _finish(np.zeros((n, 2)))
    dn = d / scale
    rng = np.random.default_rng(seed)
    y = rng.uniform(0.0, 1.0, size=(n, 2)) if init is None else np.array(init, dtype=float) / scale
    for it in range(iterations):
        lam = step * (1.0 - it / max(iterations, 1))
        for i in rng.permutation(n):
            v = y - y[i]
            dist = np.linalg.norm(v, axis=1)
            tiny = dist < 1e-12
            if tiny.any():  # coincident points: push apart in a seeded random direction
                v[tiny] = rng.normal(size=(int(tiny.sum()), 2)) * 1e-6
                dist[tiny] = np.linalg.norm(v[tiny], axis=1)
            move = (lam * (dn[i] - dist) / dist)[:, None] * v
            move[i] = 0.0
            y += move
    return _finish(y * scale)


def isomap_projection(distances: ArrayLike, n_neighbors: int = 15) -> np.ndarray:
    """Isomap (Tenenbaum, de Silva and Langford) on precomputed distances (scikit-learn).

    Parameters
    ----------
    distances : array_like, shape (N, N)
    n_neighbors : int
        Clamped to ``N - 1``.

    Returns
    -------
    ndarray, shape (N, 2)

    Examples
    --------
    >>> x = np.linspace(0, 1, 20)
    >>> isomap_projection(np.abs(x[:, None] - x[None]), 4).shape
    (20, 2)
    """
    _require_sklearn("Isomap")
    from sklearn.manifold import Isomap

    d = _check_distances(distances)
    n = len(d)
    if n < 4 or d.max() == 0:
        return classical_mds(d)
    k = max(1, min(n_neighbors, n - 2))
    import warnings

    with warnings.catch_warnings():  # a disconnected k-NN graph is joined by sklearn, with a warning
        warnings.simplefilter("ignore")
        out = Isomap(n_neighbors=k, n_components=2, metric="precomputed", eigen_solver="dense").fit_transform(d)
    return _finish(out)


def lle_projection(vectors: ArrayLike, n_neighbors: int = 15, *, seed: int = 0,
                   method: str = "standard") -> np.ndarray:
    """Locally linear embedding (Roweis and Saul) with 15 neighbours, as in the seed (scikit-learn).

    Parameters
    ----------
    vectors : array_like, shape (N, D)
    n_neighbors : int
        Clamped to ``N - 1``.
    seed : int
        For ARPACK's start vector (used above 1500 frames; below, the dense solver).
    method : {'standard', 'modified'}
        Roweis and Saul's LLE (the seed's), or Zhang and Wang's modified LLE ("MLLE: Modified
        locally linear embedding using multiple weights"), which collapses fewer frames together:
        after Algorithm 1 its back-projection error was 0.5-0.9 times standard LLE's on three of
        the shared CMU-style clips.

    Returns
    -------
    ndarray, shape (N, 2)

    Examples
    --------
    >>> t = np.linspace(0, 3, 40)
    >>> lle_projection(np.c_[np.cos(t), np.sin(t), t], 8).shape
    (40, 2)
    """
    _require_sklearn("LLE")
    from sklearn.manifold import LocallyLinearEmbedding

    x = np.asarray(vectors, dtype=float)
    n = len(x)
    if n < 4 or np.ptp(x, axis=0).max(initial=0.0) == 0:
        return pca_projection(x)
    k = max(2, min(n_neighbors, n - 2))
    solver = "dense" if n <= 1500 else "arpack"
    try:
        out = LocallyLinearEmbedding(n_neighbors=k, n_components=2, eigen_solver=solver, method=method,
                                     random_state=seed).fit_transform(x)
    except (ValueError, np.linalg.LinAlgError):  # singular neighbourhoods (many repeated poses)
        return pca_projection(x)
    return _finish(out)


def tsne_projection(distances: ArrayLike, perplexity: float = 50.0, *, seed: int = 0) -> np.ndarray:
    """t-SNE (van der Maaten and Hinton) on precomputed distances, perplexity 50 (scikit-learn).

    Initialised with classical MDS scaled to a standard deviation of 1e-4 (scikit-learn's own
    ``init="pca"`` rule, which it does not allow with precomputed distances), so the global layout
    is stable and the result deterministic.

    Parameters
    ----------
    distances : array_like, shape (N, N)
    perplexity : float
        Clamped to ``(N - 1) / 3`` on short clips (it must stay below N).
    seed : int

    Returns
    -------
    ndarray, shape (N, 2)

    Examples
    --------
    >>> x = np.linspace(0, 1, 30)
    >>> tsne_projection(np.abs(x[:, None] - x[None]), 5).shape
    (30, 2)
    """
    _require_sklearn("t-SNE")
    from sklearn.manifold import TSNE

    d = _check_distances(distances)
    n = len(d)
    if n < 5 or d.max() == 0:
        return classical_mds(d)
    init = classical_mds(d)
    init = init / max(float(np.std(init[:, 0])), 1e-12) * 1e-4
    perp = float(min(perplexity, max((n - 1) / 3.0, 1.0)))
    out = TSNE(n_components=2, perplexity=perp, metric="precomputed", init=init, random_state=seed,
               method="barnes_hut" if n > 300 else "exact").fit_transform(d)
    return _finish(out)


def multiquadric(r: ArrayLike, c: float) -> np.ndarray:
    """Multiquadric kernel ``sqrt(r^2 + c^2)`` (Hardy), the RBF of the RBF projection and of ROLS.

    It grows with distance, so frames far from every key pose are not pulled to the origin, as a
    Gaussian would pull them.

    Parameters
    ----------
    r : array_like
        Distances.
    c : float
        Shape parameter (same unit as ``r``), > 0.

    Returns
    -------
    ndarray, same shape as ``r``

    Examples
    --------
    >>> multiquadric([0.0, 3.0], 4.0)
    array([4., 5.])
    """
    r = np.asarray(r, dtype=float)
    return np.sqrt(r * r + c * c)


def _shape_parameter(d_keys: np.ndarray) -> float:
    off = d_keys[~np.eye(len(d_keys), dtype=bool)]
    off = off[off > 0]
    return float(np.median(off)) if off.size else 1.0


def rbf_projection(distances_to_keys: ArrayLike, key_distances: ArrayLike, key_points: ArrayLike) -> np.ndarray:
    """The second step of RBFP: place poses by an RBF interpolating the key poses' 2D positions.

    ``y(p) = sum_j c_j phi(D(p, k_j))`` with the multiquadric ``phi``, ``c`` solving
    ``Phi c = Y_keys`` (least squares if ``Phi`` is singular, which eq. (1), not being Euclidean,
    does not rule out), so key poses land exactly on their points.

    Parameters
    ----------
    distances_to_keys : array_like, shape (N, M)
        Distances from every pose to the M key poses.
    key_distances : array_like, shape (M, M)
    key_points : array_like, shape (M, 2)

    Returns
    -------
    ndarray, shape (N, 2)

    Examples
    --------
    >>> dk = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> rbf_projection(dk, dk, [[0.0, 0.0], [1.0, 0.0]]).round(9)
    array([[0., 0.],
           [1., 0.]])
    """
    dk = _check_distances(key_distances)
    dx = np.asarray(distances_to_keys, dtype=float)
    yk = np.asarray(key_points, dtype=float)
    c = _shape_parameter(dk)
    phi = multiquadric(dk, c)
    try:
        coef = np.linalg.solve(phi, yk)
    except np.linalg.LinAlgError:
        coef = np.linalg.lstsq(phi, yk, rcond=None)[0]
    return multiquadric(dx, c) @ coef


def rbfp(distances: ArrayLike, keys: ArrayLike, first: str = "mds", *, seed: int = 0,
         vectors: ArrayLike | None = None) -> np.ndarray:
    """Two-step RBF projection (Amorim et al. 2014): keys by ``first``, the rest by RBF.

    Parameters
    ----------
    distances : array_like, shape (N, N)
        Eq. (1) distances of all frames.
    keys : sequence of int
        Key-pose (control point) indices; the seed pairs RBFP with ROLS selection.
    first : str
        Projection of the key poses, one of :data:`PROJECTIONS`.
    seed : int
    vectors : array_like, shape (N, D), optional
        Pose coordinates, needed when ``first`` is ``"pca"`` or ``"lle"``.

    Returns
    -------
    ndarray, shape (N, 2)
        Key poses exactly where the first step put them.

    Raises
    ------
    ValueError
        On fewer than 2 keys, repeated or out-of-range keys.

    Examples
    --------
    >>> x = np.linspace(0, 1, 10)
    >>> rbfp(np.abs(x[:, None] - x[None]), [0, 4, 9]).shape
    (10, 2)
    """
    d = _check_distances(distances)
    k = np.asarray(keys, dtype=int)
    if len(k) < 2 or len(np.unique(k)) != len(k) or k.min() < 0 or k.max() >= len(d):
        raise ValueError(f"keys must be at least 2 distinct frame indices below {len(d)}")
    sub_vectors = None if vectors is None else np.asarray(vectors, dtype=float)[k]
    yk = project(first, distances=d[np.ix_(k, k)], vectors=sub_vectors, seed=seed)
    out = rbf_projection(d[:, k], d[np.ix_(k, k)], yk)
    out[k] = yk
    return _finish(out)


def project(method: str, *, distances: ArrayLike | None = None, vectors: ArrayLike | None = None,
            seed: int = 0, keys: ArrayLike | None = None, first: str = "mds") -> np.ndarray:
    """Project poses to 2D with a named method, with the seed's parameters.

    Parameters
    ----------
    method : str
        One of :data:`PROJECTIONS` or ``"rbfp"``.
    distances : array_like, shape (N, N), optional
        Needed by mds, force, isomap, tsne, rbfp.
    vectors : array_like, shape (N, D), optional
        Needed by pca, lle (and rbfp with ``first`` pca / lle).
    seed : int
    keys : sequence of int, optional
        RBFP's control points.
    first : str
        RBFP's first-step method.

    Returns
    -------
    ndarray, shape (N, 2)
        Finite, distinct points.

    Raises
    ------
    ValueError
        On an unknown method or a missing input.

    Examples
    --------
    >>> x = np.linspace(0, 1, 6)[:, None]
    >>> project("pca", vectors=x).shape
    (6, 2)
    """
    method = method.lower()
    needs_vectors = method in ("pca", "lle")
    if needs_vectors and vectors is None:
        raise ValueError(f"projection {method!r} needs pose vectors")
    if not needs_vectors and distances is None:
        raise ValueError(f"projection {method!r} needs a distance matrix")
    if method == "pca":
        return pca_projection(vectors)  # type: ignore[arg-type]
    if method == "lle":
        return lle_projection(vectors, seed=seed)  # type: ignore[arg-type]
    if method == "mds":
        return classical_mds(distances)  # type: ignore[arg-type]
    if method == "force":
        return force_scheme(distances, seed=seed)  # type: ignore[arg-type]
    if method == "isomap":
        return isomap_projection(distances)  # type: ignore[arg-type]
    if method == "tsne":
        return tsne_projection(distances, seed=seed)  # type: ignore[arg-type]
    if method == "rbfp":
        if keys is None:
            raise ValueError("projection 'rbfp' needs the key-pose indices")
        return rbfp(distances, keys, first, seed=seed, vectors=vectors)  # type: ignore[arg-type]
    raise ValueError(f"unknown projection {method!r}; expected one of {', '.join(PROJECTIONS)}, rbfp")
