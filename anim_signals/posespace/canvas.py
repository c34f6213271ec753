"""Pose-space canvas geometry (docs/pose_space.md, "Canvas geometry"): view, what to draw, hit
testing, strokes.

Pure numpy: the Blender side draws :class:`CanvasGeometry` with a thin ``gpu`` layer (its triangles
and lines from :mod:`.shapes`), and ``render_rgba`` / ``render_png`` (:mod:`.render`) draw the same
geometry with :mod:`anim_signals.imaging.raster` (tests,
headless previews, documentation figures). Colours are :mod:`.palette`'s, importable from here too.

Conventions
-----------
* Pixel coordinates are Blender's ``POST_PIXEL`` region space: x to the right, y **up**, origin at
  the bottom-left corner of the region.  A canvas occupies the rectangle
  ``[origin, origin + (width, height))`` of its region; pixel ``(i, j)`` covers ``[i, i+1) x [j, j+1)``.
  Raster images have row 0 at the *top*; :func:`render_rgba` does the flip.
* Pose space is the R^2 of Cashman and Hormann, "A continuous, editable representation for
  deforming mesh sequences with separate signals for time, pose and shape" (frame positions p_i,
  RBF sites s_j, time-signal control points f_j).
  :class:`View` maps it to pixels with a uniform scale (pose-space circles stay circles).
* Inputs to :func:`canvas_geometry` (``cursor``, ``stroke``) are in pose-space units; everything in
  the returned :class:`CanvasGeometry` is in pixels.  :func:`hit_test` takes a mouse position in
  pixels; :func:`stroke_to_pose` turns a mouse stroke in pixels into pose-space points.

Speed: the pose-space part of the geometry (curve samples of f, frame colours, ...) is cached for
the last space drawn (models are immutable; a new model or a reassigned attribute invalidates the
cache, an in-place edit of an array does not: call :func:`clear_cache`), so a redraw after a pan or
zoom is a handful of vectorised affine maps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import palette
from .palette import *  # noqa: F403  (the colours, importable from here as well)
from .palette import time_colors

__all__ = [
    "HIT_KINDS",
    "CanvasGeometry",
    "Hit",
    "View",
    "canvas_geometry",
    "clear_cache",
    "drawable",
    "fit_space_view",
    "fit_view",
    "hit_test",
    "inside",
    "near_the_frames",
    "stroke_to_pose",
]
__all__ += palette.__all__

# What hit_test can report (a marker first; a near frame before a control point, both before sites
# and the curve).
HIT_KINDS = ("MARKER", "CONTROL_POINT", "FRAME", "SITE", "CURVE", "NONE")

# --------------------------------------------------------------------------------------------------
# view


def _pair(v: Any, name: str) -> tuple[float, float]:
    a = np.asarray(v, dtype=float).ravel()
    if a.shape != (2,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be two finite numbers, got {v!r}")
    return float(a[0]), float(a[1])


@dataclass(frozen=True)
class View:
    """Pose space <-> region pixels: ``xy = origin + (width, height) / 2 + (p - center) * scale``.

    Immutable: :meth:`zoomed` and :meth:`panned` return new views.

    Attributes
    ----------
    center : (float, float)
        The pose-space point at the middle of the canvas.
    scale : float
        Pixels per pose-space unit (the same along x and y), positive.
    width, height : int
        Canvas size in pixels, positive.
    origin : (float, float)
        The canvas's bottom-left corner in region pixels (y up).

    Raises
    ------
    ValueError
        On a non-finite center or origin, a non-positive scale or an empty canvas.
    """

    center: tuple[float, float]
    scale: float
    width: int
    height: int
    origin: tuple[float, float] = (0.0, 0.0)
    _offset: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", _pair(self.center, "center"))
        object.__setattr__(self, "origin", _pair(self.origin, "origin"))
        s = float(self.scale)
        if not (math.isfinite(s) and s > 0.0):
            raise ValueError(f"scale must be a positive finite number of pixels per unit, got {self.scale!r}")
        object.__setattr__(self, "scale", s)
        w, h = int(self.width), int(self.height)
        if w < 1 or h < 1:
            raise ValueError(f"canvas size must be positive, got {self.width} x {self.height}")
        object.__setattr__(self, "width", w)
        object.__setattr__(self, "height", h)
        # xy = p * scale + offset
        off = np.array([self.origin[0] + 0.5 * w - self.center[0] * s,
                        self.origin[1] + 0.5 * h - self.center[1] * s])
        object.__setattr__(self, "_offset", off)

    def to_pixels(self, P: Any) -> np.ndarray:
        """Pose-space points (..., 2) -> region pixels (..., 2) (x right, y up)."""
        return np.asarray(P, dtype=float) * self.scale + self._offset

    def to_pose(self, XY: Any) -> np.ndarray:
        """Region pixels (..., 2) -> pose-space points (..., 2); the inverse of :meth:`to_pixels`."""
        return (np.asarray(XY, dtype=float) - self._offset) / self.scale

    def zoomed(self, factor: float, about_xy: Any = None) -> View:
        """Scale by ``factor`` (> 1 zooms in) keeping the pose point under ``about_xy`` (pixels) fixed.

        ``about_xy`` defaults to the canvas centre.
        """
        f = float(factor)
        if not (math.isfinite(f) and f > 0.0):
            raise ValueError(f"zoom factor must be positive and finite, got {factor!r}")
        if about_xy is None:
            return View(self.center, self.scale * f, self.width, self.height, self.origin)
        a = np.asarray(_pair(about_xy, "about_xy"))
        p = self.to_pose(a)
        s = self.scale * f
        mid = np.array([self.origin[0] + 0.5 * self.width, self.origin[1] + 0.5 * self.height])
        c = p - (a - mid) / s
        return View((float(c[0]), float(c[1])), s, self.width, self.height, self.origin)

    def panned(self, dx: float, dy: float) -> View:
        """Move the content by (dx, dy) pixels (a mouse drag of (dx, dy) with y up)."""
        return View((self.center[0] - float(dx) / self.scale, self.center[1] - float(dy) / self.scale),
                    self.scale, self.width, self.height, self.origin)

    def resized(self, width: int, height: int, origin: Any = None) -> View:
        """The same centre and scale on a canvas of another size (a resized region)."""
        return View(self.center, self.scale, width, height, self.origin if origin is None else origin)

    def pose_bounds(self) -> tuple[float, float, float, float]:
        """The visible pose-space rectangle (xmin, ymin, xmax, ymax)."""
        lo = self.to_pose(self.origin)
        hi = self.to_pose((self.origin[0] + self.width, self.origin[1] + self.height))
        return float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])


def fit_view(points: Any, width: int, height: int, *, margin: float = 0.08,
             origin: Any = (0.0, 0.0)) -> View:
    """The view showing all points centred, with ``margin`` x width (height) free on each side.

    Non-finite rows are ignored.  No points: the unit square around 0; a single point (or all
    points equal): a unit square around it; collinear points: fitted along their extent.

    Parameters
    ----------
    points : array_like, shape (n, 2)
        Pose-space points.
    width, height : int
        Canvas size in pixels.
    margin : float
        Free border as a fraction of the canvas size, in [0, 0.5).
    origin : (float, float)
        The canvas's bottom-left corner in region pixels.

    Returns
    -------
    View

    Raises
    ------
    ValueError
        On a margin outside [0, 0.5) or an empty canvas.
    """
    m = float(margin)
    if not (0.0 <= m < 0.5):
        raise ValueError(f"margin must be in [0, 0.5), got {margin!r}")
    w, h = int(width), int(height)
    if w < 1 or h < 1:
        raise ValueError(f"canvas size must be positive, got {width} x {height}")
    P = np.asarray(points, dtype=float).reshape(-1, 2)
    P = P[np.all(np.isfinite(P), axis=1)]
    if len(P) == 0:
        lo = hi = np.zeros(2)
    else:
        lo, hi = P.min(axis=0), P.max(axis=0)
    center = 0.5 * (lo + hi)
    span = hi - lo
    tiny = 1e-12 * max(1.0, float(np.max(np.abs(P)))) if len(P) else 1e-12
    usable = np.array([w, h], dtype=float) * (1.0 - 2.0 * m)
    usable = np.maximum(usable, 1.0)
    ok = span > tiny
    scale = float(np.min(usable[ok] / span[ok])) if ok.any() else float(np.min(usable))
    return View((float(center[0]), float(center[1])), scale, w, h, origin)


def fit_space_view(space: Any, width: int, height: int, *, margin: float = 0.08,
                   origin: Any = (0.0, 0.0), curve_samples: int = 400) -> View:
    """:func:`fit_view` on everything :func:`canvas_geometry` draws of ``space``.

    Parameters
    ----------
    space : PoseSpace or duck-typed
        As in :func:`canvas_geometry`.
    width, height : int
        Canvas size in pixels.
    margin : float
        Free border as a fraction of the canvas size.
    origin : (float, float)
        The canvas's bottom-left corner in region pixels.
    curve_samples : int
        Samples of the time signal.

    Returns
    -------
    View
        Showing the frames, sites, pins, control points, markers and the curve.
    """
    b = _bundle(space, curve_samples)
    pts = np.concatenate([b.positions, b.sites, b.pins, b.control, b.curve, b.markers])
    return fit_view(pts, width, height, margin=margin, origin=origin)


# --------------------------------------------------------------------------------------------------
# geometry


@dataclass
class CanvasGeometry:
    """Everything in region pixels (x right, y up), ready to draw.

    Attributes
    ----------
    frame_points : ndarray, shape (n, 2)
    frame_colors : ndarray, shape (n, 4)
        RGBA by time (:func:`time_colors`).
    sites : ndarray, shape (l, 2)
    pins : ndarray, shape (q, 2)
    pin_frames : ndarray of int, shape (q,)
        Row of each pinned frame.
    curve : ndarray, shape (s, 2)
        The time signal f sampled over [first frame, last frame].
    control : ndarray, shape (k, 2)
        Time-signal control points.
    control_polygon : ndarray, shape (k, 2)
        The control points in order, drawn as an open polyline.
    current : ndarray, shape (2,), or None
        f(current_time).
    cursor : ndarray, shape (2,), or None
    stroke : ndarray, shape (r, 2), or None
    curve_times : ndarray, shape (s,)
        Frame times of the ``curve`` samples (for clicking on the curve).
    frame_numbers : ndarray, shape (n,)
        Times of the frames (``space.frames``).
    current_time : float or None
        The clamped current time.
    view : View or None
        The view the geometry was built with.
    markers : ndarray, shape (M, 2)
        Spatial keyframes' markers (key poses on the plane; empty for a pose space).
    marker_frames : ndarray of int, shape (M,)
        Each marker's frame row, -1 for a marker added from a pose.
    """

    frame_points: np.ndarray
    frame_colors: np.ndarray
    sites: np.ndarray
    pins: np.ndarray
    pin_frames: np.ndarray
    curve: np.ndarray
    control: np.ndarray
    control_polygon: np.ndarray
    current: np.ndarray | None = None
    cursor: np.ndarray | None = None
    stroke: np.ndarray | None = None
    curve_times: np.ndarray = field(default_factory=lambda: np.zeros(0))
    frame_numbers: np.ndarray = field(default_factory=lambda: np.zeros(0))
    current_time: float | None = None
    view: View | None = None
    markers: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    marker_frames: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))


@dataclass
class _Bundle:
    """The view-independent (pose-space) part of a space's geometry."""

    positions: np.ndarray
    colors: np.ndarray
    sites: np.ndarray
    pins: np.ndarray
    pin_frames: np.ndarray
    control: np.ndarray
    curve: np.ndarray
    curve_times: np.ndarray
    frames: np.ndarray
    t_range: tuple[float, float]
    markers: np.ndarray
    marker_frames: np.ndarray


