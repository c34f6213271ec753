"""Re-timing a pose space (Cashman and Hormann, "A continuous, editable representation for deforming
mesh sequences with separate signals for time, pose and shape", §4.2): new frame numbers and the
times of the current time signal they show, the model re-timed, and the whole frames a bake keys.

The curve f, the pose signal g and the shape signal h stay as they are; only the monotone
reparametrisation rho from frame numbers to the spline parameter changes.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from ..validation import MAX_MAGNITUDE, choice, finite_array, finite_scalar, positive, positive_int
from .signals import TimeSignal
from .space import MAX_FRAMES, PoseSpace

__all__ = ["RESAMPLE_MODES", "bake_frames", "resample_times", "resampled_space"]

RESAMPLE_MODES = ("SPEED", "FRAME_COUNT", "FRAME_RATE", "RANGE")


def resample_times(
    time_signal: TimeSignal,
    *,
    mode: str = "SPEED",
    speed: float = 1.0,
    frame_count: int = 0,
    fps_from: float = 24.0,
    fps_to: float = 24.0,
    range_start: float | None = None,
    range_end: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """New frame numbers and the times of the current time signal they show.

    The new frames are whole frames counted from the current first frame a; with the current
    frames spanning [a, b]:

    * ``SPEED``: play ``speed`` times as fast (0.5: slow motion, twice as many frames);
    * ``FRAME_COUNT``: ``frame_count`` frames spread evenly over [a, b] (ends kept);
    * ``FRAME_RATE``: convert ``fps_from`` -> ``fps_to`` keeping the duration in seconds (``SPEED``
      with ``speed = fps_from / fps_to``);
    * ``RANGE``: play only ``range_start`` .. ``range_end`` at ``speed``, the frames before it as
      they are and the frames after it shifted.

    Parameters
    ----------
    time_signal : TimeSignal
        The current time signal (its ``frames`` give [a, b]).
    mode : str
        One of :data:`RESAMPLE_MODES`.
    speed : float
        Playback factor of ``SPEED`` and ``RANGE``, positive.
    frame_count : int
        New frame count of ``FRAME_COUNT``, at least 2.
    fps_from, fps_to : float
        Frame rates of ``FRAME_RATE``, positive (frames per second).
    range_start, range_end : float, optional
        The part ``RANGE`` re-times, inside [a, b] (default: a, b).

    Returns
    -------
    frames : ndarray, shape (N,)
        New frame numbers a, a + 1, ..., N >= 2.
    taus : ndarray, shape (N,)
        Times of the current time signal shown at those frames, in [a, b], non-decreasing.

    Raises
    ------
    ValueError
        On an unknown mode, a non-positive speed or frame rate, a frame count below 2, an empty
        range or one outside [a, b], or a result of fewer than 2 frames.

    Examples
    --------
    >>> import numpy as np
    >>> from anim_signals.posespace import fit_time_signal
    >>> f = fit_time_signal(np.random.default_rng(0).normal(size=(9, 2)), k=6)  # frames 1..9
    >>> frames, taus = resample_times(f, mode="SPEED", speed=0.5)  # at half speed
    >>> frames[:4], taus[:4]
    (array([1., 2., 3., 4.]), array([1. , 1.5, 2. , 2.5]))
    >>> frames.size, float(taus[-1])
    (17, 9.0)
    """
    frames = np.asarray(time_signal.frames, dtype=float)
    a, b = float(frames[0]), float(frames[-1])
    choice("mode", mode, RESAMPLE_MODES)
    if mode == "FRAME_COUNT":
        frame_count = positive_int("frame_count", frame_count, minimum=0)
        if frame_count < 2:
            raise ValueError("A resampled sequence needs at least 2 frames")
        if frame_count > MAX_FRAMES:
            raise ValueError(f"frame_count is {frame_count}: a pose space plays at most {MAX_FRAMES} frames")
        taus = np.linspace(a, b, int(frame_count))
        return a + np.arange(taus.size, dtype=float), taus
    if mode == "FRAME_RATE":
        positive("fps_from", fps_from)
        positive("fps_to", fps_to)
        speed, r0, r1 = fps_from / fps_to, a, b
    elif mode == "SPEED":
        r0, r1 = a, b
    elif mode == "RANGE":
        r0 = a if range_start is None else finite_scalar("range_start", range_start)
        r1 = b if range_end is None else finite_scalar("range_end", range_end)
        if not (a <= r0 < r1 <= b):
            raise ValueError(f"The range {r0:g}-{r1:g} must lie inside the frames {a:g}-{b:g} and not be empty")
    else:
        raise ValueError(f"Unknown resample mode {mode!r}: one of {', '.join(RESAMPLE_MODES)}")
    speed = positive("speed", speed)
    new_bp = np.array([0.0, r0 - a, r0 - a + (r1 - r0) / speed, r0 - a + (r1 - r0) / speed + (b - r1)])
    old_bp = np.array([a, r0, r1, b])
    if not np.isfinite(new_bp[-1]) or new_bp[-1] + 1 > MAX_FRAMES:
        raise ValueError(f"speed {speed:g} would make more than {MAX_FRAMES} frames: slow down less")
    count = int(math.floor(new_bp[-1] + 1e-9)) + 1
    if count < 2:
        raise ValueError(f"Resampling leaves {count} frame: slow down less")
    s = np.arange(count, dtype=float)
    taus = np.clip(np.interp(s, new_bp, old_bp), a, b)
    return a + s, taus


def resampled_space(space: PoseSpace, new_frames: ArrayLike, taus: ArrayLike) -> PoseSpace:
    """The same curve and poses with a re-timed time signal: frame F'_i shows psi(tau_i) exactly.

    The new reparametrisation maps F'_i to rho(tau_i) (made non-decreasing against rounding);
    f's curve, g and h are unchanged, as are the model's other fields.

    Parameters
    ----------
    space : PoseSpace
    new_frames : array_like, shape (N,)
        Strictly increasing new frame numbers (from :func:`resample_times`).
    taus : array_like, shape (N,)
        Non-decreasing times of ``space``'s time signal, one per new frame.

    Returns
    -------
    PoseSpace
        With ``time.frames = new_frames`` and ``time.params = rho(taus)``.
    """
    new_frames = finite_array("new_frames", new_frames, ndim=1, min_length=2, max_abs=MAX_MAGNITUDE)
    taus = finite_array("taus", taus, ndim=1, min_length=2, max_abs=MAX_MAGNITUDE)
    if taus.shape != new_frames.shape:
        raise ValueError(f"taus has shape {taus.shape}, expected {new_frames.shape} (one per new frame)")
    if np.any(np.diff(new_frames) <= 0):
        raise ValueError("new_frames must be strictly increasing")
    if new_frames.size > MAX_FRAMES:
        raise ValueError(f"new_frames: {new_frames.size} frames is more than the {MAX_FRAMES} a pose space plays")
    params = space.time.rho(taus)
    params = np.maximum.accumulate(params)  # monotone (rounding)
    return replace(space, time=replace(space.time, params=params, frames=new_frames))


def bake_frames(space: PoseSpace) -> np.ndarray:
    """The whole frames covered by the time signal: the frames a bake keys.

    Parameters
    ----------
    space : PoseSpace

    Returns
    -------
    ndarray, shape (N,)
        ceil(first frame) .. floor(last frame) as floats (1e-6 of slack at both ends); empty when
        the time signal covers no whole frame.
    """
    frames = space.time.frames
    lo, hi = math.ceil(float(frames[0]) - 1e-6), math.floor(float(frames[-1]) + 1e-6)
    return np.arange(lo, hi + 1, dtype=np.float64)
