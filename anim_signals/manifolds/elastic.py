"""Geodesics, elastic distances and statistics of clips in SRV space.

Eslitzbichler, "Modelling Character Motions on Infinite-Dimensional Manifolds", §3.2, §4.2, §4.3.
Curves are resampled to a common number of samples (the paper scales clips "to a common (time)
length"), mapped by the SRV map, scaled to unit length (points of the sphere C^o) and, for cyclic
comparisons, projected onto the closed curves C^c (§4.3).

* Open curves: the geodesic is the great circle (slerp); the distance is its angle.
* Closed curves: the geodesic is found by path straightening (:func:`geodesic_closed`); the fast
  distance uses the great-circle angle, a lower bound of the C^c geodesic length.
* Clustering of the distance matrix: :mod:`.clustering`.
* Motion space (eq. 9): the optimal reparametrisation by dynamic programming over a lattice of
  monotone piecewise-linear warps (slopes 1/3..3), and for closed curves the start-point search.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from math import gcd
from typing import Any

import numpy as np

from ..validation import (
    MAX_MAGNITUDE,
    choice,
    finite_array,
    finite_result,
    index_list,
    positive,
    positive_int,
)
from .clips import resample
from .clustering import Clustering, cluster, nearest, silhouette
from .srv import normalise, project_closed, srv, srv_inverse

# Clustering of a distance matrix lives in .clustering; its names are importable from here too, as
# in earlier releases.
__all__ = ["Alignment", "Clustering", "Prepared", "align", "blend", "cluster", "distance_matrix",
           "elastic_distance", "geodesic_closed", "iter_distance_matrix", "karcher_mean", "linear_distance",
           "nearest", "prepare", "prepared_distance", "silhouette", "sphere_distance"]

MAX_SLOPE = 3  # warps' slopes stay within 1/3 .. 3: a clip may play 3x faster or slower, no more
MOVES = [(di, dj) for di in range(1, MAX_SLOPE + 1) for dj in range(1, MAX_SLOPE + 1) if gcd(di, dj) == 1]
START_CANDIDATES = 6  # closed curves: start points tried by DP (best by circular correlation)


@dataclass
class Prepared:
    """A clip ready for comparison (:func:`prepare`).

    Attributes
    ----------
    q : ndarray, shape (M, n)
        Unit L2 norm SRV (closed curves: on C^c).
    start : ndarray, shape (n,)
        First sample.
    length : float
        Curve length before normalising, in channel units.
    samples : ndarray, shape (M + 1, n)
        The resampled curve.
    closed : bool
    """

    q: np.ndarray
    start: np.ndarray
    length: float
    samples: np.ndarray
    closed: bool


def _as_curve(c: np.ndarray, name: str = "curve") -> np.ndarray:
    c = finite_array(name, c, ndim=(1, 2), min_length=None, max_abs=MAX_MAGNITUDE)
    if c.ndim == 1:
        c = c[:, None]
    if c.shape[0] < 2 or c.shape[1] == 0:
        raise ValueError(f"{name} needs (frames >= 2, channels >= 1) samples, got shape {c.shape}")
    return c


def _sample_count(n_samples: Any) -> int:
    """n_samples as an int >= 2 (0 or None: keep the clip's samples, returned as 0)."""
    if n_samples is None or (not isinstance(n_samples, bool) and n_samples == 0):
        return 0
    return positive_int("n_samples", n_samples, minimum=2)


def prepare(curve: np.ndarray, *, n_samples: int | None = 100, closed: bool = False) -> Prepared:
    """Resample, SRV-map, normalise to unit length and (closed) project onto C^c.

    Parameters
    ----------
    curve : ndarray, shape (N, n) or (N,)
        A continuous clip, N >= 2.
    n_samples : int or None
        Samples after resampling (None or 0: keep N).
    closed : bool
        Project onto the closed curves (cyclic clips).

    Returns
    -------
    Prepared

    Raises
    ------
    ValueError
        On fewer than 2 samples, NaN / infinite values, or a curve that does not move.
    """
    c = _as_curve(curve)
    n_samples = _sample_count(n_samples)
    if n_samples:
        c = resample(c, n_samples)
    q, length = normalise(srv(c))
    if closed:
        q = project_closed(q).q
    return Prepared(q, c[0].copy(), length, c, closed)


def _inner(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sum(a * b) / a.shape[0])


def sphere_distance(q1: np.ndarray, q2: np.ndarray) -> float:
    """Great-circle angle between two SRVs on the unit sphere (both scaled to unit norm first).

    Parameters
    ----------
    q1, q2 : ndarray, shape (M, n)

    Returns
    -------
    float
        Angle in radians, in [0, pi].

    Raises
    ------
    ValueError
        If either SRV is zero (the curve does not move).
    """
    n1, n2 = np.sqrt(_inner(q1, q1)), np.sqrt(_inner(q2, q2))
    if n1 == 0.0 or n2 == 0.0:
        raise ValueError("a curve does not move (zero length)")
    return float(np.arccos(np.clip(_inner(q1, q2) / (n1 * n2), -1.0, 1.0)))


# ------------------------------------------------------------------------------------------------
# Optimal reparametrisation (dynamic programming)
# ------------------------------------------------------------------------------------------------


@dataclass
class Alignment:
    """Result of :func:`align`.

    Attributes
    ----------
    q : ndarray, shape (M, n)
        q2 reparametrised onto q1's intervals (and shifted, closed curves).
    gamma : ndarray, shape (M + 1,)
        Warp in [0, 1]: q1's node t_k corresponds to q2's time gamma[k].
    shift : int
        Closed curves: q2's interval that became the start.
    cost : float
        Squared L2 distance after alignment.
    """

    q: np.ndarray
    gamma: np.ndarray
    shift: int
    cost: float


def _overlaps(di: int, dj: int) -> list[tuple[int, int, float]]:
    """(q1 sub-interval, q2 interval offset, overlap length in q2 index units) along a move."""
    r = dj / di
    out = []
    for sub in range(di):
        lo, hi = sub * r, (sub + 1) * r
        for off in range(int(np.floor(lo)), int(np.ceil(hi))):
            overlap = min(hi, off + 1) - max(lo, off)
            if overlap > 1e-12:
                out.append((sub, off, overlap))
    return out


def _dp(q1: np.ndarray, q2: np.ndarray) -> tuple[np.ndarray, float]:
    """Warp minimising |q1 - (q2 o g) sqrt(g')|^2 over lattice paths (0,0) -> (M,M); returns nodes of g."""
    m = q1.shape[0]
    if q2.shape[0] != m:
        raise ValueError("both curves need the same number of samples")
    h = 1.0 / m
    n1 = np.einsum("ij,ij->i", q1, q1)
    cum_n1 = np.concatenate([[0.0], np.cumsum(n1)])
    cum_n2 = np.concatenate([[0.0], np.cumsum(np.einsum("ij,ij->i", q2, q2))])
    gram = np.zeros((m + MAX_SLOPE, m + MAX_SLOPE))
    gram[:m, :m] = q1 @ q2.T
    energy = np.full((m + 1, m + 1), np.inf)
    energy[0, 0] = 0.0
    choice = np.full((m + 1, m + 1), -1, dtype=np.int16)
    # Edge costs of every move from every node at once: (M+1, M+1) per move.  Along a move (di, dj)
    # q1's sub-interval ``sub`` maps onto q2's index range [sub r, (sub+1) r], r = dj/di, so
    # integral q1 . sqrt(g') q2(g) dt = h / sqrt(r) * sum over q2 intervals of overlap * <q1_a, q2_j>.
    nodes = np.arange(m + 1)
    costs = []
    for di, dj in MOVES:
        r = dj / di
        cross = np.zeros((m + 1, m + 1))
        for sub, off, weight in _overlaps(di, dj):
            cross += weight * gram[sub: sub + m + 1, off: off + m + 1]
        i1 = np.minimum(nodes + di, m)
        j1 = np.minimum(nodes + dj, m)
        cost = (cum_n1[i1] - cum_n1[nodes])[:, None] + (cum_n2[j1] - cum_n2[nodes])[None, :]
        costs.append(h * (cost - 2.0 / np.sqrt(r) * cross))
    for i in range(1, m + 1):
        row = energy[i]
        row_choice = choice[i]
        for k, (di, dj) in enumerate(MOVES):
            i0 = i - di
            if i0 < 0:
                continue
            cand = energy[i0, : m + 1 - dj] + costs[k][i0, : m + 1 - dj]
            target = row[dj:]
            better = cand < target
            target[better] = cand[better]
            row_choice[dj:][better] = k
    # backtrack
    path_i, path_j = [m], [m]
    i = j = m
    while i > 0 or j > 0:
        k = int(choice[i, j])
        if k < 0:
            raise RuntimeError("dynamic programming found no path")  # cannot happen with the (1,1) move
        di, dj = MOVES[k]
        i, j = i - di, j - dj
        path_i.append(i)
        path_j.append(j)
    path_i.reverse()
    path_j.reverse()
    gamma_nodes = np.interp(np.arange(m + 1), path_i, path_j)
    return gamma_nodes, float(energy[m, m])


def _warp(q2: np.ndarray, gamma_nodes: np.ndarray) -> np.ndarray:
    """(q2 o g) sqrt(g') on the intervals, exact for piecewise-constant q2 and piecewise-linear g."""
    m = q2.shape[0]
    cum = np.vstack([np.zeros((1, q2.shape[1])), np.cumsum(q2, axis=0)])  # integral in interval units
    u = np.clip(gamma_nodes, 0.0, m)
    idx = np.clip(np.floor(u).astype(int), 0, m - 1)
    frac = (u - idx)[:, None]
    integral = cum[idx] + frac * q2[idx]
    slope = np.diff(u)
    out = np.diff(integral, axis=0)
    return np.divide(out, np.sqrt(slope)[:, None], out=np.zeros_like(out), where=slope[:, None] > 0)


def _start_candidates(q1: np.ndarray, q2: np.ndarray, count: int) -> np.ndarray:
    """Shifts k maximising sum_t q1(t) . q2(t + k) (circular correlation by FFT)."""
    f1 = np.fft.rfft(q1, axis=0)
    f2 = np.fft.rfft(q2, axis=0)
    corr = np.fft.irfft(np.sum(np.conj(f1) * f2, axis=1), n=q1.shape[0])
    return np.argsort(-corr)[:count]


def align(q1: np.ndarray, q2: np.ndarray, *, closed: bool = False) -> Alignment:
    """Reparametrise (and for closed curves re-start) q2 to match q1 best (Eslitzbichler's eq. 9).

    Dynamic programming over monotone piecewise-linear warps with slopes 1/3 .. 3; closed curves
    also try the START_CANDIDATES start points that correlate best.

    Parameters
    ----------
    q1, q2 : ndarray, shape (M, n)
        SRVs with the same number of intervals.
    closed : bool
        Also search q2's start point.

    Returns
    -------
    Alignment

    Raises
    ------
    ValueError
        If q1 and q2 have different numbers of intervals.
    """
    q1 = np.asarray(q1, dtype=float)
    q2 = np.asarray(q2, dtype=float)
    m = q1.shape[0]
    shifts = _start_candidates(q1, q2, START_CANDIDATES) if closed else np.array([0])
    best: Alignment | None = None
    for shift in shifts:
        q2s = np.roll(q2, -int(shift), axis=0)
        nodes, _ = _dp(q1, q2s)
        warped = _warp(q2s, nodes)
        cost = _inner(q1 - warped, q1 - warped)
        if best is None or cost < best.cost:
            best = Alignment(warped, nodes / m, int(shift), cost)
    assert best is not None
    return best


# ------------------------------------------------------------------------------------------------
# Geodesics
# ------------------------------------------------------------------------------------------------


def _slerp(q1: np.ndarray, q2: np.ndarray, s: float) -> np.ndarray:
    theta = sphere_distance(q1, q2)
    if theta < 1e-12:
        return (1.0 - s) * q1 + s * q2
    return (np.sin((1.0 - s) * theta) * q1 + np.sin(s * theta) * q2) / np.sin(theta)


def _unit(q: np.ndarray) -> np.ndarray:
    return q / np.sqrt(_inner(q, q))


def _to_closed(q: np.ndarray) -> np.ndarray:
    return _unit(project_closed(_unit(q)).q)


def geodesic_closed(q1: np.ndarray, q2: np.ndarray, *, steps: int = 8, iterations: int = 40,
                    tol: float = 1e-5) -> tuple[np.ndarray, float]:
    """Geodesic between two closed curves on C^c by path straightening.

    Srivastava, Klassen, Joshi and Jermyn, "Shape Analysis of Elastic Curves in Euclidean
    Spaces" (2011), §4.3.  A path of ``steps`` + 1 curves starts from the great circle projected
    onto C^c.  Each iteration takes the Palais-metric gradient of the path energy (for a discrete
    path: each curve minus the straight chord between the ends), keeps its part tangent to the
    sphere, steps, and retracts onto C^c with Eslitzbichler's Algorithm 1.

    Parameters
    ----------
    q1, q2 : ndarray, shape (M, n)
        SRVs of closed (or to-be-closed) curves.
    steps : int
        Segments of the discrete path.
    iterations : int
        Straightening iterations at most.
    tol : float
        Stop when the relative energy decrease falls below this.

    Returns
    -------
    path : ndarray, shape (steps + 1, M, n)
        Unit-norm SRVs along the geodesic.
    length : float
        Sum of great-circle angles between neighbours (radians): an upper bound that decreases
        to the C^c geodesic distance.
    """
    a, b = _to_closed(q1), _to_closed(q2)
    taus = np.linspace(0.0, 1.0, steps + 1)
    path = np.stack([a] + [_to_closed(_slerp(a, b, t)) for t in taus[1:-1]] + [b])

    def energy(p):
        d = np.diff(p, axis=0)
        return float(np.sum(d * d) / p.shape[1]) * steps

    e_old = energy(path)
    step = 0.5
    for _ in range(iterations):
        chord = (1.0 - taus)[:, None, None] * path[0] + taus[:, None, None] * path[-1]
        grad = path - chord
        trial = path.copy()
        for k in range(1, steps):
            g = grad[k] - _inner(grad[k], path[k]) * path[k]
            trial[k] = _to_closed(path[k] - step * g)
        e_new = energy(trial)
        if e_new < e_old:
            path, improvement, e_old = trial, (e_old - e_new) / max(e_old, 1e-300), e_new
            if improvement < tol:
                break
        else:
            step *= 0.5
            if step < 1e-3:
                break
    length = float(sum(sphere_distance(path[k], path[k + 1]) for k in range(steps)))
    return path, length


def _path_point(path: np.ndarray, s: float) -> np.ndarray:
    steps = path.shape[0] - 1
    x = float(np.clip(s, 0.0, 1.0)) * steps
    k = min(int(np.floor(x)), steps - 1)
    point = _slerp(path[k], path[k + 1], x - k)
    return _to_closed(point) if 0.0 < x - k < 1.0 else point


# ------------------------------------------------------------------------------------------------
# Distances
# ------------------------------------------------------------------------------------------------


def _distance_prepared(p1: Prepared, p2: Prepared, *, align_curves: bool, exact: bool) -> float:
    q2 = align(p1.q, p2.q, closed=p1.closed).q if align_curves else p2.q
    if p1.closed and exact:
        return geodesic_closed(p1.q, q2)[1]
    return sphere_distance(p1.q, q2)


def elastic_distance(c1: np.ndarray, c2: np.ndarray, *, closed: bool = False, n_samples: int = 100,
                     align: bool = True, exact: bool = False) -> float:
    """Elastic (SRV) distance between two clips with the same channels.

    Parameters
    ----------
    c1, c2 : ndarray, shape (N1, n) and (N2, n)
        Continuous clips (any lengths).
    closed : bool
        Compare as cyclic clips (on C^c, with the start point searched).
    n_samples : int
        Common number of samples.
    align : bool
        Optimal reparametrisation first (the elastic distance); False compares in fixed timing.
    exact : bool
        Closed curves: the path-straightened C^c geodesic instead of the great-circle lower bound.

    Returns
    -------
    float
        Distance in radians on the unit SRV sphere (0: the same motion up to speed and length).

    Raises
    ------
    ValueError
        On different channel counts, NaN / infinite values or a clip that does not move.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0.0, 1.0, 80)
    >>> walk = np.column_stack([np.sin(2 * np.pi * t), np.cos(2 * np.pi * t)])
    >>> slow_start = np.column_stack([np.sin(2 * np.pi * t**1.5), np.cos(2 * np.pi * t**1.5)])
    >>> bool(elastic_distance(walk, slow_start) < 0.5 * elastic_distance(walk, slow_start, align=False))
    True
    """
    p1 = prepare(_as_curve(c1, "c1"), n_samples=n_samples, closed=closed)
    p2 = prepare(_as_curve(c2, "c2"), n_samples=n_samples, closed=closed)
    _same_channels(p1, p2)
    return float(finite_result("the distance", prepared_distance(p1, p2, align=align, exact=exact)))


def prepared_distance(p1: Prepared, p2: Prepared, *, align: bool = True, exact: bool = False) -> float:
    """:func:`elastic_distance` of two clips already :func:`prepare`-d (the same samples and channels).

    Prepare every clip once and call this per pair: what distance matrices and library-scale
    comparisons (:mod:`anim_signals.library`) do.

    Parameters
    ----------
    p1, p2 : Prepared
        From :func:`prepare` with the same ``n_samples`` and ``closed``.
    align, exact : bool
        As in :func:`elastic_distance`.

    Returns
    -------
    float
        Radians on the unit SRV sphere; symmetric in ``p1`` and ``p2``.

    Examples
    --------
    >>> t = np.linspace(0.0, 1.0, 60)
    >>> a = prepare(np.column_stack([t, t**2]), n_samples=40)
    >>> b = prepare(np.column_stack([t, t**3]), n_samples=40)
    >>> prepared_distance(a, b) == prepared_distance(b, a)
    True
    """
    d12 = _distance_prepared(p1, p2, align_curves=align, exact=exact)
    if align:
        # The DP warps the second curve only; taking the smaller direction keeps the distance symmetric.
        d12 = min(d12, _distance_prepared(p2, p1, align_curves=align, exact=exact))
    return d12


def linear_distance(c1: np.ndarray, c2: np.ndarray, *, n_samples: int = 100) -> float:
    """Eslitzbichler's baseline: L2 distance of the raw curves over normalised time.

    Parameters
    ----------
    c1, c2 : ndarray, shape (N1, n) and (N2, n)
    n_samples : int

    Returns
    -------
    float
        RMS over time of the per-sample Euclidean distance, in channel units.

    Raises
    ------
    ValueError
        On different channel counts.
    """
    n_samples = positive_int("n_samples", n_samples, minimum=2)
    a = resample(_as_curve(c1, "c1"), n_samples)
    b = resample(_as_curve(c2, "c2"), n_samples)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"curves have {a.shape[1]} and {b.shape[1]} channels")
    return float(np.sqrt(np.mean(np.sum((a - b) ** 2, axis=1))))