_CACHE: dict[str, Any] = {}


def clear_cache() -> None:
    """Forget the cached pose-space geometry (needed only after editing a model's arrays in place)."""
    _CACHE.clear()


def _as_points(a: Any, name: str) -> np.ndarray:
    P = np.asarray(a, dtype=float)
    if P.size == 0:
        return np.zeros((0, 2))
    if P.ndim != 2 or P.shape[1] != 2:
        raise ValueError(f"{name} must be (n, 2), got shape {P.shape}")
    return P


def _bundle(space: Any, curve_samples: int) -> _Bundle:
    s = int(curve_samples)
    if s < 2:
        raise ValueError(f"curve_samples must be at least 2, got {curve_samples!r}")
    pins_obj = getattr(space, "pins", None)
    markers_obj = getattr(space, "markers", None)
    parts = (space, space.positions, space.pose, space.time, space.frames, pins_obj, markers_obj)
    hit = _CACHE.get("key")
    if hit is not None and hit[1] == s and len(hit[0]) == len(parts) and all(
            a is b for a, b in zip(hit[0], parts)):
        return _CACHE["bundle"]
    positions = _as_points(space.positions, "positions")
    curve_frames = np.asarray(space.frames, dtype=float).ravel()
    # After a time edit (sketch, loop, resample) the time signal has new frames while the dots are
    # still the reconstructed frames: colour those by their own row order then.
    frames = curve_frames if curve_frames.shape == (len(positions),) else np.arange(1.0, len(positions) + 1.0)
    sites = _as_points(space.pose.sites, "pose.sites")
    control = _as_points(space.time.control, "time.control")
    if isinstance(pins_obj, Mapping) and len(pins_obj):
        keys = sorted(int(k) for k in pins_obj)
        pin_frames = np.array(keys, dtype=int)
        pins = np.array([_pair(pins_obj[k], "pin") for k in keys]).reshape(-1, 2)
    else:
        pin_frames = np.zeros(0, dtype=int)
        pins = np.zeros((0, 2))
    if len(curve_frames):
        t0, t1 = float(np.min(curve_frames)), float(np.max(curve_frames))
        curve_times = np.linspace(t0, t1, s)
        curve = np.asarray(space.time.evaluate(curve_times), dtype=float).reshape(s, 2)
    else:
        t0 = t1 = 0.0
        curve_times = np.zeros(0)
        curve = np.zeros((0, 2))
    markers = _as_points(markers_obj if markers_obj is not None else np.zeros((0, 2)), "markers")
    marker_frames = np.asarray(getattr(space, "marker_frames", np.full(len(markers), -1)), dtype=int).reshape(-1)
    b = _Bundle(positions, time_colors(frames), sites, pins, pin_frames, control, curve, curve_times, frames,
                (t0, t1), markers, marker_frames)
    _CACHE["key"] = (parts, s)
    _CACHE["bundle"] = b
    return b


