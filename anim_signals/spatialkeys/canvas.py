"""Spatial keyframes on the pose-space canvas, and performances recorded on it.

The canvas (:mod:`anim_signals.posespace.canvas`) draws any model that offers frame positions, a
time curve through them, sites, control points and, here, markers. :func:`canvas_model` presents a
:class:`~.compaction.SpatialKeyframeClip` that way: every frame of the clip is a dot at its
trajectory point, coloured by time, the trajectory is the curve (the current frame's ring follows
it), and the key poses are markers. There are no RBF sites or control points to draw.

Recording follows Igarashi, Moscovich and Hughes, "Spatial keyframing for performance-driven
animation": the animator moves a cursor among the markers and the motion is the pose under the
cursor over time. :func:`timed_stroke_frames` samples a cursor path with its timestamps at a frame
rate (the speed of the hand is the speed of the motion); :func:`even_stroke_frames` spreads a
drawn stroke over a given number of frames at constant speed along it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .compaction import SpatialKeyframeClip

__all__ = ["MAX_RECORDED_FRAMES", "SpatialKeyframeCanvas", "TrajectoryCurve", "canvas_model", "even_stroke_frames",
           "timed_stroke_frames"]

MAX_RECORDED_FRAMES = 100_000
"""Longest recording in frames (about an hour at 24 fps): a longer one is a stuck timestamp."""


@dataclass(frozen=True)
class TrajectoryCurve:
    """The trajectory as the canvas's time curve: straight between frames.

    Attributes
    ----------
    points : ndarray, shape (N, 2)
    frames : ndarray, shape (N,)
        Frame number of each point, increasing.
    control : ndarray, shape (0, 2)
        None to edit (the canvas draws no control polygon).
    """

    points: np.ndarray
    frames: np.ndarray
    control: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))

    def evaluate(self, times: ArrayLike) -> np.ndarray:
        """Points at frame times (clamped to the first and last frame), shape ``times.shape + (2,)``."""
        t = np.asarray(times, dtype=float)
        flat = t.reshape(-1)
        out = np.column_stack([np.interp(flat, self.frames, self.points[:, 0]),
                               np.interp(flat, self.frames, self.points[:, 1])])
        return out.reshape(t.shape + (2,))


@dataclass(frozen=True)
class SpatialKeyframeCanvas:
    """What the canvas draws of a spatial-keyframe model (duck-typed like a pose space).

    Attributes
    ----------
    clip : SpatialKeyframeClip
    positions : ndarray, shape (N, 2)
        The trajectory (one dot per frame).
    frames : ndarray, shape (N,)
    time : TrajectoryCurve
    markers : ndarray, shape (M, 2)
    marker_frames : ndarray of int, shape (M,)
        Frame row of each marker, -1 for one added from a pose.
    pose : namespace with ``sites`` (0, 2)
    pins : dict
        Always empty.
    """

    clip: SpatialKeyframeClip
    positions: np.ndarray
    frames: np.ndarray
    time: TrajectoryCurve
    markers: np.ndarray
    marker_frames: np.ndarray
    pose: Any = field(default_factory=lambda: SimpleNamespace(sites=np.zeros((0, 2))))
    pins: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Frames of the trajectory."""
        return len(self.positions)


def canvas_model(clip: SpatialKeyframeClip, first_frame: float = 0.0) -> SpatialKeyframeCanvas:
    """Present ``clip`` to the pose-space canvas.

    Parameters
    ----------
    clip : SpatialKeyframeClip
    first_frame : float
        Frame number of the trajectory's first row (the action's first frame).

    Returns
    -------
    SpatialKeyframeCanvas

    Examples
    --------
    >>> from anim_signals.posespace.canvas import canvas_geometry, fit_space_view, hit_test
    >>> from anim_signals.spatialkeys import compact_clip
    >>> from anim_signals.spatialkeys.generated import articulated_chain
    >>> c = articulated_chain(40, 3)
    >>> shown = canvas_model(compact_clip(c.quaternions, c.parents, count=5, optimise=False), first_frame=1)
    >>> geometry = canvas_geometry(shown, fit_space_view(shown, 320, 240), current_time=11.0)
    >>> geometry.frame_points.shape, geometry.markers.shape
    ((40, 2), (5, 2))
    >>> hit_test(geometry, geometry.markers[2]).kind
    'MARKER'
    """
    trajectory = np.asarray(clip.trajectory, dtype=float)
    frames = float(first_frame) + np.arange(len(trajectory), dtype=float)
    return SpatialKeyframeCanvas(clip, trajectory, frames, TrajectoryCurve(trajectory, frames),
                                 np.asarray(clip.markers, dtype=float), np.asarray(clip.keys, dtype=int))


