"""B-spline toolkit: clamped knot vectors, banded bases for many knot vectors at once,
least-squares control points, evaluation with derivatives, and exact conversion to
Blender-style cubic Bezier keys (:mod:`.bezier_keys`).

Everything is vectorised over a *population* axis S so that CMA-ES can score all its
candidate knot vectors in one call (steps 2-3 of Mukai, "Latent Nonuniform Splines for
Animation Approximation", §3, without a per-candidate lstsq).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import linalg, sparse

from .bezier_keys import BezierCurve

__all__ = [
    "LSQ_RIDGE",
    "banded_cholesky_batch",
    "banded_cholesky_solve",
    "basis_batch",
    "clamped_knots",
    "cox_de_boor",
    "derivative_spline",
    "design_matrix",
    "evaluate",
    "evaluate_batch",
    "find_spans",
    "knot_jumps",
    "lsq_batch",
    "lsq_control_points",
    "pad_knot_vectors",
    "spline_to_bezier",
]

# lsq_batch's relative Tikhonov term: keeps the normal equations solvable when a span holds no sample.
LSQ_RIDGE = 1e-10


def clamped_knots(internal: np.ndarray, start: float, end: float, degree: int) -> np.ndarray:
    """Full knot vector: ends repeated degree+1 times so the spline interpolates its end points.

    Parameters
    ----------
    internal : ndarray, shape (n_int,) or (S, n_int)
        Internal knots (non-decreasing), one row per knot vector.
    start, end : float
        The spline's domain.
    degree : int
        Polynomial degree D.

    Returns
    -------
    ndarray, shape (n_int + 2(D + 1),) or (S, n_int + 2(D + 1))

    Examples
    --------
    >>> clamped_knots([0.5], 0.0, 1.0, 2).tolist()
    [0.0, 0.0, 0.0, 0.5, 1.0, 1.0, 1.0]
    """
    internal = np.asarray(internal, dtype=float)
    pad = degree + 1
    if internal.ndim == 1:
        return np.concatenate([np.full(pad, start), internal, np.full(pad, end)])
    s = internal.shape[0]
    return np.concatenate([np.full((s, pad), start), internal, np.full((s, pad), end)], axis=1)


def find_spans(
    knots: np.ndarray, x: np.ndarray, degree: int, n_ctrl: np.ndarray | None = None
) -> np.ndarray:
    """Span index i with t_i <= x < t_{i+1} for each row of knots and each x.

    Parameters
    ----------
    knots : ndarray, shape (S, nk)
        Clamped knot vectors.
    x : ndarray, shape (N,)
        Parameter values.
    degree : int
        Polynomial degree D.
    n_ctrl : ndarray of int, shape (S,), optional
        Each row's real control-point count when rows are padded with phantom knots past the
        end (see :func:`pad_knot_vectors`); the end sample then stays in the last real span.

    Returns
    -------
    ndarray of int, shape (S, N)
        Span indices, clipped to [D, n_ctrl - 1].
    """
    s_count, nk = knots.shape
    if n_ctrl is None:
        n_ctrl = np.full(s_count, nk - degree - 1)
    lo, hi = float(min(knots.min(), x.min())), float(max(knots.max(), x.max()))
    # one searchsorted for all rows: shift row s by s * (range + 1) so rows never interleave
    shift = (hi - lo + 1.0) * np.arange(s_count)[:, None]
    flat = (knots - lo + shift).ravel()
    pos = np.searchsorted(flat, (x[None, :] - lo + shift).ravel(), side="right").reshape(s_count, -1)
    counts = pos - (np.arange(s_count) * nk)[:, None]
    return np.clip(counts - 1, degree, np.asarray(n_ctrl)[:, None] - 1)


def basis_batch(
    knots: np.ndarray,
    x: np.ndarray,
    degree: int,
    spans: np.ndarray | None = None,
    n_ctrl: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Non-zero basis values of many knot vectors (Cox-de Boor, Piegl and Tiller, The NURBS
    Book, algorithm A2.2).

    Parameters
    ----------
    knots : ndarray, shape (S, nk) or (nk,)
        Clamped knot vectors.
    x : ndarray, shape (N,)
        Parameter values.
    degree : int
        Polynomial degree D.
    spans : ndarray of int, shape (S, N), optional
        Spans to evaluate, to evaluate a polynomial piece outside its interval (one-sided
        derivatives at knots); found from ``x`` by default.
    n_ctrl : ndarray of int, shape (S,), optional
        Real control-point counts of padded rows (:func:`pad_knot_vectors`).

    Returns
    -------
    spans : ndarray of int, shape (S, N)
    values : ndarray, shape (S, N, D + 1)
        ``values[s, n, r]`` is B_{span-D+r, D}(x_n) for knot vector s.
    """
    knots = np.atleast_2d(np.asarray(knots, dtype=float))
    x = np.asarray(x, dtype=float)
    # spans found here always hold their sample (non-empty), so no denominator vanishes;
    # explicitly given spans may not, and get the guard
    guard = spans is not None
    if spans is None:
        spans = find_spans(knots, x, degree, n_ctrl)
    s_count = spans.shape[0]
    at = spans + (np.arange(s_count) * knots.shape[1])[:, None]  # flat index of t_span per row
    return spans, cox_de_boor(knots.ravel(), at, x[None, :], degree, guard)


