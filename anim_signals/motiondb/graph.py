"""Motion database: rebuild or denoise motion frame by frame from a library.

Richert, "Animation Database for real-time motion reconstruction" (2012).

Per query frame (no look-ahead):

1. **k-NN** (:mod:`.knn`: cKDTree or a flat scan for small databases, a faiss HNSW index above, by
   :func:`.knn.choose_backend`): the k database frames closest to the query; their distances are the
   node costs c.
2. **Online lazy neighbourhood graph** (OLNG): a K x T ring of nodes, one column per query frame.
   A new node p links to the predecessor s in the previous column that lies in the same clip with
   p - b <= s <= p - a (a = 1: strictly forward in the clip; b: how far the database may run ahead
   per query frame) and minimises the path cost sum(c) / l^2 over the path's last l <= T nodes (long
   consistent paths win).  The cost of continuing the previous best path can be lowered (``stay``)
   so the output keeps to one motion a little longer.
3. **Output**: the best path's last frame, or a **synthesis** from the best I paths: weights
   w_i = (max C - c_i) / sum_j (max C - c_j) and the pose minimising E(q) = sum_i w_i |q_i - q| (the
   weighted geometric median, by Weiszfeld's iteration).

Queries may use any subset of the channels (partial input); outputs are always full poses.
"""

from __future__ import annotations

import math
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..validation import MAX_MAGNITUDE, finite_scalar, positive_int
from .knn import BACKENDS, IndexOptions, NeighbourIndex, build_index

__all__ = [
    "Batch",
    "MotionDatabase",
    "OLNGParams",
    "Reconstructor",
    "Step",
    "iter_reconstruct",
    "reconstruct",
    "synthesize",
]

WEISZFELD_STEPS = 6  # then Newton: Weiszfeld is robust far from the minimum, Newton fast near it


# ------------------------------------------------------------------------------------------------
# the database
# ------------------------------------------------------------------------------------------------