def _same_channels(p1: Prepared, p2: Prepared) -> None:
    if p1.q.shape[1] != p2.q.shape[1]:
        raise ValueError(f"curves have {p1.q.shape[1]} and {p2.q.shape[1]} channels")


def iter_distance_matrix(curves: Sequence[np.ndarray], *, metric: str = "elastic", closed: bool = False,
                         n_samples: int = 100, exact: bool = False,
                         align: bool = True) -> Iterator[tuple[float, np.ndarray | None]]:
    """Pairwise distances, one pair per step.

    Parameters
    ----------
    curves : sequence of ndarray, each (N_i, n)
        At least 2 clips with the same channels.
    metric : {'elastic', 'linear'}
        :func:`elastic_distance` or :func:`linear_distance`.
    closed, n_samples, exact, align
        As in :func:`elastic_distance`.

    Yields
    ------
    fraction : float
        Pairs done / pairs.
    matrix : ndarray, shape (m, m), or None
        None until the last item, ``(1.0, D)`` with the symmetric distance matrix.

    Raises
    ------
    ValueError
        On fewer than 2 clips, a clip that is not finite (named ``curves[i]``), different
        channel counts, an unknown metric or bad ``n_samples``; raised when called, before
        the first step.
    """
    m = len(curves)
    if m < 2:
        raise ValueError(f"curves: need at least 2 clips to compare, got {m}")
    checked = [_as_curve(c, f"curves[{i}]") for i, c in enumerate(curves)]
    widths = {c.shape[1] for c in checked}
    if len(widths) > 1:
        raise ValueError(f"curves: clips have different channel counts: {sorted(widths)}")
    choice("metric", metric, ("elastic", "linear"))
    n_samples = _sample_count(n_samples) if metric == "elastic" else positive_int("n_samples", n_samples, minimum=2)
    # checked when called, not at the first step
    return _iter_distances(checked, metric, closed, n_samples, exact, align)


