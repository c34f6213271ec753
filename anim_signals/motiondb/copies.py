"""Repeated frames in a motion database: search each distinct frame once.

A library assembled from windows of takes, mirrored copies or clips exported twice holds the same
frame many times. Approximate indexes degrade on exact copies (an HNSW node's links fill up with
its own copies at distance 0; IVF-PQ's candidate lists with copies of the same few frames), and
every index grows with them. :func:`group_copies` finds the distinct frames;
:class:`RepeatedFrames` answers k-NN over all frames from an index over the distinct ones: the
nearest distinct frames, each expanded into its copies (in row order), until k rows are found.
Distances are exact as the inner index's are; among equally near copies the lower rows come first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .knn import NeighbourIndex

__all__ = ["MOST_DISTINCT", "Copies", "RepeatedFrames", "group_copies"]

MOST_DISTINCT = 0.8  # grouped only when at most this share of the frames is distinct


@dataclass(frozen=True)
class Copies:
    """Frames grouped by value.

    Attributes
    ----------
    first : ndarray of int64, shape (U,)
        Row of each distinct frame's first copy.
    order : ndarray of int64, shape (N,)
        Rows sorted by distinct frame, then by row.
    starts, counts : ndarray of int64, shape (U,)
        Distinct frame u's copies are ``order[starts[u] : starts[u] + counts[u]]``.
    """

    first: np.ndarray
    order: np.ndarray
    starts: np.ndarray
    counts: np.ndarray

    @property
    def distinct(self) -> int:
        """U, distinct frames."""
        return int(self.first.size)


def group_copies(points: np.ndarray, most_distinct: float = MOST_DISTINCT) -> Copies | None:
    """The distinct frames of ``points`` when copies are many, else None.

    Parameters
    ----------
    points : ndarray, shape (N, Q)
    most_distinct : float
        Group only when at most this share of the rows is distinct (1: whenever any row repeats).

    Returns
    -------
    Copies or None

    Examples
    --------
    >>> x = np.array([[0.0, 1.0], [2.0, 3.0], [0.0, 1.0], [0.0, 1.0]])
    >>> c = group_copies(x, most_distinct=1.0)
    >>> c.distinct, c.first.tolist(), c.order[c.starts[0]: c.starts[0] + c.counts[0]].tolist()
    (2, [0, 1], [0, 2, 3])
    """
    x = np.ascontiguousarray(points, dtype=np.float64)
    n = x.shape[0]
    if n < 2:
        return None
    # a quick look first: copies share their projection on any direction (distinct frames share one
    # only by a fluke, which the exact grouping below then settles)
    projection = x @ np.random.default_rng(20121).standard_normal(x.shape[1])
    if np.unique(projection).size > most_distinct * n:
        return None
    rows = x.view(np.dtype((np.void, x.dtype.itemsize * x.shape[1]))).ravel()
    _, first, inverse, counts = np.unique(rows, return_index=True, return_inverse=True, return_counts=True)
    if first.size > most_distinct * n or first.size == n:
        return None
    order = np.argsort(inverse.reshape(-1), kind="stable").astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    # distinct frames in the order of their first row (np.unique sorts by value)
    by_row = np.argsort(first, kind="stable")
    return Copies(first[by_row].astype(np.int64), order, starts[by_row], counts[by_row].astype(np.int64))


class RepeatedFrames(NeighbourIndex):
    """A k-NN index over all frames made of an index over the distinct ones (:func:`group_copies`).

    It answers as :class:`~.knn.NeighbourIndex` does (same attributes, :meth:`search`, :meth:`describe`);
    ``inner`` is the index over ``points[copies.first]``.
    """

    def __init__(self, inner: NeighbourIndex, points: np.ndarray, copies: Copies):  # noqa: D107
        # not NeighbourIndex.__init__: every attribute but the frames is the inner index's
        self.inner = inner
        self.points = points
        self.copies = copies

    # what the inner index knows
    backend = property(lambda self: self.inner.backend)
    exact = property(lambda self: self.inner.exact)
    dim = property(lambda self: self.inner.dim)

    def _proxy(name: str):  # type: ignore[misc]  # noqa: N805 - a property factory in the class body
        return property(lambda self: getattr(self.inner, name), lambda self, v: setattr(self.inner, name, v))

    settings = _proxy("settings")
    recall = _proxy("recall")
    recall_k = _proxy("recall_k")
    build_seconds = _proxy("build_seconds")
    message = _proxy("message")
    del _proxy

    @property
    def n(self) -> int:
        """Frames answered for (copies included)."""
        return int(self.points.shape[0])

    @property
    def nbytes(self) -> int:
        c = self.copies
        return int(self.inner.nbytes + c.first.nbytes + c.order.nbytes + c.starts.nbytes + c.counts.nbytes)

    def set_effort(self, effort: int) -> None:
        self.inner.set_effort(effort)

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` frames nearest each query, copies included (as :meth:`~.knn.NeighbourIndex.search`)."""
        if not 1 <= int(k) <= self.n:
            raise ValueError(f"k = {k} neighbours but the index has {self.n} frames")
        k = int(k)
        c = self.copies
        dist_u, idx_u = self.inner.search(queries, min(k, c.distinct))
        single = dist_u.ndim == 1
        dist_u, idx_u = np.atleast_2d(dist_u), np.atleast_2d(idx_u)
        dist = np.empty((idx_u.shape[0], k))
        idx = np.empty((idx_u.shape[0], k), dtype=np.int64)
        for r in range(idx_u.shape[0]):
            lens = c.counts[idx_u[r]]
            take = int(np.searchsorted(np.cumsum(lens), k)) + 1  # distinct frames whose copies reach k rows
            lens = lens[:take]
            ends = np.cumsum(lens)
            at = np.repeat(c.starts[idx_u[r, :take]] - (ends - lens), lens) + np.arange(int(ends[-1]))
            idx[r] = c.order[at][:k]
            dist[r] = np.repeat(dist_u[r, :take], lens)[:k]
        return (dist[0], idx[0]) if single else (dist, idx)

    def describe(self) -> str:
        """As the inner index's, with the frames counted with their copies."""
        text = self.inner.describe()
        return text.replace(f"over {self.copies.distinct:,} x", f"over {self.n:,} x", 1).replace(
            " frames:", f" frames ({self.copies.distinct:,} distinct, searched once each):", 1)
