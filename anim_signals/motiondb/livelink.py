"""Live Link Face CSV recordings (iPhone ARKit face tracking) as arrays.

numpy only, no bpy. A recording is a header
``Timecode,BlendShapeCount,<52 ARKit blendshape names>,HeadYaw,HeadPitch,HeadRoll,LeftEyeYaw,...``
and one row per captured frame; the timecode is ``HH:MM:SS:FF.fff`` with the frame part ``FF.fff`` in
frames of the timecode rate (60 in Live Link Face). Real recordings have gaps: dropped frames (the
timecode jumps) and rows where tracking was lost (``BlendShapeCount`` 0 and no values, or empty /
``nan`` cells).

::

    rec = read_csv("take.csv")               # LiveLinkRecording; times, values, names = rec
    rec.nan_rows, rec.gaps, rec.rate          # rows without data, dropped-frame gaps, capture rate
    res = resample(rec.times, rec.values, fps=24.0)   # fixed rate, gaps filled linearly, long ones marked

A generated face and expressions for tests and demos are in :mod:`.generated`.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "ARKIT_BLENDSHAPES",
    "CHANNELS",
    "DEFAULT_TIMECODE_RATE",
    "EYE_BLENDSHAPES",
    "EYE_CHANNELS",
    "GAP_FACTOR",
    "ROTATIONS",
    "TIMECODE_RATES",
    "Gap",
    "LiveLinkError",
    "LiveLinkRecording",
    "Resampled",
    "detect_timecode_rate",
    "find_gaps",
    "format_timecode",
    "read_csv",
    "resample",
    "split_timecode",
    "timecode_seconds",
    "write_csv",
]

# The 52 ARKit blendshapes in the order Live Link Face writes them.
ARKIT_BLENDSHAPES: tuple[str, ...] = (
    "EyeBlinkLeft", "EyeLookDownLeft", "EyeLookInLeft", "EyeLookOutLeft", "EyeLookUpLeft", "EyeSquintLeft",
    "EyeWideLeft", "EyeBlinkRight", "EyeLookDownRight", "EyeLookInRight", "EyeLookOutRight", "EyeLookUpRight",
    "EyeSquintRight", "EyeWideRight", "JawForward", "JawRight", "JawLeft", "JawOpen", "MouthClose",
    "MouthFunnel", "MouthPucker", "MouthRight", "MouthLeft", "MouthSmileLeft", "MouthSmileRight",
    "MouthFrownLeft", "MouthFrownRight", "MouthDimpleLeft", "MouthDimpleRight", "MouthStretchLeft",
    "MouthStretchRight", "MouthRollLower", "MouthRollUpper", "MouthShrugLower", "MouthShrugUpper",
    "MouthPressLeft", "MouthPressRight", "MouthLowerDownLeft", "MouthLowerDownRight", "MouthUpperUpLeft",
    "MouthUpperUpRight", "BrowDownLeft", "BrowDownRight", "BrowInnerUp", "BrowOuterUpLeft", "BrowOuterUpRight",
    "CheekPuff", "CheekSquintLeft", "CheekSquintRight", "NoseSneerLeft", "NoseSneerRight", "TongueOut",
)
# Head and eye rotations after the blendshapes (radians).
ROTATIONS: tuple[str, ...] = (
    "HeadYaw", "HeadPitch", "HeadRoll", "LeftEyeYaw", "LeftEyePitch", "LeftEyeRoll",
    "RightEyeYaw", "RightEyePitch", "RightEyeRoll",
)
CHANNELS: tuple[str, ...] = ARKIT_BLENDSHAPES + ROTATIONS  # 61 value columns
# Channels about the eyes (the partial-input example of Richert, "Animation Database for real-time
# motion reconstruction", leaves the eye control points out).
EYE_BLENDSHAPES: tuple[str, ...] = tuple(n for n in ARKIT_BLENDSHAPES if n.startswith("Eye"))
EYE_CHANNELS: tuple[str, ...] = EYE_BLENDSHAPES + tuple(n for n in ROTATIONS if "Eye" in n)

TIMECODE_RATES = (24, 25, 30, 48, 50, 60, 100, 120)
DEFAULT_TIMECODE_RATE = 60.0  # Live Link Face
GAP_FACTOR = 1.5  # a step longer than this many capture periods is a gap (dropped frames)
# Cells beyond this magnitude are no tracker output (blendshapes are 0..1, head and eye angles a
# few radians or degrees): read as missing, like a non-numeric cell.
MAX_CELL_MAGNITUDE = 1e6


class LiveLinkError(ValueError):
    """Not a readable Live Link Face CSV (the message says why)."""


# ------------------------------------------------------------------------------------------------
# Timecodes
# ------------------------------------------------------------------------------------------------


def split_timecode(tc: str) -> tuple[int, float]:
    """A timecode's whole seconds and frame part.

    Parameters
    ----------
    tc : str
        ``"HH:MM:SS:FF.fff"``.

    Returns
    -------
    seconds : int
        HH * 3600 + MM * 60 + SS.
    frame : float
        FF.fff, in frames of the timecode rate.

    Raises
    ------
    LiveLinkError
        If ``tc`` is not a timecode.

    Examples
    --------
    >>> split_timecode("10:00:01:12.500")
    (36001, 12.5)
    """
    parts = tc.strip().split(":")
    if len(parts) != 4:
        raise LiveLinkError(f"bad timecode {tc!r}: expected HH:MM:SS:FF.fff")
    try:
        h, m, s = int(parts[0]), int(parts[1]), int(parts[2])
        ff = float(parts[3])
    except ValueError as err:
        raise LiveLinkError(f"bad timecode {tc!r}: expected HH:MM:SS:FF.fff") from err
    return h * 3600 + m * 60 + s, ff


def timecode_seconds(tc: str, rate: float = DEFAULT_TIMECODE_RATE) -> float:
    """A timecode in seconds, the frame part counted in frames of ``rate`` per second.

    Parameters
    ----------
    tc : str
        ``"HH:MM:SS:FF.fff"``.
    rate : float
        Timecode frames per second.

    Returns
    -------
    float

    Raises
    ------
    LiveLinkError
        If ``tc`` is not a timecode.
    """
    whole, ff = split_timecode(tc)
    return whole + ff / float(rate)


def format_timecode(seconds: float, rate: float = DEFAULT_TIMECODE_RATE) -> str:
    """Seconds as a timecode (inverse of :func:`timecode_seconds`).

    Parameters
    ----------
    seconds : float
        Time of day in seconds (wraps at 24 h).
    rate : float
        Timecode frames per second.

    Returns
    -------
    str
        ``"HH:MM:SS:FF.fff"``.

    Examples
    --------
    >>> format_timecode(36001.0 + 12.5 / 60.0)
    '10:00:01:12.500'
    """
    ticks = round(seconds * rate * 1000.0)  # thousandths of a frame
    per_second = round(rate * 1000.0)
    whole, frac = divmod(ticks, per_second)
    h, rem = divmod(int(whole), 3600)
    m, s = divmod(rem, 60)
    return f"{h % 24:02d}:{m:02d}:{s:02d}:{frac / 1000.0:06.3f}"


def detect_timecode_rate(frame_parts: Sequence[float], spans_a_second: bool) -> float:
    """The timecode rate: the smallest standard rate above every frame part seen.

    Parameters
    ----------
    frame_parts : sequence of float
        The FF.fff parts of a take's timecodes.
    spans_a_second : bool
        The take covers at least one whole second (else the frame parts say nothing).

    Returns
    -------
    float
        Frames per second of :data:`TIMECODE_RATES` (or above), or Live Link Face's 60.
    """
    if not spans_a_second or not len(frame_parts):
        return DEFAULT_TIMECODE_RATE
    top = max(frame_parts)
    for rate in TIMECODE_RATES:
        if top < rate:
            return float(rate)
    return float(math.floor(top) + 1)


# ------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gap:
    """Dropped frames: nothing was captured between rows ``index - 1`` and ``index``.

    Attributes
    ----------
    index : int
        The row after the gap.
    start, end : float
        Times of the rows before and after, in seconds.
    missing : int
        Frames missing at the capture rate.
    """

    index: int
    start: float
    end: float
    missing: int

    @property
    def seconds(self) -> float:
        """Length of the gap in seconds."""
        return self.end - self.start


@dataclass(frozen=True)
class LiveLinkRecording:
    """A take; unpacks as ``times, values, names``.

    Attributes
    ----------
    times : ndarray, shape (n,)
        Seconds from the first row.
    values : ndarray, shape (n, d)
        Blendshape weights in [0, 1] and rotations in radians; NaN where a cell or row has no data.
    names : list of str, length d
        Channel names from the header.
    nan_rows : ndarray of int, shape (q,)
        Rows with at least one NaN value (tracking lost).
    gaps : list of Gap
        Dropped frames found from the timecodes.
    rate : float
        Capture rate (frames per second, from the median timecode step).
    timecode_rate : float
        Frames per second of the timecode's frame part.
    start_seconds : float
        The first row's timecode in seconds (time of day).
    duplicates : int
        Rows dropped because their timecode did not advance.
    path : str
    warnings : list of str
    """

    times: np.ndarray
    values: np.ndarray
    names: list[str]
    nan_rows: np.ndarray
    gaps: list[Gap]
    rate: float
    timecode_rate: float
    start_seconds: float
    duplicates: int = 0
    path: str = ""
    warnings: list[str] = field(default_factory=list)

    def __iter__(self) -> Iterator:
        return iter((self.times, self.values, self.names))

    @property
    def n_frames(self) -> int:
        """Rows kept."""
        return int(self.times.size)

    @property
    def dropped_frames(self) -> int:
        """Frames missing in all gaps."""
        return int(sum(g.missing for g in self.gaps))

    @property
    def duration(self) -> float:
        """Seconds from the first to the last row."""
        return float(self.times[-1] - self.times[0]) if self.times.size else 0.0

    def channel(self, name: str) -> np.ndarray:
        """One channel's values (n,); ValueError if the take has no such channel."""
        return self.values[:, self.names.index(name)]

    def summary(self) -> str:
        """One line for a report: frames, rate, duration, gaps, rows without data."""
        text = f"{self.n_frames} frames, {self.rate:.3g} fps, {self.duration:.2f} s"
        if self.gaps:
            text += f"; {self.dropped_frames} dropped frame(s) in {len(self.gaps)} gap(s)"
        if self.nan_rows.size:
            text += f"; {self.nan_rows.size} row(s) without tracking data (NaN)"
        if self.duplicates:
            text += f"; {self.duplicates} repeated timecode(s) dropped"
        return text


