"""Square-root-velocity (SRV) representation of multichannel curves.

Eslitzbichler, "Modelling Character Motions on Infinite-Dimensional Manifolds", §3.2 (eq. 2-6)
and Algorithm 1 (projection onto the closed curves).

Discretisation: a clip of N samples on [0, 1] is a polyline; its SRV ``q`` is piecewise constant
on the N-1 intervals, ``q_k = v_k / sqrt(|v_k|)`` with ``v_k`` the interval's velocity.  Then the
inverse map ``c_{k+1} = c_k + h q_k |q_k|`` is exact, ``h * sum |q_k|^2`` is the polyline length
and ``h * sum q_k |q_k|`` is the closure gap ``c(1) - c(0)``: every statement of the paper holds
exactly on the samples, in any number of channels.

Zero velocity (a held pose, a constant channel) maps to ``q = 0`` without dividing by zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Closure", "closure_gap", "normalise", "project_closed", "srv", "srv_inverse", "srv_length"]


def srv(curve: np.ndarray) -> np.ndarray:
    """The SRV map R[c] = c' / sqrt(|c'|) of a sampled curve.

    Parameters
    ----------
    curve : ndarray, shape (N, n)
        N >= 2 samples on [0, 1] of an n-channel curve.

    Returns
    -------
    ndarray, shape (N - 1, n)
        One SRV vector per interval (zero where the curve holds still).

    Raises
    ------
    ValueError
        If ``curve`` is not 2-D with at least 2 samples.

    Examples
    --------
    >>> import numpy as np
    >>> c = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]])
    >>> q = srv(c)
    >>> np.allclose(srv_inverse(q, c[0]), c), round(srv_length(q), 12)
    (True, 2.0)
    """
    c = np.asarray(curve, dtype=float)
    if c.ndim != 2 or c.shape[0] < 2:
        raise ValueError(f"need a (frames >= 2, channels) array, got shape {c.shape}")
    h = 1.0 / (c.shape[0] - 1)
    v = np.diff(c, axis=0) / h
    speed = np.linalg.norm(v, axis=1, keepdims=True)
    root = np.sqrt(speed)
    return np.divide(v, root, out=np.zeros_like(v), where=root > 0.0)


def srv_inverse(q: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The inverse SRV map R^-1[q] (eq. 3) with c(0) = ``start``.

    Parameters
    ----------
    q : ndarray, shape (M, n)
        SRV vectors, one per interval.
    start : ndarray, shape (n,)
        The curve's first sample.

    Returns
    -------
    ndarray, shape (M + 1, n)
        Samples on [0, 1].
    """
    q = np.asarray(q, dtype=float)
    h = 1.0 / q.shape[0]
    steps = h * q * np.linalg.norm(q, axis=1, keepdims=True)
    out = np.empty((q.shape[0] + 1, q.shape[1]))
    out[0] = start
    np.cumsum(steps, axis=0, out=out[1:])
    out[1:] += out[0]
    return out


def srv_length(q: np.ndarray) -> float:
    """Length of the curve behind ``q``: the squared L2 norm of q.

    Parameters
    ----------
    q : ndarray, shape (M, n)

    Returns
    -------
    float
        Curve length, in the channels' units.
    """
    q = np.asarray(q, dtype=float)
    return float(np.sum(q * q) / q.shape[0])


def normalise(q: np.ndarray) -> tuple[np.ndarray, float]:
    """``q`` scaled to unit L2 norm (a unit-length curve, a point on the sphere C^o), and the length.

    Parameters
    ----------
    q : ndarray, shape (M, n)

    Returns
    -------
    q_unit : ndarray, shape (M, n)
    length : float

    Raises
    ------
    ValueError
        If the curve does not move (zero length).
    """
    length = srv_length(q)
    if length <= 0.0:
        raise ValueError("the curve does not move (zero length): nothing to compare or loop")
    return np.asarray(q, dtype=float) / np.sqrt(length), length


def closure_gap(q: np.ndarray) -> np.ndarray:
    """R^-1[q](1) - c(0) = integral of q |q|: zero exactly for closed curves (eq. 5).

    Parameters
    ----------
    q : ndarray, shape (M, n)

    Returns
    -------
    ndarray, shape (n,)
    """
    q = np.asarray(q, dtype=float)
    return np.sum(q * np.linalg.norm(q, axis=1, keepdims=True), axis=0) / q.shape[0]


@dataclass
class Closure:
    """Result of :func:`project_closed`.

    Attributes
    ----------
    q : ndarray, shape (M, n)
        SRV of a closed curve, same L2 norm (length) as the input.
    iterations : int
        Newton steps taken.
    residual : float
        |R^-1[q](1) - c(0)| relative to the curve length.
    converged : bool
        ``residual < tol``.
    """

    q: np.ndarray
    iterations: int
    residual: float
    converged: bool


def project_closed(q: np.ndarray, *, tol: float = 1e-6, max_iter: int = 100) -> Closure:
    """Project ``q`` onto the closed curves C^c by Newton's iteration.

    Eslitzbichler, "Modelling Character Motions on Infinite-Dimensional Manifolds", Algorithm 1.
    Each step moves q along the normal-space basis b_i = (q_i/|q|) q + |q| e_i of eq. 6 with the
    Jacobian J = (|q|^2) I + 3 <q_i, q_j> (exact for the discrete map; the paper's
    delta + 3<q_i, q_j> at unit length), then rescales to the input's length.  A backtracking step
    keeps the residual decreasing far from the manifold.

    Parameters
    ----------
    q : ndarray, shape (M, n)
        SRV of an open curve.
    tol : float
        Closure residual to reach, relative to the curve length.
    max_iter : int
        Newton steps at most.

    Returns
    -------
    Closure
        The closed curve's SRV (same length) and how the iteration ended.
    """
    q = np.array(q, dtype=float, copy=True)
    m, n = q.shape
    length = srv_length(q)
    if length <= 0.0:
        return Closure(q, 0, 0.0, True)
    scale = np.sqrt(length)
    q /= scale  # unit length: residuals are relative

    def residual_of(x):
        return np.linalg.norm(closure_gap(x))

    res = residual_of(q)
    it = 0
    while res >= tol and it < max_iter:
        it += 1
        r = closure_gap(q)
        norms = np.linalg.norm(q, axis=1, keepdims=True)
        jac = (np.sum(norms * norms) / m) * np.eye(n) + 3.0 * (q.T @ q) / m
        beta = -np.linalg.solve(jac, r)
        # sum_i beta_i b_i = (q . beta)/|q| q + |q| beta  (zero where q = 0)
        qb = q @ beta
        step = np.divide(qb[:, None] * q, norms, out=np.zeros_like(q), where=norms > 0.0) + norms * beta
        t = 1.0
        for _ in range(30):
            trial = q + t * step
            trial /= np.sqrt(srv_length(trial))
            new_res = residual_of(trial)
            if new_res < res:
                break
            t *= 0.5
        else:
            break  # no decrease along the Newton direction: give up, report
        q, res = trial, new_res
    return Closure(q * scale, it, float(res), bool(res < tol))
