"""Clustering of clips from a distance matrix: hierarchical clusters, silhouette, nearest clips.

Eslitzbichler, "Modelling Character Motions on Infinite-Dimensional Manifolds", §4.3 clusters clips
by their elastic distances (:func:`.elastic.distance_matrix`); any symmetric distance matrix works.
The automatic number of clusters is the dendrogram cut with the best mean silhouette (Rousseeuw,
"Silhouettes: a graphical aid to the interpretation and validation of cluster analysis", 1987).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..validation import MAX_MAGNITUDE, choice, finite_array, non_negative, positive_int

__all__ = ["Clustering", "cluster", "nearest", "silhouette"]


@dataclass
class Clustering:
    """Result of :func:`cluster`.

    Attributes
    ----------
    labels : ndarray of int, shape (m,)
        Cluster ids from 1.
    linkage : ndarray, shape (m - 1, 4)
        scipy linkage matrix.
    leaves : list of int
        Dendrogram leaf order.
    """

    labels: np.ndarray
    linkage: np.ndarray
    leaves: list[int]


# scipy's linkage methods for a distance matrix
LINKAGE_METHODS = ("single", "complete", "average", "weighted", "centroid", "median", "ward")


def _distances(dist: Any) -> np.ndarray:
    """A square matrix of finite, non-negative distances, or ValueError naming ``dist``."""
    d = finite_array("dist", dist, ndim=2, min_length=None, max_abs=MAX_MAGNITUDE)
    if d.shape[0] != d.shape[1]:
        raise ValueError(f"dist must be a square matrix, got shape {d.shape}")
    if np.any(d < 0.0):
        raise ValueError("dist has negative distances")
    return d


def cluster(dist: np.ndarray, *, n_clusters: int | None = None, threshold: float | None = None,
            method: str = "average") -> Clustering:
    """Hierarchical clustering of a distance matrix (scipy linkage).

    Without ``n_clusters`` or ``threshold`` the tree is cut where the mean silhouette width is best
    (2 to 10 clusters), not at the largest gap between merge heights: one near-duplicate pair
    merging far below everything else would make that gap cut 15 mocap clips into 14 clusters.

    Parameters
    ----------
    dist : ndarray, shape (m, m)
        Distance matrix (symmetrised), m >= 2.
    n_clusters : int, optional
        Cut into this many clusters.
    threshold : float, optional
        Cut at this merge height.
    method : str
        scipy linkage method.

    Returns
    -------
    Clustering

    Raises
    ------
    ValueError
        If ``dist`` is not a square matrix of finite non-negative distances with at least 2
        rows, or on a bad ``n_clusters``, ``threshold`` or ``method``.

    Examples
    --------
    Two tight pairs of clips far from each other:

    >>> import numpy as np
    >>> d = np.array([[0, 1, 9, 9], [1, 0, 9, 9], [9, 9, 0, 1], [9, 9, 1, 0]], dtype=float)
    >>> cluster(d).labels.tolist()
    [1, 1, 2, 2]
    >>> nearest(d, 0, k=2)
    [(1, 1.0), (2, 9.0)]
    """
    from scipy.cluster.hierarchy import dendrogram, fcluster, linkage
    from scipy.spatial.distance import squareform

    d = _distances(dist)
    m = d.shape[0]
    if m < 2:
        raise ValueError("dist: need a square distance matrix of at least 2 clips")
    if n_clusters is not None:
        n_clusters = positive_int("n_clusters", n_clusters, minimum=1)
    if threshold is not None:
        threshold = non_negative("threshold", threshold)
    choice("method", method, LINKAGE_METHODS)
    z = linkage(squareform(0.5 * (d + d.T), checks=False), method=method)
    if n_clusters:
        labels = fcluster(z, int(n_clusters), criterion="maxclust")
    elif threshold is not None:
        labels = fcluster(z, float(threshold), criterion="distance")
    elif m < 3:
        labels = np.ones(m, dtype=int)
    else:
        labels = _best_silhouette_cut(z, d)
    leaves = dendrogram(z, no_plot=True)["leaves"]
    return Clustering(np.asarray(labels, dtype=int), z, [int(i) for i in leaves])


def silhouette(dist: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette width (Rousseeuw 1987) of a clustering; singletons score 0.

    Parameters
    ----------
    dist : ndarray, shape (m, m)
    labels : ndarray, shape (m,)

    Returns
    -------
    float
        In [-1, 1]; higher is better separated.
    """
    d = _distances(dist)
    labels = np.asarray(labels)
    if labels.shape != (d.shape[0],):
        raise ValueError(f"labels has shape {labels.shape}, expected ({d.shape[0]},) (one per clip)")
    scores = np.zeros(d.shape[0])
    for i in range(d.shape[0]):
        same = labels == labels[i]
        if same.sum() < 2:
            continue
        a = d[i, same].sum() / (same.sum() - 1)
        b = min(d[i, labels == k].mean() for k in set(labels.tolist()) if k != labels[i])
        scores[i] = (b - a) / max(a, b) if max(a, b) > 0 else 0.0
    return float(scores.mean())


def _best_silhouette_cut(z: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Cut the tree into the number of clusters (2 .. min(10, m-1)) with the best mean silhouette."""
    from scipy.cluster.hierarchy import fcluster

    m = d.shape[0]
    best_labels, best_score = np.ones(m, dtype=int), -np.inf
    for k in range(2, min(10, m - 1) + 1):
        labels = fcluster(z, k, criterion="maxclust")
        if len(set(labels.tolist())) < 2:
            continue
        score = silhouette(d, labels)
        if score > best_score + 1e-12:
            best_labels, best_score = labels, score
    return best_labels


def nearest(dist: np.ndarray, index: int, k: int = 5) -> list[tuple[int, float]]:
    """The ``k`` clips closest to clip ``index`` (itself excluded), nearest first.

    Parameters
    ----------
    dist : ndarray, shape (m, m)
    index : int
    k : int

    Returns
    -------
    list of (int, float)
        (clip index, distance) pairs.
    """
    d = _distances(dist)
    index = positive_int("index", index, minimum=0)
    if index >= d.shape[0]:
        raise ValueError(f"index {index} is out of range 0..{d.shape[0] - 1}")
    k = positive_int("k", k, minimum=0)
    row = d[index]
    order = [int(j) for j in np.argsort(row, kind="stable") if j != index]
    return [(j, float(row[j])) for j in order[:k]]