def _cell(text: str) -> float:
    t = text.strip()
    if not t:
        return math.nan
    try:
        return float(t)
    except ValueError:
        return math.nan


def find_gaps(times: np.ndarray, rate: float, factor: float = GAP_FACTOR) -> list[Gap]:
    """Steps of ``times`` longer than ``factor`` capture periods.

    Parameters
    ----------
    times : ndarray, shape (n,)
        Increasing seconds.
    rate : float
        Capture rate, frames per second.
    factor : float
        A step longer than this many periods is a gap.

    Returns
    -------
    list of Gap
    """
    if times.size < 2 or rate <= 0:
        return []
    dt = np.diff(times)
    period = 1.0 / rate
    out = []
    for i in np.flatnonzero(dt > factor * period):
        missing = max(1, int(round(dt[i] * rate)) - 1)
        out.append(Gap(int(i + 1), float(times[i]), float(times[i + 1]), missing))
    return out


def read_csv(path: str | os.PathLike, *, timecode_rate: float | None = None) -> LiveLinkRecording:
    """Read a Live Link Face CSV.

    Gaps are kept (see :class:`LiveLinkRecording`); rows whose timecode does not advance are
    dropped (counted); midnight wrap-around is handled.

    Parameters
    ----------
    path : str or os.PathLike
    timecode_rate : float, optional
        Frames per second of the timecode's frame part (default: detected, 60 when the take is
        shorter than a second).

    Returns
    -------
    LiveLinkRecording

    Raises
    ------
    LiveLinkError
        When the file cannot be read, is empty, not a Live Link Face CSV (header), has repeated
        column names, no frames or a bad timecode (the message gives the line).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> values = np.array([[0.0, 0.5], [0.1, 0.4], [np.nan, np.nan], [0.3, 0.2]])
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "take.csv")
    ...     write_csv(path, np.array([0.0, 1 / 60, 2 / 60, 4 / 60]), values, ["JawOpen", "EyeBlinkLeft"])
    ...     rec = read_csv(path)
    >>> rec.n_frames, rec.nan_rows.tolist(), rec.dropped_frames, rec.rate
    (4, [2], 1, 60.0)
    >>> rec.channel("EyeBlinkLeft").tolist()[:2]
    [0.5, 0.4]
    """
    path = os.fspath(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.reader(fh))
    except OSError as err:
        raise LiveLinkError(f"cannot read {path}: {err}") from err
    except UnicodeDecodeError as err:
        raise LiveLinkError(f"{path} is not a text CSV file") from err
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise LiveLinkError(f"{path} is empty")
    header = [h.strip() for h in rows[0]]
    if len(header) < 3 or header[0].lower() != "timecode" or header[1].lower() != "blendshapecount":
        raise LiveLinkError(f"{path}: not a Live Link Face CSV (header must start with Timecode,BlendShapeCount)")
    names = header[2:]
    if len(set(names)) != len(names):
        raise LiveLinkError(f"{path}: repeated column names in the header")
    body = rows[1:]
    if not body:
        raise LiveLinkError(f"{path}: no frames after the header")
    n, d = len(body), len(names)
    whole = np.empty(n, dtype=np.int64)
    ff = np.empty(n)
    values = np.full((n, d), np.nan)
    for i, row in enumerate(body):
        try:
            whole[i], ff[i] = split_timecode(row[0])
        except LiveLinkError as err:
            raise LiveLinkError(f"{path}, line {i + 2}: {err}") from err
        cells = row[2 : 2 + d]
        if cells:
            values[i, : len(cells)] = [_cell(c) for c in cells]
    # A cell no tracker writes (inf, 1e308): missing, like a non-numeric one, not a key at +inf.
    absurd = np.isinf(values) | (np.abs(np.nan_to_num(values)) > MAX_CELL_MAGNITUDE)
    n_absurd = int(absurd.sum())
    values[absurd] = np.nan
    # Midnight: the time of day wraps around.
    wraps = np.concatenate(([0], np.cumsum(np.diff(whole) < -12 * 3600)))
    whole = whole + 86400 * wraps
    if timecode_rate is None:
        timecode_rate = detect_timecode_rate(ff.tolist(), bool(whole[-1] > whole[0]))
    secs = whole + ff / float(timecode_rate)
    # Drop rows whose timecode does not advance (repeated frames).
    keep = np.ones(n, dtype=bool)
    last = -np.inf
    for i in range(n):
        if secs[i] <= last + 1e-9:
            keep[i] = False
        else:
            last = secs[i]
    duplicates = int(n - keep.sum())
    secs, values = secs[keep], values[keep]
    start = float(secs[0])
    times = secs - start
    steps = np.diff(times)
    rate = float(1.0 / np.median(steps)) if steps.size else float(timecode_rate)
    nan_rows = np.flatnonzero(~np.isfinite(values).all(axis=1))
    warnings = []
    if n_absurd:
        warnings.append(f"{n_absurd} cell(s) infinite or beyond +-{MAX_CELL_MAGNITUDE:g} treated as missing")
    missing = [c for c in ARKIT_BLENDSHAPES if c not in names]
    if missing:
        warnings.append(f"{len(missing)} ARKit blendshape(s) missing from the header: {', '.join(missing[:5])}"
                        + ("..." if len(missing) > 5 else ""))
    return LiveLinkRecording(
        times=times, values=values, names=list(names), nan_rows=nan_rows, gaps=find_gaps(times, rate), rate=rate,
        timecode_rate=float(timecode_rate), start_seconds=start, duplicates=duplicates, path=path, warnings=warnings,
    )


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------