def _on_curve(b: _Bundle, t: float) -> np.ndarray:
    """f(t) on the sampled curve (linear between samples: the point lies on the polyline as drawn)."""
    t0, t1 = b.t_range
    s = len(b.curve)
    if s == 1 or t1 <= t0:
        return b.curve[0].copy()
    u = (t - t0) / (t1 - t0) * (s - 1)
    i = min(max(int(math.floor(u)), 0), s - 2)
    a = u - i
    return b.curve[i] * (1.0 - a) + b.curve[i + 1] * a


def canvas_geometry(space: Any, view: View, *, current_time: float | None = None, cursor: Any = None,
                    stroke: Any = None, curve_samples: int = 400) -> CanvasGeometry:
    """Pixel geometry of a pose space in ``view``.

    Parameters
    ----------
    space : PoseSpace or duck-typed
        Needs ``positions (n, 2)``, ``pose.sites (l, 2)``, ``time.evaluate(times) -> (..., 2)``,
        ``time.control (k, 2)``, ``frames (n,)``, optionally ``pins: dict[int, (2,)]``, and
        ``markers (M, 2)`` with ``marker_frames (M,)`` (a spatial-keyframe model,
        :func:`anim_signals.spatialkeys.canvas_model`).
    view : View
    current_time : float, optional
        Frame time (clamped to the frames' range) to mark: f(current_time), interpolated linearly
        between the curve samples so that the marker sits on the polyline as drawn (no call to
        ``time.evaluate`` per redraw: playback stays cheap).
    cursor : array_like, shape (2,), optional
        Pose-space point.
    stroke : array_like, shape (r, 2), optional
        Pose-space points.
    curve_samples : int
        Evaluations of f, evenly spaced in time over [first frame, last frame], cached per model.

    Returns
    -------
    CanvasGeometry

    Examples
    --------
    >>> import numpy as np
    >>> from anim_signals.posespace import build_pose_space
    >>> t = np.linspace(0.0, 2 * np.pi, 12, endpoint=False)
    >>> space = build_pose_space(np.column_stack([np.cos(t), np.sin(t), np.cos(2 * t)]), row_size=1)
    >>> geometry = canvas_geometry(space, fit_space_view(space, 320, 240), current_time=3.0)
    >>> geometry.frame_points.shape, geometry.control.shape
    ((12, 2), (14, 2))
    >>> hit_test(geometry, geometry.frame_points[5], radius_px=1.0)
    Hit(kind='FRAME', index=5, distance_px=0.0, time=6.0)
    """
    b = _bundle(space, curve_samples)
    to_px = view.to_pixels
    control = to_px(b.control)
    current = None
    t_cur = None
    if current_time is not None and len(b.frames):
        t_cur = min(max(float(current_time), b.t_range[0]), b.t_range[1])
        current = to_px(_on_curve(b, t_cur))
    cur = None if cursor is None else to_px(_pair(cursor, "cursor"))
    strk = None if stroke is None else to_px(_as_points(stroke, "stroke"))
    return CanvasGeometry(
        frame_points=to_px(b.positions), frame_colors=b.colors, sites=to_px(b.sites), pins=to_px(b.pins),
        pin_frames=b.pin_frames, curve=to_px(b.curve), control=control, control_polygon=control,
        current=current, cursor=cur, stroke=strk, curve_times=b.curve_times, frame_numbers=b.frames,
        current_time=t_cur, view=view, markers=to_px(b.markers), marker_frames=b.marker_frames)


