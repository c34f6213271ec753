"""Joint rotations as arrays: conversions, log / exp maps, slerp, forward kinematics.

Rotations come as unit quaternions ``(..., 4)`` in Blender's order ``(w, x, y, z)`` or as rotation
matrices ``(..., 3, 3)``; everything else in :mod:`anim_signals.spatialkeys` works on matrices.
Conversions and the log / exp maps go through :class:`scipy.spatial.transform.Rotation`; the
batched slerp is written here because keyframe selection calls it on thousands of short segments
(scipy's :class:`~scipy.spatial.transform.Slerp` takes one joint's sequence at a time; the tests
compare the two).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation

__all__ = ["as_matrices", "as_quaternions", "exp_map", "forward_kinematics", "hemisphere_align",
           "log_map", "project_to_rotation", "slerp_quaternions"]


def as_matrices(rotations: ArrayLike) -> np.ndarray:
    """Rotation matrices from quaternions ``(w, x, y, z)`` or matrices.

    Parameters
    ----------
    rotations : array_like, shape (..., 4) or (..., 3, 3)
        Quaternions (any non-zero norm; normalised here) or rotation matrices (returned as float
        copies, not re-orthonormalised).

    Returns
    -------
    ndarray, shape (..., 3, 3)

    Raises
    ------
    ValueError
        On another trailing shape, a zero quaternion or non-finite values.

    Examples
    --------
    >>> as_matrices([[0.0, 0.0, 0.0, 1.0]]).round(6)[0] + 0.0  # 180 degrees about z
    array([[-1.,  0.,  0.],
           [ 0., -1.,  0.],
           [ 0.,  0.,  1.]])
    """
    r = np.asarray(rotations, dtype=float)
    if not np.all(np.isfinite(r)):
        raise ValueError("rotations contain NaN or infinite values")
    if r.ndim >= 2 and r.shape[-2:] == (3, 3):
        return r.copy()
    if r.ndim >= 1 and r.shape[-1] == 4:
        flat = r.reshape(-1, 4)
        norms = np.linalg.norm(flat, axis=1)
        if np.any(norms < 1e-12):
            raise ValueError("a quaternion has zero norm")
        xyzw = np.concatenate([flat[:, 1:], flat[:, :1]], axis=1) / norms[:, None]
        return Rotation.from_quat(xyzw).as_matrix().reshape(*r.shape[:-1], 3, 3)
    raise ValueError(f"rotations must end in (4,) quaternions or (3, 3) matrices, got shape {r.shape}")


def as_quaternions(rotations: ArrayLike) -> np.ndarray:
    """Unit quaternions ``(w, x, y, z)`` with ``w >= 0`` from matrices (or quaternions).

    Parameters
    ----------
    rotations : array_like, shape (..., 3, 3) or (..., 4)

    Returns
    -------
    ndarray, shape (..., 4)

    Examples
    --------
    >>> as_quaternions(np.eye(3)[None])
    array([[1., 0., 0., 0.]])
    """
    m = as_matrices(rotations)
    xyzw = Rotation.from_matrix(m.reshape(-1, 3, 3)).as_quat()
    q = np.concatenate([xyzw[:, 3:], xyzw[:, :3]], axis=1)
    q *= np.where(q[:, :1] < 0, -1.0, 1.0)
    return q.reshape(*m.shape[:-2], 4)


def hemisphere_align(quaternions: ArrayLike, axis: int = 0) -> np.ndarray:
    """Flip quaternion signs along ``axis`` so that neighbours have a non-negative dot product.

    ``q`` and ``-q`` are the same rotation; interpolating between them would take the long way.

    Parameters
    ----------
    quaternions : array_like, shape (..., 4)
    axis : int
        The sequence axis (time).

    Returns
    -------
    ndarray, same shape

    Examples
    --------
    >>> hemisphere_align([[1.0, 0, 0, 0], [-1.0, 0, 0, 0]])[1]
    array([ 1., -0., -0., -0.])
    """
    q = np.moveaxis(np.array(quaternions, dtype=float), axis, 0)
    for k in range(1, len(q)):
        flip = np.sum(q[k] * q[k - 1], axis=-1) < 0
        q[k][flip] *= -1.0
    return np.moveaxis(q, 0, axis)


def log_map(matrices: ArrayLike) -> np.ndarray:
    """Rotation vectors (axis times angle in radians, angle in [0, pi]) of rotation matrices.

    Parameters
    ----------
    matrices : array_like, shape (..., 3, 3)

    Returns
    -------
    ndarray, shape (..., 3)

    Examples
    --------
    >>> log_map(exp_map([0.0, 0.0, 0.5])).round(12)
    array([0. , 0. , 0.5])
    """
    m = np.asarray(matrices, dtype=float)
    return Rotation.from_matrix(m.reshape(-1, 3, 3)).as_rotvec().reshape(*m.shape[:-2], 3)


def exp_map(vectors: ArrayLike) -> np.ndarray:
    """Rotation matrices of rotation vectors (axis times angle in radians).

    Parameters
    ----------
    vectors : array_like, shape (..., 3)

    Returns
    -------
    ndarray, shape (..., 3, 3)

    Examples
    --------
    >>> exp_map([0.0, 0.0, np.pi / 2]).round(6)
    array([[ 0., -1.,  0.],
           [ 1.,  0.,  0.],
           [ 0.,  0.,  1.]])
    """
    v = np.asarray(vectors, dtype=float)
    return Rotation.from_rotvec(v.reshape(-1, 3)).as_matrix().reshape(*v.shape[:-1], 3, 3)


def project_to_rotation(matrices: ArrayLike) -> np.ndarray:
    """The nearest rotation matrix (Frobenius norm) of each 3x3 matrix: the polar factor.

    Used to orthonormalise entry-wise blends of rotation matrices (Igarashi et al.'s spatial
    keyframing); a rotation matrix is returned unchanged (to rounding).

    Parameters
    ----------
    matrices : array_like, shape (..., 3, 3)

    Returns
    -------
    ndarray, shape (..., 3, 3)
        Proper rotations (determinant +1).

    Examples
    --------
    >>> project_to_rotation(2.0 * np.eye(3)).round(12)
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])
    """
    m = np.asarray(matrices, dtype=float)
    u, _, vt = np.linalg.svd(m)
    d = np.sign(np.linalg.det(u @ vt))
    d = np.where(d == 0, 1.0, d)
    u = u.copy()
    u[..., :, 2] *= d[..., None]
    return u @ vt


def slerp_quaternions(q0: ArrayLike, q1: ArrayLike, t: ArrayLike) -> np.ndarray:
    """Spherical linear interpolation (Shoemake, "Animating rotation with quaternion curves").

    Takes the short way (``q1`` is flipped when ``q0 . q1 < 0``); all arguments broadcast.

    Parameters
    ----------
    q0, q1 : array_like, shape (..., 4)
        Unit quaternions (any component order, the same for both).
    t : array_like, shape (...)
        Interpolation parameters, 0 gives ``q0`` and 1 gives ``q1``.

    Returns
    -------
    ndarray, shape (..., 4)
        Unit quaternions.

    Examples
    --------
    >>> q = slerp_quaternions([1.0, 0, 0, 0], [0.0, 0, 0, 1], 0.5)
    >>> np.allclose(q, [np.sqrt(0.5), 0, 0, np.sqrt(0.5)])
    True
    """
    a = np.asarray(q0, dtype=float)
    b = np.asarray(q1, dtype=float)
    t = np.asarray(t, dtype=float)[..., None]
    dot = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(dot < 0, -b, b)
    dot = np.clip(np.abs(dot), 0.0, 1.0)
    theta = np.arccos(dot)
    s = np.sin(theta)
    near = s < 1e-8  # nearly equal rotations: the chord is the arc (normalised below)
    safe = np.where(near, 1.0, s)
    w0 = np.where(near, 1.0 - t, np.sin((1.0 - t) * theta) / safe)
    w1 = np.where(near, t, np.sin(t * theta) / safe)
    out = w0 * a + w1 * b
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def forward_kinematics(rotations: ArrayLike, parents: Sequence[int], offsets: ArrayLike) -> np.ndarray:
    """World joint positions of a skeleton from its local joint rotations.

    Joint ``j`` sits at ``offsets[j]`` in its parent's frame; its frame is the parent's frame
    rotated by ``rotations[..., j]`` (BVH convention). Roots sit at their offset.

    Parameters
    ----------
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
        Local rotations per frame and joint.
    parents : sequence of int, length J
        Parent index of each joint (-1 for roots), parents before children.
    offsets : array_like, shape (J, 3)
        Rest offsets from the parent joint (any length unit).

    Returns
    -------
    ndarray, shape (N, J, 3)

    Raises
    ------
    ValueError
        If a parent comes after its child or the shapes disagree.

    Examples
    --------
    >>> rot = np.zeros((1, 2, 4)); rot[..., 0] = 1.0
    >>> forward_kinematics(rot, [-1, 0], [[0, 0, 0], [0, 1, 0]])[0]
    array([[0., 0., 0.],
           [0., 1., 0.]])
    """
    m = as_matrices(rotations)
    off = np.asarray(offsets, dtype=float)
    n_joints = m.shape[1]
    if len(parents) != n_joints or off.shape != (n_joints, 3):
        raise ValueError(f"{n_joints} joints but {len(parents)} parents and offsets of shape {off.shape}")
    world_r = np.empty_like(m)
    pos = np.empty((m.shape[0], n_joints, 3))
    for j, p in enumerate(parents):
        if p >= j:
            raise ValueError(f"joint {j} has parent {p}: parents must come before their children")
        if p < 0:
            world_r[:, j] = m[:, j]
            pos[:, j] = off[j]
        else:
            world_r[:, j] = world_r[:, p] @ m[:, j]
            pos[:, j] = pos[:, p] + world_r[:, p] @ off[j]
    return pos