@dataclass
class MotionDatabase:
    """Pose vectors of many clips, one row per frame, searchable by any subset of channels.

    Attributes
    ----------
    frames : ndarray, shape (N, D)
        All clips' frames, clip after clip, in the channels' units.
    clip_starts : ndarray of int64, shape (C + 1,)
        First row of each clip, then N.
    channels : list of str, length D
        Channel names (e.g. ``'pose.bones["Hips"].rotation_euler[0]'`` or ARKit blendshape names).
    clip_names : list of str, length C

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0.0, 4 * np.pi, 200)
    >>> clip = np.column_stack([np.sin(t), np.cos(t), np.sin(2 * t)])
    >>> db = MotionDatabase.from_clips([clip], ["a", "b", "c"])
    >>> db.n_frames, db.n_clips
    (200, 1)
    >>> rec = Reconstructor(db, OLNGParams(k=16, window=8, paths=4), query_channels=["a", "b"])
    >>> step = rec.step(clip[60, :2])  # one query frame with two of the three channels
    >>> step.pose.shape, step.best_index
    ((3,), 60)
    """

    frames: np.ndarray
    clip_starts: np.ndarray
    channels: list[str]
    clip_names: list[str]
    _trees: dict = field(default_factory=dict, repr=False, compare=False)
    _indexes: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_clips(cls, clips: Sequence[np.ndarray], channels: Sequence[str],
                   names: Sequence[str] | None = None) -> MotionDatabase:
        """A database of clips; clips without frames are left out.

        Parameters
        ----------
        clips : sequence of ndarray, each (N_i, D)
        channels : sequence of str, length D
        names : sequence of str, optional
            Clip names (default ``'clip <i>'``).

        Returns
        -------
        MotionDatabase

        Raises
        ------
        ValueError
            When no clip has frames, a clip has another channel count, or NaN / infinite values.
        """
        arrays = []
        for i, c in enumerate(clips):
            try:
                a = np.atleast_2d(np.asarray(c, dtype=float))
            except (TypeError, ValueError) as err:
                raise ValueError(f"clip {i} is not an array of numbers: {err}") from err
            if a.ndim != 2:
                raise ValueError(f"clip {i} must be (frames, channels), got shape {a.shape}")
            if a.shape[0] > 0:
                arrays.append(a)
        if not arrays:
            raise ValueError("the motion database is empty: no clip has frames")
        width = len(channels)
        for i, a in enumerate(arrays):
            if a.shape[1] != width:
                raise ValueError(f"clip {i} has {a.shape[1]} channels, the database {width}")
            if not np.all(np.isfinite(a)):
                row = int(np.argmax(~np.all(np.isfinite(a), axis=1)))
                raise ValueError(f"clip {i} has NaN or infinite values (frame {row}): fill or drop such frames first")
            if float(np.abs(a).max()) > MAX_MAGNITUDE:
                raise ValueError(f"clip {i} has values beyond +-{MAX_MAGNITUDE:.0e}: too large to compute with")
        starts = np.concatenate([[0], np.cumsum([a.shape[0] for a in arrays])]).astype(np.int64)
        clip_names = list(names) if names is not None else [f"clip {i}" for i in range(len(arrays))]
        return cls(np.vstack(arrays), starts, list(channels), clip_names[: len(arrays)])

    @property
    def n_frames(self) -> int:
        """N, frames over all clips."""
        return int(self.frames.shape[0])

    @property
    def n_clips(self) -> int:
        """C, clips."""
        return int(self.clip_starts.size - 1)

    def clip_of(self, indices: np.ndarray) -> np.ndarray:
        """Clip index of each database row in ``indices`` (same shape)."""
        return np.searchsorted(self.clip_starts, np.asarray(indices), side="right") - 1

    def columns(self, names: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """Column indices of ``names`` (database order kept as given) and the names not in the database."""
        where = {n: i for i, n in enumerate(self.channels)}
        cols = [where[n] for n in names if n in where]
        missing = [n for n in names if n not in where]
        return np.asarray(cols, dtype=int), missing

    def tree(self, cols: np.ndarray):
        """cKDTree over the given columns (built once per column subset; :meth:`index` is the general form)."""
        from scipy.spatial import cKDTree

        key = tuple(int(c) for c in cols)
        if key not in self._trees:
            self._trees[key] = cKDTree(np.ascontiguousarray(self.frames[:, cols]))
        return self._trees[key]

    def query_points(self, cols: np.ndarray) -> np.ndarray:
        """The frames over ``cols`` (a view when ``cols`` is every channel in order, else a copy)."""
        cols = np.asarray(cols, dtype=int)
        if cols.size == self.frames.shape[1] and np.array_equal(cols, np.arange(cols.size)):
            return self.frames
        return np.ascontiguousarray(self.frames[:, cols])

    def index(self, cols: np.ndarray | None = None, backend: str = "AUTO", recall_target: float = 0.95,
              k: int = 256, options: IndexOptions | None = None, progress=None, cancel=None) -> NeighbourIndex:
        """A k-NN index over the given columns, built once per column subset and options (kept in memory).

        Parameters
        ----------
        cols : ndarray of int, optional
            Query columns (default: all channels).
        backend : str
            One of :data:`.knn.BACKENDS` (``'AUTO'``: :func:`.knn.choose_backend`).
        recall_target : float
            recall@k an approximate index must reach (:func:`.knn.build_index`).
        k : int
            Neighbours per query the recall is measured at.
        options : IndexOptions, optional
            All settings (overrides ``backend``, ``recall_target`` and ``k``).
        progress, cancel : callable, optional
            As :func:`.knn.build_index`.

        Returns
        -------
        NeighbourIndex

        Raises
        ------
        ValueError, IndexTooLarge, IndexBuildCancelled
            As :func:`.knn.build_index`.
        """
        cols = np.arange(self.frames.shape[1]) if cols is None else np.asarray(cols, dtype=int)
        o = (options or IndexOptions(backend=backend, recall_target=recall_target, k=min(k, self.n_frames))).checked()
        key = (tuple(int(c) for c in cols), o)
        if key not in self._indexes:
            self._indexes[key] = build_index(self.query_points(cols), options=o, progress=progress, cancel=cancel)
        return self._indexes[key]

    def to_dict(self) -> dict:
        """Plain arrays and lists; :meth:`from_dict` inverts it."""
        return {"frames": self.frames, "clip_starts": self.clip_starts, "channels": list(self.channels),
                "clip_names": list(self.clip_names)}

    @classmethod
    def from_dict(cls, d: Mapping) -> MotionDatabase:
        """The database of a :meth:`to_dict` mapping."""
        return cls(np.asarray(d["frames"], dtype=float), np.asarray(d["clip_starts"], dtype=np.int64),
                   [str(c) for c in d["channels"]], [str(c) for c in d["clip_names"]])


@dataclass(frozen=True)
class OLNGParams:
    """Settings of the online lazy neighbourhood graph.

    Attributes
    ----------
    k : int
        Neighbours per query frame (the graph's K).
    window : int
        T: query frames a path can span.
    paths : int
        I: best paths used by the synthesis.
    a, b : int
        A predecessor lies a .. b frames back in its clip (a = 1: strictly forward).
    stay : float
        In [0, 1): the previous best path's continuation costs (1 - stay) x.
    eps : float
        Approximate k-NN (cKDTree ``eps``: neighbours within (1 + eps) x the true distances; with
        backend AUTO it selects the cKDTree).
    synthesis_iterations : int
        Weiszfeld steps (at most WEISZFELD_STEPS) then Newton steps of :func:`synthesize`.
    backend : str
        k-NN backend, one of :data:`.knn.BACKENDS` (AUTO: exact for small databases, HNSW above; see
        :func:`.knn.choose_backend`).
    recall_target : float
        In (0, 1]: recall@k an approximate index must reach at build time (1: exact search).
    """

    k: int = 256
    window: int = 32
    paths: int = 50
    a: int = 1
    b: int = 2
    stay: float = 0.0
    eps: float = 0.0
    synthesis_iterations: int = 16
    backend: str = "AUTO"
    recall_target: float = 0.95

    def checked(self, n_frames: int) -> OLNGParams:
        """``self``, after checking the settings against a database of ``n_frames`` frames.

        Raises
        ------
        ValueError
            On a setting out of range, or more neighbours than database frames.
        """
        for name in ("k", "window", "paths", "a", "b", "synthesis_iterations"):
            positive_int(name, getattr(self, name), minimum=0)
        finite_scalar("stay", self.stay)
        finite_scalar("eps", self.eps)
        if self.k < 1 or self.window < 1 or self.paths < 1:
            raise ValueError("k, window and paths must be at least 1")
        if not 0 <= self.a <= self.b:
            raise ValueError(f"index bounds need 0 <= a <= b, got a={self.a}, b={self.b}")
        if not 0.0 <= self.stay < 1.0:
            raise ValueError("stay must be in [0, 1)")
        if not self.eps >= 0.0:
            raise ValueError("eps must be >= 0")
        if self.k > n_frames:
            raise ValueError(f"k = {self.k} neighbours but the database has {n_frames} frames")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if not 0.0 < finite_scalar("recall_target", self.recall_target) <= 1.0:
            raise ValueError(f"recall_target must be in (0, 1], got {self.recall_target}")
        if self.eps > 0.0 and self.backend not in ("AUTO", "KDTREE"):
            raise ValueError(f"eps is cKDTree's approximate search: backend KDTREE, not {self.backend}")
        return self

    def index_options(self) -> IndexOptions:
        """The :class:`.knn.IndexOptions` these settings ask for."""
        return IndexOptions(backend=self.backend, recall_target=self.recall_target, k=self.k, eps=self.eps)


# ------------------------------------------------------------------------------------------------
# synthesis
# ------------------------------------------------------------------------------------------------


def _solve_spd(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """x with a x = b for a symmetric positive definite ``a`` (Cholesky), or None if it is not.

    scipy's LAPACK ``dposv`` rather than ``np.linalg.solve``: on a busy 2-core machine numpy's
    OpenBLAS ran its LU of a 39 x 39 matrix on two threads and took 45 us (up to ms) instead of 10.
    """
    from scipy.linalg.lapack import dposv  # noqa: PLC0415 - scipy is slow to import

    _, x, info = dposv(a, b)
    if info != 0:
        try:
            return np.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            return None
    return np.asarray(x).reshape(-1)


def synthesize(poses: np.ndarray, costs: np.ndarray, iterations: int = 16, tol: float = 1e-10) -> np.ndarray:
    """The pose minimising E(q) = sum_i w_i |q_i - q| with Richert's weights from path costs.

    w_i = (max C - c_i) / sum_j (max C - c_j).  E is the weighted geometric median.  If one of the
    poses is the minimiser (its weight outweighs the pull of all others: w_j >= |sum_i w_i u_ij|,
    u unit vectors), it is returned exactly; otherwise Weiszfeld's iteration with over-relaxation
    (step 1.8, kept only while E decreases) runs from the weighted mean and Newton steps on E
    (H = sum w_i / d_i (I - u_i u_i^T)) finish it.

    Parameters
    ----------
    poses : ndarray, shape (I, D)
        The best paths' last frames.
    costs : ndarray, shape (I,)
        Their path costs (lower is better).
    iterations : int
        Steps in all: at most WEISZFELD_STEPS Weiszfeld steps, the rest Newton.
    tol : float
        Stop when a step moves the pose less than ``tol * (1 + |q|)``.

    Returns
    -------
    ndarray, shape (D,)
    """
    q = np.atleast_2d(np.asarray(poses, dtype=float))
    c = np.asarray(costs, dtype=float).reshape(-1)
    if q.shape[0] == 1:
        return q[0].copy()
    w = c.max() - c
    total = float(w.sum())
    w = w / total if total > 0.0 else np.full(c.size, 1.0 / c.size)
    # 1. a data point as the minimiser (Weiszfeld cannot converge onto one in finitely many steps)
    sq = np.einsum("ij,ij->i", q, q)
    dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * (q @ q.T), 0.0))  # dist[j, i] = |q_i - q_j|
    same = dist <= 1e-9 * (1.0 + float(np.sqrt(sq.max())))
    weight_at = (w[None, :] * same).sum(axis=1)  # total weight sitting on q_j (duplicates included)
    a = np.where(same, 0.0, w[None, :] / np.where(same, 1.0, dist))  # a[j, i] = w_i / |q_i - q_j|
    pull = np.linalg.norm(a @ q - a.sum(axis=1)[:, None] * q, axis=1)  # |sum_i w_i u_ij|
    at_point = (weight_at > 0) & (pull <= weight_at + 1e-15)
    if at_point.any():
        return q[int(np.argmax(np.where(at_point, weight_at, -1.0)))].copy()

    def norms(x):  # |q_i - x|; einsum, not np.linalg.norm: this loop is the synthesis' cost
        r = q - x
        return np.sqrt(np.einsum("ij,ij->i", r, r))

    def vnorm(v):
        return math.sqrt(float(v @ v))

    x = w @ q
    dx = norms(x)  # distances of the accepted x (reused by the next step)
    e = float(w @ dx)
    for _ in range(min(iterations, WEISZFELD_STEPS)):  # Weiszfeld (over-relaxed): robust, linear convergence
        inv = w / np.maximum(dx, 1e-12)
        target = inv @ q / inv.sum()
        trial = x + 1.8 * (target - x)
        d_trial = norms(trial)
        e_trial = float(w @ d_trial)
        if e_trial > e:
            trial = target
            d_trial = norms(target)
            e_trial = float(w @ d_trial)
        converged = vnorm(trial - x) <= tol * (1.0 + vnorm(x))
        x, e, dx = trial, e_trial, d_trial
        if converged:
            return x
    eye = np.eye(x.size)
    for _ in range(max(iterations - WEISZFELD_STEPS, 0)):  # Newton on E (the minimiser is not a data point here)
        d = np.maximum(dx, 1e-12)
        u = (q - x) / d[:, None]
        grad = -(w @ u)
        if vnorm(grad) <= 1e-12:
            break
        wd = w / d
        hess = eye * float(wd.sum()) - (u * wd[:, None]).T @ u  # sum w_i/d_i (I - u_i u_i^T)
        delta = _solve_spd(hess, -grad)
        if delta is None:  # pragma: no cover - H is positive definite off the data points
            break
        t = 1.0
        while t > 1e-6:
            trial = x + t * delta
            d_trial = norms(trial)
            e_trial = float(w @ d_trial)
            if e_trial <= e:
                break
            t *= 0.5
        else:
            break
        done = vnorm(trial - x) <= tol * (1.0 + vnorm(x))
        x, e, dx = trial, e_trial, d_trial
        if done:
            break
    return x