def write_csv(path: str | os.PathLike, times: np.ndarray, values: np.ndarray, names: Sequence[str] = CHANNELS, *,
              timecode_rate: float = DEFAULT_TIMECODE_RATE, start_seconds: float = 0.0) -> None:
    """Write a Live Link Face CSV.

    A row that is all NaN is written as Live Link Face does when tracking is lost
    (``<timecode>,0``); other NaN cells are left empty.

    Parameters
    ----------
    path : str or os.PathLike
    times : ndarray, shape (n,)
        Seconds, offset by ``start_seconds`` in the timecodes.
    values : ndarray, shape (n, len(names))
    names : sequence of str
        Column names (default: the 52 ARKit blendshapes and 9 rotations).
    timecode_rate : float
        Frames per second of the timecode's frame part.
    start_seconds : float
        Time of day of ``times`` 0, in seconds.

    Raises
    ------
    ValueError
        If ``values`` is not (n, len(names)).
    OSError
        If the file cannot be written.
    """
    times = np.asarray(times, dtype=np.float64).ravel()
    values = np.asarray(values, dtype=np.float64)
    names = list(names)
    if values.shape != (times.size, len(names)):
        raise ValueError(f"values must be ({times.size}, {len(names)}), got {values.shape}")
    with open(os.fspath(path), "w", newline="", encoding="utf-8") as fh:
        fh.write(",".join(["Timecode", "BlendShapeCount", *names]) + "\n")
        for t, row in zip(times.tolist(), values):
            tc = format_timecode(start_seconds + t, timecode_rate)
            finite = np.isfinite(row)
            if not finite.any():
                fh.write(f"{tc},0\n")
                continue
            cells = [f"{v:.10f}" if ok else "" for v, ok in zip(row.tolist(), finite.tolist())]
            fh.write(f"{tc},{len(names)}," + ",".join(cells) + "\n")