def _iter_distances(curves: list[np.ndarray], metric: str, closed: bool, n_samples: int, exact: bool,
                    align: bool) -> Iterator[tuple[float, np.ndarray | None]]:
    m = len(curves)
    dist = np.zeros((m, m))
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    if metric == "linear":
        samples = [resample(_as_curve(c), n_samples) for c in curves]
        for done, (i, j) in enumerate(pairs, 1):
            dist[i, j] = dist[j, i] = float(np.sqrt(np.mean(np.sum((samples[i] - samples[j]) ** 2, axis=1))))
            yield done / len(pairs), None
    elif metric == "elastic":
        prepared = []
        for c in curves:
            prepared.append(prepare(c, n_samples=n_samples, closed=closed))
        for done, (i, j) in enumerate(pairs, 1):
            dist[i, j] = dist[j, i] = prepared_distance(prepared[i], prepared[j], align=align, exact=exact)
            yield done / len(pairs), None
    yield 1.0, finite_result("the distance matrix", dist)


def distance_matrix(curves: Sequence[np.ndarray], **options) -> np.ndarray:
    """Symmetric (m, m) distance matrix of m clips; options as in :func:`iter_distance_matrix`."""
    final = None
    for _, final in iter_distance_matrix(curves, **options):  # noqa: B007  (the last value is the result)
        pass
    assert final is not None
    return final


