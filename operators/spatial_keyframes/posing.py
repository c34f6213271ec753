"""Posing the armature from a point of the plane: the function the canvas's cursor calls.

The RBF of the stored model (fitted once per stored version, see :mod:`.storage`) gives every
bone's rotation at the point, exact at each marker; the bones are set in their own rotation
modes with one ``foreach_set`` per rotation property, so a drag costs well under a millisecond
for a few dozen bones.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...anim_signals.spatialkeys import as_quaternions
from ...anim_signals.validation import finite_array
from ..blender_data.actions import id_read_only_reason
from .storage import load_model

__all__ = ["pose_at_marker", "pose_from_point"]


def pose_from_point(ob: Any, xy: Any, rbf: Any = None) -> np.ndarray:
    """Set the bones of ``ob`` to the stored model's pose at the plane point ``xy`` (x, y).

    ``rbf``: the back-projection of an edited clip of the same joints (a marker being dragged on
    the canvas, not stored yet) to pose through instead of the stored model's.

    Returns the written rotations as quaternions ``(J, 4)`` in the model's bone order. At a
    marker's position the pose is that marker's key pose (exact up to float32 storage). Raises
    ValueError when ``ob`` has no model, the model no longer fits its bones, the point is not two
    finite numbers (:func:`anim_signals.validation.finite_array`), or the armature is linked.
    """
    model = load_model(ob)
    if model is None:
        raise ValueError(f'"{getattr(ob, "name", ob)}" has no spatial keyframes: build them first')
    point = finite_array("xy", xy, ndim=1)
    if point.shape != (2,):
        raise ValueError(f"xy must be a plane point (x, y), got {point.size} numbers")
    reason = id_read_only_reason(ob)
    if reason:
        raise ValueError(reason)
    quats = as_quaternions((model.rbf if rbf is None else rbf).evaluate(point[None])[0])
    model.writer.write(ob, quats)
    return quats


def pose_at_marker(ob: Any, marker: int) -> np.ndarray:
    """:func:`pose_from_point` at the position of marker ``marker`` (its key pose)."""
    model = load_model(ob)
    if model is None:
        raise ValueError(f'"{getattr(ob, "name", ob)}" has no spatial keyframes: build them first')
    markers = model.clip.markers
    if not 0 <= marker < len(markers):
        raise ValueError(f"marker must be between 0 and {len(markers) - 1}, got {marker}")
    return pose_from_point(ob, markers[marker])
