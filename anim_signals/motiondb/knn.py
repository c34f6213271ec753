"""k-nearest-neighbour backends for the motion database: exact for small databases, approximate above.

Richert, "Animation Database for real-time motion reconstruction", searches the k = 256 poses
nearest each query frame with an exact kd-tree and notes that an approximate search would help at
scale.  Here one small interface, :class:`NeighbourIndex`, hides four backends:

``'KDTREE'``
    scipy ``cKDTree`` (exact; the only backend that takes ``eps``).  Fastest below ~2k frames.
``'FLAT'``
    Exact brute force: faiss ``IndexFlatL2`` when faiss imports, else a numpy BLAS scan.
``'HNSW'``
    faiss ``IndexHNSWFlat`` (Malkov & Yashunin, "Efficient and robust approximate nearest neighbor
    search using Hierarchical Navigable Small World graphs"); ``IndexHNSWSQ`` (float16) when memory asks.
``'IVF'``
    faiss inverted lists over k-means cells (Jégou, Douze & Schmid, "Product quantization for nearest
    neighbor search"): ``IndexIVFFlat`` (float32), ``IndexIVFScalarQuantizer`` (float16), or ``PQ``:
    ``IndexIVFPQFastScan`` (4-bit codes, one sub-quantizer per channel) whose 2k best candidates are
    re-ranked exactly from the database frames.  AUTO's choice above :data:`EXACT_MAX_FRAMES`.

faiss is an optional import: when it is missing, :func:`build_index` falls back to exact search and
says so in :attr:`NeighbourIndex.message`.  Every backend returns float64 Euclidean distances
recomputed from the database frames (so approximate and exact results agree wherever they find the
same frames), ascending.  An approximate index's recall@k is measured at build time on noisy copies
of the database's own frames against brute force, and its search effort (``efSearch`` / ``nprobe``)
is raised until the recall target is met, or exact search is used instead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..validation import finite_scalar, positive_int

__all__ = [
    "BACKENDS",
    "STORAGES",
    "IndexBuildCancelled",
    "IndexOptions",
    "IndexTooLarge",
    "NeighbourIndex",
    "available_backends",
    "available_memory",
    "build_index",
    "choose_backend",
    "estimate_nbytes",
    "exact_knn",
    "import_faiss",
    "measure_recall",
]

BACKENDS = ("AUTO", "KDTREE", "FLAT", "HNSW", "IVF")
STORAGES = ("AUTO", "FLOAT32", "FLOAT16", "PQ")

# AUTO policy, measured on this 2-core machine (busy: load 2-7) with smooth random walks, 39 channels,
# 300-frame clips, one query at a time, k = 256, Gaussian noise 0.2 x the channel's std; ms per query
# through NeighbourIndex.search (float64 re-rank included):
#   N frames        1k     3k     10k    30k    100k   1M
#   cKDTree         0.20   0.54   0.99   3.4    21     163 (build 1.7 s)
#   faiss flat      0.20   0.30   0.33   0.80   3.0    19-30
#   numpy flat      (BLAS threads: 4.5 ms under load)  0.38   2.1    7.6
#   faiss HNSW:     1M, M 32, efConstruction 40 (build 44 s): recall@256 only 0.26 at efSearch 256
#                   (0.33 ms), 0.34 at 512 (0.76 ms); M 16: 0.29 at 256.  The noisy query's 256 neighbours
#                   are a stretch of its own clip plus far frames of other clips at nearly equal distances
#                   (high-dimensional concentration): a graph walk misses those, a scan of cells does not.
#   faiss IVF-Flat: 1M, nlist 4096 (train 21 s + add 10 s): recall@256 0.82 at 0.33 ms (nprobe 32),
#                   0.88 at 0.53 ms (nprobe 64); nlist 1024: 0.93 at 2.8 ms (nprobe 128)
#   faiss IVF-PQ fast scan (4-bit, 39 sub-quantizers) + exact re-rank of 2k: 1M, nlist 4096 (train
#                   50-67 s + add 22-29 s under load, 28 MB): recall@256 0.89 at 0.27 ms (nprobe 64),
#                   0.93 at 0.34 ms (128), 0.966 at 0.49 ms (256); recall@32 1.0.  nlist 2048 (train
#                   16-32 s + add 11 s): 0.925 at 0.35 ms (128), 0.968 at 0.53 ms (256), 0.992 at 0.79 ms
#                   (512); nlist 1024: 0.985 at 0.97 ms (256).  Codes of the frames (by_residual off) at
#                   nlist 2000, as built now: AUTO at 1M tunes nprobe to 222 (raised x1.5, then bisected),
#                   recall@256 0.954, build 57 s, 28 MB; Reconstructor.step median 1.46 ms (k-NN 0.61,
#                   graph 0.29, synthesis 0.50) under load 7, exact hits 0.598 over 900 frames; on 300 of
#                   them the same best frame as exact search every time (hits 0.56 both).  At 10M (nlist 6324): nprobe 548
#                   recall 0.9496, 822 0.970; build 723 s (k-means 105 s, assignment 600 s), 276 MB,
#                   step median 5.7 ms at nprobe 822 (k-NN 3.2 ms) under load 7.
# So: cKDTree up to KDTREE_MAX_FRAMES (NUMPY_FLAT_ABOVE without faiss), an exact flat scan up to
# EXACT_MAX_FRAMES (at most ~1.5 ms, nothing to build), IVF-PQ above (nprobe tuned to the target).
KDTREE_MAX_FRAMES = 2_000
NUMPY_FLAT_ABOVE = 10_000
EXACT_MAX_FRAMES = 50_000
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 40
FLOAT16_ABOVE_BYTES = 2 << 30  # float32 vectors beyond 2 GiB (about 13M x 39): store them as float16
MAX_EF_SEARCH = 4096
RECALL_SAMPLE = 200
BUILD_CHUNK = 50_000  # frames added per step: progress and cancel between steps

ProgressFn = Callable[[float, str], None]
CancelFn = Callable[[], bool]


class IndexBuildCancelled(Exception):
    """The caller's ``cancel()`` returned True during :func:`build_index`; nothing was kept."""


