"""The order in which frames become the pose signal's RBF sites (Cashman and Hormann, §3.2.2).

The greedy order starts with the four frames farthest from the best-fit plane of the shape
coordinates and then adds, one at a time, the frame the current least-squares fit misses most.
The fits are nested, so one orthonormal basis is extended site by site instead of refitting: the
order up to l sites costs O(n l^2), and with an error budget it stops at the first l within it
(the choice of l from a tolerance in :func:`~.space.build_pose_space`).
"""

from __future__ import annotations

import numpy as np

from .signals import _dist, _phi, _spread

__all__ = ["greedy_site_order"]


def greedy_site_order(p: np.ndarray, x: np.ndarray, *, count: int | None = None) -> np.ndarray:
    """Order in which frames become RBF sites (§3.2.2).

    The four frames farthest from the best-fit plane of the x_i come first; then, repeatedly, the
    frame with the largest error of the least-squares fit on the current sites.  The fits are
    nested (one more site adds one basis column), so each step updates an orthonormal basis of the
    fit's columns instead of refitting: O(n l) per site, O(n count^2) in all.

    Parameters
    ----------
    p : ndarray, shape (n, 2)
        Pose-space positions.
    x : ndarray, shape (n, m)
        Shape coordinates.
    count : int, optional
        Indices to return (default all n).

    Returns
    -------
    ndarray of int, shape (count,)
        Frame indices; a prefix of length l gives the sites for that l.

    Raises
    ------
    ValueError
        When more than four sites are asked for and the positions are collinear.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p, x = rng.normal(size=(12, 2)), rng.normal(size=(12, 3))
    >>> order = greedy_site_order(p, x)
    >>> sorted(order.tolist()) == list(range(12))  # every frame once
    True
    >>> bool(np.array_equal(greedy_site_order(p, x, count=5), order[:5]))  # nested
    True
    """
    p = np.asarray(p, dtype=float)
    n = p.shape[0]
    count = n if count is None else int(min(count, n))
    order, _ = _greedy_sites(p, np.asarray(x, dtype=float), count=count)
    return order[:count]


def _greedy_sites(p: np.ndarray, x: np.ndarray, *, count: int, budget: float | None = None
                 ) -> tuple[np.ndarray, int]:
    """The greedy site order (:func:`greedy_site_order`) up to ``count`` sites, or fewer: with a
    ``budget``, the order stops at the first l >= 4 whose least-squares error (4),
    sum_i |x_i - g(p_i)|^2, is at most ``budget`` (the error only falls as sites are added).

    Returns every frame index once, and the count l reached (``count`` when the budget was never
    met): the first l indices are the greedy sites, the frames after them follow by their error
    under the l-site fit, largest first (the first of them is the greedy's next site).
    """
    n = p.shape[0]
    order = _first_sites(p, x)
    residual = x - x.mean(axis=0)
    if count > len(order) or budget is not None:
        basis = _NestedBasis(p, x)
        for j in order:
            basis.add_site(j)
        residual = basis.residual
        while len(order) < count and not (budget is not None and len(order) >= min(4, n)
                                          and float(np.sum(residual**2)) <= budget):
            err = np.einsum("ij,ij->i", residual, residual)
            err[order] = -np.inf
            order.append(int(np.argmax(err)))
            basis.add_site(order[-1])
            residual = basis.residual
    used = len(order)
    rest = np.setdiff1d(np.arange(n), np.asarray(order, dtype=int))
    if rest.size:
        err = np.einsum("ij,ij->i", residual[rest], residual[rest])
        order += rest[np.argsort(-err, kind="stable")].tolist()
    return np.asarray(order, dtype=int), used


