"""Pose distance of Costa and Esperança, "Enhancing Spatial Keyframe Animations with Motion Capture", eq. (1).

``D(A, B) = sum_r w_r arccos((Tr[A_r B_r^T] - 1) / 2)``: the weighted sum of the joints' geodesic
rotation angles (radians), with ``w_r`` the longest path from joint ``r`` to the furthest end
effector (:func:`joint_weights`), so that a hip rotation, which moves a whole leg, counts more than
a toe's.

Rig independence: :func:`canonical_rotations` keeps only the canonical joints that
:func:`anim_signals.manifolds.skeleton.canonical_joints` finds by bone name (hips, spine, arms,
legs, ...), so two rigs with different helper bones get the same weights; and
:func:`feature_distance_matrix` applies eq. (1)'s form to
:func:`anim_signals.manifolds.skeleton.body_features` (segment directions in the character's
heading frame), which compares clips of different skeletons and rest poses.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..manifolds.skeleton import SEGMENTS, canonical_joints
from .rotations import as_matrices

__all__ = ["SEGMENT_WEIGHTS", "canonical_rotations", "distance_matrix", "distances_to",
           "feature_distance_matrix", "joint_weights", "pose_distance", "pose_vectors"]

# Weights of the body-feature segments (skeleton.SEGMENTS) by the same rule as joint_weights: the
# number of segments from the segment to the furthest end of the body (spine -> upper arm ->
# forearm is the longest chain from the hips).
SEGMENT_WEIGHTS: dict[str, float] = {
    "spine": 3.0, "neck": 1.0,
    "upper_arm_l": 2.0, "forearm_l": 1.0, "upper_arm_r": 2.0, "forearm_r": 1.0,
    "thigh_l": 2.0, "shin_l": 1.0, "thigh_r": 2.0, "shin_r": 1.0,
}


def joint_weights(parents: Sequence[int]) -> np.ndarray:
    """The seed's joint weights: the longest path from each joint to its furthest end effector.

    Counted in bones: a leaf joint carries one bone to its end effector (the BVH ``End Site``), so
    its weight is 1, and a joint's weight is one more than its heaviest child's.

    Parameters
    ----------
    parents : sequence of int, length J
        Parent index per joint, -1 for roots (any order).

    Returns
    -------
    ndarray, shape (J,)
        Weights >= 1.

    Raises
    ------
    ValueError
        On a parent index out of range or a cycle.

    Examples
    --------
    >>> joint_weights([-1, 0, 1, 0])  # root with a two-bone and a one-bone branch
    array([3., 2., 1., 1.])
    """
    parents = [int(p) for p in parents]
    n = len(parents)
    for j, p in enumerate(parents):
        if p >= n or p < -1 or p == j:
            raise ValueError(f"joint {j} has an invalid parent {p}")
    w = np.ones(n)
    # walk up from every joint; a path longer than n means a cycle
    for j in range(n):
        d, p, steps = 1.0, parents[j], 0
        while p >= 0:
            d += 1.0
            w[p] = max(w[p], d)
            p = parents[p]
            steps += 1
            if steps > n:
                raise ValueError("parents contain a cycle")
    return w


def _weights(weights: ArrayLike | None, n_joints: int) -> np.ndarray:
    if weights is None:
        return np.ones(n_joints)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n_joints,):
        raise ValueError(f"weights must have shape ({n_joints},), got {w.shape}")
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite and non-negative")
    return w


def _angle(traces: np.ndarray) -> np.ndarray:
    return np.arccos(np.clip((traces - 1.0) * 0.5, -1.0, 1.0))


def pose_distance(a: ArrayLike, b: ArrayLike, weights: ArrayLike | None = None) -> np.ndarray:
    """Eq. (1) between poses ``a`` and ``b`` (broadcasting over leading axes).

    Parameters
    ----------
    a, b : array_like, shape (..., J, 4) or (..., J, 3, 3)
        Joint rotations (quaternions ``(w, x, y, z)`` or matrices).
    weights : array_like, shape (J,), optional
        Joint weights (:func:`joint_weights`); all ones without.

    Returns
    -------
    ndarray, shape (...)
        Weighted sums of joint rotation angles, radians times weight.

    Raises
    ------
    ValueError
        On bad shapes or weights.

    Examples
    --------
    >>> a = np.zeros((2, 4)); a[:, 0] = 1.0                   # two joints, identity
    >>> b = a.copy(); b[1] = [np.cos(0.25), 0, 0, np.sin(0.25)]  # 0.5 rad about z
    >>> float(pose_distance(a, b, [3.0, 1.0])).__round__(12)
    0.5
    """
    ma, mb = as_matrices(a), as_matrices(b)
    w = _weights(weights, ma.shape[-3])
    tr = np.einsum("...ij,...ij->...", ma, mb)
    return np.sum(_angle(tr) * w, axis=-1)


def distance_matrix(rotations: ArrayLike, weights: ArrayLike | None = None) -> np.ndarray:
    """All pairwise eq. (1) distances between the frames of a clip.

    Time O(N^2 J), memory a few N x N float arrays (about 0.2 GB at 3,000 frames).

    Parameters
    ----------
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
    weights : array_like, shape (J,), optional

    Returns
    -------
    ndarray, shape (N, N)
        Symmetric, zero diagonal.

    Examples
    --------
    >>> q = np.zeros((3, 1, 4)); q[:, 0, 0] = np.cos([0.0, 0.1, 0.3]); q[:, 0, 3] = np.sin([0.0, 0.1, 0.3])
    >>> distance_matrix(q).round(6)
    array([[0. , 0.2, 0.6],
           [0.2, 0. , 0.4],
           [0.6, 0.4, 0. ]])
    """
    m = as_matrices(rotations)
    n, n_joints = m.shape[:2]
    w = _weights(weights, n_joints)
    flat = m.reshape(n, n_joints, 9)
    out = np.zeros((n, n))
    for r in range(n_joints):  # Tr[A B^T] is the dot product of the flattened matrices
        if w[r] == 0:
            continue
        out += w[r] * _angle(flat[:, r] @ flat[:, r].T)
    out = 0.5 * (out + out.T)
    np.fill_diagonal(out, 0.0)
    return out


def distances_to(rotations: ArrayLike, pose: ArrayLike, weights: ArrayLike | None = None) -> np.ndarray:
    """Eq. (1) from every frame of a clip to one pose.

    Parameters
    ----------
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
    pose : array_like, shape (J, 4) or (J, 3, 3)
    weights : array_like, shape (J,), optional

    Returns
    -------
    ndarray, shape (N,)

    Examples
    --------
    >>> q = np.zeros((2, 1, 4)); q[:, 0, 0] = 1.0
    >>> distances_to(q, q[0])
    array([0., 0.])
    """
    return pose_distance(as_matrices(rotations), as_matrices(pose)[None], weights)


def pose_vectors(rotations: ArrayLike, weights: ArrayLike | None = None) -> np.ndarray:
    """Poses as points of a Euclidean space, for the projections that need coordinates (PCA, LLE).

    Each joint contributes its flattened rotation matrix times ``w_r / sqrt(2)``: the Euclidean
    distance per joint is then ``w_r * 2 sin(theta / 2)``, which is eq. (1)'s ``w_r * theta`` to
    second order, and, unlike rotation vectors, has no jump at 180 degrees. The joints add in
    quadrature here rather than as eq. (1)'s plain sum.

    Parameters
    ----------
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
    weights : array_like, shape (J,), optional

    Returns
    -------
    ndarray, shape (N, 9 J)

    Examples
    --------
    >>> q = np.zeros((1, 2, 4)); q[..., 0] = 1.0
    >>> pose_vectors(q).shape
    (1, 18)
    """
    m = as_matrices(rotations)
    w = _weights(weights, m.shape[1])
    return (m * (w / np.sqrt(2.0))[None, :, None, None]).reshape(len(m), -1)


def canonical_rotations(rotations: ArrayLike, names: Sequence[str],
                        parents: Sequence[int]) -> tuple[np.ndarray, list[int], list[int]]:
    """Keep only a humanoid rig's canonical joints, reconnected to their nearest kept ancestor.

    Finger, twist, helper and end bones differ from rig to rig; the canonical joints (hips, spine,
    chest, neck, head, upper arms, forearms, hands, thighs, shins, feet;
    :func:`anim_signals.manifolds.skeleton.canonical_joints`) do not, so eq. (1) with
    :func:`joint_weights` of the returned parents weighs two rigs' poses alike.

    Parameters
    ----------
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
    names : sequence of str, length J
        Bone names.
    parents : sequence of int, length J
        Parent index per joint (-1 for roots).

    Returns
    -------
    rotations : ndarray, shape (N, K, 3, 3)
        The kept joints' local rotations (a removed in-between bone's rotation is not folded in).
    parents : list of int, length K
        Parent of each kept joint among the kept ones (-1 for roots).
    indices : list of int, length K
        The kept joints' indices into ``names``.

    Raises
    ------
    ValueError
        When no canonical joint is found or the lengths disagree.

    Examples
    --------
    >>> q = np.zeros((1, 3, 4)); q[..., 0] = 1.0
    >>> canonical_rotations(q, ["Hips", "Helper", "Head"], [-1, 0, 1])[1:]
    ([-1, 0], [0, 2])
    """
    m = as_matrices(rotations)
    if m.shape[1] != len(names) or len(parents) != len(names):
        raise ValueError(f"{m.shape[1]} joints, {len(names)} names and {len(parents)} parents")
    found = canonical_joints(names, parents)
    if not found:
        raise ValueError("no canonical joint (hips, spine, arms, legs, ...) found among the bone names")
    keep = sorted(found.values())
    pos = {j: k for k, j in enumerate(keep)}
    sub_parents = []
    for j in keep:
        p, steps = int(parents[j]), 0
        while p >= 0 and p not in pos and steps <= len(parents):
            p, steps = int(parents[p]), steps + 1
        sub_parents.append(pos.get(p, -1))
    return m[:, keep], sub_parents, keep


def feature_distance_matrix(features: ArrayLike, weights: ArrayLike | None = None) -> np.ndarray:
    """Eq. (1)'s form on body features: weighted sum of the angles between segment directions.

    Parameters
    ----------
    features : array_like, shape (N, 3 S) or (N, 3 S + 1)
        :func:`anim_signals.manifolds.skeleton.body_features` (``S = len(SEGMENTS)`` unit vectors;
        a trailing hips-height column is ignored).
    weights : array_like, shape (S,), optional
        Per segment; default :data:`SEGMENT_WEIGHTS` (the seed's rule on the body's segments).

    Returns
    -------
    ndarray, shape (N, N)
        Symmetric, zero diagonal, radians times weight.

    Raises
    ------
    ValueError
        On a column count that is not 3 S or 3 S + 1.

    Examples
    --------
    >>> f = np.tile(np.eye(3)[0], (2, 10)); f[1, :3] = [0.0, 1.0, 0.0]  # spine turned 90 degrees
    >>> feature_distance_matrix(f).round(6)[0, 1] == round(3 * np.pi / 2, 6)
    True
    """
    f = np.asarray(features, dtype=float)
    n_seg = len(SEGMENTS)
    if f.ndim != 2 or f.shape[1] not in (3 * n_seg, 3 * n_seg + 1):
        raise ValueError(f"features must have {3 * n_seg} or {3 * n_seg + 1} columns, got shape {f.shape}")
    w = (np.array([SEGMENT_WEIGHTS[s] for s, _, _ in SEGMENTS]) if weights is None
         else _weights(weights, n_seg))
    out = np.zeros((len(f), len(f)))
    for s in range(n_seg):
        u = f[:, 3 * s:3 * s + 3]
        u = u / np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
        out += w[s] * np.arccos(np.clip(u @ u.T, -1.0, 1.0))
    out = 0.5 * (out + out.T)
    np.fill_diagonal(out, 0.0)
    return out