class IndexTooLarge(MemoryError):
    """The index would not fit in the memory available; the message gives the size needed."""


def import_faiss() -> tuple[Any, str]:
    """faiss, or None and a message saying why not (the caller shows it).

    Returns
    -------
    (module or None, str)
    """
    try:
        import faiss  # noqa: PLC0415 - optional dependency, imported when needed
    except ImportError as err:  # also sys.modules['faiss'] = None
        return None, f"faiss is not available ({err}): exact search instead of an approximate index"
    return faiss, ""


def available_backends() -> tuple[str, ...]:
    """Backends that can be built here: KDTREE and FLAT always, HNSW and IVF with faiss."""
    faiss, _ = import_faiss()
    return ("KDTREE", "FLAT", "HNSW", "IVF") if faiss is not None else ("KDTREE", "FLAT")


def available_memory() -> int | None:
    """Bytes of memory available (Linux ``MemAvailable``), or None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@dataclass(frozen=True)
class IndexOptions:
    """What to build: the backend and the settings that change its answers (all enter the content hash).

    Attributes
    ----------
    backend : str
        One of :data:`BACKENDS`; ``'AUTO'`` lets :func:`choose_backend` pick by size and recall target.
    recall_target : float
        In (0, 1]: recall@k an approximate index must reach on noisy database frames (1: exact search).
    k : int
        Neighbours per query the recall is measured at (the OLNG's K).
    noise : float
        Gaussian noise of the recall queries, x each channel's standard deviation (scenario #1: 0.2).
    seed : int
        Seeds the recall sample and the IVF training sample.
    storage : str
        Vectors of an HNSW / IVF index: ``'FLOAT32'``, ``'FLOAT16'`` (half the memory), ``'PQ'`` (IVF
        only: 4-bit product codes, dim / 2 bytes a frame, candidates re-ranked from the frames) or
        ``'AUTO'`` (IVF: PQ; HNSW: float16 above :data:`FLOAT16_ABOVE_BYTES` of float32 vectors).
    hnsw_m, ef_construction, ef_search : int
        HNSW links per node, build effort, starting search effort (0: max(k, 64)).
    nlist, nprobe : int
        IVF cells (0: about 4 sqrt(N)) and starting cells searched (0: 16).
    eps : float
        KDTREE only: cKDTree's approximate search (neighbours within (1 + eps) x the true distances).
    """

    backend: str = "AUTO"
    recall_target: float = 0.95
    k: int = 256
    noise: float = 0.2
    seed: int = 0
    storage: str = "AUTO"
    hnsw_m: int = HNSW_M
    ef_construction: int = HNSW_EF_CONSTRUCTION
    ef_search: int = 0
    nlist: int = 0
    nprobe: int = 0
    eps: float = 0.0

    def checked(self) -> IndexOptions:
        """``self`` after range checks.

        Raises
        ------
        ValueError
            On an unknown backend or storage, or a setting out of range.
        """
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.storage not in STORAGES:
            raise ValueError(f"storage must be one of {', '.join(STORAGES)}, got {self.storage!r}")
        target = finite_scalar("recall_target", self.recall_target)
        if not 0.0 < target <= 1.0:
            raise ValueError(f"recall_target must be in (0, 1], got {target}")
        positive_int("k", self.k)
        positive_int("hnsw_m", self.hnsw_m, minimum=2)
        positive_int("ef_construction", self.ef_construction)
        for name in ("ef_search", "nlist", "nprobe", "seed"):
            positive_int(name, getattr(self, name), minimum=0)
        if not finite_scalar("noise", self.noise) >= 0.0:
            raise ValueError("noise must be >= 0")
        if not finite_scalar("eps", self.eps) >= 0.0:
            raise ValueError("eps must be >= 0")
        if self.eps > 0.0 and self.backend not in ("AUTO", "KDTREE"):
            raise ValueError(f"eps is cKDTree's approximate search: backend KDTREE, not {self.backend}")
        if self.storage == "PQ" and self.backend == "HNSW":
            raise ValueError("storage PQ is for the IVF backend (HNSW: FLOAT32 or FLOAT16)")
        return self

    def as_dict(self) -> dict:
        """Plain values (JSON), for the index file header and the content hash."""
        return asdict(self)


def choose_backend(n_frames: int, dim: int, recall_target: float = 0.95,
                   available: tuple[str, ...] | None = None) -> str:
    """The backend AUTO picks for a database of ``n_frames`` x ``dim``.

    Exact search below :data:`EXACT_MAX_FRAMES` (cKDTree up to :data:`KDTREE_MAX_FRAMES`, or
    :data:`NUMPY_FLAT_ABOVE` without faiss, a flat scan above) or with ``recall_target`` 1; IVF
    (product-quantised, re-ranked) above when faiss is available, else the flat scan.  HNSW is never chosen: on motion data (frames in chains along
    their clips) its recall@256 stayed under 0.35 at 1M frames where IVF reached 0.97 (numbers at
    :data:`KDTREE_MAX_FRAMES` in the source).

    Parameters
    ----------
    n_frames, dim : int
    recall_target : float
        1 asks for exact search at any size.
    available : tuple of str, optional
        Backends that can be built (default :func:`available_backends`).

    Returns
    -------
    str
        One of ``'KDTREE'``, ``'FLAT'``, ``'IVF'``.

    Examples
    --------
    >>> full = ("KDTREE", "FLAT", "HNSW", "IVF")
    >>> choose_backend(1_000, 39, available=full), choose_backend(16_623, 39, available=full)
    ('KDTREE', 'FLAT')
    >>> choose_backend(1_000_000, 39, available=full)
    'IVF'

    >>> choose_backend(1_000_000, 39, recall_target=1.0)
    'FLAT'
    """
    avail = available_backends() if available is None else tuple(available)
    faiss = "IVF" in avail
    if n_frames <= (KDTREE_MAX_FRAMES if faiss else NUMPY_FLAT_ABOVE) or dim <= 8:  # kd-trees: fast in few dims
        return "KDTREE"
    if n_frames <= EXACT_MAX_FRAMES or recall_target >= 1.0 or not faiss:
        return "FLAT"
    return "IVF"


def _storage(options: IndexOptions, backend: str, n: int, dim: int) -> str:
    if options.storage != "AUTO":
        return options.storage
    if backend == "IVF":
        return "PQ"
    return "FLOAT16" if n * dim * 4 > FLOAT16_ABOVE_BYTES else "FLOAT32"


def _nlist(options: IndexOptions, n: int) -> int:
    # ~2 sqrt(N) cells (2000 at 1M: the recall and query time of 4000 cells at the same nprobe, half
    # the training and assignment), at least 39 frames a cell (faiss' k-means minimum), at most 16384
    return options.nlist or int(max(1, min(2 * math.sqrt(n), n // 39, 16384)))


def estimate_nbytes(backend: str, n: int, dim: int, options: IndexOptions | None = None) -> int:
    """Bytes an index of ``n`` x ``dim`` frames takes in memory (an estimate, within ~20 %).

    Parameters
    ----------
    backend : str
        ``'KDTREE'``, ``'FLAT'``, ``'HNSW'`` or ``'IVF'``.
    n, dim : int
    options : IndexOptions, optional

    Returns
    -------
    int
    """
    o = options or IndexOptions()
    storage = _storage(o, backend, n, dim) if backend in ("HNSW", "IVF") else "FLOAT32"
    value = {"FLOAT16": 2.0, "PQ": 0.5}.get(storage, 4.0)
    if backend == "KDTREE":
        return int(n * (dim * 8 + 8) * 1.3)  # float64 copy, index array, nodes
    if backend == "FLAT":
        return n * dim * 4
    if backend == "HNSW":  # level-0 links 2M int32 each, upper levels ~1/M of that, level table
        return int(n * (dim * value + 2 * o.hnsw_m * 4 * (1.0 + 1.0 / o.hnsw_m) + 16))
    if backend == "IVF":
        return int(n * (dim * value + 8) + _nlist(o, n) * dim * 4)
    raise ValueError(f"unknown backend {backend!r}")


def _check_memory(backend: str, n: int, dim: int, options: IndexOptions) -> None:
    need = estimate_nbytes(backend, n, dim, options) + (n * dim * 4 if backend in ("HNSW", "IVF", "FLAT") else 0)
    have = available_memory()
    if have is not None and need > 0.8 * have:
        raise IndexTooLarge(f"the {backend} index of {n:,} x {dim} frames needs about {need / 2**30:.2f} GiB to "
                            f"build, {have / 2**30:.2f} GiB are available")


# ------------------------------------------------------------------------------------------------
# exact search (reference) and recall
# ------------------------------------------------------------------------------------------------


def _checked_queries(queries: Any, dim: int) -> tuple[np.ndarray, bool]:
    try:
        q = np.asarray(queries, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"queries must be numbers: {err}") from err
    single = q.ndim == 1
    q = np.atleast_2d(q)
    if q.ndim != 2 or q.shape[1] != dim:
        raise ValueError(f"queries must be ({dim},) or (m, {dim}), got shape {np.shape(queries)}")
    if not np.all(np.isfinite(q)):
        raise ValueError("queries have NaN or infinite values: a k-NN search needs finite frames")
    return q, single


def exact_knn(points: np.ndarray, queries: np.ndarray, k: int, chunk: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force k-NN in float64 (the reference the recall is measured against).

    Parameters
    ----------
    points : ndarray, shape (N, Q)
    queries : ndarray, shape (m, Q)
    k : int
        At most N.
    chunk : int
        Database rows per BLAS product (bounds the memory at m x chunk doubles).

    Returns
    -------
    dist : ndarray, shape (m, k)
        Euclidean distances, ascending.
    idx : ndarray of int64, shape (m, k)

    Examples
    --------
    >>> d, i = exact_knn(np.array([[0.0], [1.0], [3.0]]), np.array([[0.9]]), 2)
    >>> i.tolist(), np.round(d, 3).tolist()
    ([[1, 0]], [[0.1, 0.9]])
    """
    x = np.asarray(points, dtype=float)
    q = np.atleast_2d(np.asarray(queries, dtype=float))
    m = q.shape[0]
    best_d = np.full((m, 0), np.inf)
    best_i = np.zeros((m, 0), dtype=np.int64)
    qq = np.einsum("ij,ij->i", q, q)[:, None]
    for s in range(0, x.shape[0], chunk):
        block = x[s:s + chunk]
        d2 = qq - 2.0 * (q @ block.T) + np.einsum("ij,ij->i", block, block)[None, :]
        d_all = np.concatenate([best_d, d2], axis=1)
        i_all = np.concatenate([best_i, np.broadcast_to(np.arange(s, s + block.shape[0]), d2.shape)], axis=1)
        if d_all.shape[1] > k:
            part = np.argpartition(d_all, k - 1, axis=1)[:, :k]
            d_all = np.take_along_axis(d_all, part, axis=1)
            i_all = np.take_along_axis(i_all, part, axis=1)
        best_d, best_i = d_all, i_all
    # exact float64 distances of the candidates, then sorted (ties: lower row first)
    dist = np.linalg.norm(x[best_i] - q[:, None, :], axis=2)
    order = np.lexsort((best_i, dist), axis=1) if m else np.zeros((0, k), dtype=np.int64)
    return np.take_along_axis(dist, order, axis=1), np.take_along_axis(best_i, order, axis=1).astype(np.int64)


def _recall_queries(points: np.ndarray, sample: int, noise: float, seed: int) -> np.ndarray:
    n = points.shape[0]
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n, size=min(sample, n), replace=False))
    std = points[:: max(1, n // 50_000)].std(axis=0)
    return points[rows] + noise * std * rng.standard_normal((rows.size, points.shape[1]))


RECALL_TIE = 1e-9  # relative: a found frame this close to the true k-th distance is a true neighbour


def _recall(points: np.ndarray, q: np.ndarray, found: np.ndarray, truth_dist: np.ndarray) -> float:
    """Mean share of the k found rows that are true k nearest neighbours of their query.

    A found row counts when its true distance (recomputed here, whatever the index reported) is at
    most the true k-th distance: frames at equal distance stand in for each other. Libraries built
    from windows or copies of the same takes hold the same frame many times, and which of the copies
    an index returns is arbitrary; counting row numbers would call that a miss.
    """
    k = truth_dist.shape[1]
    real = found >= 0  # faiss marks a missing answer -1
    rows = np.where(real, found, 0)
    diff = np.asarray(points, dtype=np.float64)[rows] - np.asarray(q, dtype=np.float64)[:, None, :]
    dist = np.sqrt(np.einsum("mkd,mkd->mk", diff, diff))
    near = real & (dist <= truth_dist[:, -1:] * (1.0 + RECALL_TIE) + 1e-12)
    return float(np.mean(near.sum(axis=1) / k))


def measure_recall(index: NeighbourIndex, points: np.ndarray, k: int, noise: float = 0.2,
                   sample: int = RECALL_SAMPLE, seed: int = 0) -> float:
    """recall@k of ``index`` on noisy copies of ``sample`` database frames against :func:`exact_knn`.

    Parameters
    ----------
    index : NeighbourIndex
    points : ndarray, shape (N, Q)
        The frames the index was built over.
    k : int
    noise : float
        Gaussian noise x each channel's standard deviation.
    sample : int
        Database frames drawn (without replacement, seeded).
    seed : int

    Returns
    -------
    float
        Mean over the sample of the share of found frames that are true k nearest neighbours
        (frames at the true k-th distance count: repeated frames stand in for each other), in [0, 1].
    """
    q = _recall_queries(points, sample, noise, seed)
    truth, _ = exact_knn(points, q, k)
    return _recall(points, q, index.search(q, k)[1], truth)


# ------------------------------------------------------------------------------------------------
# the index
# ------------------------------------------------------------------------------------------------


class NeighbourIndex:
    """A built k-NN index over database frames: one interface for every backend.

    Made by :func:`build_index` (or :func:`anim_signals.motiondb.index_store.load_index`).

    Attributes
    ----------
    backend : str
        ``'KDTREE'``, ``'FLAT'``, ``'HNSW'`` or ``'IVF'``.
    settings : dict
        What was built: ``impl`` ('scipy', 'faiss', 'numpy'), and M / efConstruction / efSearch,
        nlist / nprobe, storage, eps as they apply.
    recall : float or None
        recall@``recall_k`` measured at build time (1.0 for exact backends, None if not measured).
    recall_k : int
    build_seconds : float
    message : str
        Why the backend differs from the one asked for (missing faiss, recall target not met), or ''.
    """

    def __init__(self, backend: str, points: np.ndarray, impl: Any, settings: dict, *,
                 recall: float | None = None, recall_k: int = 0, build_seconds: float = 0.0, message: str = ""):
        self.backend = backend
        self.points = points  # float64 (N, Q): distances are recomputed from it
        self._impl = impl
        self.settings = dict(settings)
        self.recall = recall
        self.recall_k = recall_k
        self.build_seconds = build_seconds
        self.message = message

    @property
    def n(self) -> int:
        """Frames indexed."""
        return int(self.points.shape[0])

    @property
    def dim(self) -> int:
        """Query channels."""
        return int(self.points.shape[1])

    @property
    def exact(self) -> bool:
        """True for KDTREE (eps 0) and FLAT."""
        return self.backend == "FLAT" or (self.backend == "KDTREE" and not self.settings.get("eps", 0.0))

    @property
    def nbytes(self) -> int:
        """Memory the index takes (an estimate for scipy / faiss), not counting the frames themselves."""
        if self.backend == "FLAT" and self.settings.get("impl") == "numpy":
            return int(self._impl[0].nbytes + self._impl[1].nbytes)
        return estimate_nbytes(self.backend, self.n, self.dim, IndexOptions(
            storage=self.settings.get("storage", "FLOAT32"), hnsw_m=self.settings.get("M", HNSW_M),
            nlist=self.settings.get("nlist", 0)).checked())

    def set_effort(self, effort: int) -> None:
        """Search effort of an approximate index: efSearch (HNSW) or nprobe (IVF)."""
        if self.backend == "HNSW":
            self._impl.hnsw.efSearch = int(effort)
            self.settings["efSearch"] = int(effort)
        elif self.backend == "IVF":
            self._impl.nprobe = int(min(effort, self.settings["nlist"]))
            self.settings["nprobe"] = int(self._impl.nprobe)

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` indexed frames nearest each query.

        Parameters
        ----------
        queries : ndarray, shape (Q,) or (m, Q)
        k : int
            In 1 .. N.

        Returns
        -------
        dist : ndarray, shape (k,) or (m, k)
            Euclidean distances (float64, from the database frames), ascending.
        idx : ndarray of int64, same shape
            Database rows (distinct per query).

        Raises
        ------
        ValueError
            On a wrong width, NaN / infinite values, or k out of range.
        """
        q, single = _checked_queries(queries, self.dim)
        k = positive_int("k", k)
        if k > self.n:
            raise ValueError(f"k = {k} neighbours but the index has {self.n} frames")
        if self.backend == "KDTREE":
            dist, idx = self._impl.query(q, k=k, eps=self.settings.get("eps", 0.0))
            dist = np.asarray(dist, dtype=float).reshape(q.shape[0], k)
            idx = np.asarray(idx, dtype=np.int64).reshape(q.shape[0], k)
        else:
            idx = self._candidates(q, min(k * self.settings.get("rerank", 1), self.n), k)
            diff = self.points[np.maximum(idx, 0)] - q[:, None, :]
            dist = np.sqrt(np.einsum("mkd,mkd->mk", diff, diff))  # float64, from the database frames
            dist[idx < 0] = np.inf  # a short answer (IVF): fewer candidates, still at least k
            order = np.argsort(dist, axis=1, kind="stable")[:, :k]
            rows = np.arange(q.shape[0])[:, None]
            dist, idx = dist[rows, order], idx[rows, order]
        return (dist[0], idx[0]) if single else (dist, idx)

    def _candidates(self, q: np.ndarray, k: int, k_min: int) -> np.ndarray:
        if self.settings.get("impl") == "numpy":
            x32, sq = self._impl
            q32 = q.astype(np.float32)
            d2 = sq[None, :] - 2.0 * (q32 @ x32.T)  # |x|^2 - 2 x.q (|q|^2 is the same for every row)
            part = (np.argpartition(d2, k - 1, axis=1)[:, :k] if k < self.n
                    else np.tile(np.arange(self.n), (q.shape[0], 1)))
            return part.astype(np.int64)
        _, idx = self._impl.search(np.ascontiguousarray(q, dtype=np.float32), k)
        idx = idx.astype(np.int64)
        short = np.flatnonzero((idx >= 0).sum(axis=1) < k_min)  # IVF: too few frames in the probed cells
        if short.size:
            idx[short] = exact_knn(self.points, q[short], k)[1]
        return idx

    def describe(self) -> str:
        """One line for reports: backend, settings, recall, build time, size."""
        keys = [f"{k}={v}" for k, v in self.settings.items() if k != "impl"]
        recall = "not measured" if self.recall is None else f"{self.recall:.3f}"
        text = (f"{self.backend} ({self.settings.get('impl', '?')}{', ' if keys else ''}{', '.join(keys)}) over "
                f"{self.n:,} x {self.dim} frames: recall@{self.recall_k or '?'} {recall}, built in "
                f"{self.build_seconds:.1f} s, {self.nbytes / 1e6:.1f} MB")
        return text + (f"; {self.message}" if self.message else "")


# ------------------------------------------------------------------------------------------------
# building
# ------------------------------------------------------------------------------------------------


def _tick(progress: ProgressFn | None, cancel: CancelFn | None, fraction: float, text: str) -> None:
    if cancel is not None and cancel():
        raise IndexBuildCancelled("index build cancelled")
    if progress is not None:
        progress(min(max(fraction, 0.0), 1.0), text)


def _exact_index(backend: str, x: np.ndarray, options: IndexOptions, faiss: Any) -> NeighbourIndex:
    if backend == "KDTREE":
        from scipy.spatial import cKDTree  # noqa: PLC0415 - scipy is slow to import

        return NeighbourIndex("KDTREE", x, cKDTree(x), {"impl": "scipy", "eps": float(options.eps)})
    x32 = np.ascontiguousarray(x, dtype=np.float32)
    if faiss is not None:
        flat = faiss.IndexFlatL2(x.shape[1])
        flat.add(x32)
        return NeighbourIndex("FLAT", x, flat, {"impl": "faiss"})
    sq = np.einsum("ij,ij->i", x32, x32)
    return NeighbourIndex("FLAT", x, (x32, sq), {"impl": "numpy"})


def _approx_index(backend: str, x: np.ndarray, options: IndexOptions, faiss: Any,
                  progress: ProgressFn | None, cancel: CancelFn | None) -> NeighbourIndex:
    n, dim = x.shape
    storage = _storage(options, backend, n, dim)
    rng = np.random.default_rng(options.seed)
    if backend == "HNSW":
        if storage == "FLOAT16":
            index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_fp16, options.hnsw_m)
        else:
            index = faiss.IndexHNSWFlat(dim, options.hnsw_m)
        index.hnsw.efConstruction = options.ef_construction
        settings = {"impl": "faiss", "M": options.hnsw_m, "efConstruction": options.ef_construction,
                    "efSearch": 0, "storage": storage}
    else:
        nlist = _nlist(options, n)
        quantizer = faiss.IndexFlatL2(dim)
        settings = {"impl": "faiss", "nlist": nlist, "nprobe": 0, "storage": storage}
        if storage == "PQ":  # 4-bit codes, one sub-quantizer per channel; 2k candidates re-ranked exactly
            index = faiss.IndexIVFPQFastScan(quantizer, dim, nlist, dim, 4)
            # codes of the frames, not of their residuals to the cell centre: one look-up table per query
            # instead of one per cell searched; at 1M, nprobe 256: 0.70 against 1.46 ms, recall@256 0.967
            # against 0.973 (the 2k candidates are re-ranked exactly anyway)
            index.by_residual = False
            index.pq.cp.seed = options.seed
            settings["rerank"] = 2
        elif storage == "FLOAT16":
            index = faiss.IndexIVFScalarQuantizer(quantizer, dim, nlist, faiss.ScalarQuantizer.QT_fp16)
        else:
            index = faiss.IndexIVFFlat(quantizer, dim, nlist)
        index.cp.seed = options.seed
        _tick(progress, cancel, 0.02, f"IVF: k-means of {nlist} cells")
        train = x[np.sort(rng.choice(n, size=min(n, 40 * nlist), replace=False))]  # faiss asks >= 39 a cell
        index.train(np.ascontiguousarray(train, dtype=np.float32))
    if backend == "HNSW" and storage == "FLOAT16":
        index.train(np.ascontiguousarray(x[: min(n, 10_000)], dtype=np.float32))
    for s in range(0, n, BUILD_CHUNK):  # in slices: progress, and a cancel that leaves nothing behind
        _tick(progress, cancel, 0.05 + 0.8 * s / n, f"{backend}: adding frames {s:,} / {n:,}")
        index.add(np.ascontiguousarray(x[s:s + BUILD_CHUNK], dtype=np.float32))
    out = NeighbourIndex(backend, x, index, settings)
    out.set_effort(options.ef_search or max(options.k, 64) if backend == "HNSW" else options.nprobe or 32)
    return out


def _recall_sample(x: np.ndarray, o: IndexOptions, k: int, progress: ProgressFn | None,
                   cancel: CancelFn | None) -> tuple[np.ndarray, np.ndarray]:
    """The build's recall queries (noisy copies of its own frames) and their true k-th distances."""
    _tick(progress, cancel, 0.86, f"measuring recall@{k} on {min(RECALL_SAMPLE, x.shape[0])} noisy frames")
    q = _recall_queries(x, RECALL_SAMPLE, o.noise, o.seed)
    return q, exact_knn(x, q, k)[0]


def _tune_effort(index: NeighbourIndex, x: np.ndarray, q: np.ndarray, truth: np.ndarray, k: int, target: float,
                 progress: ProgressFn | None, cancel: CancelFn | None) -> None:
    """Measure ``index.recall`` and raise its search effort (efSearch / nprobe) x1.5 a step until it
    meets ``target`` or the effort is at its top, then bisect back down to within 10 % of the least
    effort that meets it."""
    key = "efSearch" if index.backend == "HNSW" else "nprobe"
    top = MAX_EF_SEARCH if index.backend == "HNSW" else index.settings["nlist"]
    index.recall = _recall(x, q, index.search(q, k)[1], truth)
    low = 0  # the largest effort known to miss the target
    while index.recall < target and index.settings[key] < top:
        # x1.5 a step: at 10M frames nprobe 512 gave 0.945 and 1024 0.980 at twice the time
        low = index.settings[key]
        index.set_effort(min(math.ceil(1.5 * low), top))
        _tick(progress, cancel, 0.9, f"recall@{k} {index.recall:.4f} < {target}: {key} raised to {index.settings[key]}")
        index.recall = _recall(x, q, index.search(q, k)[1], truth)
    if low and index.recall >= target:  # bisect down to within 10 % of the least effort
        high, high_recall = index.settings[key], index.recall
        while high - low > max(1, low // 10):
            mid = (low + high) // 2
            index.set_effort(mid)
            _tick(progress, cancel, 0.95, f"{key} {mid}?")
            r = _recall(x, q, index.search(q, k)[1], truth)
            if r >= target:
                high, high_recall = mid, r
            else:
                low = mid
        index.set_effort(high)
        index.recall = high_recall


def build_index(points: Any, backend: str = "AUTO", recall_target: float = 0.95, k: int = 256, noise: float = 0.2,
                seed: int = 0, progress: ProgressFn | None = None, cancel: CancelFn | None = None,
                options: IndexOptions | None = None) -> NeighbourIndex:
    """A k-NN index over database frames, its recall measured and its search effort tuned.

    An approximate index (HNSW, IVF) is searched with noisy copies of :data:`RECALL_SAMPLE` of its
    own frames; while recall@k is under ``recall_target`` the search effort grows x1.5 (efSearch up to
    :data:`MAX_EF_SEARCH`, nprobe up to nlist), then is bisected down to within 10 % of the least
    effort that meets the target.  If the target is still not met, exact search is used
    and :attr:`NeighbourIndex.message` says why; so does it when faiss is missing.

    Parameters
    ----------
    points : ndarray, shape (N, Q)
        Finite database frames over the query channels.
    backend : str
        One of :data:`BACKENDS`.
    recall_target, k, noise, seed
        As :class:`IndexOptions` (ignored when ``options`` is given).
    progress : callable (fraction, message), optional
    cancel : callable () -> bool, optional
        Polled between steps; True raises :class:`IndexBuildCancelled`.
    options : IndexOptions, optional
        All settings at once (overrides ``backend`` .. ``seed``).

    Returns
    -------
    NeighbourIndex

    Raises
    ------
    ValueError
        On bad points or settings.
    IndexTooLarge
        When the index would not fit in the available memory.
    IndexBuildCancelled
        When ``cancel()`` returned True.

    Examples
    --------
    >>> x = np.random.default_rng(0).random((500, 3))
    >>> index = build_index(x, k=8)
    >>> index.backend, index.search(x[7], 1)[1].tolist()
    ('KDTREE', [7])
    """
    o = (options or IndexOptions(backend=backend, recall_target=recall_target, k=k, noise=noise, seed=seed)).checked()
    try:
        x = np.asarray(points, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"points must be an array of numbers: {err}") from err
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"points must be (frames, channels) with at least one of each, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        row = int(np.argmax(~np.all(np.isfinite(x), axis=1)))
        raise ValueError(f"points have NaN or infinite values (frame {row})")
    n, dim = x.shape
    from .copies import RepeatedFrames, group_copies  # noqa: PLC0415 - copies builds on this module

    copies = group_copies(x)
    if copies is not None:  # libraries of windows or copies of takes: each distinct frame indexed once
        _tick(progress, cancel, 0.0, f"{n:,} frames, {copies.distinct:,} distinct: each searched once")
        return RepeatedFrames(build_index(x[copies.first], options=o, progress=progress, cancel=cancel), x, copies)
    k_eff = min(o.k, n)
    t0 = time.perf_counter()
    faiss, missing = import_faiss()
    message = ""
    chosen = o.backend
    if chosen == "AUTO" and o.eps > 0.0:
        chosen = "KDTREE"
    elif chosen == "AUTO":
        chosen = choose_backend(n, dim, o.recall_target, BACKENDS[1:] if faiss is not None else ("KDTREE", "FLAT"))
        if faiss is None and choose_backend(n, dim, o.recall_target, BACKENDS[1:]) in ("HNSW", "IVF"):
            message = missing
    if chosen in ("HNSW", "IVF") and faiss is None:
        chosen, message = "FLAT", missing
    _check_memory(chosen, n, dim, o)
    _tick(progress, cancel, 0.0, f"building a {chosen} index over {n:,} frames")
    if chosen in ("KDTREE", "FLAT"):
        index = _exact_index(chosen, x, o, faiss)
        index.recall = 1.0 if index.exact else None
        if not index.exact:  # cKDTree with eps: measured, not tuned
            q, truth = _recall_sample(x, o, k_eff, progress, cancel)
            index.recall = _recall(x, q, index.search(q, k_eff)[1], truth)
    else:
        # AUTO tries HNSW where IVF-PQ misses the target even searching every cell: PQ codes of few
        # levels per channel blur data that sits near a few values (facial weights near 0), where a
        # graph over the full vectors still finds the neighbours
        attempts = [chosen] + (["HNSW"] if o.backend == "AUTO" and chosen == "IVF" else [])
        sample: tuple[np.ndarray, np.ndarray] | None = None
        found: NeighbourIndex | None = None
        misses: list[str] = []
        for attempt in attempts:
            if attempt != chosen:
                try:
                    _check_memory(attempt, n, dim, o)
                except IndexTooLarge as err:
                    misses.append(f"{attempt} not tried ({err})")
                    continue
            candidate = _approx_index(attempt, x, o, faiss, progress, cancel)
            if sample is None:
                sample = _recall_sample(x, o, k_eff, progress, cancel)
            _tune_effort(candidate, x, *sample, k_eff, o.recall_target, progress, cancel)
            if candidate.recall is not None and candidate.recall >= o.recall_target:
                found = candidate
                break
            key = "efSearch" if attempt == "HNSW" else "nprobe"
            misses.append(f"{attempt} reached recall@{k_eff} {candidate.recall:.3f} at {key} "
                          f"{candidate.settings[key]}")
            del candidate
        if found is None:
            message = "; ".join(misses) + f", under the target {o.recall_target}: exact search instead"
            index = _exact_index("FLAT", x, o, faiss)
            index.recall = 1.0
        else:
            index = found
        if found is not None and misses:
            message = "; ".join(misses) + f", under the target {o.recall_target}: {index.backend} instead"
    index.recall_k = k_eff
    index.message = message
    index.build_seconds = time.perf_counter() - t0
    _tick(progress, None, 1.0, index.describe())
    return index
