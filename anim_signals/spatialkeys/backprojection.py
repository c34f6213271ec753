"""Back-projection: poses from points of the plane (Igarashi, Moscovich and Hughes, "Spatial
keyframing for performance-driven animation"), and the projection optimisation of Costa and
Esperança, "Enhancing Spatial Keyframe Animations with Motion Capture", Algorithm 1.

The RBF is Igarashi et al.'s: kernel ``phi(r) = r`` plus a degree-one polynomial, fitted exactly
through the markers (a KKT system solved here: it is small, and Algorithm 1 evaluates it tens of
thousands of times, which a scipy ``RBFInterpolator`` call per point would make slow).

How rotations are blended (``blend``):

- ``"log"`` (default): per joint, the rotations are expressed relative to a reference ``R0`` (the
  rotation nearest the mean of the marker rotations), the RBF interpolates their rotation vectors
  ``log(R0^T R_i)``, and the result is ``R0 exp(v)``. The tangent space at ``R0`` is a vector
  space, so any combination the RBF makes, including the negative weights and extrapolation an
  RBF produces away from the markers, is a valid rotation, with no normalisation step that could
  blow up near a zero quaternion; at a marker ``exp(log(X)) = X`` exactly. Rotations more than 180
  degrees from ``R0`` wrap, which mocap joint rotations about a common mean do not reach.
- ``"matrix"``: Igarashi et al.'s own scheme: the nine matrix entries interpolated, then the
  nearest rotation taken (polar factor by SVD). Also exact at markers and always valid, but the
  blend of far-apart rotations shrinks towards singular matrices before the projection.

Quaternion blending with renormalisation (the other common choice) is not offered: with an RBF's
signed weights the blended quaternion can pass through zero, and its sign alignment depends on a
reference as the log map's does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .distance import _weights
from .rotations import as_matrices, exp_map, log_map, project_to_rotation

__all__ = ["BLENDS", "RotationRBF", "fit_rotation_rbf", "optimise_projection"]

BLENDS: tuple[str, ...] = ("log", "matrix")


def _kernel(r: np.ndarray, kernel: str) -> np.ndarray:
    if kernel == "linear":
        return r
    if kernel == "cubic":
        return r ** 3
    raise ValueError(f"unknown kernel {kernel!r}; expected 'linear' or 'cubic'")


def _poly(x: np.ndarray, degree: int) -> np.ndarray:
    if degree < 0:
        return np.zeros((len(x), 0))
    if degree == 0:
        return np.ones((len(x), 1))
    return np.concatenate([np.ones((len(x), 1)), x], axis=1)


@dataclass(frozen=True)
class RotationRBF:
    """An RBF from parameter points (2D markers, or 1D times) to poses, exact at the centres.

    Attributes
    ----------
    centers : ndarray, shape (M, d)
        The markers.
    coeffs : ndarray, shape (M, C)
        Kernel weights; ``C = 3 J`` (log blend) or ``9 J`` (matrix blend).
    poly : ndarray, shape (P, C)
        Polynomial coefficients (constant, then linear terms).
    reference : ndarray, shape (J, 3, 3)
        Per-joint reference rotation of the log blend (identity for the matrix blend).
    blend : str
    kernel : str
    degree : int
    """

    centers: np.ndarray
    coeffs: np.ndarray
    poly: np.ndarray
    reference: np.ndarray
    blend: str
    kernel: str
    degree: int

    @property
    def n_joints(self) -> int:
        return len(self.reference)

    def values(self, points: ArrayLike) -> np.ndarray:
        """The interpolated blend coordinates (rotation vectors or matrix entries), (K, C)."""
        x = np.asarray(points, dtype=float).reshape(-1, self.centers.shape[1])
        r = np.linalg.norm(x[:, None, :] - self.centers[None], axis=-1)
        return _kernel(r, self.kernel) @ self.coeffs + _poly(x, self.degree) @ self.poly

    def evaluate(self, points: ArrayLike) -> np.ndarray:
        """Poses at the given points.

        Parameters
        ----------
        points : array_like, shape (K, d) (or (d,) for one point)

        Returns
        -------
        ndarray, shape (K, J, 3, 3)
            Proper rotation matrices.
        """
        v = self.values(points)
        k = len(v)
        if self.blend == "log":
            return self.reference[None] @ exp_map(v.reshape(k, self.n_joints, 3))
        return project_to_rotation(v.reshape(k, self.n_joints, 3, 3))


def fit_rotation_rbf(points: ArrayLike, rotations: ArrayLike, *, blend: str = "log",
                     kernel: str = "linear", degree: int | None = None) -> RotationRBF:
    """Fit the back-projection RBF through markers and their poses.

    Parameters
    ----------
    points : array_like, shape (M, d) or (M,)
        Marker positions (d = 2 on the canvas, 1 for time), distinct.
    rotations : array_like, shape (M, J, 4) or (M, J, 3, 3)
        The markers' poses.
    blend : {'log', 'matrix'}
        How rotations are blended (module docstring).
    kernel : {'linear', 'cubic'}
        ``phi(r) = r`` (Igarashi et al.) or ``r^3``.
    degree : int, optional
        Polynomial degree (-1, 0 or 1); default 1 when the markers span the parameter space
        (at least d + 1 affinely independent), else 0.

    Returns
    -------
    RotationRBF

    Raises
    ------
    ValueError
        On fewer than 1 marker, repeated markers or mismatched lengths.

    Examples
    --------
    >>> q = np.zeros((3, 1, 4)); q[:, 0, 0] = np.cos([0.0, 0.2, 0.4]); q[:, 0, 3] = np.sin([0.0, 0.2, 0.4])
    >>> rbf = fit_rotation_rbf([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], q)
    >>> np.allclose(rbf.evaluate([[1.0, 0.0]])[0], as_matrices(q[1]))
    True
    """
    x = np.asarray(points, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    m = as_matrices(rotations)
    if m.ndim != 4 or len(m) != len(x) or len(x) < 1:
        raise ValueError(f"{len(x)} markers but rotations of shape {m.shape}")
    if blend not in BLENDS:
        raise ValueError(f"unknown blend {blend!r}; expected one of {', '.join(BLENDS)}")
    n_markers, n_joints = m.shape[:2]
    r = np.linalg.norm(x[:, None, :] - x[None], axis=-1)
    if n_markers > 1 and np.min(r[~np.eye(n_markers, dtype=bool)]) <= 1e-12 * max(float(r.max()), 1.0):
        raise ValueError("markers must be distinct points")
    if degree is None:
        span = np.linalg.matrix_rank(_poly(x, 1), tol=1e-9 * max(float(np.abs(x).max(initial=0.0)), 1.0))
        degree = 1 if span == x.shape[1] + 1 else 0
    if blend == "log":
        reference = project_to_rotation(m.mean(axis=0))
        values = log_map(np.swapaxes(reference, -1, -2)[None] @ m).reshape(n_markers, 3 * n_joints)
    else:
        reference = np.broadcast_to(np.eye(3), (n_joints, 3, 3)).copy()
        values = m.reshape(n_markers, 9 * n_joints)
    pmat = _poly(x, degree)
    n_poly = pmat.shape[1]
    kkt = np.zeros((n_markers + n_poly, n_markers + n_poly))
    kkt[:n_markers, :n_markers] = _kernel(r, kernel)
    kkt[:n_markers, n_markers:] = pmat
    kkt[n_markers:, :n_markers] = pmat.T
    rhs = np.zeros((n_markers + n_poly, values.shape[1]))
    rhs[:n_markers] = values
    try:
        sol = np.linalg.solve(kkt, rhs)
    except np.linalg.LinAlgError:
        sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
    return RotationRBF(x.copy(), sol[:n_markers], sol[n_markers:], reference, blend, kernel, int(degree))


def _errors(rbf: RotationRBF, points: np.ndarray, target: np.ndarray, w: np.ndarray) -> np.ndarray:
    rec = rbf.evaluate(points)
    tr = np.einsum("kjab,jab->kj", rec, target)
    return np.arccos(np.clip((tr - 1.0) * 0.5, -1.0, 1.0)) @ w


def optimise_projection(points: ArrayLike, keys: ArrayLike, rotations: ArrayLike,
                        weights: ArrayLike | None = None, *, alpha: float = 0.5, delta: float = 0.5,
                        max_tries: int = 50, monotone: bool = True, keep_moving: bool = False,
                        blend: str = "log", kernel: str = "linear") -> tuple[np.ndarray, dict]:
    """Costa and Esperança's Algorithm 1: move non-key projections to lower back-projection error.

    For each non-key frame ``i`` in time order, with ``r`` the mean distance from ``q_i`` to its
    neighbours ``q_{i-1}``, ``q_{i+1}`` (the one neighbour at the clip's ends), the eq. (1) errors
    of back-projecting ``q_i`` and ``q_i +- delta r e_x``, ``q_i +- delta r e_y`` are compared; along
    an axis where a probe improves, ``h`` gets ``e_n - e_p``; a non-zero ``h`` moves ``q_i`` by
    ``alpha r h / |h|``. Passes repeat (at most ``max_tries``) until none moves a frame. The
    back-projection is one RBF through the key frames' points, which never move, so it is fitted
    once for any projection.

    Read literally, the printed algorithm sets aside a frame once it has moved (line 7 adds it to
    the excluded set); that is the default. ``keep_moving=True`` sets aside frames that did not
    move instead, so every frame keeps descending until it stops (the other reading).

    Parameters
    ----------
    points : array_like, shape (N, 2)
        A projection of all frames (any method).
    keys : sequence of int
        Key frames (the markers).
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
    weights : array_like, shape (J,), optional
        Eq. (1) joint weights.
    alpha, delta : float
        Step and probe sizes relative to ``r``; the seed uses 0.5 for both.
    max_tries : int
        Most passes over the frames.
    monotone : bool
        Accept a move only when it lowers the frame's error. The seed does not check: its step
        ``alpha r h / |h|`` goes in a diagonal direction that was never probed and can land higher;
        with ``monotone=False`` the seed's rule is applied unchanged.
    keep_moving : bool
        See above.
    blend, kernel
        Of the back-projection RBF (:func:`fit_rotation_rbf`).

    Returns
    -------
    points : ndarray, shape (N, 2)
        Optimised projection (key points unchanged).
    info : dict
        ``passes``, ``moves``, and ``error_before`` / ``error_after``, (N,) eq. (1) errors of
        every frame's back-projection.

    Raises
    ------
    ValueError
        On mismatched shapes or bad keys.

    Examples
    --------
    >>> from anim_signals.spatialkeys.generated import articulated_chain
    >>> clip = articulated_chain(30, 3)
    >>> t = np.linspace(0, 1, 30)
    >>> q0 = np.c_[np.cos(6 * t), np.sin(6 * t)]
    >>> q1, info = optimise_projection(q0, [0, 10, 20, 29], clip.quaternions)
    >>> bool(info["error_after"].sum() <= info["error_before"].sum())
    True
    """
    q = np.array(points, dtype=float)
    mats = as_matrices(rotations)
    n = len(mats)
    if q.shape != (n, 2):
        raise ValueError(f"points must be ({n}, 2), got {q.shape}")
    k = np.asarray(keys, dtype=int)
    if len(k) < 1 or len(np.unique(k)) != len(k) or k.min() < 0 or k.max() >= n:
        raise ValueError(f"keys must be distinct frame indices below {n}")
    w = _weights(weights, mats.shape[1])
    rbf = fit_rotation_rbf(q[k], mats[k], blend=blend, kernel=kernel)
    before = np.array([_errors(rbf, q[i:i + 1], mats[i], w)[0] for i in range(n)])
    is_key = np.zeros(n, dtype=bool)
    is_key[k] = True
    aside = is_key.copy()
    ex, ey = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    passes = moves = 0
    for _ in range(max_tries):
        passes += 1
        done = True
        for i in np.flatnonzero(~aside):
            nb = [q[j] for j in (i - 1, i + 1) if 0 <= j < n]
            r = float(np.mean([np.linalg.norm(q[i] - p) for p in nb])) if nb else 0.0
            moved = False
            if r > 0:
                s = delta * r
                probes = np.stack([q[i], q[i] + s * ex, q[i] - s * ex, q[i] + s * ey, q[i] - s * ey])
                e_o, e_xp, e_xn, e_yp, e_yn = _errors(rbf, probes, mats[i], w)
                h = np.zeros(2)
                if e_o > e_xp or e_o > e_xn:
                    h += ex * (e_xn - e_xp)
                if e_o > e_yp or e_o > e_yn:
                    h += ey * (e_yn - e_yp)
                norm = float(np.linalg.norm(h))
                if norm > 0:
                    cand = q[i] + alpha * r * h / norm
                    if not monotone or _errors(rbf, cand[None], mats[i], w)[0] < e_o:
                        q[i] = cand
                        moved = True
            if moved:
                moves += 1
                done = False
            if moved != keep_moving:
                aside[i] = True
        if done:
            break
    after = np.array([_errors(rbf, q[i:i + 1], mats[i], w)[0] for i in range(n)])
    return q, {"passes": passes, "moves": moves, "error_before": before, "error_after": after}