def cox_de_boor(flat_knots: np.ndarray, at: np.ndarray, x: np.ndarray, degree: int, guard: bool = False) -> np.ndarray:
    """Non-zero basis values at x, each evaluated on the span that starts at ``flat_knots[at]``.

    The knots of every evaluation are read from one flat array by index, so evaluations of
    many knot vectors (rows of a 2-D array, or pieces of any length laid end to end) share one
    vectorised recursion (Piegl and Tiller, The NURBS Book, algorithm A2.2).

    Parameters
    ----------
    flat_knots : ndarray, shape (F,)
        Knots of all the knot vectors, laid end to end.
    at : ndarray of int, any shape
        Index in ``flat_knots`` of the span's first knot t_span, per evaluation; the span needs
        ``degree`` knots on each side of it in the same knot vector.
    x : ndarray
        Parameter values, broadcastable to ``at``.
    degree : int
        Polynomial degree D.
    guard : bool
        Spans may be empty (a zero-length span): their terms are taken as 0 instead of 0/0.

    Returns
    -------
    ndarray, shape at.shape + (D + 1,)
        ``values[..., r]`` is B_{span-D+r, D}(x).
    """
    shape = np.broadcast_shapes(at.shape, np.shape(x))
    # contiguous planes: strided [..., r] slices of one array are much slower
    vals = [np.ones(shape)]
    left: list[np.ndarray] = [np.empty(0)]
    right: list[np.ndarray] = [np.empty(0)]
    for j in range(1, degree + 1):
        left.append(x - flat_knots[at + 1 - j])
        right.append(flat_knots[at + j] - x)
        saved = np.zeros(shape)
        for r in range(j):
            denom = right[r + 1] + left[j - r]
            if guard:
                denom[denom == 0.0] = np.inf  # empty span: its terms vanish
            temp = vals[r] / denom
            vals[r] = saved + right[r + 1] * temp
            saved = left[j - r] * temp
        vals.append(saved)
    return np.stack(vals, axis=-1)


def design_matrix(knots: np.ndarray, x: np.ndarray, degree: int) -> np.ndarray:
    """Dense collocation matrix of one knot vector (for tests and small problems).

    Parameters
    ----------
    knots : ndarray, shape (K + D + 1,)
        Clamped knot vector.
    x : ndarray, shape (N,)
        Parameter values.
    degree : int
        Polynomial degree D.

    Returns
    -------
    ndarray, shape (N, K)
        ``B[n, k]`` = B_k(x_n); rows sum to 1.
    """
    knots = np.asarray(knots, dtype=float)
    n_ctrl = knots.size - degree - 1
    spans, vals = basis_batch(knots[None], x, degree)
    mat = np.zeros((x.size, n_ctrl))
    rows = np.arange(x.size)
    for r in range(degree + 1):
        mat[rows, spans[0] - degree + r] = vals[0, :, r]
    return mat