# ------------------------------------------------------------------------------------------------
# streaming reconstruction
# ------------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One query frame's output (:meth:`Reconstructor.step`).

    Attributes
    ----------
    pose : ndarray, shape (D,)
        Synthesis from the best paths.
    best : ndarray, shape (D,)
        The best path's last database frame.
    best_index : int
        Its database row.
    best_length : int
        Nodes on the best path.
    best_cost : float
        Its score, sum(c) / l^2.
    n_paths : int
        Paths used by the synthesis.
    seconds : dict of str to float
        Time spent in ``'knn'``, ``'graph'`` and ``'synthesis'``.
    """

    pose: np.ndarray
    best: np.ndarray
    best_index: int
    best_length: int
    best_cost: float
    n_paths: int
    seconds: dict[str, float]


class Reconstructor:
    """Streaming OLNG over a motion database: :meth:`step` takes one query frame.

    Parameters
    ----------
    db : MotionDatabase
    params : OLNGParams, optional
    query_channels : sequence of str, optional
        Channels the queries hold, in query order (default: all of the database's).
    index : NeighbourIndex, optional
        A k-NN index over the database frames of the query channels (for instance loaded by
        :func:`.index_store.cached_index`); default ``db.index(...)`` with ``params.backend`` and
        ``params.recall_target`` (built on first use, then kept by the database).

    Raises
    ------
    ValueError
        On bad params, query channels missing from the database, or an index of another size.
    """

    def __init__(self, db: MotionDatabase, params: OLNGParams | None = None,
                 query_channels: Sequence[str] | None = None, index: NeighbourIndex | None = None):
        self.db = db
        self.params = (params or OLNGParams()).checked(db.n_frames)
        if query_channels is None:
            self.cols = np.arange(len(db.channels))
        else:
            self.cols, missing = db.columns(query_channels)
            if missing:
                raise ValueError(f"query channels not in the database: {', '.join(missing[:8])}"
                                 + (f" and {len(missing) - 8} more" if len(missing) > 8 else ""))
            if self.cols.size == 0:
                raise ValueError("no query channel in common with the database")
        if index is None:
            index = db.index(self.cols, options=self.params.index_options())
        elif index.n != db.n_frames or index.dim != self.cols.size:
            raise ValueError(f"the index covers {index.n} x {index.dim} frames, the query "
                             f"{db.n_frames} x {self.cols.size}")
        self.index = index
        self.clip_ids = db.clip_of(np.arange(db.n_frames))
        self.reset()

    @property
    def tree(self):
        """The database's cKDTree over the query columns (the k-NN before :attr:`index`; built on use)."""
        return self.db.tree(self.cols)

    def reset(self) -> None:
        """Forget the graph: the next query frame starts new paths."""
        k, t = self.params.k, self.params.window
        self.nodes = np.full((k, t), -1, dtype=np.int64)
        self.cost = np.zeros((k, t))  # node cost c added to its path (k-NN distance, stay-modulated)
        self.path_cost = np.full((k, t), np.inf)  # sum of c over the path (last <= T nodes)
        self.path_length = np.zeros((k, t), dtype=np.int64)
        self.pred = np.full((k, t), -1, dtype=np.int64)  # row in the previous column
        # ancestors[c][r, d - 1]: row, in column c - d, of the node d steps back along the path ending
        # at row r of column c (-1 past its start); replaces a T-step walk over pred per update
        self.ancestors = np.full((t, k, max(t - 1, 1)), -1, dtype=np.int64)
        self.t = -1
        self._prev_best_row = -1

    def _oldest_cost(self, rows: np.ndarray, col: int) -> np.ndarray:
        """Cost of the node T - 1 steps back along each path ending at ``rows`` of column ``col``."""
        t_len = self.params.window
        if t_len == 1:
            return self.cost[rows, col]
        back = self.ancestors[col][rows, t_len - 2]
        return np.where(back >= 0, self.cost[np.maximum(back, 0), (col + 1) % t_len], 0.0)

    def _link(self, idx: np.ndarray, dist: np.ndarray, prev: int):
        """Best predecessor of each new node in column ``prev`` (or -1), with the path sums.

        The predecessors of frame p are the frames p - b .. p - a of its clip, so each new node has
        at most b - a + 1 candidates: found by binary search in the previous column's sorted frames
        (O(K (b - a + 1) log K), no K x K matrix).  Among equal scores the lowest previous row wins,
        as an argmin over the rows would choose.
        """
        p = self.params
        k = idx.size
        prev_nodes = self.nodes[:, prev]
        rows = np.flatnonzero(prev_nodes >= 0)
        none = np.full(k, -1, dtype=np.int64)
        if rows.size == 0:
            return none, None, None, None
        pn = prev_nodes[rows]  # distinct frames (one k-NN answer)
        order = np.argsort(pn, kind="stable")
        spn, srows = pn[order], rows[order]
        target = idx[:, None] - np.arange(p.a, p.b + 1)[None, :]  # (K, G): candidate predecessor frames
        pos = np.minimum(np.searchsorted(spn, target), spn.size - 1)
        found = (spn[pos] == target) & (self.clip_ids[np.maximum(target, 0)] == self.clip_ids[idx][:, None])
        if not found.any():
            return none, None, None, None
        cand = np.where(found, srows[pos], -1)  # (K, G) previous rows
        cr = np.maximum(cand, 0)
        prev_sum = self.path_cost[cr, prev]
        prev_len = self.path_length[cr, prev]
        full = prev_len >= p.window  # drop the path's oldest cost to stay within T nodes
        drop = np.zeros(cand.shape)
        if full.any():
            drop[full] = self._oldest_cost(cr[full], prev)
        edge = np.broadcast_to(dist[:, None], cand.shape)
        if p.stay > 0.0 and self._prev_best_row >= 0:
            edge = np.where(cand == self._prev_best_row, edge * (1.0 - p.stay), edge)
        new_sum = prev_sum - drop + edge
        new_len = np.minimum(prev_len + 1, p.window)
        score = np.where(found, new_sum / new_len**2, np.inf)
        low = score.min(axis=1)
        # as in Richert's graph: a node with a valid predecessor always continues the cheapest path
        pick = np.where((score == low[:, None]) & found, cand, np.iinfo(np.int64).max).min(axis=1)
        has = np.isfinite(low)
        g = np.argmax((cand == pick[:, None]) & found, axis=1)
        at = (np.arange(k), g)
        return np.where(has, pick, -1), has, (edge[at], new_sum[at]), new_len[at]

    def step(self, query: np.ndarray) -> Step:
        """Add one query frame to the graph and return the output pose.

        Parameters
        ----------
        query : ndarray, shape (Q,)
            Values of the query channels.

        Returns
        -------
        Step

        Raises
        ------
        ValueError
            On a wrong number of values or NaN / infinite values.
        """
        p = self.params
        q = np.asarray(query, dtype=float).reshape(-1)
        if q.size != self.cols.size:
            raise ValueError(f"query has {q.size} values, the query channels are {self.cols.size}")
        if not np.all(np.isfinite(q)):
            raise ValueError("query frame has NaN or infinite values")
        t0 = time.perf_counter()
        dist, idx = self.index.search(q, p.k)
        t1 = time.perf_counter()

        self.t += 1
        col = self.t % p.window
        prev = (col - 1) % p.window
        cost_sum = dist.copy()
        node_cost = dist.copy()  # the cost this node adds to its path (stay-modulated when continuing)
        length = np.ones(p.k, dtype=np.int64)
        pred = np.full(p.k, -1, dtype=np.int64)
        if self.t > 0:
            pred, has, sums, new_len = self._link(idx, dist, prev)
            if has is not None:
                node_cost = np.where(has, sums[0], node_cost)  # modulated if so
                cost_sum = np.where(has, sums[1], cost_sum)
                length = np.where(has, new_len, length)
        if p.window > 1:
            anc = self.ancestors[col]
            anc[:, 0] = pred
            if p.window > 2:
                anc[:, 1:] = np.where(pred[:, None] >= 0, self.ancestors[prev][np.maximum(pred, 0), :-1], -1)
        self.nodes[:, col] = idx
        self.cost[:, col] = node_cost
        self.path_cost[:, col] = cost_sum
        self.path_length[:, col] = length
        self.pred[:, col] = pred
        t2 = time.perf_counter()

        scores = cost_sum / length**2
        n_best = min(p.paths, p.k)
        best_rows = np.argpartition(scores, n_best - 1)[:n_best] if n_best < p.k else np.arange(p.k)
        best_rows = best_rows[np.argsort(scores[best_rows], kind="stable")]
        top = int(best_rows[0])
        self._prev_best_row = top
        frames = self.db.frames[idx[best_rows]]
        pose = synthesize(frames, scores[best_rows], p.synthesis_iterations)
        t3 = time.perf_counter()
        return Step(pose, self.db.frames[idx[top]].copy(), int(idx[top]), int(length[top]), float(scores[top]),
                    int(best_rows.size), {"knn": t1 - t0, "graph": t2 - t1, "synthesis": t3 - t2})


@dataclass
class Batch:
    """A whole clip's output (:func:`reconstruct`).

    Attributes
    ----------
    poses : ndarray, shape (n, D)
        Synthesis per query frame.
    best : ndarray, shape (n, D)
        Best-path frames.
    best_index : ndarray of int64, shape (n,)
        Database row of the best path (-1: NaN query frame, output held).
    best_length : ndarray of int64, shape (n,)
    best_cost : ndarray, shape (n,)
    seconds : ndarray, shape (n, 3)
        k-NN, graph and synthesis time per frame.
    """

    poses: np.ndarray
    best: np.ndarray
    best_index: np.ndarray
    best_length: np.ndarray
    best_cost: np.ndarray
    seconds: np.ndarray


def iter_reconstruct(db: MotionDatabase, queries: np.ndarray, params: OLNGParams | None = None,
                     query_channels: Sequence[str] | None = None,
                     index: NeighbourIndex | None = None) -> Generator[float, None, Batch]:
    """:func:`reconstruct` step by step: yields progress after each query frame, returns the batch.

    Parameters
    ----------
    db, queries, params, query_channels, index
        As :func:`reconstruct`.

    Yields
    ------
    float
        (i + 1) / n after query frame i.

    Returns
    -------
    Batch
        As ``StopIteration.value`` (``batch = yield from iter_reconstruct(...)``).

    Raises
    ------
    ValueError
        As :class:`Reconstructor`, or on queries of the wrong shape or with infinite or huge
        values (NaN marks a missing frame); raised when called, before the first step.
    """
    rec = Reconstructor(db, params, query_channels, index=index)
    q = _checked_queries(queries, rec.cols.size)
    # checked when called, not at the first step
    return _iter_batch(rec, q, len(db.channels))


def _checked_queries(queries: np.ndarray, width: int) -> np.ndarray:
    """Queries (n, width): numbers, NaN allowed (a dropped frame), no infinities or huge values."""
    try:
        q = np.atleast_2d(np.asarray(queries, dtype=float))
    except (TypeError, ValueError) as err:
        raise ValueError(f"queries must be an array of numbers: {err}") from err
    if q.ndim != 2 or q.shape[1] != width:
        raise ValueError(f"queries must be (frames, {width}) (one column per query channel), got shape {q.shape}")
    if np.any(np.isinf(q)) or np.nanmax(np.abs(q), initial=0.0) > MAX_MAGNITUDE:
        row = int(np.argmax(np.any(np.isinf(q) | (np.abs(np.nan_to_num(q)) > MAX_MAGNITUDE), axis=1)))
        raise ValueError(f"queries: frame {row} has an infinite or huge value (NaN marks a missing frame)")
    return q


def _iter_batch(rec: Reconstructor, q: np.ndarray, d: int) -> Generator[float, None, Batch]:
    n = q.shape[0]
    poses = np.full((n, d), np.nan)
    best = np.full((n, d), np.nan)
    best_index = np.full(n, -1, dtype=np.int64)
    best_length = np.zeros(n, dtype=np.int64)
    best_cost = np.full(n, np.nan)
    seconds = np.zeros((n, 3))
    for i in range(n):
        if np.all(np.isfinite(q[i])):
            s = rec.step(q[i])
            poses[i], best[i] = s.pose, s.best
            best_index[i], best_length[i], best_cost[i] = s.best_index, s.best_length, s.best_cost
            seconds[i] = (s.seconds["knn"], s.seconds["graph"], s.seconds["synthesis"])
        elif i > 0:
            poses[i], best[i] = poses[i - 1], best[i - 1]
        yield (i + 1) / n
    valid = np.flatnonzero(np.isfinite(poses[:, 0])) if d else np.array([], dtype=int)
    if valid.size and valid[0] > 0:
        poses[: valid[0]] = poses[valid[0]]
        best[: valid[0]] = best[valid[0]]
    return Batch(poses, best, best_index, best_length, best_cost, seconds)


def reconstruct(db: MotionDatabase, queries: np.ndarray, params: OLNGParams | None = None,
                query_channels: Sequence[str] | None = None, index: NeighbourIndex | None = None) -> Batch:
    """The streaming reconstruction over a whole clip (identical to calling :meth:`Reconstructor.step`).

    A query frame with NaN values (a dropped capture frame) does not update the graph: the previous
    output is held (the first frames, before any valid one, take the first valid output).
    :func:`iter_reconstruct` is the same with progress.

    Parameters
    ----------
    db : MotionDatabase
    queries : ndarray, shape (n, Q)
        Query frames (NaN rows allowed).
    params : OLNGParams, optional
    query_channels : sequence of str, optional
        The query columns' channels (default: all of the database's).
    index : NeighbourIndex, optional
        The k-NN index over the query channels' frames (as :class:`Reconstructor`; for instance one
        loaded from its file by :func:`.index_store.cached_index`); default: the database's own.

    Returns
    -------
    Batch

    Raises
    ------
    ValueError
        As :class:`Reconstructor`.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0.0, 4 * np.pi, 200)
    >>> clip = np.column_stack([np.sin(t), np.cos(t), np.sin(2 * t)])
    >>> db = MotionDatabase.from_clips([clip], ["a", "b", "c"])
    >>> noisy = clip[50:100] + np.random.default_rng(0).normal(0.0, 0.05, (50, 3))
    >>> batch = reconstruct(db, noisy, OLNGParams(k=16, window=8, paths=4))
    >>> bool(np.abs(batch.poses - clip[50:100]).mean() < 0.5 * np.abs(noisy - clip[50:100]).mean())
    True
    """
    steps = iter_reconstruct(db, queries, params, query_channels, index)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
