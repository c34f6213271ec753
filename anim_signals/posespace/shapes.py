"""The canvas's marks as triangles and line pairs, ready for a GPU: discs, rings, squares,
crosshairs, polylines and dashed polylines, and :func:`canvas_marks`, every draw call of a
:class:`~.canvas.CanvasGeometry` in order.

Pure numpy, in whatever 2D units the points are given (the canvas uses region pixels, x right,
y up). Triangles come as consecutive vertex triples (a ``TRIS`` batch), lines as consecutive vertex
pairs (a ``LINES`` batch). The dash pattern (:func:`dash_mask`) is the one the PNG rendering uses,
so a dashed line looks the same on screen and in a picture.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .palette import (
    AXIS,
    BACKGROUND,
    CURRENT,
    CURSOR,
    CURVE,
    HANDLE,
    MARKER,
    OUTLINE,
    PIN,
    POLYGON,
    SITE,
    STROKE,
)

if TYPE_CHECKING:
    from .canvas import CanvasGeometry

__all__ = [
    "FRAME_DISC_SEGMENTS",
    "Mark",
    "canvas_marks",
    "controls_hide_frames",
    "crosshair_lines",
    "dash_mask",
    "dashed_segments",
    "disc_tris",
    "polyline_segments",
    "rect_tris",
    "ring_tris",
    "square_lines",
    "square_tris",
]

FRAME_DISC_SEGMENTS = 12  # triangles per frame dot


def dash_mask(arc: ArrayLike, dash: float, gap: float) -> np.ndarray:
    """Which arc lengths along a dashed line are drawn: dashes of ``dash``, then gaps of ``gap``.

    Parameters
    ----------
    arc : array_like, shape (s,)
        Arc lengths from the line's start.
    dash, gap : float
        Dash and gap lengths, in the units of ``arc``.

    Returns
    -------
    ndarray of bool, shape (s,)
        ``arc mod (dash + gap) < dash``.

    Examples
    --------
    >>> dash_mask([0.0, 4.9, 5.0, 8.9, 9.0], 5.0, 4.0)
    array([ True,  True, False, False,  True])
    """
    return np.mod(arc, dash + gap) < dash


def _circle(segments: int) -> np.ndarray:
    """``segments + 1`` points around the unit circle, the first repeated at the end: (segments + 1, 2)."""
    a = np.linspace(0.0, 2.0 * math.pi, segments + 1)
    return np.column_stack([np.cos(a), np.sin(a)])


def _around(centers: ArrayLike, offsets: np.ndarray) -> np.ndarray:
    """``offsets`` (..., 2) added to every centre (n, 2): (n * k, 2), centre after centre."""
    C = np.asarray(centers, dtype=float).reshape(-1, 2)
    return (C[:, None, :] + offsets.reshape(-1, 2)[None]).reshape(-1, 2)


def disc_tris(centers: ArrayLike, radius: float, segments: int = 12) -> np.ndarray:
    """Filled circles as triangle fans.

    Parameters
    ----------
    centers : array_like, shape (n, 2)
    radius : float
    segments : int
        Triangles per disc.

    Returns
    -------
    ndarray, shape (n * segments * 3, 2)
        Per triangle: the centre, then two consecutive points on the circle.

    Examples
    --------
    >>> tris = disc_tris([[10.0, 20.0]], 2.0, segments=4)
    >>> tris.shape, tris[:3].round(12).tolist()
    ((12, 2), [[10.0, 20.0], [12.0, 20.0], [10.0, 22.0]])
    """
    ring = _circle(segments) * radius
    return _around(centers, np.stack([np.zeros((segments, 2)), ring[:-1], ring[1:]], axis=1))


def ring_tris(centers: ArrayLike, r_out: float, r_in: float, segments: int = 16) -> np.ndarray:
    """Annuli between radii ``r_in`` and ``r_out`` as triangles (two per segment).

    Parameters
    ----------
    centers : array_like, shape (n, 2)
    r_out, r_in : float
        Outer and inner radius.
    segments : int
        Quads per ring.

    Returns
    -------
    ndarray, shape (n * segments * 6, 2)
    """
    u = _circle(segments)
    o, i = u * r_out, u * r_in
    return _around(centers, np.stack([o[:-1], o[1:], i[1:], o[:-1], i[1:], i[:-1]], axis=1))


def square_tris(centers: ArrayLike, half: float) -> np.ndarray:
    """Filled axis-aligned squares of half-side ``half`` around ``centers`` (n, 2), as triangles.

    Returns
    -------
    ndarray, shape (n * 6, 2)
        Two triangles per square.
    """
    h = float(half)
    return _around(centers, np.array([(-h, -h), (h, -h), (h, h), (-h, -h), (h, h), (-h, h)]))


def square_lines(centers: ArrayLike, half: float) -> np.ndarray:
    """The outlines of :func:`square_tris`' squares as line pairs: (n * 8, 2), four edges each,
    counter-clockwise from the bottom edge."""
    h = float(half)
    return _around(centers, np.array([(-h, -h), (h, -h), (h, -h), (h, h), (h, h), (-h, h), (-h, h), (-h, -h)]))


def crosshair_lines(center: ArrayLike, arm: float, gap: float) -> np.ndarray:
    """A crosshair: four arms from ``gap`` to ``arm`` away from the centre, as line pairs.

    Parameters
    ----------
    center : array_like, shape (2,)
    arm, gap : float
        Outer and inner end of each arm, from the centre.

    Returns
    -------
    ndarray, shape (8, 2)
        Left, right, down and up arm.

    Examples
    --------
    >>> crosshair_lines([0.0, 0.0], 9.0, 3.0)[:4].tolist()
    [[-9.0, 0.0], [-3.0, 0.0], [3.0, 0.0], [9.0, 0.0]]
    """
    c = np.asarray(center, dtype=float).reshape(2)
    x, y = float(c[0]), float(c[1])
    return np.array([(x - arm, y), (x - gap, y), (x + gap, y), (x + arm, y),
                     (x, y - arm), (x, y - gap), (x, y + gap), (x, y + arm)])


def polyline_segments(P: ArrayLike) -> np.ndarray:
    """An open polyline as line pairs.

    Parameters
    ----------
    P : array_like, shape (s, 2)

    Returns
    -------
    ndarray, shape (2 (s - 1), 2)
        Empty (0, 2) for fewer than 2 points.
    """
    Q = np.asarray(P, dtype=float).reshape(-1, 2)
    if len(Q) < 2:
        return np.zeros((0, 2))
    return np.stack([Q[:-1], Q[1:]], axis=1).reshape(-1, 2)


def dashed_segments(P: ArrayLike, dash: float = 5.0, gap: float = 4.0) -> np.ndarray:
    """An open polyline dashed along its arc length, as line pairs.

    The pattern (:func:`dash_mask`) runs on across the polyline's corners: a dash that reaches a
    corner continues after it (as two line pairs).

    Parameters
    ----------
    P : array_like, shape (s, 2)
    dash, gap : float
        Dash and gap lengths in the units of ``P``; ``dash`` positive, ``gap`` not negative.

    Returns
    -------
    ndarray, shape (2 q, 2)
        The q drawn pieces; (0, 2) for fewer than 2 points or a polyline of zero length.

    Raises
    ------
    ValueError
        On a dash that is not positive or a negative gap.

    Examples
    --------
    >>> dashed_segments([[0.0, 0.0], [20.0, 0.0]], 5.0, 4.0).tolist()
    [[0.0, 0.0], [5.0, 0.0], [9.0, 0.0], [14.0, 0.0], [18.0, 0.0], [20.0, 0.0]]
    >>> dashed_segments([[0.0, 0.0], [3.0, 0.0], [3.0, 6.0]], 5.0, 4.0).tolist()  # round the corner
    [[0.0, 0.0], [3.0, 0.0], [3.0, 0.0], [3.0, 2.0]]
    """
    if not (dash > 0.0 and gap >= 0.0):
        raise ValueError(f"dashes need a positive dash and a gap >= 0, got {dash!r} and {gap!r}")
    Q = np.asarray(P, dtype=float).reshape(-1, 2)
    if len(Q) < 2:
        return np.zeros((0, 2))
    arc = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(Q, axis=0).T))])
    total = float(arc[-1])
    if not total > 0.0:
        return np.zeros((0, 2))
    starts = np.arange(0.0, total, dash + gap)
    marks = np.unique(np.concatenate([starts, np.minimum(starts + dash, total), arc]))
    a, b = marks[:-1], marks[1:]
    keep = dash_mask(0.5 * (a + b), dash, gap)
    ends = np.stack([a[keep], b[keep]], axis=1).reshape(-1)
    return np.column_stack([np.interp(ends, arc, Q[:, 0]), np.interp(ends, arc, Q[:, 1])])


def rect_tris(rect: Sequence[float]) -> np.ndarray:
    """A filled rectangle (x0, y0, width, height) as two triangles.

    Parameters
    ----------
    rect : (float, float, float, float)
        Corner (x0, y0) and size.

    Returns
    -------
    ndarray, shape (6, 2)
    """
    x0, y0, w, h = rect
    return np.array([(x0, y0), (x0 + w, y0), (x0 + w, y0 + h), (x0, y0), (x0 + w, y0 + h), (x0, y0 + h)])


@dataclass(frozen=True)
class Mark:
    """One draw call of the canvas.

    Attributes
    ----------
    primitive : str
        ``'TRIS'`` (vertex triples) or ``'LINES'`` (vertex pairs).
    vertices : ndarray, shape (k, 2)
        Region pixels.
    color : (float, float, float, float) or None
        One RGBA colour for every vertex, or None when ``colors`` gives them.
    colors : ndarray, shape (k, 4), or None
        A colour per vertex.
    width : float
        Line width in pixels (``LINES``).
    """

    primitive: str
    vertices: np.ndarray
    color: tuple[float, float, float, float] | None = None
    colors: np.ndarray | None = None
    width: float = 1.0


CONTROL_HALF = 3.5  # half the side of a control point's square, in pixels at UI scale 1
FRAME_RADIUS = 4.0  # a frame dot's radius with its outline, in pixels at UI scale 1
HOLLOW_HALF = FRAME_RADIUS + 1.5  # a hollow control square frames the dot it sits on
MARKER_HALF = 7.0  # half the diagonal of a marker's diamond with its outline: it frames its frame's dot


def controls_hide_frames(geometry: CanvasGeometry, ui_scale: float = 1.0) -> bool:
    """Whether the control points' filled squares would cover most frame dots.

    A dense time signal (an interpolating build: about one control point per frame or two) puts a
    square on nearly every frame dot, so the frames an animator pins and reads the motion from
    vanish (233 of 240 on the demo biped). The canvas then draws control points as hollow squares
    a little larger than a dot, behind the dots, so a dot under a control point shows framed by it (:func:`canvas_marks`, and ``render.render_rgba`` alike).

    Parameters
    ----------
    geometry : CanvasGeometry
        What is drawn, in region pixels (``frame_points`` (n, 2) and ``control`` (k, 2)).
    ui_scale : float
        The interface scale (sizes follow it).

    Returns
    -------
    bool
        True when more than half of the frame dots touch a control point's square.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> dots = np.array([[0.0, 0.0], [20.0, 0.0], [40.0, 0.0]])
    >>> controls_hide_frames(SimpleNamespace(frame_points=dots, control=dots + 1.0))
    True
    >>> controls_hide_frames(SimpleNamespace(frame_points=dots, control=np.array([[10.0, 30.0]])))
    False
    """
    dots = np.asarray(geometry.frame_points, dtype=float).reshape(-1, 2)
    controls = np.asarray(geometry.control, dtype=float).reshape(-1, 2)
    if not len(dots) or not len(controls):
        return False
    s = max(ui_scale, 0.5)
    # Chebyshev distance: a square of half side h touches a disc of radius r when |dx|, |dy| < h + r
    reach = (CONTROL_HALF + FRAME_RADIUS) * s
    covered = np.zeros(len(dots), dtype=bool)
    for start in range(0, len(dots), 4096):  # bounded memory on long clips
        block = dots[start:start + 4096]
        gap = np.abs(block[:, None, :] - controls[None, :, :]).max(axis=2)
        covered[start:start + 4096] = (gap < reach).any(axis=1)
    return bool(covered.mean() > 0.5)


def canvas_marks(geometry: CanvasGeometry, rect: Sequence[float], ui_scale: float = 1.0) -> list[Mark]:
    """Every draw call of a canvas, back to front: the same layers as :func:`~.render.render_rgba`.

    Background, the axes through the pose-space origin, the dashed control polygon, the time
    signal's curve, frame dots (outlined, coloured by time), sites (squares), pins (rings),
    control points (outlined squares; hollow and behind the dots when they would hide most of them,
    :func:`controls_hide_frames`), spatial keyframes' markers (outlined diamonds), the stroke, the
    current frame (ring and crosshair) and the cursor (crosshair).

    Parameters
    ----------
    geometry : CanvasGeometry
        What to draw, in region pixels.
    rect : (float, float, float, float)
        The canvas (x0, y0, width, height) in region pixels.
    ui_scale : float
        The interface scale; sizes and line widths follow it (at least 0.5).

    Returns
    -------
    list of Mark
        Only marks with something to draw.

    Examples
    --------
    >>> import numpy as np
    >>> from anim_signals.posespace import build_pose_space, canvas_geometry, fit_space_view
    >>> t = np.linspace(0.0, 2 * np.pi, 12, endpoint=False)
    >>> space = build_pose_space(np.column_stack([np.cos(t), np.sin(t), np.cos(2 * t)]), row_size=1)
    >>> marks = canvas_marks(canvas_geometry(space, fit_space_view(space, 320, 240)), (0, 0, 320, 240))
    >>> [m.primitive for m in marks][:4], marks[0].vertices.shape
    (['TRIS', 'LINES', 'LINES', 'LINES'], (6, 2))
    """
    x0, y0, w, h = rect
    s = max(ui_scale, 0.5)
    marks = [Mark("TRIS", rect_tris(rect), BACKGROUND)]
    view = geometry.view
    if view is not None:
        o = view.to_pixels(np.zeros(2))
        marks.append(Mark("LINES", np.array([(x0, o[1]), (x0 + w, o[1]), (o[0], y0), (o[0], y0 + h)]), AXIS))
    if len(geometry.control_polygon) >= 2:
        marks.append(Mark("LINES", dashed_segments(geometry.control_polygon, 5.0 * s, 4.0 * s), POLYGON))
    marks.append(Mark("LINES", polyline_segments(geometry.curve), CURVE, width=2.0 * s))
    hollow = controls_hide_frames(geometry, s)
    if hollow:  # dense controls: hollow squares behind the dots, so the frames stay visible
        marks.append(Mark("LINES", square_lines(geometry.control, HOLLOW_HALF * s), HANDLE))
    if len(geometry.frame_points):
        marks.append(Mark("TRIS", disc_tris(geometry.frame_points, 4.0 * s), OUTLINE))
        colors = np.repeat(np.asarray(geometry.frame_colors, dtype=float), FRAME_DISC_SEGMENTS * 3, axis=0)
        marks.append(Mark("TRIS", disc_tris(geometry.frame_points, 3.0 * s, FRAME_DISC_SEGMENTS), colors=colors))
    marks.append(Mark("LINES", square_lines(geometry.sites, 3.5 * s), SITE))
    marks.append(Mark("TRIS", ring_tris(geometry.pins, 7.5 * s, 5.5 * s), PIN))
    if not hollow:
        marks.append(Mark("TRIS", square_tris(geometry.control, CONTROL_HALF * s), OUTLINE))
        marks.append(Mark("TRIS", square_tris(geometry.control, (CONTROL_HALF - 1.0) * s), HANDLE))
    if len(geometry.markers):  # a diamond is a four-segment disc
        marks.append(Mark("TRIS", disc_tris(geometry.markers, MARKER_HALF * s, 4), OUTLINE))
        marks.append(Mark("TRIS", disc_tris(geometry.markers, (MARKER_HALF - 1.5) * s, 4), MARKER))
    if geometry.stroke is not None and len(geometry.stroke):
        marks.append(Mark("LINES", polyline_segments(geometry.stroke), STROKE, width=2.0 * s))
    if geometry.current is not None:
        marks.append(Mark("TRIS", ring_tris(geometry.current, 6.0 * s, 4.5 * s), CURRENT))
        marks.append(Mark("LINES", crosshair_lines(geometry.current, 12.0 * s, 6.0 * s), CURRENT))
    if geometry.cursor is not None:
        marks.append(Mark("LINES", crosshair_lines(geometry.cursor, 9.0 * s, 3.0 * s), CURSOR, width=1.5 * s))
    least = {"TRIS": 3, "LINES": 2}
    return [m for m in marks if len(m.vertices) >= least[m.primitive]]