@dataclass(frozen=True)
class _Shown:
    """A stand-in for a model whose time signal plays other frames than its frame positions: the
    positions in their order, with times spread over the time signal's frame range."""

    positions: np.ndarray
    pose: Any
    time: Any
    frames: np.ndarray
    pins: Mapping


def drawable(space: Any) -> Any:
    """What the canvas draws of ``space``: itself, or a stand-in when its time signal was edited.

    After a sketch or a re-timing the time signal has another number of frames than the model has
    frame positions; :func:`canvas_geometry` wants one time per position.  The stand-in keeps the
    positions in their order and gives them times evenly spread over the time signal's frame
    range, so they are coloured by time like the curve.  The last stand-in is reused for the same
    model (the geometry cache then stays warm).

    Parameters
    ----------
    space : PoseSpace or duck-typed
        Needs ``positions (n, 2)``, ``pose``, ``time``, ``frames (N,)``, ``pins`` and ``n``.

    Returns
    -------
    PoseSpace or stand-in
        ``space`` when N = n; else an object with the same ``positions``, ``pose``, ``time`` and
        ``pins`` and ``frames`` = n times from min to max of the time signal's frames (1 .. n
        without any).
    """
    frames = np.asarray(space.frames, dtype=float).ravel()
    if frames.size == space.n:
        return space
    last = _CACHE.get("shown")
    if last is not None and last[0] is space:
        return last[1]
    lo, hi = (float(frames.min()), float(frames.max())) if frames.size else (1.0, float(space.n))
    shown = _Shown(space.positions, space.pose, space.time, np.linspace(lo, hi, space.n), space.pins)
    _CACHE["shown"] = (space, shown)
    return shown


