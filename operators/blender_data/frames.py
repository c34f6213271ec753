"""The scene's time: its frame rate, and visiting other frames and coming back.

Owns :func:`scene_fps` and :func:`visiting_frames`, the one place that moves ``scene.frame_current`` to evaluate the
depsgraph elsewhere in time (world-space bone heads, driven shape-key values, evaluated meshes
frame by frame, a mesh copy at one frame) and restores the frame (and subframe) the user was on,
also when the work fails or a generator using it is closed early.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import bpy


def scene_fps(scene: bpy.types.Scene) -> float:
    """The scene's frame rate in frames per second (``fps / fps_base``)."""
    return float(scene.render.fps) / float(scene.render.fps_base or 1.0)


@contextmanager
def visiting_frames(scene: bpy.types.Scene) -> Iterator[Callable[[float], bpy.types.Depsgraph]]:
    """Go to other frames of ``scene`` and back.

    Yields ``go_to(frame) -> depsgraph``: sets the scene frame (a fractional frame as its subframe)
    and returns the evaluated depsgraph there. Leaving the block (normally, by an exception, or by
    closing a generator suspended inside it) sets the frame and subframe current on entry again.

    Example
    -------
    >>> with visiting_frames(scene) as go_to:  # doctest: +SKIP
    ...     for f in (1.0, 1.5, 2.0):
    ...         ob_eval = ob.evaluated_get(go_to(f))
    """
    frame0, sub0 = scene.frame_current, scene.frame_subframe

    def go_to(frame: float) -> bpy.types.Depsgraph:
        whole = math.floor(frame)
        scene.frame_set(int(whole), subframe=float(frame) - whole)
        return bpy.context.evaluated_depsgraph_get()

    try:
        yield go_to
    finally:
        scene.frame_set(frame0, subframe=sub0)
