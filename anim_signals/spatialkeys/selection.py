"""Keyframe selection (Costa and Esperança §2.1 and §5.1 (a)): uniform, SCS, PB and ROLS.

- **Uniform sampling** (US): keys at regular time intervals, first and last frame included.
- **SCS**, simple curve simplification (Lim and Thalmann, "Key-posture extraction out of human
  motion data by curve simplification", after Lowe's polyline simplification): start from the
  first and last frame and repeatedly add the frame worst reconstructed by interpolating its two
  enclosing keys, until the count is reached.
- **PB**, position-based (Togawa and Okuda, "Position-based keyframe selection for human motion
  animation"): start from all frames and repeatedly drop the key whose removal costs least (the
  largest error it causes among the frames between its neighbours), measured on joint positions
  when they are given, else with eq. (1).
- **ROLS**, regularised orthogonal least squares (Chen, Chng and Alkadhimi, "Regularized
  orthogonal least squares algorithm for constructing radial basis function networks", as used
  for control points by Amorim et al. 2014): forward selection of RBF centres among the frames,
  each step taking the candidate whose orthogonalised kernel column most reduces the regularised
  least-squares error of reproducing the pose vectors.

Interpolation between keys for SCS and PB is slerp per joint (quaternions), or linear on positions.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from .distance import _weights, pose_vectors
from .projection import _check_distances, _shape_parameter, multiquadric
from .rotations import as_quaternions, hemisphere_align, slerp_quaternions

__all__ = ["SELECTIONS", "keyframe_count", "pb_keys", "rols_keys", "scs_keys", "select_keyframes",
           "uniform_keys"]

SELECTIONS: tuple[str, ...] = ("uniform", "scs", "pb", "rols")


def keyframe_count(n_frames: int, ratio: float | None = None, count: int | None = None,
                   minimum: int = 2) -> int:
    """Number of keys from a ratio (``round(ratio * n_frames)``) or an explicit count.

    Parameters
    ----------
    n_frames : int
    ratio : float, optional
        Keyframe ratio in (0, 1] (the seed uses 0.03).
    count : int, optional
        Exactly one of ``ratio`` and ``count`` must be given.
    minimum : int
        Fewest keys allowed.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        When both or neither are given, or the count is below ``minimum`` or above ``n_frames``.

    Examples
    --------
    >>> keyframe_count(300, ratio=0.03)
    9
    """
    if (ratio is None) == (count is None):
        raise ValueError("give exactly one of ratio and count")
    if ratio is not None:
        if not 0.0 < ratio <= 1.0:
            raise ValueError(f"ratio must be in (0, 1], got {ratio}")
        count = int(round(ratio * n_frames))
    assert count is not None
    if count < minimum or count > n_frames:
        raise ValueError(f"{count} keys for {n_frames} frames: need between {minimum} and {n_frames}"
                         + (f" (ratio {ratio} is too small for this clip)" if ratio is not None else ""))
    return int(count)


def uniform_keys(n_frames: int, count: int) -> np.ndarray:
    """Uniform sampling: ``count`` frames evenly spread from the first to the last.

    Parameters
    ----------
    n_frames : int
    count : int
        2 <= count <= n_frames.

    Returns
    -------
    ndarray of int, shape (count,)
        Increasing.

    Examples
    --------
    >>> uniform_keys(10, 4)
    array([0, 3, 6, 9])
    """
    if not 2 <= count <= n_frames:
        raise ValueError(f"count must be between 2 and {n_frames}, got {count}")
    return np.round(np.linspace(0, n_frames - 1, count)).astype(int)


def _interpolation_error(quats: np.ndarray | None, positions: np.ndarray | None,
                         weights: np.ndarray) -> Callable[[int, int], np.ndarray]:
    """errors(a, b): error of each frame a < j < b when interpolated between a and b."""
    if positions is not None:
        def err_pos(a: int, b: int) -> np.ndarray:
            t = (np.arange(a + 1, b) - a) / (b - a)
            rec = positions[a] + t[:, None, None] * (positions[b] - positions[a])
            return np.linalg.norm(rec - positions[a + 1:b], axis=-1).sum(axis=-1)
        return err_pos
    assert quats is not None

    def err_rot(a: int, b: int) -> np.ndarray:
        t = (np.arange(a + 1, b) - a) / (b - a)
        rec = slerp_quaternions(quats[a][None], quats[b][None], t[:, None])
        dots = np.abs(np.sum(rec * quats[a + 1:b], axis=-1)).clip(0.0, 1.0)
        return (2.0 * np.arccos(dots)) @ weights  # eq. (1): angle between unit quaternions doubled
    return err_rot


def _error_fn(rotations: ArrayLike, weights: ArrayLike | None,
              positions: ArrayLike | None) -> tuple[int, Callable[[int, int], np.ndarray]]:
    q = hemisphere_align(as_quaternions(rotations))
    w = _weights(weights, q.shape[1])
    pos = None if positions is None else np.asarray(positions, dtype=float)
    if pos is not None and (pos.ndim != 3 or len(pos) != len(q)):
        raise ValueError(f"positions must be ({len(q)}, joints, 3), got shape {pos.shape}")
    return len(q), _interpolation_error(q, pos, w)


def scs_keys(rotations: ArrayLike, count: int, weights: ArrayLike | None = None, *,
             positions: ArrayLike | None = None) -> np.ndarray:
    """Simple curve simplification with a key budget (Lim and Thalmann).

    Parameters
    ----------
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
    count : int
        Keys to select, 2 <= count <= N.
    weights : array_like, shape (J,), optional
        Joint weights of eq. (1).
    positions : array_like, shape (N, P, 3), optional
        Measure errors on these positions (linear interpolation) instead of rotations.

    Returns
    -------
    ndarray of int, shape (count,)
        Increasing, first and last frame included.

    Examples
    --------
    >>> q = np.zeros((9, 1, 4)); a = np.r_[np.linspace(0, 1, 5), np.linspace(0.75, 0, 4)]
    >>> q[:, 0, 0] = np.cos(a / 2); q[:, 0, 3] = np.sin(a / 2)
    >>> scs_keys(q, 3).tolist()  # the turning point
    [0, 4, 8]
    """
    n, errors = _error_fn(rotations, weights, positions)
    if not 2 <= count <= n:
        raise ValueError(f"count must be between 2 and {n}, got {count}")
    keys = {0, n - 1}
    heap: list[tuple[float, int, int, int]] = []

    def push(a: int, b: int) -> None:
        if b - a > 1:
            e = errors(a, b)
            k = int(np.argmax(e))
            heapq.heappush(heap, (-float(e[k]), a + 1 + k, a, b))

    push(0, n - 1)
    while len(keys) < count and heap:
        _, j, a, b = heapq.heappop(heap)
        keys.add(j)
        push(a, j)
        push(j, b)
    return np.array(sorted(keys), dtype=int)


def pb_keys(rotations: ArrayLike, count: int, weights: ArrayLike | None = None, *,
            positions: ArrayLike | None = None) -> np.ndarray:
    """Position-based selection by iterative removal (Togawa and Okuda).

    Parameters
    ----------
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
    count : int
        Keys to keep, 2 <= count <= N.
    weights : array_like, shape (J,), optional
    positions : array_like, shape (N, P, 3), optional
        Joint positions (:func:`~anim_signals.spatialkeys.rotations.forward_kinematics`); the
        paper's criterion. Without them eq. (1) on rotations is used.

    Returns
    -------
    ndarray of int, shape (count,)
        Increasing, first and last frame included.

    Examples
    --------
    >>> q = np.zeros((9, 1, 4)); a = np.r_[np.linspace(0, 1, 5), np.linspace(0.75, 0, 4)]
    >>> q[:, 0, 0] = np.cos(a / 2); q[:, 0, 3] = np.sin(a / 2)
    >>> pb_keys(q, 3).tolist()
    [0, 4, 8]
    """
    n, errors = _error_fn(rotations, weights, positions)
    if not 2 <= count <= n:
        raise ValueError(f"count must be between 2 and {n}, got {count}")
    prev = np.arange(-1, n - 1)
    nxt = np.arange(1, n + 1)
    alive = np.ones(n, dtype=bool)
    version = np.zeros(n, dtype=int)
    heap: list[tuple[float, int, int]] = []

    def push(k: int) -> None:
        if 0 < k < n - 1:
            e = errors(int(prev[k]), int(nxt[k]))
            heapq.heappush(heap, (float(e.max()) if e.size else 0.0, k, int(version[k])))

    for k in range(1, n - 1):
        push(k)
    remaining = n
    while remaining > count and heap:
        _, k, ver = heapq.heappop(heap)
        if not alive[k] or ver != version[k]:
            continue  # stale entry: its cost changed since it was pushed
        alive[k] = False
        remaining -= 1
        a, b = int(prev[k]), int(nxt[k])
        nxt[a], prev[b] = b, a
        for m in (a, b):
            version[m] += 1
            push(m)
    return np.flatnonzero(alive)


def rols_keys(rotations: ArrayLike, count: int, weights: ArrayLike | None = None, *,
              distances: ArrayLike | None = None, regularization: float = 1e-3) -> np.ndarray:
    """Regularised orthogonal least squares selection of RBF centres (Chen, Chng and Alkadhimi).

    Candidates are all frames; the regressor of candidate ``k`` is the multiquadric kernel column
    ``phi(D[:, k])`` (eq. (1) distances), the targets the centred
    :func:`~anim_signals.spatialkeys.distance.pose_vectors`. Each step orthogonalises the
    remaining columns against the chosen ones (modified Gram-Schmidt) and takes the one with the
    largest regularised error-reduction ratio ``|w^T Y|^2 / ((w^T w + lambda) tr(Y^T Y))``.

    Parameters
    ----------
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
    count : int
        Keys to select, 1 <= count <= N.
    weights : array_like, shape (J,), optional
    distances : array_like, shape (N, N), optional
        Eq. (1) distances if already computed.
    regularization : float
        ``lambda`` relative to the mean squared column norm of the kernel matrix.

    Returns
    -------
    ndarray of int, shape (count,)
        Increasing (not necessarily including the first and last frame).

    Examples
    --------
    >>> from anim_signals.spatialkeys.generated import articulated_chain
    >>> len(rols_keys(articulated_chain(40, 3).quaternions, 5))
    5
    """
    from .distance import distance_matrix

    y = pose_vectors(rotations, weights)
    n = len(y)
    if not 1 <= count <= n:
        raise ValueError(f"count must be between 1 and {n}, got {count}")
    d = distance_matrix(rotations, weights) if distances is None else _check_distances(distances)
    p = multiquadric(d, _shape_parameter(d) if d.max() > 0 else 1.0)
    y = y - y.mean(axis=0)
    total = float(np.sum(y * y))
    lam = regularization * float(np.mean(np.sum(p * p, axis=0)))
    chosen: list[int] = []
    free = np.ones(n, dtype=bool)
    ww = np.sum(p * p, axis=0)  # squared norms and target projections of the orthogonalised columns,
    wy = p.T @ y  # updated in place below (O(N^2) per step instead of O(N^2 D))
    for _ in range(count):
        err = np.sum(wy * wy, axis=1) / ((ww + lam) * max(total, 1e-300))
        err[~free] = -np.inf
        err[ww < 1e-12 * max(float(ww.max()), 1e-300)] = -np.inf  # already spanned: no new information
        if not np.isfinite(err).any():  # everything spanned (repeated poses): fill in time order
            k = int(np.flatnonzero(free)[0])
        else:
            k = int(np.argmax(err))
        chosen.append(k)
        free[k] = False
        w = p[:, k].copy()
        nw = float(w @ w)
        if nw > 0:
            wp = w @ p
            coef = wp / nw
            p -= np.outer(w, coef)
            wy -= np.outer(coef, w @ y)
            ww = np.maximum(ww - wp * coef, 0.0)
    return np.array(sorted(chosen), dtype=int)


def select_keyframes(method: str, rotations: ArrayLike, *, ratio: float | None = None,
                     count: int | None = None, weights: ArrayLike | None = None,
                     positions: ArrayLike | None = None, distances: ArrayLike | None = None) -> np.ndarray:
    """Select keyframes by name, by ratio or count.

    Parameters
    ----------
    method : {'uniform', 'scs', 'pb', 'rols'}
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
    ratio, count
        See :func:`keyframe_count`.
    weights : array_like, shape (J,), optional
    positions : array_like, shape (N, P, 3), optional
        For SCS and PB.
    distances : array_like, shape (N, N), optional
        For ROLS.

    Returns
    -------
    ndarray of int
        Increasing frame indices.

    Raises
    ------
    ValueError
        On an unknown method or a bad count.

    Examples
    --------
    >>> q = np.zeros((100, 2, 4)); q[..., 0] = 1.0
    >>> select_keyframes("uniform", q, ratio=0.03).tolist()
    [0, 50, 99]
    """
    n = len(np.asarray(rotations))
    m = keyframe_count(n, ratio, count)
    method = method.lower()
    if method == "uniform":
        return uniform_keys(n, m)
    if method == "scs":
        return scs_keys(rotations, m, weights, positions=positions)
    if method == "pb":
        return pb_keys(rotations, m, weights, positions=positions)
    if method == "rols":
        return rols_keys(rotations, m, weights, distances=distances)
    raise ValueError(f"unknown keyframe selection {method!r}; expected one of {', '.join(SELECTIONS)}")