def timed_stroke_frames(points: ArrayLike, seconds: ArrayLike, fps: float) -> np.ndarray:
    """A cursor path sampled at a frame rate: where the cursor was at each frame.

    Parameters
    ----------
    points : array_like, shape (r, 2)
        Cursor positions on the plane, in the order recorded.
    seconds : array_like, shape (r,)
        When each was recorded (any origin), non-decreasing.
    fps : float
        Frames per second of the recording, > 0.

    Returns
    -------
    ndarray, shape (F, 2)
        Positions at 0, 1/fps, 2/fps, ... up to the last timestamp, linear between samples
        (F = floor(duration * fps) + 1, so a path of one second at 24 fps gives 25 frames).

    Raises
    ------
    ValueError
        On fewer than two points, non-finite values, decreasing timestamps, a non-positive frame
        rate, no time elapsed, or more than :data:`MAX_RECORDED_FRAMES` frames.

    Examples
    --------
    >>> timed_stroke_frames([[0.0, 0.0], [1.0, 0.0]], [0.0, 0.5], 4.0).tolist()
    [[0.0, 0.0], [0.5, 0.0], [1.0, 0.0]]
    """
    p = np.asarray(points, dtype=float).reshape(-1, 2)
    t = np.asarray(seconds, dtype=float).reshape(-1)
    rate = float(fps)
    if not (np.isfinite(rate) and rate > 0.0):
        raise ValueError(f"The frame rate must be a positive number, got {fps!r}")
    if len(p) != len(t) or len(p) < 2:
        raise ValueError(f"A recording needs at least 2 timed points, got {len(p)} points and {len(t)} times")
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(t))):
        raise ValueError("The recording holds NaN or infinite values")
    if np.any(np.diff(t) < 0.0):
        raise ValueError("The recording's timestamps go backwards")
    duration = float(t[-1] - t[0])
    if duration <= 0.0:
        raise ValueError("No time elapsed during the recording")
    n = int(np.floor(duration * rate + 1e-9)) + 1
    if n > MAX_RECORDED_FRAMES:
        raise ValueError(f"The recording lasts {duration:.0f} s: {n} frames at {rate:g} fps, more than "
                         f"{MAX_RECORDED_FRAMES}")
    u = t[0] + np.arange(n) / rate
    # equal timestamps (two events in one tick): keep the last position of each
    last = np.concatenate([np.diff(t) > 0.0, [True]])
    return np.column_stack([np.interp(u, t[last], p[last, 0]), np.interp(u, t[last], p[last, 1])])


def even_stroke_frames(points: ArrayLike, frames: int) -> np.ndarray:
    """A drawn stroke spread over ``frames`` frames at constant speed along it.

    Parameters
    ----------
    points : array_like, shape (r, 2)
        The stroke on the plane, in drawing order.
    frames : int
        Frames of the motion, >= 2.

    Returns
    -------
    ndarray, shape (frames, 2)
        Points at equal arc-length steps; the first and last are the stroke's ends.

    Raises
    ------
    ValueError
        On fewer than two distinct points, non-finite values, or fewer than 2 or more than
        :data:`MAX_RECORDED_FRAMES` frames.

    Examples
    --------
    >>> even_stroke_frames([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]], 5).tolist()
    [[0.0, 0.0], [0.5, 0.0], [1.0, 0.0], [1.0, 0.5], [1.0, 1.0]]
    """
    p = np.asarray(points, dtype=float).reshape(-1, 2)
    f = int(frames)
    if not 2 <= f <= MAX_RECORDED_FRAMES:
        raise ValueError(f"A recorded motion has 2 to {MAX_RECORDED_FRAMES} frames, got {frames}")
    if not np.all(np.isfinite(p)):
        raise ValueError("The stroke holds NaN or infinite values")
    no_length = "The stroke has no length: draw it across the canvas"
    if len(p) < 2:  # an empty stroke too
        raise ValueError(no_length)
    step = np.hypot(*np.diff(p, axis=0).T)
    keep = np.concatenate([[True], step > 0.0])
    p, step = p[keep], step[step > 0.0]
    if len(p) < 2:
        raise ValueError(no_length)
    arc = np.concatenate([[0.0], np.cumsum(step)])
    u = np.linspace(0.0, arc[-1], f)
    out = np.column_stack([np.interp(u, arc, p[:, 0]), np.interp(u, arc, p[:, 1])])
    out[0], out[-1] = p[0], p[-1]
    return out