# --------------------------------------------------------------------------------------------------
# picking


@dataclass
class Hit:
    """What is under the mouse.

    Attributes
    ----------
    kind : str
        One of :data:`HIT_KINDS`.
    index : int
        Index into the geometry's array of that kind (for CURVE the segment
        ``curve[index] -> curve[index + 1]``); -1 for NONE.
    distance_px : float
        Distance to it in pixels (inf for NONE).
    time : float or None
        Frame time for FRAME and CURVE hits.
    """

    kind: str
    index: int
    distance_px: float
    time: float | None = None



def _nearest(P: np.ndarray, x: float, y: float) -> tuple[int, float]:
    if len(P) == 0:
        return -1, math.inf
    dx = P[:, 0] - x
    dy = P[:, 1] - y
    d2 = dx * dx + dy * dy
    i = int(np.argmin(d2))
    return i, math.sqrt(d2[i]) if d2[i] == d2[i] else math.inf


def _segments(geometry: CanvasGeometry) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Per-geometry cache for curve picking: segment starts, directions, 1/|d|^2 and the bounding box."""
    C = geometry.curve
    cached = getattr(geometry, "_segment_cache", None)
    if cached is not None and cached[0] is C:
        return cached[1]
    seg = None
    if len(C) >= 2:
        A = C[:-1]
        U = C[1:] - A
        ll = np.einsum("ij,ij->i", U, U)
        inv = np.zeros_like(ll)
        np.divide(1.0, ll, out=inv, where=ll > 0.0)
        seg = (A, U, inv, np.concatenate([C.min(axis=0), C.max(axis=0)]))
    geometry._segment_cache = (C, seg)  # type: ignore[attr-defined]
    return seg


def hit_test(geometry: CanvasGeometry, xy: Any, *, radius_px: float = 8.0, sure_px: float = 3.0,
             kinds: Sequence[str] = HIT_KINDS) -> Hit:
    """The element under a mouse position.

    A marker within ``radius_px`` wins (a spatial keyframe's marker sits on its frame's dot and is
    what an animator grabs). Then a frame within ``sure_px`` of the mouse (the nearest such frame). Otherwise the
    nearest control point or frame within ``radius_px`` wins, a frame at (nearly) equal distance
    (within ``sure_px / 3``) before a control point: on a dense space control points sit among the
    frames, and a press right on a frame's dot means that frame. Then sites, then the curve.

    Parameters
    ----------
    geometry : CanvasGeometry
    xy : (float, float)
        Mouse position in region pixels.
    radius_px : float
        Pick radius in pixels.
    sure_px : float
        A frame this close (pixels) is picked whatever else is near.
    kinds : sequence of str
        The kinds that may be picked (default all of :data:`HIT_KINDS`), e.g. only
        ``("CONTROL_POINT",)`` for a tool that edits control points.

    Returns
    -------
    Hit
        ``Hit('NONE', -1, inf)`` when nothing is within the radius.
    """
    x, y = _pair(xy, "xy")
    r = float(radius_px)
    sure = float(sure_px)
    wanted = set(kinds)
    if "MARKER" in wanted:
        im, dm = _nearest(geometry.markers, x, y)
        if dm <= r:
            return Hit("MARKER", im, dm)
    ic, dc = _nearest(geometry.control, x, y) if "CONTROL_POINT" in wanted else (-1, math.inf)
    i_f, df = _nearest(geometry.frame_points, x, y) if "FRAME" in wanted else (-1, math.inf)
    frame_hit = None
    if df <= r:
        t = float(geometry.frame_numbers[i_f]) if len(geometry.frame_numbers) > i_f else None
        frame_hit = Hit("FRAME", i_f, df, t)
    if frame_hit is not None and (df <= sure or df <= dc + sure / 3.0):
        return frame_hit
    if dc <= r:
        return Hit("CONTROL_POINT", ic, dc)
    if frame_hit is not None:
        return frame_hit
    if "SITE" not in wanted and "CURVE" not in wanted:
        return Hit("NONE", -1, math.inf)
    i, d = _nearest(geometry.sites, x, y) if "SITE" in wanted else (-1, math.inf)
    if d <= r:
        return Hit("SITE", i, d)
    if "CURVE" not in wanted:
        return Hit("NONE", -1, math.inf)
    C = geometry.curve
    ct = geometry.curve_times
    if len(C) == 1:
        d = math.hypot(C[0, 0] - x, C[0, 1] - y)
        if d <= r:
            return Hit("CURVE", 0, d, float(ct[0]) if len(ct) else None)
    seg = _segments(geometry)
    if seg is not None:
        A, U, inv, box = seg
        if box[0] - r <= x <= box[2] + r and box[1] - r <= y <= box[3] + r:
            w = np.array((x, y)) - A
            t = np.einsum("ij,ij->i", w, U) * inv
            np.clip(t, 0.0, 1.0, out=t)
            e = w - t[:, None] * U
            d2 = np.einsum("ij,ij->i", e, e)
            j = int(np.argmin(d2))
            d = math.sqrt(d2[j])
            if d <= r:
                tm = float(ct[j] + t[j] * (ct[j + 1] - ct[j])) if len(ct) == len(C) else None
                return Hit("CURVE", j, d, tm)
    return Hit("NONE", -1, math.inf)


def near_the_frames(positions: Any, point: Any, *, grow: float = 0.25) -> tuple[np.ndarray, bool]:
    """A navigation point held to the frames' neighbourhood: their bounding box grown by ``grow``
    times its size on every side.

    The pose signal interpolates between the frames; far outside them it extrapolates into
    ever more distorted poses, so the cursor stops at the edge of this box.

    Parameters
    ----------
    positions : array_like, shape (n, 2)
        The frames' pose-space positions.
    point : (float, float)
        The point asked for.
    grow : float
        Margin around the frames' bounding box, as a fraction of its larger side, >= 0.

    Returns
    -------
    point : ndarray, shape (2,)
        ``point`` clamped to the grown box.
    held : bool
        Whether it was moved (it lay outside).

    Raises
    ------
    ValueError
        On no finite positions, a non-finite point or a negative ``grow``.

    Examples
    --------
    >>> near_the_frames([[0.0, 0.0], [1.0, 1.0]], (3.0, 0.5))
    (array([1.25, 0.5 ]), True)
    """
    g = float(grow)
    if not (math.isfinite(g) and g >= 0.0):
        raise ValueError(f"grow must be a finite number >= 0, got {grow!r}")
    P = np.asarray(positions, dtype=float).reshape(-1, 2)
    P = P[np.all(np.isfinite(P), axis=1)]
    if len(P) == 0:
        raise ValueError("positions has no finite (x, y) row")
    p = np.asarray(_pair(point, "point"))
    lo, hi = P.min(axis=0), P.max(axis=0)
    margin = g * float(np.max(hi - lo))
    held = np.clip(p, lo - margin, hi + margin)
    return held, bool(np.any(held != p))


def inside(rect: Sequence[float] | None, xy: Any) -> bool:
    """Whether a pixel lies on a canvas rectangle (edges included).

    Parameters
    ----------
    rect : (float, float, float, float) or None
        The canvas (x0, y0, width, height) in region pixels; None: no canvas.
    xy : (float, float)
        A position in region pixels.

    Returns
    -------
    bool
        False without a rectangle.
    """
    if rect is None:
        return False
    x0, y0, w, h = rect
    return x0 <= xy[0] <= x0 + w and y0 <= xy[1] <= y0 + h


# --------------------------------------------------------------------------------------------------
# strokes


def stroke_to_pose(view: View, stroke_xy: Any, *, spacing_px: float = 4.0) -> np.ndarray:
    """A mouse stroke resampled at equal arc-length steps, as pose-space points.

    Repeated mouse positions are dropped; the first and last points are kept exactly.

    Parameters
    ----------
    view : View
    stroke_xy : array_like, shape (r, 2)
        Mouse positions in region pixels.
    spacing_px : float
        Step between output points, in pixels (about).

    Returns
    -------
    ndarray, shape (s, 2)
        Pose-space points; (1, 2) for a stroke of zero length, (0, 2) for an empty one.

    Raises
    ------
    ValueError
        On a non-positive spacing or NaN / infinite coordinates.
    """
    sp = float(spacing_px)
    if not (math.isfinite(sp) and sp > 0.0):
        raise ValueError(f"spacing_px must be positive, got {spacing_px!r}")
    S = np.asarray(stroke_xy, dtype=float)
    if S.size == 0:
        return np.zeros((0, 2))
    S = S.reshape(-1, 2)
    if not np.all(np.isfinite(S)):
        raise ValueError("stroke contains NaN or infinite coordinates")
    seg = np.hypot(*np.diff(S, axis=0).T)
    keep = np.concatenate([[True], seg > 0.0])
    S, seg = S[keep], seg[seg > 0.0]
    if len(S) == 1:
        return view.to_pose(S)
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    total = float(arc[-1])
    count = max(int(round(total / sp)), 1) + 1
    u = np.linspace(0.0, total, count)
    out = np.column_stack([np.interp(u, arc, S[:, 0]), np.interp(u, arc, S[:, 1])])
    out[0], out[-1] = S[0], S[-1]
    return view.to_pose(out)


# --------------------------------------------------------------------------------------------------
# rendering (raster images: x right, y DOWN, row 0 at the top)
