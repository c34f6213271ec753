"""The pose-space canvas rendered without a GPU: a :class:`~.canvas.CanvasGeometry` into an RGBA
image or a PNG file, with :mod:`anim_signals.imaging.raster` (tests, headless previews, the CLI,
documentation figures). The same layers as the sidebar's gpu drawing.

Raster images have x to the right, y **down** and row 0 at the top; :func:`render_rgba` flips the
geometry's region pixels (y up) into them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..imaging import raster
from . import palette as pal
from .shapes import MARKER_HALF, controls_hide_frames, dash_mask

if TYPE_CHECKING:
    from .canvas import CanvasGeometry

__all__ = ["render_png", "render_rgba"]


def _clip_segments(A: np.ndarray, B: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """Liang-Barsky on all segments at once: (t0, t1, visible) with A + t (B - A) inside [lo, hi]."""
    d = B - A
    t0 = np.zeros(len(A))
    t1 = np.ones(len(A))
    ok = np.all(np.isfinite(A), axis=1) & np.all(np.isfinite(B), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for ax in range(2):
            for p, q in ((-d[:, ax], A[:, ax] - lo[ax]), (d[:, ax], hi[ax] - A[:, ax])):
                par = p == 0.0
                ok &= ~(par & (q < 0.0))
                r = q / np.where(par, 1.0, p)
                t0 = np.where(~par & (p < 0.0), np.maximum(t0, r), t0)
                t1 = np.where(~par & (p > 0.0), np.minimum(t1, r), t1)
    ok &= t0 <= t1
    return t0, t1, ok


def _polyline(img: np.ndarray, P: np.ndarray, color: Sequence[float], width: int = 1,
              dash: tuple[float, float] | None = None) -> None:
    """An open polyline through image points P (m, 2) (x right, y down), vectorised over segments.

    ``dash = (on, off)`` in pixels of arc length along the polyline.
    """
    if len(P) < 2:
        return
    h, w = img.shape[:2]
    A, B = P[:-1], P[1:]
    t0, t1, ok = _clip_segments(A, B, np.array([-2.0, -2.0]), np.array([w + 1.0, h + 1.0]))
    if not ok.any():
        return
    seg_len = np.hypot(*(B - A).T)
    seg_len = np.where(np.isfinite(seg_len), seg_len, 0.0)
    arc0 = np.concatenate([[0.0], np.cumsum(seg_len)[:-1]])
    A, B, t0, t1, seg_len, arc0 = A[ok], B[ok], t0[ok], t1[ok], seg_len[ok], arc0[ok]
    d = B - A
    ca, cb = A + t0[:, None] * d, A + t1[:, None] * d
    steps = np.ceil(np.max(np.abs(cb - ca), axis=1)).astype(int) + 1
    seg = np.repeat(np.arange(len(ca)), steps)
    start = np.concatenate([[0], np.cumsum(steps)[:-1]])
    k = np.arange(int(steps.sum())) - np.repeat(start, steps)
    tt = k / np.maximum(steps - 1, 1)[seg]
    xs = ca[seg, 0] + tt * (cb - ca)[seg, 0]
    ys = ca[seg, 1] + tt * (cb - ca)[seg, 1]
    if dash is not None:
        on, off = dash
        s = arc0[seg] + (t0[seg] + tt * (t1 - t0)[seg]) * seg_len[seg]
        keep = dash_mask(s, on, off)
        xs, ys = xs[keep], ys[keep]
    # round half up (with a little slack): a line along a pixel boundary stays on one row, not alternating
    xi = np.floor(xs + (0.5 + 1e-7)).astype(int)
    yi = np.floor(ys + (0.5 + 1e-7)).astype(int)
    width = max(int(width), 1)
    if width > 1:
        lo_ = (width - 1) // 2
        off_ = np.arange(-lo_, width - lo_)
        xi = (xi[:, None, None] + off_[None, :, None] + 0 * off_[None, None, :]).ravel()
        yi = (yi[:, None, None] + 0 * off_[None, :, None] + off_[None, None, :]).ravel()
    inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
    pix = np.unique(yi[inside] * w + xi[inside])
    if len(pix):
        raster.blend_pixels(img, pix // w, pix % w, color)


def _crosshair(img: np.ndarray, x: float, y: float, color: Sequence[float], arm: float = 9.0,
               gap: float = 3.0) -> None:
    for sx, sy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        raster.draw_line(img, x + sx * gap, y + sy * gap, x + sx * arm, y + sy * arm, pal.OUTLINE, 3)
    for sx, sy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        raster.draw_line(img, x + sx * gap, y + sy * gap, x + sx * arm, y + sy * arm, color, 1)


def _fill_diamond(img: np.ndarray, cx: float, cy: float, half: float, color: Sequence[float]) -> None:
    """A filled diamond (a square turned 45 degrees) of half diagonal ``half``, row by row."""
    h = int(round(half))
    x, y = int(round(cx)), int(round(cy))
    for dy in range(-h, h + 1):
        w = h - abs(dy)
        raster.fill_rect(img, x - w, y + dy, x + w + 1, y + dy + 1, color)


def _nice_step(span: float, target: float) -> float:
    raw = span / max(target, 1.0)
    if not (raw > 0.0 and math.isfinite(raw)):
        return 1.0
    mag = 10.0 ** math.floor(math.log10(raw))
    for f in (1.0, 2.0, 5.0, 10.0):
        if f * mag >= raw:
            return f * mag
    return 10.0 * mag


def _fmt_frame(t: float) -> str:
    return str(int(round(t))) if abs(t - round(t)) < 1e-6 else f"{t:.1f}"


def render_rgba(geometry: CanvasGeometry, width: int | None = None, height: int | None = None, *,
                title: str = "Pose space", legend: bool = True, grid: bool = True) -> np.ndarray:
    """Draw ``geometry`` into an RGBA image (row 0 at the top).

    The image covers the region pixels ``[x0, x0 + W) x [y0, y0 + H)`` with (x0, y0) the geometry's
    view origin (0, 0 without a view).  Layers, back to front: pose-space grid and axes, dashed
    control polygon, the time-signal curve, frame points coloured by time, RBF sites (squares), pins
    (rings), control-point handles, spatial keyframes' markers (diamonds), the stroke, the current frame and the cursor (crosshairs), the
    title and a legend (time ramp with first/last frame, k / l / n).

    Parameters
    ----------
    geometry : CanvasGeometry
    width, height : int, optional
        Image size in pixels (default: the view's).
    title : str
    legend, grid : bool
        Draw the legend / the pose-space grid.

    Returns
    -------
    ndarray of float32, shape (H, W, 4)

    Raises
    ------
    ValueError
        Without width and height for a geometry that has no view.
    """
    view = geometry.view
    if width is None or height is None:
        if view is None:
            raise ValueError("width and height are needed for a geometry without a view")
        width = view.width if width is None else width
        height = view.height if height is None else height
    W, H = int(width), int(height)
    img = raster.new_canvas(H, W, pal.BACKGROUND)
    x0, y0 = view.origin if view is not None else (0.0, 0.0)

    def im(P: np.ndarray) -> np.ndarray:
        # region (x right, y up; pixel i covers [i, i+1)) -> image (col, row) with pixel centres at integers
        Q = np.asarray(P, dtype=float)
        out = np.empty(Q.shape)
        out[..., 0] = Q[..., 0] - x0 - 0.5
        out[..., 1] = (H - 0.5) - (Q[..., 1] - y0)
        return out

    if grid and view is not None:
        xmin, ymin, xmax, ymax = view.to_pose((x0, y0)).tolist() + view.to_pose((x0 + W, y0 + H)).tolist()
        step = _nice_step(max(xmax - xmin, ymax - ymin), 8.0)
        for ax, (a, b) in enumerate(((xmin, xmax), (ymin, ymax))):
            vals = np.arange(math.ceil(a / step), math.floor(b / step) + 1) * step
            for v in vals:
                p = np.zeros((2, 2))
                p[:, ax] = v
                p[:, 1 - ax] = (ymin, ymax) if ax == 0 else (xmin, xmax)
                q = im(view.to_pixels(p))
                colour = pal.AXIS if abs(v) < 0.5 * step else pal.GRID
                _polyline(img, q, colour)

    if len(geometry.control_polygon) >= 2:
        _polyline(img, im(geometry.control_polygon), pal.POLYGON, 1, dash=(5.0, 4.0))
    if len(geometry.curve) >= 2:
        _polyline(img, im(geometry.curve), pal.CURVE, 2)
    hollow = controls_hide_frames(geometry)
    if hollow:  # dense controls: hollow squares behind the dots (as the sidebar draws them)
        for cx, cy in im(geometry.control):
            raster.draw_rect(img, cx - 5, cy - 5, cx + 6, cy + 6, pal.HANDLE)
    for (cx, cy), col in zip(im(geometry.frame_points), geometry.frame_colors):
        raster.fill_circle(img, cx, cy, 4.0, pal.OUTLINE)
        raster.fill_circle(img, cx, cy, 3.0, col)
    for cx, cy in im(geometry.sites):
        raster.draw_rect(img, cx - 3, cy - 3, cx + 4, cy + 4, pal.SITE)
    for cx, cy in im(geometry.pins):
        raster.fill_circle(img, cx, cy, 7.5, pal.PIN, inner=5.5)
    for cx, cy in ([] if hollow else im(geometry.control)):
        raster.fill_rect(img, cx - 3, cy - 3, cx + 4, cy + 4, pal.OUTLINE)
        raster.fill_rect(img, cx - 2, cy - 2, cx + 3, cy + 3, pal.HANDLE)
    for cx, cy in im(geometry.markers):
        _fill_diamond(img, cx, cy, MARKER_HALF, pal.OUTLINE)
        _fill_diamond(img, cx, cy, MARKER_HALF - 1.5, pal.MARKER)
    if geometry.stroke is not None and len(geometry.stroke):
        S = im(geometry.stroke)
        if len(S) >= 2:
            _polyline(img, S, pal.STROKE, 2)
        else:
            raster.fill_circle(img, S[0, 0], S[0, 1], 1.5, pal.STROKE)
    if geometry.current is not None:
        cx, cy = im(geometry.current)
        raster.fill_circle(img, cx, cy, 6.0, pal.CURRENT, inner=4.5)
        _crosshair(img, cx, cy, pal.CURRENT, arm=12.0, gap=6.0)
    if geometry.cursor is not None:
        cx, cy = im(geometry.cursor)
        _crosshair(img, cx, cy, pal.CURSOR)

    if title:
        raster.draw_text(img, 6, 5, title, pal.TEXT)
    if legend:
        _legend(img, geometry)
    return img


def _legend(img: np.ndarray, geometry: CanvasGeometry) -> None:
    H, W = img.shape[:2]
    fh = raster.FONT_H
    y = H - fh - 5
    x = 6
    fn = geometry.frame_numbers
    if len(fn):
        first, last = _fmt_frame(float(np.min(fn))), _fmt_frame(float(np.max(fn)))
        tw, _ = raster.draw_text(img, x, y, first, pal.DIM_TEXT)
        x += tw + 4
        bar = min(80, max(W // 5, 20))
        cols = pal.time_colors(np.arange(bar))
        raster.fill_rect(img, x - 1, y, x + bar + 1, y + fh - 1, pal.OUTLINE)
        xs = np.arange(bar) + int(x)
        ok = (xs >= 0) & (xs < W)
        for r in range(max(int(y) + 1, 0), min(int(y) + fh - 2, H)):
            img[r, xs[ok]] = cols[ok].astype(np.float32)
        x += bar + 4
        tw, _ = raster.draw_text(img, x, y, last, pal.DIM_TEXT)
        x += tw + 10
    if len(geometry.markers):
        info = f"n {len(geometry.frame_points)}  markers {len(geometry.markers)}"
    else:
        info = f"n {len(geometry.frame_points)}  k {len(geometry.control)}  l {len(geometry.sites)}"
    if len(geometry.pins):
        info += f"  pins {len(geometry.pins)}"
    if geometry.current_time is not None:
        info += f"  frame {_fmt_frame(geometry.current_time)}"
    raster.draw_text(img, x, y, info, pal.DIM_TEXT)


def render_png(geometry: CanvasGeometry, path: str | os.PathLike, *, width: int | None = None,
               height: int | None = None, **kwargs: Any) -> str:
    """:func:`render_rgba` written to ``path`` as a PNG.

    Parameters
    ----------
    geometry : CanvasGeometry
    path : str or os.PathLike
    width, height : int, optional
    **kwargs
        ``title``, ``legend``, ``grid`` of :func:`render_rgba`.

    Returns
    -------
    str
        The absolute path written.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from anim_signals.posespace import build_pose_space, canvas_geometry, fit_space_view
    >>> t = np.linspace(0.0, 2 * np.pi, 12, endpoint=False)
    >>> space = build_pose_space(np.column_stack([np.cos(t), np.sin(t), np.cos(2 * t)]), row_size=1)
    >>> geometry = canvas_geometry(space, fit_space_view(space, 320, 240))
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = render_png(geometry, os.path.join(folder, "space.png"))
    ...     with open(path, "rb") as f:
    ...         f.read(4)[1:]
    b'PNG'
    """
    return raster.write_png(path, render_rgba(geometry, width, height, **kwargs))
