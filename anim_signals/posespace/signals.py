"""Time, pose and shape signals of a frame sequence.

Cashman and Hormann, "A continuous, editable representation for deforming mesh sequences with
separate signals for time, pose and shape" (section numbers below refer to it).
psi = h o g o f maps time to shapes:

* h, the **shape signal** (§2.1, §3.1): an affine subspace of the shape space, PCA of the frames
  (or spanned by given example shapes, §4.3);
* g, the **pose signal** (§2.2, §3.2): a thin-plate spline from a 2D pose space into that subspace,
  least squares on l <= n sites picked greedily (nested: raising l only lowers the error);
* f, the **time signal** (§2.3, §3.3): a cubic B-spline through the frames' pose-space positions,
  centripetal parameters, Piegl-Tiller knots, and a monotone (Fritsch-Carlson) reparametrisation
  rho from frame numbers to the spline parameter.

Frames are rows of ``Z`` (n, d): vertex coordinates stacked (d = 3V), or any pose vector (an
armature's channels).  Everything here is numpy/scipy; the signals are immutable.  The MDS layout
of the frames in pose space (§3.2.1, with pinned frames) is here too; the representation that
holds the three signals, :class:`~.space.PoseSpace`, and :func:`~.space.build_pose_space` are in
:mod:`.space`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from ..splines import bspline
from ..validation import MAX_MAGNITUDE

__all__ = [
    "DEGREE",
    "MIN_FRAMES",
    "PoseSignal",
    "ShapeSignal",
    "TimeSignal",
    "centripetal_params",
    "fit_pose_signal",
    "fit_time_signal",
    "mds_positions",
    "piegl_tiller_knots",
    "shape_signal",
    "shape_signal_from_examples",
    "stress",
]

MIN_FRAMES = 4  # the time signal is a cubic B-spline: at least 4 control points, one per frame
DEGREE = 3  # of the time signal's B-spline


# ------------------------------------------------------------------------------------------------
# input checks
# ------------------------------------------------------------------------------------------------


def _frames_matrix(z: np.ndarray) -> np.ndarray:
    try:
        z = np.asarray(z, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"z must be a (frames, values) array of numbers: {err}") from err
    if z.ndim != 2 or z.shape[1] == 0:
        raise ValueError(f"frames must be a (frames, values) array, got shape {z.shape}")
    if z.shape[0] < MIN_FRAMES:
        raise ValueError(f"a pose space needs at least {MIN_FRAMES} frames, got {z.shape[0]}")
    bad = ~np.isfinite(z)
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        raise ValueError(f"frame {row} has NaN or infinite values")
    if float(np.abs(z).max()) > MAX_MAGNITUDE:
        raise ValueError(f"z has values beyond +-{MAX_MAGNITUDE:.0e}: too large to compute with")
    return z


# ------------------------------------------------------------------------------------------------
# shape signal h
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShapeSignal:
    """The shape signal h(x) = h0 + H x (§2.1).

    Attributes
    ----------
    h0 : ndarray, shape (d,)
        Origin of the affine subspace (the mean frame, or the base example shape).
    H : ndarray, shape (d, m)
        Spanning vectors.
    orthonormal : bool
        H has orthonormal columns (PCA); example shapes (§4.3) are not orthogonal.
    """

    h0: np.ndarray
    H: np.ndarray
    orthonormal: bool = True

    @property
    def m(self) -> int:
        """Dimension of the subspace."""
        return int(self.H.shape[1])

    def encode(self, z: np.ndarray) -> np.ndarray:
        """Least-squares coordinates of shapes (..., d) in the subspace: (..., m)."""
        y = np.asarray(z, dtype=float) - self.h0
        if self.orthonormal:
            return y @ self.H
        sol, *_ = np.linalg.lstsq(self.H, y.reshape(-1, self.H.shape[0]).T, rcond=None)
        return sol.T.reshape(*y.shape[:-1], self.m)

    def decode(self, x: np.ndarray) -> np.ndarray:
        """Shapes (..., d) of subspace coordinates (..., m)."""
        return self.h0 + np.asarray(x, dtype=float) @ self.H.T


def _rms_rows(residual_sq_sum: float, n: int, d: int, row_size: int) -> float:
    rows = max(1, d // max(1, row_size))
    return float(np.sqrt(max(residual_sq_sum, 0.0) / (n * rows)))


def shape_signal(z: np.ndarray, *, m: int | None = None, tolerance: float | None = None,
                 row_size: int = 3) -> tuple[ShapeSignal, np.ndarray]:
    """PCA shape signal (§3.1): h0 the mean frame, H the first m right singular vectors.

    Parameters
    ----------
    z : ndarray, shape (n, d)
        Frames as rows (n >= 4): stacked vertex coordinates (d = 3V) or any pose vector.
    m : int, optional
        Subspace dimension, 1 .. min(n, d).
    tolerance : float, optional
        Without ``m``: the smallest m whose RMS error per row of ``row_size`` values (a vertex)
        is at most this (in the frames' units). Without either: the rank of the frames (exact).
    row_size : int
        Values per row for the error (3: a vertex).

    Returns
    -------
    signal : ShapeSignal
    x : ndarray, shape (n, m)
        Coordinates of the frames.

    Raises
    ------
    ValueError
        On fewer than 4 frames, NaN / infinite values, a static sequence or ``m`` out of range.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0.0, 2 * np.pi, 12, endpoint=False)
    >>> z = np.column_stack([np.cos(t), np.sin(t), np.cos(t) + np.sin(t)])  # rank 2 about the mean
    >>> signal, x = shape_signal(z, row_size=1)
    >>> signal.m, x.shape
    (2, (12, 2))
    >>> bool(np.allclose(signal.decode(x), z))
    True
    """
    z = _frames_matrix(z)
    n, d = z.shape
    h0 = z.mean(axis=0)
    y = z - h0
    u, s, vt = np.linalg.svd(y, full_matrices=False)
    scale = float(np.abs(z).max()) or 1.0
    rank = int(np.count_nonzero(s > 1e-12 * scale * np.sqrt(n * d)))
    if rank == 0:
        raise ValueError("the sequence is static: every frame is the same shape (zero variance)")
    if m is None:
        if tolerance is not None:
            tail = np.concatenate([np.cumsum((s**2)[::-1])[::-1], [0.0]])  # tail[j] = sum_{i >= j} s_i^2
            # every numerically significant component (rank) when even those leave more than the
            # tolerance: what remains is float64 rounding of large values, no component can fix it
            m = next((j for j in range(1, rank + 1) if _rms_rows(tail[j], n, d, row_size) <= tolerance), rank)
        else:
            m = rank
    m = int(m)
    if not 1 <= m <= min(n, d):
        raise ValueError(f"m must be between 1 and {min(n, d)}, got {m}")
    h = vt[:m].T.copy()
    x = u[:, :m] * s[:m]
    return ShapeSignal(h0, h, True), x


def shape_signal_from_examples(q0: np.ndarray, q: np.ndarray, z: np.ndarray) -> tuple[ShapeSignal, np.ndarray]:
    """Shape signal spanned by example shapes (§4.3): h0 = q0, h_j = q_j - q0.

    Parameters
    ----------
    q0 : ndarray, shape (d,)
        Base shape.
    q : ndarray, shape (m, d)
        Example shapes.
    z : ndarray, shape (n, d)
        Frames to express in the examples (n >= 4).

    Returns
    -------
    signal : ShapeSignal
        Not orthonormal.
    x : ndarray, shape (n, m)
        Least-squares coordinates of the frames (normal equations).

    Raises
    ------
    ValueError
        On size mismatches or linearly dependent examples.
    """
    q0 = np.asarray(q0, dtype=float).reshape(-1)
    q = np.atleast_2d(np.asarray(q, dtype=float))
    z = _frames_matrix(z)
    if q.shape[1] != q0.size or z.shape[1] != q0.size:
        raise ValueError(f"examples and frames must have {q0.size} values each")
    h = (q - q0).T
    if np.linalg.matrix_rank(h) < h.shape[1]:
        raise ValueError("the example shapes are linearly dependent (one is a blend of the others)")
    sig = ShapeSignal(q0, h, False)
    x = np.linalg.solve(h.T @ h, h.T @ (z - q0).T).T
    return sig, x


# ------------------------------------------------------------------------------------------------
# pose signal g: thin-plate spline with linear precision
# ------------------------------------------------------------------------------------------------


def _phi(r: np.ndarray) -> np.ndarray:
    r = np.asarray(r, dtype=float)
    out = np.zeros_like(r)
    np.log(r, out=out, where=r > 0.0)  # in place: kernel matrices of n x l are the big arrays here
    out *= r * r
    return out


def _tps_basis(p: np.ndarray, sites: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    diff = p[..., None, :] - sites
    r = np.sqrt(np.einsum("...ij,...ij->...i", diff, diff))
    ones = np.ones(p.shape[:-1] + (1,))
    return np.concatenate([_phi(r), ones, p], axis=-1)


@dataclass(frozen=True)
class PoseSignal:
    """The pose signal g(p) = affine[0] + p @ affine[1:] + sum_j phi(|p - s_j|) weights[j] (§2.2).

    phi(r) = r^2 log r, the thin-plate spline kernel.

    Attributes
    ----------
    sites : ndarray, shape (l, 2)
        RBF centres in pose space.
    weights : ndarray, shape (l, m)
    affine : ndarray, shape (3, m)
    """

    sites: np.ndarray
    weights: np.ndarray
    affine: np.ndarray

    @property
    def l(self) -> int:  # noqa: E743  (the paper's name)
        """Number of sites."""
        return int(self.sites.shape[0])

    @property
    def coefficients(self) -> np.ndarray:
        """(l + 3, m), so that g(p) = basis(p) @ coefficients."""
        return np.vstack([self.weights, self.affine])

    def basis(self, p: np.ndarray) -> np.ndarray:
        """Basis values (..., l + 3) at pose-space points (..., 2)."""
        return _tps_basis(p, self.sites)

    def evaluate(self, p: np.ndarray) -> np.ndarray:
        """Shape coordinates (..., m) at pose-space points (..., 2)."""
        return self.basis(p) @ self.coefficients


def fit_pose_signal(p: np.ndarray, x: np.ndarray, sites: np.ndarray) -> PoseSignal:
    """Least-squares thin-plate spline through (p_i, x_i) with RBF centres ``sites`` (l <= n).

    The side conditions sum w_j = 0 and sum s_j w_j^T = 0 (uniqueness, linear precision) are
    eliminated through a basis of their null space (one QR), leaving an n x l least-squares problem
    (§3.2; scipy's RBFInterpolator cannot use fewer centres than points).  With l = n and
    sites = positions this is the interpolating thin-plate spline.  Coincident sites are merged.

    Parameters
    ----------
    p : ndarray, shape (n, 2)
        Pose-space positions of the frames.
    x : ndarray, shape (n, m)
        Shape coordinates of the frames.
    sites : ndarray, shape (l, 2)
        RBF centres, l >= 3 distinct and not collinear.

    Returns
    -------
    PoseSignal

    Raises
    ------
    ValueError
        On fewer than 3 distinct sites, or collinear sites.
    """
    p = np.asarray(p, dtype=float)
    x = np.asarray(x, dtype=float)
    sites = _unique_rows(np.asarray(sites, dtype=float))
    n, m = x.shape
    ell = sites.shape[0]
    if ell < 3:
        raise ValueError(f"a thin-plate spline needs at least 3 distinct sites, got {ell}")
    # The side conditions' span {1, x, y} is the same for the sites centred and scaled to unit
    # spread, which keeps the collinearity test independent of the layout's scale.
    spread = max(float(np.ptp(sites, axis=0).max()), 1e-300)
    side = np.column_stack([np.ones(ell), (sites - sites.mean(axis=0)) / spread])  # (l, 3)
    q, r = np.linalg.qr(side, mode="complete")
    if abs(np.linalg.det(r[:3, :3])) < 1e-12 * ell ** 1.5:
        raise ValueError("the sites are collinear: the pose space needs positions spread in 2D")
    null = q[:, 3:]  # (l, l - 3), orthogonal to the side conditions
    design = np.hstack([_phi(_dist(p, sites)) @ null, np.ones((n, 1)), p])  # (n, l)
    # Columns equilibrated: kernel columns grow as r^2 log r, the affine ones as 1 and r, so at
    # large layout scales lstsq's relative cut-off would drop the constant column as noise.
    norms = np.linalg.norm(design, axis=0)
    norms[norms == 0.0] = 1.0
    sol, *_ = np.linalg.lstsq(design / norms, x, rcond=None)
    sol /= norms[:, None]
    weights = null @ sol[: ell - 3]
    return PoseSignal(sites, weights, sol[ell - 3:])


def _dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise Euclidean distances (len(a), len(b)), without an (len(a), len(b), dims) temporary."""
    from scipy.spatial.distance import cdist

    return cdist(a, b)


def _unique_rows(a: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    """Rows closer than ``tol`` x the layout's extent merged (first kept): near-coincident sites
    make the thin-plate system ill-conditioned and the surface between them wild."""
    if a.shape[0] < 2:
        return a
    scale = max(1e-300, float(np.ptp(a, axis=0).max()))
    keep = [0]
    for i in range(1, a.shape[0]):
        if np.min(np.linalg.norm(a[keep] - a[i], axis=1)) > tol * scale:
            keep.append(i)
    return a[keep]


def _spread(pts: np.ndarray) -> bool:
    """Some three of the points are not collinear."""
    if pts.shape[0] < 3:
        return True
    c = pts - pts.mean(axis=0)
    s = np.linalg.svd(c, compute_uv=False)
    return bool(s[-1] > 1e-9 * max(1.0, s[0])) if s.size >= 2 else False


# ------------------------------------------------------------------------------------------------
# pose-space positions: MDS stress with pinned positions (SMACOF)
# ------------------------------------------------------------------------------------------------


def stress(p: np.ndarray, x: np.ndarray) -> float:
    """MDS stress (eq. 6): sum over pairs of (|p_i - p_j| - |x_i - x_j|)^2.

    Parameters
    ----------
    p : ndarray, shape (n, 2)
    x : ndarray, shape (n, m)

    Returns
    -------
    float
    """
    dp = _dist(np.asarray(p, dtype=float), np.asarray(p, dtype=float))
    dx = _dist(np.asarray(x, dtype=float), np.asarray(x, dtype=float))
    return float(np.sum(np.triu(dp - dx, 1) ** 2))


def _check_pins(pins: Mapping[int, ArrayLike] | None, n: int, dx: np.ndarray) -> dict[int, np.ndarray]:
    out: dict[int, np.ndarray] = {}
    for key, value in (pins or {}).items():
        i = int(key)
        if not 0 <= i < n:
            raise ValueError(f"pinned frame {i} is outside 0..{n - 1}")
        v = np.asarray(value, dtype=float).reshape(-1)
        if v.size != 2 or not np.all(np.isfinite(v)):
            raise ValueError(f"the pin of frame {i} must be two finite numbers")
        out[i] = v
    keys = sorted(out)
    scale = float(dx.max()) or 1.0
    for a_i, a in enumerate(keys):
        for b in keys[a_i + 1:]:
            if np.linalg.norm(out[a] - out[b]) < 1e-9 * scale and dx[a, b] > 1e-6 * scale:
                raise ValueError(f"frames {a} and {b} differ in shape but are pinned to the same point")
    return out


def mds_positions(x: np.ndarray, *, pins: Mapping[int, ArrayLike] | None = None,
                  init: np.ndarray | None = None, iterations: int = 300, tol: float = 1e-7) -> np.ndarray:
    """2D positions whose distances match the shapes' (stress, eq. 6), user pins kept exactly (§3.2.1).

    SMACOF (Guttman transform); with pinned rows C the free rows F solve
    V_FF P_F = (B(P) P)_F - V_FC P_C, V = n I - 1 1^T, in closed form (Sherman-Morrison).

    Parameters
    ----------
    x : ndarray, shape (n, m)
        Shape coordinates.
    pins : mapping of int to (float, float), optional
        Frame index -> fixed pose-space position.
    init : ndarray, shape (n, 2), optional
        Start layout (default: the first two principal coordinates, classical MDS).
    iterations : int
        SMACOF iterations at most.
    tol : float
        Stop when the relative stress decrease falls below this.

    Returns
    -------
    ndarray, shape (n, 2)

    Raises
    ------
    ValueError
        On a pin outside the frames, a pin that is not two finite numbers, or two different
        shapes pinned to the same point.
    """
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    dx = _dist(x, x)
    fixed = _check_pins(pins, n, dx)
    unit = _layout_unit(dx)
    if unit != 1.0:
        # far from unit scale the steps' absolute guards (no division by a zero distance) would
        # swallow every distance: lay out in units of a power of two (exact) and scale back
        x, dx = x / unit, dx / unit
        fixed = {i: v / unit for i, v in fixed.items()}
        init = None if init is None else np.asarray(init, dtype=float) / unit
    return unit * _smacof_layout(x, dx, fixed, init, iterations, tol)


def _layout_unit(dx: np.ndarray) -> float:
    """1.0 for shapes whose largest distance lies in [1e-3, 1e6]; else the power of two nearest it."""
    largest = float(dx.max()) if dx.size else 0.0
    if largest == 0.0 or not np.isfinite(largest) or 1e-3 <= largest <= 1e6:
        return 1.0
    return float(2.0 ** round(np.log2(largest)))


def _smacof_layout(x: np.ndarray, dx: np.ndarray, fixed: dict[int, np.ndarray], init: np.ndarray | None,
                   iterations: int, tol: float) -> np.ndarray:
    """:func:`mds_positions` on checked pins and the distances ``dx`` of the rows of ``x``."""
    n = x.shape[0]
    if init is not None:
        p = np.array(init, dtype=float, copy=True)
    else:
        c = x - x.mean(axis=0)
        u, s, _ = np.linalg.svd(c, full_matrices=False)
        p = np.zeros((n, 2))
        k = min(2, s.size)
        p[:, :k] = u[:, :k] * s[:k]
    if fixed:
        idx = np.array(sorted(fixed))
        target = np.array([fixed[i] for i in idx])
        if init is None and len(idx) >= 2:
            # bring the unpinned start into the pins' frame (similarity fit on the pinned rows)
            p = _similarity_to(p, idx, target)
        elif init is None:
            p += target[0] - p[idx[0]]
        p[idx] = target
    free = np.setdiff1d(np.arange(n), np.array(sorted(fixed), dtype=int))
    if free.size == 0:
        return p
    n_free = free.size
    bp, prev = _smacof_terms(p, dx)
    for _ in range(iterations):
        if fixed:
            rhs = bp[free] + p[np.array(sorted(fixed))].sum(axis=0)
            # (n I - J)^-1 = (I + J / (n - f)) / n for f free rows, f < n
            p[free] = (rhs + rhs.sum(axis=0) / (n - n_free)) / n
        else:
            p = bp / n
        bp, cur = _smacof_terms(p, dx)
        if prev - cur <= tol * max(prev, 1e-300):
            break
        prev = cur
    return p


def _smacof_terms(p: np.ndarray, dx: np.ndarray) -> tuple[np.ndarray, float]:
    """B(p) p of the Guttman transform and the stress of p, from one pass over the pairs.

    B(p) p = sum_j r_ij (p_i - p_j) with r_ij = |x_i - x_j| / |p_i - p_j| (0 where p_i = p_j).
    Row blocks of about 4M pairs keep the memory beyond ``dx`` small.
    """
    n = p.shape[0]
    bp = np.empty_like(p)
    total = 0.0
    block = max(1, (1 << 22) // max(n, 1))
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        dp = _dist(p[lo:hi], p)
        gap = dp - dx[lo:hi]
        total += float(np.einsum("ij,ij->", gap, gap))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(dp > 1e-12, dx[lo:hi] / np.where(dp > 1e-12, dp, 1.0), 0.0)
        bp[lo:hi] = r.sum(axis=1)[:, None] * p[lo:hi] - r @ p
    return bp, 0.5 * total


def _similarity_to(p: np.ndarray, idx: np.ndarray, target: np.ndarray) -> np.ndarray:
    """p moved by the similarity (rotation, scale, translation) that best maps p[idx] onto target."""
    a = p[idx] - p[idx].mean(axis=0)
    b = target - target.mean(axis=0)
    na = float(np.sum(a * a))
    if na <= 0.0:
        return p - p[idx].mean(axis=0) + target.mean(axis=0)
    u, s, vt = np.linalg.svd(a.T @ b)
    rot = u @ vt
    scale = float(s.sum()) / na
    return (p - p[idx].mean(axis=0)) @ rot * scale + target.mean(axis=0)


# ------------------------------------------------------------------------------------------------
# time signal f
# ------------------------------------------------------------------------------------------------


def centripetal_params(p: np.ndarray) -> np.ndarray:
    """Centripetal parameters (Lee): steps |p_{i+1} - p_i|^(1/2), normalised to [0, 1].

    Parameters
    ----------
    p : ndarray, shape (n, 2)

    Returns
    -------
    ndarray, shape (n,)
        Strictly increasing (coincident neighbours still get distinct parameters).
    """
    p = np.asarray(p, dtype=float)
    steps = np.sqrt(np.linalg.norm(np.diff(p, axis=0), axis=1))
    total = float(steps.sum())
    if total <= 0.0:
        steps = np.ones_like(steps)
        total = float(steps.sum())
    steps = steps + 1e-9 * total  # coincident neighbours still get distinct parameters
    t = np.concatenate([[0.0], np.cumsum(steps)])
    return t / t[-1]


def piegl_tiller_knots(params: np.ndarray, k: int) -> np.ndarray:
    """Clamped cubic knot vector for k control points (Piegl and Tiller, The NURBS Book, §9.4.1).

    Interior knots average the parameters so every basis function has data inside its support
    (Schoenberg-Whitney).  k = n + 2: the interior knots are the data parameters themselves, the
    interpolation configuration of Cashman and Hormann (with natural end conditions fixing the 2
    extra degrees of freedom).

    Parameters
    ----------
    params : ndarray, shape (n,)
        Increasing data parameters.
    k : int
        Control points, 4 .. n + 2.

    Returns
    -------
    ndarray, shape (k + 4,)

    Raises
    ------
    ValueError
        If ``k`` is out of range.
    """
    t = np.asarray(params, dtype=float)
    n = t.size
    if not DEGREE + 1 <= k <= n + 2:
        raise ValueError(f"k must be between {DEGREE + 1} and n + 2 = {n + 2}, got {k}")
    if k == n + 2:
        interior = t[1:-1]
    else:
        d = n / (k - DEGREE)
        j = np.arange(1, k - DEGREE)
        jd = j * d
        i = np.floor(jd).astype(int)
        alpha = jd - i
        interior = (1.0 - alpha) * t[i - 1] + alpha * t[np.minimum(i, n - 1)]
    return bspline.clamped_knots(interior, float(t[0]), float(t[-1]), DEGREE)


@dataclass(frozen=True)
class TimeSignal:
    """The time signal f(time) = spline(rho(time)) (§2.3).

    rho is monotone (Fritsch-Carlson, scipy's PCHIP) from frame numbers to spline parameters.

    Attributes
    ----------
    control : ndarray, shape (k, 2)
        Control points in pose space.
    knots : ndarray, shape (k + 4,)
        Clamped cubic knot vector.
    params : ndarray, shape (n,)
        Spline parameter of each frame.
    frames : ndarray, shape (n,)
        Frame numbers (strictly increasing).
    """

    control: np.ndarray
    knots: np.ndarray
    params: np.ndarray
    frames: np.ndarray

    @property
    def k(self) -> int:
        """Number of control points."""
        return int(self.control.shape[0])

    @cached_property
    def _rho(self):
        from scipy.interpolate import PchipInterpolator

        return PchipInterpolator(self.frames, self.params)

    def rho(self, times: np.ndarray) -> np.ndarray:
        """Spline parameters of frame times (clamped to the frame range), same shape."""
        t = np.clip(np.asarray(times, dtype=float), self.frames[0], self.frames[-1])
        return self._rho(t)

    def spline(self, u: np.ndarray) -> np.ndarray:
        """Pose-space points (..., 2) at spline parameters (...)."""
        u = np.asarray(u, dtype=float)
        flat = bspline.evaluate(self.knots, self.control, u.reshape(-1), DEGREE)
        return flat.reshape(u.shape + (2,))

    def evaluate(self, times: np.ndarray) -> np.ndarray:
        """Pose-space points (..., 2) at frame times (...)."""
        return self.spline(self.rho(times))

    def support(self, j: int) -> tuple[float, float]:
        """Parameter interval where control point j has influence."""
        return float(self.knots[j]), float(self.knots[j + DEGREE + 1])


# Control points up to which a time-signal fit that comes out singular or wild is redone by dense
# least squares (its minimum-norm answer); above, dense would cost O(n k^2).
DENSE_TIME_FIT = 1500
# A control point further than this many layout extents from the layout's centre is wild: the
# least squares is close to singular there (Piegl-Tiller knots with k close to n).
WILD_CONTROL_REACH = 1e3


def control_reach(control: np.ndarray, positions: np.ndarray) -> float:
    """How far the time signal's control points reach: the largest distance (max norm) of a control
    point from the centre of the positions' bounding box, in units of the box's larger side.

    The positions themselves reach at most 0.5; a least-squares spline's control points stay
    near them, a nearly singular fit throws them far out.
    """
    lo, hi = positions.min(axis=0), positions.max(axis=0)
    extent = max(float(np.max(hi - lo)), 1e-300)
    if not np.all(np.isfinite(control)):
        return float("inf")
    return float(np.abs(control - 0.5 * (lo + hi)).max()) / extent


def _end_second_derivative_rows(knots: np.ndarray, k: int) -> np.ndarray:
    """f'' at both ends as rows over the k control points (only the first / last few are non-zero)."""
    rows = np.zeros((2, k))
    width = min(k, DEGREE + 1)
    for r, (u, cols) in enumerate(((knots[0], slice(0, width)), (knots[-1], slice(k - width, k)))):
        part = np.zeros((k, width))
        part[cols] = np.eye(width)
        rows[r, cols] = bspline.evaluate(knots, part, np.array([u]), DEGREE, derivative=2)[0]
    return rows


def _time_control_points(t: np.ndarray, knots: np.ndarray, p: np.ndarray, *, dense_fallback: bool = True
                         ) -> np.ndarray:
    """Control points (k, 2) of the cubic B-spline with ``knots`` fitted to positions p at parameters t.

    k <= n: least squares by banded QR (scipy's ``make_lsq_spline``), O(n); k > n: the square
    system with natural end conditions, sparse LU, O(n).  A result that is singular or wild (see
    ``WILD_CONTROL_REACH``) is redone by dense least squares when ``dense_fallback`` and k is small.
    """
    from scipy import sparse
    from scipy.interpolate import make_lsq_spline
    from scipy.sparse.linalg import spsolve

    n = t.size
    k = knots.size - DEGREE - 1
    control: np.ndarray | None
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if k > n:
                # more control points than frames: natural end conditions (f'' = 0 at the ends) take
                # up the spare freedom (a minimum-norm solution would throw control points far out)
                spans, vals = bspline.basis_batch(knots[None], t, DEGREE)
                cols = spans[0][:, None] - DEGREE + np.arange(DEGREE + 1)
                rows = np.repeat(np.arange(n), DEGREE + 1)
                design = sparse.csr_matrix((vals[0].ravel(), (rows, cols.ravel())), shape=(n, k))
                ends = sparse.csr_matrix(_end_second_derivative_rows(knots, k)[: k - n])
                square = sparse.vstack([design, ends]).tocsc()
                control = np.asarray(spsolve(square, np.vstack([p, np.zeros((k - n, 2))])))
            else:
                control = np.asarray(make_lsq_spline(t, p, knots, k=DEGREE, method="qr", check_finite=False).c)
    except (ValueError, np.linalg.LinAlgError, RuntimeError):
        control = None
    wild = control is None or control_reach(control, p) > WILD_CONTROL_REACH
    if wild and dense_fallback and k <= DENSE_TIME_FIT:
        b = bspline.design_matrix(knots, t, DEGREE)
        if k > n:
            a = np.vstack([b, _end_second_derivative_rows(knots, k)[: k - n]])
            control = np.linalg.lstsq(a, np.vstack([p, np.zeros((k - n, 2))]), rcond=None)[0]
        else:
            control = np.linalg.lstsq(b, p, rcond=None)[0]
    if control is None:
        raise ValueError(f"the time signal's least squares with k = {k} control points is singular for these "
                         f"{n} frames: use fewer control points")
    return control


def fit_time_signal(p: np.ndarray, k: int, frames: np.ndarray | None = None) -> TimeSignal:
    """Least-squares cubic B-spline through pose-space positions with k control points (§3.3).

    Banded (O(n) for any k): QR of the B-spline collocation matrix, or for k > n a sparse square
    system with natural end conditions.

    Parameters
    ----------
    p : ndarray, shape (n, 2)
        Positions of the frames.
    k : int
        Control points, 4 .. n + 2 (above n, natural end conditions take up the spare freedom).
    frames : ndarray, shape (n,), optional
        Strictly increasing frame numbers (default ``1 .. n``).

    Returns
    -------
    TimeSignal

    Raises
    ------
    ValueError
        On frames not strictly increasing or of the wrong length, ``k`` out of range, or (above
        ``DENSE_TIME_FIT`` control points) a singular fit.
    """
    p = np.asarray(p, dtype=float)
    n = p.shape[0]
    frames = np.arange(1.0, n + 1.0) if frames is None else np.asarray(frames, dtype=float)
    if frames.shape[0] != n or np.any(np.diff(frames) <= 0):
        raise ValueError("frame numbers must be strictly increasing, one per position")
    t = centripetal_params(p)
    knots = piegl_tiller_knots(t, int(k))
    return TimeSignal(_time_control_points(t, knots, p), knots, t, frames)