# ------------------------------------------------------------------------------------------------
# Resampling
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resampled:
    """A take at a fixed rate (:func:`resample`).

    Attributes
    ----------
    times : ndarray, shape (m,)
        Seconds: 0, 1/fps, ...
    values : ndarray, shape (m, d)
    filled : ndarray of bool, shape (m,)
        The frame lies in a gap (interpolated across dropped frames or rows without data).
    long_gap : ndarray of bool, shape (m,)
        That gap is longer than ``max_gap`` seconds (the values there are a straight line between
        the gap's ends, not a capture).
    fps : float
    """

    times: np.ndarray
    values: np.ndarray
    filled: np.ndarray
    long_gap: np.ndarray
    fps: float

    @property
    def n_filled(self) -> int:
        """Frames interpolated across a gap."""
        return int(self.filled.sum())

    @property
    def n_long_gap(self) -> int:
        """Frames inside long gaps."""
        return int(self.long_gap.sum())


def resample(times: np.ndarray, values: np.ndarray, fps: float, *, max_gap: float = 0.25,
             rate: float | None = None) -> Resampled:
    """A take at a fixed rate, each channel linearly interpolated between its finite samples.

    Parameters
    ----------
    times : ndarray, shape (n,)
        Increasing seconds.
    values : ndarray, shape (n, d)
        NaN where a row or cell has no data.
    fps : float
        Output rate, frames per second.
    max_gap : float
        Gaps longer than this (seconds) are marked ``long_gap``.
    rate : float, optional
        The capture rate that tells a gap (default: from the median step).

    Returns
    -------
    Resampled
        Frames from the first time to the last at ``fps``.

    Raises
    ------
    ValueError
        On mismatched shapes, a non-positive ``fps``, or no row with data.
    """
    times = np.asarray(times, dtype=np.float64).ravel()
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[0] != times.size:
        raise ValueError(f"values must be ({times.size}, d), got {values.shape}")
    if fps <= 0:
        raise ValueError("fps must be positive")
    valid_row = np.isfinite(values).all(axis=1)
    if not valid_row.any():
        raise ValueError("no frame has data (every row has NaN values)")
    if rate is None:
        steps = np.diff(times)
        rate = float(1.0 / np.median(steps)) if steps.size else fps
    t0 = float(times[0])
    m = int(math.floor((float(times[-1]) - t0) * fps + 1e-6)) + 1
    out_t = t0 + np.arange(m) / fps
    out = np.empty((m, values.shape[1]))
    for j in range(values.shape[1]):
        ok = np.isfinite(values[:, j])
        if not ok.any():
            out[:, j] = np.nan
            continue
        out[:, j] = np.interp(out_t, times[ok], values[ok, j])
    # Gaps measured between rows with complete data.
    vt = times[valid_row]
    hi = np.clip(np.searchsorted(vt, out_t, side="left"), 0, vt.size - 1)
    lo = np.clip(hi - 1, 0, vt.size - 1)
    tol = 0.01 / rate  # timecodes are rounded to a thousandth of a timecode frame
    hi = np.where((hi > 0) & (np.abs(vt[hi - 1] - out_t) <= tol), hi - 1, hi)
    lo = np.clip(hi - 1, 0, vt.size - 1)
    exact = np.abs(vt[hi] - out_t) <= tol
    prev = np.where(exact, vt[hi], vt[lo])
    nxt = vt[hi]
    before = out_t < vt[0] - 1e-9  # leading rows without data: held
    after = out_t > vt[-1] + 1e-9
    span = np.where(before, vt[0] - t0, np.where(after, float(times[-1]) - vt[-1], nxt - prev))
    filled = (span > GAP_FACTOR / rate) & ~exact
    long_gap = filled & (span > max_gap)
    return Resampled(out_t - t0, out, filled, long_gap, float(fps))
