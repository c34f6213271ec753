"""Blender's rotation modes as values, to and from the quaternions the spatial-keyframe core uses.

A pose bone stores its rotation in one of three forms, chosen by its ``rotation_mode``:
``QUATERNION`` ``(w, x, y, z)``, an Euler triple ``(x, y, z)`` applied in the mode's order
(``XYZ``: X first, so the matrix is ``Rz Ry Rx``; scipy's extrinsic lower-case sequence with the
angles taken in the same order is that matrix), or ``AXIS_ANGLE`` ``(angle, x, y, z)``. The core
works on unit quaternions ``(w, x, y, z)`` and matrices; this module converts both ways, and makes
converted values continuous (frame to frame, or towards a reference pose) so that writing them
back into curves or bones never jumps by a whole turn, a gimbal flip or a quaternion sign.

Nothing here imports bpy: the Blender data layer reads and writes the values.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation

from ..channels import continuous_quaternions, euler_filter
from ..validation import choice, finite_array
from .rotations import as_quaternions

__all__ = ["EULER_MODES", "ROTATION_MODES", "mode_size", "mode_values_to_quaternions", "quaternions_to_mode_values"]

EULER_MODES: tuple[str, ...] = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
ROTATION_MODES: tuple[str, ...] = ("QUATERNION", "AXIS_ANGLE", *EULER_MODES)


def mode_size(mode: str) -> int:
    """Values per rotation in ``mode``: 4 (quaternion, axis-angle) or 3 (Euler).

    Examples
    --------
    >>> mode_size("XYZ"), mode_size("QUATERNION")
    (3, 4)
    """
    choice("mode", mode, ROTATION_MODES)
    return 3 if mode in EULER_MODES else 4


def _ordered(angles: np.ndarray, mode: str) -> np.ndarray:
    """Blender's (x, y, z) angles reordered into the mode's application order."""
    return angles[..., ["XYZ".index(axis) for axis in mode]]


def mode_values_to_quaternions(values: ArrayLike, mode: str) -> np.ndarray:
    """Unit quaternions ``(w, x, y, z)`` (``w >= 0``) of rotations stored in ``mode``.

    Parameters
    ----------
    values : array_like, shape (..., 3) or (..., 4)
        As the bone stores them (:func:`mode_size` values).
    mode : str
        One of :data:`ROTATION_MODES`.

    Returns
    -------
    ndarray, shape (..., 4)

    Raises
    ------
    ValueError
        On a wrong trailing size, an unknown mode, NaN / infinite values or a zero quaternion.

    Examples
    --------
    >>> mode_values_to_quaternions([0.0, 0.0, np.pi], "XYZ").round(6) + 0.0
    array([0., 0., 0., 1.])
    """
    v = finite_array("values", values, min_length=None)
    size = mode_size(mode)
    if v.shape[-1:] != (size,):
        raise ValueError(f"{mode} rotations have {size} values, got shape {v.shape}")
    lead = v.shape[:-1]
    flat = v.reshape(-1, size)
    if mode == "QUATERNION":
        return as_quaternions(flat).reshape(*lead, 4)
    if mode == "AXIS_ANGLE":
        axis = flat[:, 1:]
        norm = np.linalg.norm(axis, axis=1, keepdims=True)
        # Blender treats a zero axis as no rotation; so does this (instead of dividing by zero)
        unit = np.where(norm > 1e-12, axis / np.maximum(norm, 1e-300), 0.0)
        rot = Rotation.from_rotvec(unit * flat[:, :1])
    else:
        rot = Rotation.from_euler(mode.lower(), _ordered(flat, mode))
    xyzw = rot.as_quat()
    q = np.concatenate([xyzw[:, 3:], xyzw[:, :3]], axis=1)
    q *= np.where(q[:, :1] < 0, -1.0, 1.0)
    return q.reshape(*lead, 4)


def _euler_from_quaternions(q: np.ndarray, mode: str) -> np.ndarray:
    xyzw = np.concatenate([q[:, 1:], q[:, :1]], axis=1)
    ordered = Rotation.from_quat(xyzw).as_euler(mode.lower())
    out = np.empty_like(ordered)
    out[:, ["XYZ".index(axis) for axis in mode]] = ordered
    return out


def quaternions_to_mode_values(quaternions: ArrayLike, mode: str, *, reference: ArrayLike | None = None,
                               continuous: bool = False) -> np.ndarray:
    """Rotations as values of ``mode``, near a reference or continuous along the first axis.

    Parameters
    ----------
    quaternions : array_like, shape (N, 4)
        Unit quaternions ``(w, x, y, z)``.
    mode : str
        One of :data:`ROTATION_MODES`.
    reference : array_like, shape (N, size) or (size,), optional
        Values in ``mode`` to stay near (the bones' current values, so a drag does not make an
        Euler bone jump by a turn or flip a quaternion's sign): each row takes the equivalent
        values closest to its reference.
    continuous : bool
        Rows are frames: each takes the values closest to the previous row's (quaternion signs,
        Euler wraps and gimbal flips), after the first row has been brought near ``reference``.

    Returns
    -------
    ndarray, shape (N, size)

    Examples
    --------
    >>> q = mode_values_to_quaternions([[0.0, 0.0, 3.0]], "XYZ")
    >>> quaternions_to_mode_values(q, "XYZ", reference=[0.0, 0.0, 3.0]).round(6) + 0.0
    array([[0., 0., 3.]])
    """
    q = finite_array("quaternions", quaternions, min_length=None).reshape(-1, 4)
    size = mode_size(mode)
    ref = None if reference is None else np.broadcast_to(np.asarray(reference, dtype=float), (len(q), size))
    if mode == "QUATERNION":
        out = q.copy()
        if ref is not None:
            out *= np.where(np.sum(out * ref, axis=1, keepdims=True) < 0, -1.0, 1.0)
        return continuous_quaternions(out) if continuous else out
    if mode == "AXIS_ANGLE":
        xyzw = np.concatenate([q[:, 1:], q[:, :1]], axis=1)
        rotvec = Rotation.from_quat(xyzw).as_rotvec()
        angle = np.linalg.norm(rotvec, axis=1, keepdims=True)
        axis = np.where(angle > 1e-12, rotvec / np.maximum(angle, 1e-300), np.array([0.0, 1.0, 0.0]))
        return np.concatenate([angle, axis], axis=1)
    out = _euler_from_quaternions(q, mode)
    if ref is not None:
        out = _nearest_euler(out, ref, mode)
    if continuous and len(out) > 1:
        out = euler_filter(out, mode)
    return out


def _nearest_euler(angles: np.ndarray, reference: np.ndarray, mode: str) -> np.ndarray:
    """Per row, the nearer to ``reference`` of the rotation's two Euler triples (first and last
    angle + pi, middle pi - middle), each angle shifted by whole turns (vectorised over rows)."""
    axes = ["XYZ".index(axis) for axis in mode]
    alt = angles.copy()
    alt[:, axes[0]] += np.pi
    alt[:, axes[1]] = np.pi - alt[:, axes[1]]
    alt[:, axes[2]] += np.pi
    two_pi = 2.0 * np.pi
    cand = angles + two_pi * np.round((reference - angles) / two_pi)
    alt += two_pi * np.round((reference - alt) / two_pi)
    use_alt = np.sum((alt - reference) ** 2, axis=1) < np.sum((cand - reference) ** 2, axis=1) - 1e-12
    return np.where(use_alt[:, None], alt, cand)
