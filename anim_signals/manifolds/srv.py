"""Square-root-velocity (SRV) representation of multichannel curves (seed §3.2, eq. 2-6, Algorithm 1).

Discretisation: a clip of N samples on [0, 1] is a polyline; its SRV ``q`` is piecewise constant
on the N-1 intervals, ``q_k = v_k / sqrt(|v_k|)`` with ``v_k`` the interval's velocity.  Then the
inverse map ``c_{k+1} = c_k + h q_k |q_k|`` is exact, ``h * sum |q_k|^2`` is the polyline length
and ``h * sum q_k |q_k|`` is the closure gap ``c(1) - c(0)``: every statement of the seed holds
exactly on the samples, in any number of channels.

Zero velocity (a held pose, a constant channel) maps to ``q = 0`` without dividing by zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Closure", "closure_gap", "normalise", "project_closed", "srv", "srv_inverse", "srv_length"]


def srv(curve: np.ndarray) -> np.ndarray:
    """R[c] of samples (N, n) on [0, 1] -> (N-1, n), one vector per interval."""
    c = np.asarray(curve, dtype=float)
    if c.ndim != 2 or c.shape[0] < 2:
        raise ValueError(f"need a (frames >= 2, channels) array, got shape {c.shape}")
    h = 1.0 / (c.shape[0] - 1)
    v = np.diff(c, axis=0) / h
    speed = np.linalg.norm(v, axis=1, keepdims=True)
    root = np.sqrt(speed)
    return np.divide(v, root, out=np.zeros_like(v), where=root > 0.0)


def srv_inverse(q: np.ndarray, start: np.ndarray) -> np.ndarray:
    """R^-1[q] (eq. 3) with c(0) = ``start``: (M, n) -> (M+1, n) samples on [0, 1]."""
    q = np.asarray(q, dtype=float)
    h = 1.0 / q.shape[0]
    steps = h * q * np.linalg.norm(q, axis=1, keepdims=True)
    out = np.empty((q.shape[0] + 1, q.shape[1]))
    out[0] = start
    np.cumsum(steps, axis=0, out=out[1:])
    out[1:] += out[0]
    return out


def srv_length(q: np.ndarray) -> float:
    """Length of the curve behind ``q``: the squared L2 norm of q."""
    q = np.asarray(q, dtype=float)
    return float(np.sum(q * q) / q.shape[0])


def normalise(q: np.ndarray) -> tuple[np.ndarray, float]:
    """``q`` scaled to unit L2 norm (a unit-length curve, a point on the seed's sphere C^o), and the length."""
    length = srv_length(q)
    if length <= 0.0:
        raise ValueError("the curve does not move (zero length): nothing to compare or loop")
    return np.asarray(q, dtype=float) / np.sqrt(length), length


def closure_gap(q: np.ndarray) -> np.ndarray:
    """R^-1[q](1) - c(0) = integral of q |q|: zero exactly for closed curves (eq. 5)."""
    q = np.asarray(q, dtype=float)
    return np.sum(q * np.linalg.norm(q, axis=1, keepdims=True), axis=0) / q.shape[0]


@dataclass
class Closure:
    q: np.ndarray  # (M, n) SRV of a closed curve, same L2 norm (length) as the input
    iterations: int
    residual: float  # |R^-1[q](1) - c(0)| relative to the curve length
    converged: bool


def project_closed(q: np.ndarray, *, tol: float = 1e-6, max_iter: int = 100) -> Closure:
    """Project ``q`` onto the closed curves C^c by the seed's Newton iteration (Algorithm 1).

    Each step moves q along the normal-space basis b_i = (q_i/|q|) q + |q| e_i of eq. 6 with the
    Jacobian J = (|q|^2) I + 3 <q_i, q_j> (exact for the discrete map; the seed's delta + 3<q_i, q_j>
    at unit length), then rescales to the input's length.  A backtracking step keeps the residual
    decreasing far from the manifold.  ``tol`` is relative to the curve length.
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