def _stacked_basis(spans: np.ndarray, vals: np.ndarray, n_ctrl: int, degree: int) -> sparse.csr_matrix:
    """Block-diagonal sparse (S*N, S*K) collocation matrix of S knot vectors."""
    s_count, n, width = vals.shape
    cols = (np.arange(s_count) * n_ctrl)[:, None, None] + spans[..., None] - degree + np.arange(width)
    indptr = np.arange(0, s_count * n * width + 1, width)
    return sparse.csr_matrix(
        (vals.ravel(), cols.ravel(), indptr), shape=(s_count * n, s_count * n_ctrl)
    )


def _normal_equations(
    spans: np.ndarray, vals: np.ndarray, data: np.ndarray, n_ctrl: int, degree: int
) -> tuple[np.ndarray, np.ndarray, sparse.csr_matrix]:
    """Banded B^T B (S, K, D+1) [band[i, d] = (B^T B)[i, i+d]], B^T X (S, K, L), and B."""
    s_count, n, width = vals.shape
    base = (np.arange(s_count) * n_ctrl)[:, None]
    band = np.zeros((s_count * n_ctrl, width))
    # Samples are sorted, so each (candidate, span) owns a contiguous run of samples: sum the
    # basis products per run (reduceat), then every run adds to distinct rows of the band.
    flat_spans = (base + spans).ravel()
    starts = np.flatnonzero(np.concatenate([[True], flat_spans[1:] != flat_spans[:-1]]))
    if starts.size * 4 > flat_spans.size:  # unsorted or very sparse samples: plain bincount
        for r1 in range(width):
            rows = flat_spans - degree + r1
            for r2 in range(r1, width):
                band[:, r2 - r1] += np.bincount(
                    rows, weights=(vals[..., r1] * vals[..., r2]).ravel(), minlength=band.shape[0]
                )
    else:
        flat_vals = vals.reshape(-1, width)
        run_spans = flat_spans[starts]
        for r1 in range(width):
            rows = run_spans - degree + r1
            for r2 in range(r1, width):
                band[rows, r2 - r1] += np.add.reduceat(flat_vals[:, r1] * flat_vals[:, r2], starts)
    band = band.ravel()
    mat = _stacked_basis(spans, vals, n_ctrl, degree)
    # B^T X for every candidate: (S*N, S*K)^T @ stacked X (shared X is tiled)
    stacked = data.reshape(s_count * n, -1) if data.ndim == 3 else np.tile(data, (s_count, 1))
    rhs = np.asarray(mat.T @ stacked)
    return band.reshape(s_count, n_ctrl, width), rhs.reshape(s_count, n_ctrl, data.shape[-1]), mat


