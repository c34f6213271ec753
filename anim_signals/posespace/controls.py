"""A pose space as the controls of a 3D application: shape keys for meshes, channels for armatures.

Meshes: shape coordinate x_j drives shape key j, whose target is h0 + s_j H[:, j] with the key scale
s_j = max_i |x_ij| over the frames, so the frames' key values x_j / s_j stay in [-1, 1] and a
blend of the keys, h0 + sum_j (x_j / s_j)(target_j - h0), is h(x) exactly.

Armatures: the frames were the channel values times a per-channel weight (so that rotations and
locations weigh alike in the shape signal); a shape decodes to channel values by dividing the
weights out and normalising every quaternion.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .signals import ShapeSignal

__all__ = ["channel_values", "key_scales", "key_targets", "key_values", "shape_from_keys"]


def key_scales(latent: ArrayLike) -> np.ndarray:
    """Key scales s_j = max_i |x_ij|: the frames' key values x_ij / s_j then lie in [-1, 1].

    Parameters
    ----------
    latent : array_like, shape (n, m)
        Shape coordinates of the frames (:attr:`PoseSpace.latent`).

    Returns
    -------
    ndarray, shape (m,)
        Positive scales, in the units of the shape coordinates; 1 for a coordinate that is 0 in
        every frame, and all 1 without frames.

    Examples
    --------
    >>> key_scales([[0.5, -2.0, 0.0], [-1.0, 1.0, 0.0]])
    array([1., 2., 1.])
    """
    x = np.asarray(latent)
    scales = np.max(np.abs(x), axis=0) if x.size else np.ones(x.shape[-1])
    return np.where(scales > 0.0, scales, 1.0)


def key_targets(shape: ShapeSignal, scales: ArrayLike, row_size: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """The basis shape and the target shape of each key: h0 and h0 + s_j H[:, j].

    Parameters
    ----------
    shape : ShapeSignal
        h0 (d,) and H (d, m).
    scales : array_like, shape (m,)
        Key scales (:func:`key_scales`).
    row_size : int
        Values per point (3: vertex coordinates); d must be a multiple of it.

    Returns
    -------
    basis : ndarray, shape (d // row_size, row_size)
        h0 as points.
    targets : ndarray, shape (m, d // row_size, row_size)
        The key shapes as points.

    Raises
    ------
    ValueError
        When the scales are not one per column of H, or d is not a multiple of ``row_size``.
    """
    s = np.asarray(scales)
    m = shape.m
    if s.shape != (m,):
        raise ValueError(f"need {m} key scales, got shape {s.shape}")
    basis = shape.h0.reshape(-1, row_size)
    targets = basis[None] + s[:, None, None] * shape.H.T.reshape(m, -1, row_size)
    return basis, targets


def shape_from_keys(basis: ArrayLike, targets: ArrayLike, scales: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """h0 and H back from key shapes: the inverse of :func:`key_targets`.

    Parameters
    ----------
    basis : array_like, shape (V, r) or (d,)
        The basis shape.
    targets : array_like, shape (m, V, r) or (m, d)
        The key shapes.
    scales : array_like, shape (m,)
        Their key scales.

    Returns
    -------
    h0 : ndarray, shape (d,)
    H : ndarray, shape (d, m)
        H[:, j] = (target_j - h0) / s_j.

    Raises
    ------
    ValueError
        When the shapes' sizes or the number of scales do not match.

    Examples
    --------
    >>> import numpy as np
    >>> from anim_signals.posespace import ShapeSignal
    >>> shape = ShapeSignal(np.zeros(6), np.array([[1.0, 0.0], [0.0, 1.0], [0, 0], [0, 0], [0, 0], [1, 0]]))
    >>> basis, targets = key_targets(shape, [2.0, 0.5])
    >>> h0, H = shape_from_keys(basis, targets, [2.0, 0.5])
    >>> bool(np.array_equal(H, shape.H)), targets.shape
    (True, (2, 2, 3))
    """
    b = np.asarray(basis)
    t = np.asarray(targets)
    s = np.asarray(scales)
    m = t.shape[0]
    per_key = int(np.prod(t.shape[1:]))
    if s.shape != (m,) or per_key != b.size:
        raise ValueError(f"{m} key shapes of {per_key} values, {s.size} scales and a basis of {b.size} values")
    h0 = b.reshape(-1)
    H = ((t - b).reshape(m, -1) / s[:, None]).T
    return h0, H


def key_values(weights: ArrayLike, scales: ArrayLike, limit: float) -> np.ndarray:
    """Key values x_j / s_j of shape coordinates, clipped to the keys' slider range [-limit, limit].

    Parameters
    ----------
    weights : array_like, shape (..., m)
        Shape coordinates (g(p) of :meth:`PoseSpace.weights_at`).
    scales : array_like, shape (m,)
        Key scales (:func:`key_scales`).
    limit : float
        Slider range of the keys, positive.

    Returns
    -------
    ndarray, shape (..., m)

    Examples
    --------
    >>> key_values([[1.0, 30.0], [-4.0, 0.5]], [2.0, 1.0], limit=10.0)
    array([[ 0.5, 10. ],
           [-2. ,  0.5]])
    """
    return np.clip(np.asarray(weights) / scales, -limit, limit)


def channel_values(shape: ShapeSignal, weights: ArrayLike, channel_scale: ArrayLike,
                   quat_groups: Sequence[np.ndarray] = ()) -> np.ndarray:
    """Channel values of shape coordinates: h(x) with the channel weights divided out, quaternions
    normalised.

    Parameters
    ----------
    shape : ShapeSignal
        The shape signal of frames that were channel values times ``channel_scale``.
    weights : array_like, shape (..., m)
        Shape coordinates.
    channel_scale : array_like, shape (d,)
        The weight each channel was multiplied by, non-zero.
    quat_groups : sequence of ndarray of int, shape (4,)
        Columns of each quaternion (w, x, y, z); each is scaled to unit length (a zero one stays).

    Returns
    -------
    ndarray, shape (..., d)
        Channel values in the channels' own units.

    Examples
    --------
    >>> import numpy as np
    >>> from anim_signals.posespace import ShapeSignal
    >>> shape = ShapeSignal(np.array([0.0, 0.0, 0.0, 0.0, 2.0]), np.array([[2.0], [0.0], [0.0], [0.0], [4.0]]))
    >>> channel_values(shape, [1.0], [1.0, 1.0, 1.0, 1.0, 2.0], [np.arange(4)])
    array([1., 0., 0., 0., 3.])
    """
    v = shape.decode(np.asarray(weights)) / channel_scale
    for cols in quat_groups:
        q = v[..., cols]
        norm = np.linalg.norm(q, axis=-1, keepdims=True)
        v[..., cols] = q / np.where(norm > 0.0, norm, 1.0)
    return v