def _first_sites(p: np.ndarray, x: np.ndarray) -> list[int]:
    """The first four sites: farthest from the best-fit plane of the x_i, spanning the plane."""
    n = p.shape[0]
    centred = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    off_plane = centred - (centred @ vt[:2].T) @ vt[:2] if vt.shape[0] > 2 else np.zeros_like(centred)
    dist = np.linalg.norm(off_plane, axis=1)
    candidates = list(np.argsort(-dist, kind="stable"))
    order: list[int] = []
    scale = max(1e-300, float(np.ptp(p, axis=0).max()))
    for i in candidates:  # the first sites must span the plane (the affine part needs 3 non-collinear)
        if order and np.min(np.linalg.norm(p[order] - p[i], axis=1)) <= 1e-6 * scale:
            continue  # a repeated pose (same position) adds nothing
        trial = order + [int(i)]
        if len(trial) <= 2 or _spread(p[trial]):
            order = trial
        if len(order) == min(4, n):
            break
    for i in candidates:
        if len(order) >= min(4, n):
            break
        if int(i) not in order:
            order.append(int(i))
    return order


class _NestedBasis:
    """An orthonormal basis of the thin-plate least-squares columns as sites are added, and the
    residual of x in it.

    With sites s_1..s_l the fit's columns span {1, p, Phi w : sum w = 0, sum w_j s_j = 0}
    (:func:`fit_pose_signal`).  With three non-collinear anchor sites a_1..a_3, the vectors
    w = e_j - sum_i lambda_i e_{a_i} (lambda: the barycentric coordinates of s_j) satisfy the side
    conditions and span them, so each site beyond the anchors adds the one column
    phi(|p - s_j|) - sum_i lambda_i phi(|p - a_i|): the spaces are nested.  Gram-Schmidt, twice,
    keeps the basis orthonormal; sites at an existing site's place (as merged by
    :func:`fit_pose_signal`) add nothing.
    """

    def __init__(self, p: np.ndarray, x: np.ndarray):
        self.p = p
        self.n = p.shape[0]
        self.scale = max(1e-300, float(np.ptp(p, axis=0).max()))
        self.q = np.empty((self.n, min(self.n, 64)))
        self.rank = 0
        self.residual = x.astype(float, copy=True)
        self.sites: list[int] = []
        self.anchors: list[int] = []
        self.anchor_phi = np.empty((self.n, 0))
        self.barycentric = np.empty((3, 3))
        for column in (np.ones(self.n), p[:, 0], p[:, 1]):
            self._add_column(column.astype(float, copy=True))

    def add_site(self, j: int) -> None:
        s = self.p[j]
        repeated = bool(self.sites) and np.min(np.linalg.norm(self.p[self.sites] - s, axis=1)) <= 1e-6 * self.scale
        self.sites.append(j)
        if repeated:
            return
        if len(self.anchors) < 3:  # the first three distinct sites only complete the affine part
            self.anchors.append(j)
            if len(self.anchors) == 3:
                if not _spread(self.p[self.anchors]):
                    raise ValueError("the sites are collinear: the pose space needs positions spread in 2D")
                self.barycentric = np.vstack([np.ones(3), self.p[self.anchors].T])
                self.anchor_phi = _phi(_dist(self.p, self.p[self.anchors]))
            return
        self._add_site_column(j)

    def _add_site_column(self, j: int) -> None:
        s = self.p[j]
        lam = np.linalg.solve(self.barycentric, np.array([1.0, s[0], s[1]]))
        column = _phi(np.linalg.norm(self.p - s, axis=1)) - self.anchor_phi @ lam
        self._add_column(column)

    def _add_column(self, column: np.ndarray) -> None:
        norm0 = float(np.linalg.norm(column))
        if norm0 == 0.0:
            return
        q = self.q[:, : self.rank]
        for _ in range(2):  # classical Gram-Schmidt twice: orthogonal to working precision
            column -= q @ (q.T @ column)
        norm = float(np.linalg.norm(column))
        if norm <= 1e-10 * norm0:
            return  # numerically inside the span already
        if self.rank == self.q.shape[1]:
            grown = np.empty((self.n, min(self.n + 3, 2 * self.q.shape[1])))
            grown[:, : self.rank] = self.q[:, : self.rank]
            self.q = grown
        unit = column / norm
        self.q[:, self.rank] = unit
        self.rank += 1
        self.residual -= np.outer(unit, unit @ self.residual)