def banded_cholesky_solve(band: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve many symmetric positive definite banded systems at once.

    O(S K w^2): linear in K, so long clips with many knots stay cheap.

    Parameters
    ----------
    band : ndarray, shape (S, K, w)
        Upper band: ``band[s, i, d] = A_s[i, i + d]``.
    rhs : ndarray, shape (S, K, L)
        Right-hand sides.

    Returns
    -------
    ndarray, shape (S, K, L)
        Solutions of ``A_s c = rhs[s]``.
    """
    s_count, n_ctrl, width = band.shape
    if n_ctrl <= 48:
        # small systems: one batched dense LAPACK call beats S banded calls
        dense = np.zeros((s_count, n_ctrl, n_ctrl))
        idx = np.arange(n_ctrl)
        for d in range(width):
            dense[:, idx[: n_ctrl - d], idx[d:]] = band[:, : n_ctrl - d, d]
            dense[:, idx[d:], idx[: n_ctrl - d]] = band[:, : n_ctrl - d, d]
        return np.linalg.solve(dense, rhs)
    if s_count <= 256:
        # LAPACK's banded Cholesky (pbsv) per candidate: O(K w^2) in C, ~20 us call overhead
        out = np.empty_like(rhs)
        ab = np.empty((width, n_ctrl))
        for s in range(s_count):
            # upper storage for solveh_banded: ab[w-1-d, i+d] = A[i, i+d]
            for d in range(width):
                ab[width - 1 - d, d:] = band[s, : n_ctrl - d, d]
                ab[width - 1 - d, :d] = 0.0
            out[s] = linalg.solveh_banded(ab, rhs[s], check_finite=False)
        return out
    return banded_cholesky_batch(band, rhs)


def banded_cholesky_batch(band: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """:func:`banded_cholesky_solve` vectorised over the systems, in numpy.

    Many small systems at the cost of K w^2 numpy calls: no LAPACK call per system (a batched
    LAPACK solve of many tiny systems can be hundreds of times slower on a busy machine, where
    the BLAS threads wait for cores).

    Parameters
    ----------
    band : ndarray, shape (S, K, w)
        Upper band: ``band[s, i, d] = A_s[i, i + d]``.
    rhs : ndarray, shape (S, K, L)
        Right-hand sides.

    Returns
    -------
    ndarray, shape (S, K, L)
    """
    s_count, n_ctrl, width = band.shape
    u = np.zeros_like(band)  # u[:, i, d] = U[i, i+d] of A = U^T U
    for i in range(n_ctrl):
        # diagonal
        acc = band[:, i, 0].copy()
        for k in range(max(0, i - width + 1), i):
            acc -= u[:, k, i - k] ** 2
        diag = np.sqrt(np.maximum(acc, 1e-300))
        u[:, i, 0] = diag
        for d in range(1, width):
            j = i + d
            if j >= n_ctrl:
                break
            acc = band[:, i, d].copy()
            for k in range(max(0, j - width + 1), i):
                acc -= u[:, k, i - k] * u[:, k, j - k]
            u[:, i, d] = acc / diag
    # U^T y = rhs (forward), U c = y (backward)
    y = np.empty_like(rhs)
    for i in range(n_ctrl):
        acc = rhs[:, i, :].copy()
        for k in range(max(0, i - width + 1), i):
            acc -= u[:, k, i - k, None] * y[:, k, :]
        y[:, i, :] = acc / u[:, i, 0, None]
    c = np.empty_like(rhs)
    for i in range(n_ctrl - 1, -1, -1):
        acc = y[:, i, :].copy()
        for d in range(1, width):
            j = i + d
            if j >= n_ctrl:
                break
            acc -= u[:, i, d, None] * c[:, j, :]
        c[:, i, :] = acc / u[:, i, 0, None]
    return c


def pad_knot_vectors(internal: Sequence[np.ndarray], degree: int, multiplicity: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Clamped knot vectors on [0, 1] of different lengths as one array.

    Shorter rows get phantom knots past 1; their basis functions touch no sample, so their
    control points solve to 0 and the real part is exactly the unpadded fit.

    Parameters
    ----------
    internal : sequence of ndarray
        S internal knot vectors in (0, 1), any lengths.
    degree : int
        Polynomial degree D.
    multiplicity : int
        Every internal knot repeated this often.

    Returns
    -------
    knots : ndarray, shape (S, nk)
    n_ctrl : ndarray of int, shape (S,)
        Each row's real control-point count.
    """
    sizes_in = {np.shape(k)[-1] for k in internal}
    if len(sizes_in) == 1:  # common case (one CMA-ES population): no padding, no Python loop
        stacked = np.repeat(np.asarray(internal, dtype=float).reshape(len(internal), -1), multiplicity, axis=1)
        return clamped_knots(stacked, 0.0, 1.0, degree), np.full(len(internal), stacked.shape[1] + degree + 1)
    full = [np.repeat(np.asarray(k, dtype=float), multiplicity) for k in internal]
    sizes = np.array([f.size for f in full])
    longest = int(sizes.max()) if sizes.size else 0
    out = np.empty((len(full), longest + 2 * (degree + 1)))
    for row, f in enumerate(full):
        extra = longest - f.size
        out[row] = np.concatenate(
            [np.zeros(degree + 1), f, np.ones(degree + 1), 1.0 + np.arange(1, extra + 1) * 1e-3]
        )
    return out, sizes + degree + 1


def lsq_batch(
    knots: np.ndarray,
    x: np.ndarray,
    data: np.ndarray,
    degree: int,
    ridge: float = LSQ_RIDGE,
    return_fit: bool = True,
    n_ctrl: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Least-squares control points for S knot vectors at once (banded normal equations).

    Parameters
    ----------
    knots : ndarray, shape (S, nk)
        Clamped knot vectors.
    x : ndarray, shape (N,)
        Sorted sample parameters.
    data : ndarray, shape (N, L), (N,) or (S, N, L)
        Samples, shared by every candidate or one set per candidate.
    degree : int
        Polynomial degree D.
    ridge : float
        Relative Tikhonov term: keeps the normal equations solvable when a candidate has an
        empty span.
    return_fit : bool
        Also return the fitted values (else only the SSE from the normal equations).
    n_ctrl : ndarray of int, shape (S,), optional
        Real control-point counts of padded rows (:func:`pad_knot_vectors`).

    Returns
    -------
    control_points : ndarray, shape (S, K, L)
    fit : ndarray, shape (S, N, L), or None
        Fitted values (None without ``return_fit``).
    sse : ndarray, shape (S,)
        Sum of squared residuals per candidate.
    """
    knots = np.atleast_2d(np.asarray(knots, dtype=float))
    data = np.asarray(data, dtype=float)
    if data.ndim == 1:
        data = data[:, None]
    s_count = knots.shape[0]
    n_ctrl_all = knots.shape[1] - degree - 1
    spans, vals = basis_batch(knots, x, degree, n_ctrl=n_ctrl)
    band, rhs, mat = _normal_equations(spans, vals, data, n_ctrl_all, degree)
    scale = np.maximum(band[:, :, 0].sum(axis=1) / (n_ctrl_all if n_ctrl is None else n_ctrl), 1e-300)
    band[:, :, 0] += ridge * scale[:, None]
    ctrl = banded_cholesky_solve(band, rhs)
    per_row = data if data.ndim == 3 else data[None]
    if not return_fit:
        energy = (per_row**2).sum(axis=(1, 2)) * (1 if data.ndim == 3 else np.ones(s_count))
        sse = np.maximum(energy - np.einsum("skl,skl->s", ctrl, rhs), 0.0)
        return ctrl, None, sse
    fit = np.asarray(mat @ ctrl.reshape(-1, ctrl.shape[2])).reshape(s_count, x.size, -1)
    sse = ((fit - per_row) ** 2).sum(axis=(1, 2))
    return ctrl, fit, sse


def _gather_eval(ctrl: np.ndarray, spans: np.ndarray, vals: np.ndarray, degree: int) -> np.ndarray:
    s_count, n, width = vals.shape
    n_ctrl = ctrl.shape[1]
    mat = _stacked_basis(spans, vals, n_ctrl, degree)
    return np.asarray(mat @ ctrl.reshape(s_count * n_ctrl, -1)).reshape(s_count, n, -1)


def lsq_control_points(knots: np.ndarray, x: np.ndarray, data: np.ndarray, degree: int) -> np.ndarray:
    """Least-squares control points of one knot vector.

    Parameters
    ----------
    knots : ndarray, shape (nk,)
    x : ndarray, shape (N,)
    data : ndarray, shape (N, L) or (N,)
    degree : int

    Returns
    -------
    ndarray, shape (K, L)
    """
    ctrl, _, _ = lsq_batch(np.asarray(knots)[None], x, data, degree, return_fit=False)
    return ctrl[0]


def evaluate_batch(knots: np.ndarray, ctrl: np.ndarray, x: np.ndarray, degree: int) -> np.ndarray:
    """Values of S splines.

    Parameters
    ----------
    knots : ndarray, shape (S, nk)
    ctrl : ndarray, shape (S, K, L)
    x : ndarray, shape (N,)
        Parameter values inside the knot range.
    degree : int

    Returns
    -------
    ndarray, shape (S, N, L)
    """
    spans, vals = basis_batch(knots, x, degree)
    return _gather_eval(ctrl, spans, vals, degree)


def derivative_spline(knots: np.ndarray, ctrl: np.ndarray, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """Knots and control points of the derivative spline (degree D - 1).

    Parameters
    ----------
    knots : ndarray, shape (K + D + 1,)
    ctrl : ndarray, shape (K, L)
    degree : int

    Returns
    -------
    knots : ndarray, shape (K + D - 1,)
    ctrl : ndarray, shape (K - 1, L)
    """
    knots = np.asarray(knots, dtype=float)
    ctrl = np.asarray(ctrl, dtype=float)
    denom = knots[degree + 1 : degree + 1 + ctrl.shape[0] - 1] - knots[1 : ctrl.shape[0]]
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(denom > 0, degree / np.where(denom > 0, denom, 1.0), 0.0)
    dctrl = factor[:, None] * (ctrl[1:] - ctrl[:-1])
    return knots[1:-1], dctrl


def evaluate(
    knots: np.ndarray, ctrl: np.ndarray, x: np.ndarray, degree: int, derivative: int = 0
) -> np.ndarray:
    """Values of one spline, or of its derivative.

    Parameters
    ----------
    knots : ndarray, shape (K + D + 1,)
    ctrl : ndarray, shape (K, L) or (K,)
    x : array_like, shape (N,)
        Parameter values, clamped to the knot range.
    degree : int
    derivative : int
        Order of the derivative (0: values).

    Returns
    -------
    ndarray, shape (N, L), or (N,) for 1-D ``ctrl``

    Examples
    --------
    >>> import numpy as np
    >>> knots = clamped_knots([], 0.0, 2.0, 1)
    >>> evaluate(knots, np.array([1.0, 3.0]), [0.0, 1.0, 5.0], 1).tolist()
    [1.0, 2.0, 3.0]
    """
    knots = np.asarray(knots, dtype=float)
    ctrl = np.asarray(ctrl, dtype=float)
    squeeze = ctrl.ndim == 1
    if squeeze:
        ctrl = ctrl[:, None]
    for _ in range(derivative):
        if degree == 0:
            return np.zeros((np.size(x), ctrl.shape[1]))
        knots, ctrl = derivative_spline(knots, ctrl, degree)
        degree -= 1
    x = np.clip(np.atleast_1d(np.asarray(x, dtype=float)), knots[0], knots[-1])
    out = evaluate_batch(knots[None], ctrl[None], x, degree)[0]
    return out[:, 0] if squeeze else out


def _piece_values(
    knots: np.ndarray, ctrl: np.ndarray, degree: int, x: np.ndarray, spans: np.ndarray
) -> np.ndarray:
    """Evaluate the polynomial piece of each given span at x (also just outside the span)."""
    _, vals = basis_batch(knots[None], x, degree, spans=spans[None])
    # one knot vector: gather the D + 1 control points of each span directly (a sparse basis
    # matrix, as the batched evaluation builds, costs more than the product for a curve's keys)
    rows = spans[:, None] - degree + np.arange(degree + 1)
    return np.einsum("nr,nrl->nl", vals[0], ctrl[rows])


def knot_jumps(knots: np.ndarray, ctrl: np.ndarray, degree: int, order: int, breaks: np.ndarray) -> np.ndarray:
    """Jump of the order-th derivative at each break (distinct internal knot), max over columns.

    A small jump times the local span length to that power means the knot can go (the
    classic knot-removal criterion): used to pick which removals are worth a full fit.

    Parameters
    ----------
    knots : ndarray, shape (K + D + 1,)
    ctrl : ndarray, shape (K, L)
    degree : int
    order : int
        Derivative order, at most D.
    breaks : ndarray, shape (B,)
        Distinct internal knots.

    Returns
    -------
    ndarray, shape (B,)
        Max over columns of |right limit - left limit| of the derivative.
    """
    knots = np.asarray(knots, dtype=float)
    ctrl = np.asarray(ctrl, dtype=float)
    for _ in range(order):
        knots, ctrl = derivative_spline(knots, ctrl, degree)
        degree -= 1
    n_ctrl = ctrl.shape[0]
    right = np.clip(np.searchsorted(knots, breaks, side="right") - 1, degree, n_ctrl - 1)
    left = np.clip(np.searchsorted(knots, breaks, side="left") - 1, degree, n_ctrl - 1)
    diff = _piece_values(knots, ctrl, degree, breaks, right) - _piece_values(knots, ctrl, degree, breaks, left)
    return np.abs(diff).max(axis=1)


def spline_to_bezier(knots: np.ndarray, ctrl: np.ndarray, degree: int) -> list[BezierCurve]:
    """Exact piecewise-cubic Bezier keys (one per distinct knot) for each column of ctrl.

    Handles sit at 1/3 of each neighbouring segment, so Blender's x(t) is linear and the
    segment reproduces the polynomial piece exactly (see BLENDER_FACTS.md). Keys where the
    one-sided slopes agree get ALIGNED handles, corners (C0 knots) FREE ones.

    Parameters
    ----------
    knots : ndarray, shape (K + D + 1,)
        Clamped knot vector, in frames.
    ctrl : ndarray, shape (K, L) or (K,)
        Control points, one column per channel.
    degree : {0, 1, 2, 3}

    Returns
    -------
    list of BezierCurve
        L curves with one key per distinct knot.

    Raises
    ------
    ValueError
        If ``degree`` > 3.
    """
    if degree > 3:
        raise ValueError("Blender Bezier segments are cubic: degree must be 1, 2 or 3")
    knots = np.asarray(knots, dtype=float)
    ctrl = np.asarray(ctrl, dtype=float)
    if ctrl.ndim == 1:
        ctrl = ctrl[:, None]
    n_ctrl = ctrl.shape[0]
    breaks = np.unique(knots[degree : n_ctrl + 1])
    n_keys = breaks.size
    seg_lo, seg_hi = breaks[:-1], breaks[1:]
    h = seg_hi - seg_lo
    # span of each segment: last index i with t_i <= seg_lo (and t_i < t_{i+1})
    spans = np.clip(np.searchsorted(knots, seg_lo, side="right") - 1, degree, n_ctrl - 1)
    dknots, dctrl = derivative_spline(knots, ctrl, degree) if degree > 0 else (knots, ctrl * 0)
    val_lo = _piece_values(knots, ctrl, degree, seg_lo, spans)
    val_hi = _piece_values(knots, ctrl, degree, seg_hi, spans)
    if degree > 0:
        der_lo = _piece_values(dknots, dctrl, degree - 1, seg_lo, spans - 1)
        der_hi = _piece_values(dknots, dctrl, degree - 1, seg_hi, spans - 1)
    else:
        der_lo = der_hi = np.zeros_like(val_lo)
    values = np.vstack([val_lo, val_hi[-1:]])
    # slope to the right of key j (segment j) and to the left of key j (segment j-1)
    slope_right = np.vstack([der_lo, der_hi[-1:]])
    slope_left = np.vstack([der_lo[:1], der_hi])
    h_right = np.concatenate([h, h[-1:]])
    h_left = np.concatenate([h[:1], h])
    curves = []
    for col in range(ctrl.shape[1]):
        co = np.column_stack([breaks, values[:, col]])
        hl = np.column_stack([breaks - h_left / 3, values[:, col] - h_left / 3 * slope_left[:, col]])
        hr = np.column_stack([breaks + h_right / 3, values[:, col] + h_right / 3 * slope_right[:, col]])
        scale = max(1.0, float(np.max(np.abs(slope_left[:, col]))))
        smooth = np.abs(slope_left[:, col] - slope_right[:, col]) <= 1e-9 * scale
        smooth[[0, -1]] = True
        types = np.where(smooth, "ALIGNED", "FREE")
        curves.append(BezierCurve(co, hl, hr, types))
    del n_keys
    return curves