# ------------------------------------------------------------------------------------------------
# Blends and means
# ------------------------------------------------------------------------------------------------


def _retime(curve: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Sample a curve given on a uniform grid over [0, 1] at ``times`` (linear)."""
    grid = np.linspace(0.0, 1.0, curve.shape[0])
    return np.column_stack([np.interp(times, grid, curve[:, j]) for j in range(curve.shape[1])])


def _roll_closed(curve: np.ndarray, shift: int) -> np.ndarray:
    """Start a closed curve (last sample = first) ``shift`` samples later: sample i <- sample i + shift."""
    body = np.roll(curve[:-1], -shift, axis=0)
    return np.vstack([body, body[:1]])


def blend(c1: np.ndarray, c2: np.ndarray, weights: Sequence[float], *, closed: bool = False,
          align: bool = True, travel: Sequence[int] = ()) -> list[np.ndarray]:
    """Clips along the geodesic from c1 (weight 0) to c2 (weight 1), time-aligned.

    Eslitzbichler, "Modelling Character Motions on Infinite-Dimensional Manifolds", §4.2.
    The blend of shape is the geodesic in SRV space after optimal reparametrisation; start pose and
    length are interpolated linearly; timing moves from c1's to c2's (the warp is interpolated too),
    and for closed curves the start phase as well, so weight 1 gives c2 back and weight 0 gives c1.
    ``travel`` channels (root horizontal location) are blended as their straight-line trend plus
    the blended remainder, so a blend of two walks walks as far as the weights say.

    Parameters
    ----------
    c1, c2 : ndarray, shape (N1, n) and (N2, n)
        Continuous clips with the same channels.
    weights : sequence of float
        Blend weights in [0, 1].
    closed : bool
        Blend as cyclic clips (geodesic on C^c, start phase blended).
    align : bool
        Optimal reparametrisation before blending.
    travel : sequence of int
        Channels blended as trend plus remainder.

    Returns
    -------
    list of ndarray
        One clip per weight, of ``round((1-s) N1 + s N2)`` frames.

    Raises
    ------
    ValueError
        On different channel counts, a weight outside [0, 1], or the input errors of
        :func:`prepare`.
    """
    a, b = _as_curve(c1, "c1"), _as_curve(c2, "c2")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"c2: clips have {a.shape[1]} and {b.shape[1]} channels")
    blend_weights = finite_array("weights", weights, ndim=(0, 1), min_length=None).reshape(-1)
    if np.any((blend_weights < 0.0) | (blend_weights > 1.0)):
        raise ValueError(f"weights must be in [0, 1], got {blend_weights.min()} .. {blend_weights.max()}")
    original = a.copy()
    n1, n2 = a.shape[0], b.shape[0]
    mask = np.zeros(a.shape[1], dtype=bool)
    mask[index_list("travel", travel, a.shape[1])] = True
    d1 = np.where(mask, a[-1] - a[0], 0.0)
    d2 = np.where(mask, b[-1] - b[0], 0.0)
    a = a - np.linspace(0.0, 1.0, a.shape[0])[:, None] * d1
    b = b - np.linspace(0.0, 1.0, b.shape[0])[:, None] * d2
    n = max(a.shape[0], b.shape[0], 4)
    p1 = prepare(a, n_samples=n, closed=closed)
    p2 = prepare(b, n_samples=n, closed=closed)
    m = p1.q.shape[0]
    if align:
        aln = align_fn(p1.q, p2.q, closed=closed)
        q2, gamma, shift = aln.q, aln.gamma, aln.shift
    else:
        q2, gamma, shift = p2.q, np.linspace(0.0, 1.0, m + 1), 0
    signed_shift = shift if shift <= m // 2 else shift - m
    start2 = p2.samples[shift]
    path = geodesic_closed(p1.q, q2)[0] if closed else None
    nodes = np.linspace(0.0, 1.0, m + 1)
    out = []
    for s in blend_weights:
        s = float(s)
        if s == 0.0:
            out.append(original.copy())  # exactly c1 (no resampling round trip)
            continue
        qs = _path_point(path, s) if path is not None else _slerp(p1.q, q2, s)
        length = (1.0 - s) * p1.length + s * p2.length
        start = (1.0 - s) * p1.start + s * start2
        curve = srv_inverse(qs * np.sqrt(length), start)
        if closed:
            curve[-1] = curve[0]
        # timing: c1's time t is c2's time gamma(t); the blend's time u maps to t = (1-s) u + s gamma^-1(u)
        times = (1.0 - s) * nodes + s * np.interp(nodes, gamma, nodes)
        curve = _retime(curve, times)
        if closed and signed_shift:
            curve = _roll_closed(curve, -int(round(s * signed_shift)))
        frames = max(int(round((1.0 - s) * n1 + s * n2)), 2)
        curve = resample(curve, frames)
        curve += np.linspace(0.0, 1.0, frames)[:, None] * ((1.0 - s) * d1 + s * d2)
        out.append(finite_result("the blend", curve))
    return out


align_fn = align  # ``blend`` has a parameter named ``align``


def karcher_mean(curves: Sequence[np.ndarray], *, closed: bool = False, n_samples: int = 100,
                 iterations: int = 20, tol: float = 1e-6) -> np.ndarray:
    """Karcher (Fréchet) mean of clips on the SRV sphere, each aligned to the running mean.

    Parameters
    ----------
    curves : sequence of ndarray, each (N_i, n)
    closed : bool
    n_samples : int
    iterations : int
        Gradient steps at most.
    tol : float
        Stop when the mean tangent's norm falls below this (radians).

    Returns
    -------
    ndarray, shape (n_samples, n)
        The mean clip, with the mean length and start pose.

    Raises
    ------
    ValueError
        When ``curves`` is empty, or on the input errors of :func:`prepare`.
    """
    if not len(curves):
        raise ValueError("curves: no clips to average")
    iterations = positive_int("iterations", iterations, minimum=0)
    tol = positive("tol", tol)
    prepared = [prepare(_as_curve(c, f"curves[{i}]"), n_samples=n_samples, closed=closed)
                for i, c in enumerate(curves)]
    mu = prepared[0].q.copy()
    for _ in range(iterations):
        tangent = np.zeros_like(mu)
        for p in prepared:
            q = align(mu, p.q, closed=closed).q
            q = _unit(q)
            theta = sphere_distance(mu, q)
            if theta > 1e-12:
                tangent += theta / np.sin(theta) * (q - np.cos(theta) * mu)
        tangent /= len(prepared)
        norm = np.sqrt(_inner(tangent, tangent))
        if norm < tol:
            break
        mu = np.cos(norm) * mu + np.sin(norm) * tangent / norm
        if closed:
            mu = _to_closed(mu)
    length = float(np.mean([p.length for p in prepared]))
    start = np.mean([p.start for p in prepared], axis=0)
    return finite_result("the mean clip", srv_inverse(mu * np.sqrt(length), start))
