"""Compare a whole library without all pairs: cheap candidates, exact elastic distances only for them.

The full elastic distance matrix of m clips costs m (m - 1) / 2 dynamic-programming alignments
(7-43 ms each): days for a 2,500-clip library. Here:

1. :func:`embed` prepares every clip once (:func:`anim_signals.manifolds.elastic.prepare`: resampled,
   SRV-mapped, unit length, closed curves projected onto C^c) and keeps a coarse copy of each SRV
   (``coarse`` intervals, exact interval averages) with its Fourier transform.
2. :func:`cheap_distances` gives every pair a cheap distance: the coarse SRVs aligned by the best
   circular shift (closed curves; the maximum of the circular correlation, by FFT, for all shifts at
   once) and then by dynamic time warping on the coarse grid (``L`` x ``L`` cells instead of the exact
   alignment's sub-interval lattice, vectorised over all clips). It is not the elastic distance, but
   ranks clips much as it does.
3. :func:`propose_pairs` keeps each clip's ``n_candidates`` nearest by the cheap distance; the union
   of these pairs is all that gets an exact distance (:func:`pair_distances`, in independent blocks
   that can run anywhere: :func:`pair_blocks`).
4. :func:`knn_graph` builds the k-nearest-neighbour graph from the exact distances,
   :func:`cluster_library` clusters the library (average linkage on the exact distances where
   computed, the cheap distances elsewhere) and picks one representative per cluster (its medoid),
   and the representatives get a full exact matrix for a dendrogram.

:func:`compare_library` runs all of it in this process; a distributed runner calls the same steps and
maps :func:`pair_distances` over :func:`pair_blocks`. :func:`knn_recall` measures the graph against the
full matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..manifolds.clustering import Clustering, cluster
from ..manifolds.elastic import Prepared, prepare, prepared_distance
from ..validation import positive_int

__all__ = ["Embedding", "LibraryComparison", "NeighbourGraph", "cheap_distances", "cluster_library",
           "compare_library", "default_candidates", "embed", "exact_knn", "knn_graph", "knn_recall", "pair_blocks", "pair_distances",
           "propose_pairs", "representative_matrix"]


@dataclass
class Embedding:
    """Every clip prepared once (:func:`embed`).

    Attributes
    ----------
    prepared : list of Prepared
        For the exact distances.
    coarse : ndarray, shape (m, L, n)
        Unit-norm SRVs averaged over ``L`` equal intervals.
    spectra : ndarray of complex, shape (m, L // 2 + 1, n)
        Their Fourier transforms along time.
    closed : bool
    """

    prepared: list[Prepared]
    coarse: np.ndarray
    spectra: np.ndarray
    closed: bool

    @property
    def size(self) -> int:
        """Number of clips."""
        return len(self.prepared)


def _pool(q: np.ndarray, intervals: int) -> np.ndarray:
    """Average of a piecewise-constant SRV over ``intervals`` equal intervals (exact integrals)."""
    m = q.shape[0]
    cum = np.vstack([np.zeros((1, q.shape[1])), np.cumsum(q, axis=0)])  # integral in interval units
    edges = np.linspace(0.0, m, intervals + 1)
    idx = np.clip(np.floor(edges).astype(int), 0, m - 1)
    integral = cum[idx] + (edges - idx)[:, None] * q[idx]
    pooled = np.diff(integral, axis=0) * (intervals / m)
    return pooled / np.sqrt(np.sum(pooled * pooled) / intervals)


def embed(curves: Sequence[np.ndarray], *, n_samples: int = 100, closed: bool = True,
          coarse: int = 24) -> Embedding:
    """Prepare clips for :func:`cheap_distances` and :func:`pair_distances`.

    Parameters
    ----------
    curves : sequence of ndarray, each (N_i, n)
        Continuous clips with the same channels (e.g. body features), N_i >= 2.
    n_samples : int
        Samples per clip for the exact distances (as :func:`anim_signals.manifolds.elastic.prepare`).
    closed : bool
        Compare as cycles (start point searched), as the seed does.
    coarse : int
        Intervals of the cheap embedding, 4 .. ``n_samples - 1``.

    Returns
    -------
    Embedding

    Raises
    ------
    ValueError
        On fewer than 2 clips, clips with different channel counts (different rigs: compare body
        features), NaN / infinite values or a clip that does not move (named by index).

    Examples
    --------
    >>> t = np.linspace(0.0, 1.0, 50)
    >>> e = embed([np.column_stack([np.sin(2 * np.pi * t * f), np.cos(2 * np.pi * t)]) for f in (1, 2, 3)],
    ...           n_samples=40, coarse=8)
    >>> e.size, e.coarse.shape, e.spectra.shape
    (3, (3, 8, 2), (3, 5, 2))
    """
    m = len(curves)
    if m < 2:
        raise ValueError(f"curves: need at least 2 clips to compare, got {m}")
    n_samples = positive_int("n_samples", n_samples, minimum=5)
    coarse = positive_int("coarse", coarse, minimum=4)
    if coarse > n_samples - 1:
        raise ValueError(f"coarse ({coarse}) must not exceed n_samples - 1 ({n_samples - 1})")
    widths = {np.shape(c)[1] if np.ndim(c) == 2 else 1 for c in curves}
    if len(widths) > 1:
        raise ValueError(f"curves: clips have different channel counts {sorted(widths)} (different rigs? "
                         "compare them by body features)")
    prepared = []
    for i, c in enumerate(curves):
        try:
            prepared.append(prepare(c, n_samples=n_samples, closed=closed))
        except ValueError as err:
            raise ValueError(f"curves[{i}]: {err}") from err
    pooled = np.stack([_pool(p.q, coarse) for p in prepared])
    return Embedding(prepared, pooled, np.fft.rfft(pooled, axis=1), closed)


def _warped_chords(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dynamic time warping of coarse SRVs, pair by pair: ``a`` and ``b`` of shape (P, L, n) -> (P,)
    square roots of the mean squared difference along the best monotone path (steps: both, either)."""
    length = a.shape[1]
    cost = np.einsum("pic,pjc->pij", a, b, optimize=True)
    cost = (np.sum(a * a, axis=2)[:, :, None] + np.sum(b * b, axis=2)[:, None, :] - 2.0 * cost).clip(0.0)
    prev = np.full((a.shape[0], length + 1), np.inf)
    prev[:, 0] = 0.0
    for i in range(length):
        cur = np.full_like(prev, np.inf)
        for j in range(length):
            cur[:, j + 1] = cost[:, i, j] + np.minimum(np.minimum(prev[:, j], prev[:, j + 1]), cur[:, j])
        prev = cur
    return np.sqrt(prev[:, length] / length)


def cheap_distances(embedding: Embedding, rows: Sequence[int] | np.ndarray | None = None, *,
                    warp: bool = True) -> np.ndarray:
    """Cheap distances between the coarse SRVs: aligned by the best circular shift (closed curves),
    then (``warp``) by dynamic time warping on the coarse grid.

    The shift maximises the circular cross-correlation (FFT, every shift at once); without ``warp``
    the distance is the great-circle angle at that shift. With ``warp`` it is the angle whose chord is
    the root-mean-square difference along the best warping path of the ``L`` coarse intervals (the
    elastic distance's time warping, roughly, at a tiny fraction of its cost): a better ranking when
    clips differ in timing (on the benchmark's library, recall@10 0.96 instead of 0.90 at 9 % of the pairs).

    Parameters
    ----------
    embedding : Embedding
    rows : sequence of int, optional
        Clips to compute rows for (default: all; a block of rows bounds the memory to
        ``len(rows) x m x L x L`` floats).
    warp : bool
        Dynamic time warping after the shift (default), or the shift alone.

    Returns
    -------
    ndarray, shape (len(rows), m)
        Radians in [0, pi]; a clip's distance to itself is 0. Not exactly symmetric with ``warp``
        (the shifted start changes the warping path): :func:`compare_library` takes the smaller of both.

    Examples
    --------
    >>> t = np.linspace(0.0, 1.0, 65)
    >>> walk = np.column_stack([np.sin(2 * np.pi * t), np.cos(2 * np.pi * t), np.sin(4 * np.pi * t)])
    >>> shifted = np.roll(walk[:-1], 16, axis=0); shifted = np.vstack([shifted, shifted[:1]])
    >>> e = embed([walk, shifted], n_samples=65, coarse=16)
    >>> bool(cheap_distances(e)[0, 1] < 1e-6), bool(cheap_distances(e, warp=False)[0, 1] < 1e-6)
    (True, True)
    """
    rows_ = np.arange(embedding.size) if rows is None else np.asarray(rows, dtype=int)
    m, length = embedding.size, embedding.coarse.shape[1]
    if embedding.closed:
        f_rows = np.conj(embedding.spectra[rows_])  # (r, F, n)
        cross = np.einsum("rfc,mfc->rmf", f_rows, embedding.spectra, optimize=True)
        corr_all = np.fft.irfft(cross, n=length, axis=2) / length  # (r, m, shift)
        shift = corr_all.argmax(axis=2)
        corr = corr_all.max(axis=2)
    else:
        flat = embedding.coarse.reshape(m, -1)
        corr = flat[rows_] @ flat.T / length
        shift = np.zeros((rows_.size, m), dtype=int)
    if warp:
        out = np.empty((rows_.size, m))
        steps = np.arange(length)
        for r, i in enumerate(rows_):
            rolled = embedding.coarse[np.arange(m)[:, None], (steps[None, :] + shift[r][:, None]) % length]
            chord = _warped_chords(np.broadcast_to(embedding.coarse[i], rolled.shape), rolled)
            out[r] = 2.0 * np.arcsin(np.clip(chord / 2.0, 0.0, 1.0))
    else:
        out = np.arccos(np.clip(corr, -1.0, 1.0))
    out[np.arange(rows_.size), rows_] = 0.0
    return out


def propose_pairs(cheap: np.ndarray, n_candidates: int) -> np.ndarray:
    """Each clip's ``n_candidates`` nearest clips by the cheap distance, as a set of pairs.

    Parameters
    ----------
    cheap : ndarray, shape (m, m)
        :func:`cheap_distances`.
    n_candidates : int
        Candidates per clip (at most m - 1; more are capped).

    Returns
    -------
    ndarray of int, shape (P, 2)
        Pairs ``(i, j)`` with ``i < j``, sorted, each once: the union over clips.

    Examples
    --------
    >>> d = np.array([[0, 1, 5], [1, 0, 4], [5, 4, 0]], dtype=float)
    >>> propose_pairs(d, 1).tolist()
    [[0, 1], [1, 2]]
    """
    m = cheap.shape[0]
    c = min(positive_int("n_candidates", n_candidates), m - 1)
    masked = np.array(cheap, dtype=float, copy=True)
    np.fill_diagonal(masked, np.inf)
    nearest = np.argsort(masked, axis=1, kind="stable")[:, :c]
    i = np.repeat(np.arange(m), c)
    j = nearest.ravel()
    pairs = np.unique(np.column_stack([np.minimum(i, j), np.maximum(i, j)]), axis=0)
    return pairs.astype(int)


def default_candidates(k: int) -> int:
    """Candidates per clip for a k-NN graph when none are given: ``ceil(1.5 k)`` (k = 10: 15; on the
    benchmark's 225-clip library recall@10 0.96 with exact distances for 9 % of the pairs)."""
    return -(-3 * int(k) // 2)


def pair_blocks(pairs: np.ndarray, block_size: int | None = None) -> list[np.ndarray]:
    """``pairs`` cut into consecutive blocks of at most ``block_size`` (one task each).

    The default is about 64 blocks (so that every worker of a cluster gets several), of 8 to 256 pairs
    (an exact distance costs 10-50 ms: a block is 0.1-10 s of work, far above a task's scheduling cost).
    """
    if block_size is None:
        block_size = max(8, min(256, -(-len(pairs) // 64)))
    block_size = positive_int("block_size", block_size)
    return [pairs[s:s + block_size] for s in range(0, len(pairs), block_size)]


def pair_distances(prepared: Embedding | Mapping[int, Prepared] | Sequence[Prepared], pairs: np.ndarray, *,
                   exact: bool = False) -> np.ndarray:
    """Exact elastic distances of the given pairs (:func:`anim_signals.manifolds.elastic.prepared_distance`).

    Parameters
    ----------
    prepared : Embedding, or mapping or sequence of Prepared
        Clip index -> prepared clip (a mapping may hold only the clips the pairs use).
    pairs : ndarray of int, shape (P, 2)
    exact : bool
        Closed curves: path-straightened geodesics instead of the great-circle angle after alignment.

    Returns
    -------
    ndarray, shape (P,)
        Radians.
    """
    clips = prepared.prepared if isinstance(prepared, Embedding) else prepared
    return np.array([prepared_distance(clips[int(i)], clips[int(j)], exact=exact) for i, j in pairs], dtype=float)


@dataclass
class NeighbourGraph:
    """The k-nearest-neighbour graph of a library (:func:`knn_graph`).

    Attributes
    ----------
    indices : ndarray of int, shape (m, k)
        Each clip's nearest clips, nearest first; -1 where fewer than k were compared.
    distances : ndarray, shape (m, k)
        Their exact distances (inf where -1).
    pairs : ndarray of int, shape (P, 2)
        Every pair with an exact distance.
    pair_distances : ndarray, shape (P,)
    """

    indices: np.ndarray
    distances: np.ndarray
    pairs: np.ndarray
    pair_distances: np.ndarray

    @property
    def pair_fraction(self) -> float:
        """Exact pairs computed / all m (m - 1) / 2 pairs."""
        m = self.indices.shape[0]
        return float(len(self.pairs) / max(m * (m - 1) / 2, 1))


def knn_graph(m: int, pairs: np.ndarray, distances: np.ndarray, k: int) -> NeighbourGraph:
    """k nearest neighbours of every clip among the pairs with an exact distance.

    Parameters
    ----------
    m : int
        Number of clips.
    pairs : ndarray of int, shape (P, 2)
    distances : ndarray, shape (P,)
    k : int

    Returns
    -------
    NeighbourGraph

    Examples
    --------
    >>> g = knn_graph(3, np.array([[0, 1], [1, 2]]), np.array([0.5, 0.2]), k=2)
    >>> g.indices.tolist()
    [[1, -1], [2, 0], [1, -1]]
    """
    k = positive_int("k", k)
    pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
    distances = np.asarray(distances, dtype=float)
    idx = np.full((m, k), -1, dtype=int)
    dist = np.full((m, k), np.inf)
    both = np.concatenate([pairs, pairs[:, ::-1]])
    d2 = np.concatenate([distances, distances])
    order = np.lexsort((both[:, 1], d2, both[:, 0]))  # by clip, then distance, then neighbour index
    both, d2 = both[order], d2[order]
    starts = np.searchsorted(both[:, 0], np.arange(m + 1))
    for i in range(m):
        a, b = starts[i], min(starts[i + 1], starts[i] + k)
        idx[i, :b - a] = both[a:b, 1]
        dist[i, :b - a] = d2[a:b]
    return NeighbourGraph(idx, dist, pairs, distances)


def exact_knn(full: np.ndarray, k: int) -> np.ndarray:
    """Each clip's k nearest clips by a full distance matrix (itself excluded; ties by index).

    Returns
    -------
    ndarray of int, shape (m, k)
    """
    d = np.array(full, dtype=float, copy=True)
    np.fill_diagonal(d, np.inf)
    return np.argsort(d, axis=1, kind="stable")[:, :min(k, d.shape[0] - 1)]


def knn_recall(indices: np.ndarray, full: np.ndarray, k: int) -> float:
    """Recall@k: the mean share of each clip's true k nearest neighbours (by ``full``) that the graph found.

    Parameters
    ----------
    indices : ndarray of int, shape (m, >= k)
        :attr:`NeighbourGraph.indices`.
    full : ndarray, shape (m, m)
        The full distance matrix.
    k : int

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> full = np.array([[0, 1, 2], [1, 0, 3], [2, 3, 0]], dtype=float)
    >>> knn_recall(np.array([[1], [2], [0]]), full, 1)
    0.6666666666666666
    """
    k = positive_int("k", k)
    truth = exact_knn(full, k)
    found = np.asarray(indices)[:, :k]
    hits = [len(set(truth[i].tolist()) & set(found[i].tolist())) for i in range(truth.shape[0])]
    return float(np.mean(hits) / truth.shape[1])


def cluster_library(cheap: np.ndarray, pairs: np.ndarray, distances: np.ndarray, *,
                    n_clusters: int | None = None) -> tuple[np.ndarray, list[int]]:
    """Clusters of a library and one representative (medoid) per cluster.

    Average linkage (:func:`anim_signals.manifolds.clustering.cluster`, automatic count by silhouette
    unless ``n_clusters``) on the exact distances where computed and the cheap ones elsewhere (pairs
    far apart by the cheap distance, whose exact value would not change which clusters merge first).

    Parameters
    ----------
    cheap : ndarray, shape (m, m)
    pairs : ndarray of int, shape (P, 2)
    distances : ndarray, shape (P,)
    n_clusters : int, optional

    Returns
    -------
    labels : ndarray of int, shape (m,)
        Cluster per clip, from 1.
    representatives : list of int
        One clip per cluster (in label order): the one with the smallest summed distance to its cluster.
    """
    mixed = np.array(cheap, dtype=float, copy=True)
    mixed = 0.5 * (mixed + mixed.T)
    pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
    mixed[pairs[:, 0], pairs[:, 1]] = distances
    mixed[pairs[:, 1], pairs[:, 0]] = distances
    np.fill_diagonal(mixed, 0.0)
    k = None if n_clusters is None else min(int(n_clusters), mixed.shape[0])
    labels = np.asarray(cluster(mixed, n_clusters=k).labels, dtype=int)
    reps = []
    for c in sorted(set(labels.tolist())):
        members = np.flatnonzero(labels == c)
        reps.append(int(members[np.argmin(mixed[np.ix_(members, members)].sum(axis=1))]))
    return labels, reps


@dataclass
class LibraryComparison:
    """The result of :func:`compare_library`.

    Attributes
    ----------
    graph : NeighbourGraph
    labels : ndarray of int, shape (m,)
        Cluster per clip, from 1.
    representatives : list of int
        One clip per cluster.
    representative_distances : ndarray, shape (r, r)
        Exact distances between the representatives.
    representative_clustering : Clustering or None
        Their dendrogram (None with a single representative).
    """

    graph: NeighbourGraph
    labels: np.ndarray
    representatives: list[int]
    representative_distances: np.ndarray
    representative_clustering: Clustering | None


BlockMapper = Callable[[Embedding, list[np.ndarray]], list[np.ndarray]]


def _local_blocks(embedding: Embedding, blocks: list[np.ndarray]) -> list[np.ndarray]:
    return [pair_distances(embedding, b) for b in blocks]


def _local_rows(embedding: Embedding, rows: list[np.ndarray]) -> list[np.ndarray]:
    return [cheap_distances(embedding, r) for r in rows]


def representative_matrix(embedding: Embedding, reps: Sequence[int], known: Mapping[tuple[int, int], float],
                          map_blocks: BlockMapper | None = None) -> np.ndarray:
    """Full exact distance matrix between ``reps`` (pairs in ``known`` reused; the others by ``map_blocks``,
    default here)."""
    map_blocks = map_blocks or _local_blocks
    r = len(reps)
    out = np.zeros((r, r))
    missing = []
    for a in range(r):
        for b in range(a + 1, r):
            key = (min(reps[a], reps[b]), max(reps[a], reps[b]))
            if key in known:
                out[a, b] = out[b, a] = known[key]
            else:
                missing.append((a, b, key))
    if missing:
        pairs = np.array([key for _, _, key in missing], dtype=int)
        values = np.concatenate(map_blocks(embedding, pair_blocks(pairs, 64)))
        for (a, b, _), v in zip(missing, values):
            out[a, b] = out[b, a] = v
    return out


def compare_library(curves: Sequence[np.ndarray], *, k: int = 10, n_candidates: int | None = None,
                    closed: bool = True, n_samples: int = 100, coarse: int = 24,
                    n_clusters: int | None = None, block_size: int | None = None,
                    map_blocks: BlockMapper | None = None, map_rows: BlockMapper | None = None) -> LibraryComparison:
    """k-NN graph, clusters and representatives of a library, exact distances only for candidates.

    Parameters
    ----------
    curves : sequence of ndarray, each (N_i, n)
        The clips (same channels).
    k : int
        Neighbours per clip in the graph.
    n_candidates : int, optional
        Candidates per clip by the cheap distance (default :func:`default_candidates`: ``1.5 k``).
    closed, n_samples, coarse
        As in :func:`embed`.
    n_clusters : int, optional
        Default: automatic (best silhouette).
    block_size : int, optional
        Pairs per block of exact distances (default: :func:`pair_blocks`'s).
    map_blocks : callable, optional
        ``map_blocks(embedding, blocks) -> [distances per block]``: where the blocks run (default None: here,
        one after the other; a distributed runner passes its own).
    map_rows : callable, optional
        ``map_rows(embedding, row_blocks) -> [cheap_distances(embedding, rows) per block]`` (default: here):
        the cheap distances of all pairs, O(m^2), by blocks of 64 rows.

    Returns
    -------
    LibraryComparison

    Raises
    ------
    ValueError
        As :func:`embed`.

    Examples
    --------
    >>> t = np.linspace(0.0, 1.0, 60)
    >>> clips = [np.column_stack([np.sin(2 * np.pi * t + p), np.cos(2 * np.pi * t) * a])
    ...          for p in (0.0, 0.1) for a in (1.0, 3.0)]
    >>> r = compare_library(clips, k=1, n_samples=40, coarse=8, n_clusters=2)
    >>> r.graph.indices[:, 0].tolist(), r.labels.tolist()
    ([2, 3, 0, 1], [2, 1, 2, 1])
    """
    k = positive_int("k", k)
    map_blocks = map_blocks or _local_blocks
    map_rows = map_rows or _local_rows
    embedding = embed(curves, n_samples=n_samples, closed=closed, coarse=coarse)
    m = embedding.size
    cheap = np.vstack(map_rows(embedding, [np.arange(s, min(s + 64, m)) for s in range(0, m, 64)]))
    cheap = np.minimum(cheap, cheap.T)
    pairs = propose_pairs(cheap, n_candidates or default_candidates(k))
    blocks = pair_blocks(pairs, block_size)
    distances = np.concatenate(map_blocks(embedding, blocks)) if blocks else np.zeros(0)
    graph = knn_graph(m, pairs, distances, min(k, m - 1))
    labels, reps = cluster_library(cheap, pairs, distances, n_clusters=n_clusters)
    known = {(int(i), int(j)): float(d) for (i, j), d in zip(pairs, distances)}
    rep_d = representative_matrix(embedding, reps, known, map_blocks)
    rep_clustering = cluster(rep_d, n_clusters=len(reps)) if len(reps) >= 2 else None
    return LibraryComparison(graph, labels, reps, rep_d, rep_clustering)
