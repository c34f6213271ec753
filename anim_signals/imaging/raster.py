"""Small raster canvas (numpy RGBA) with lines, rectangles, text, a dendrogram, and a PNG writer.

Blender ships neither PIL nor matplotlib, so images are drawn here into ``(H, W, 4)`` float32 RGBA
arrays in [0, 1] with row 0 at the top (as an image file; Blender's ``Image.pixels`` start at the
bottom row: :func:`to_blender_pixels`), written by :func:`write_png` (zlib + struct, 8-bit RGBA).
Text uses an embedded 5x7 ASCII bitmap font (plus a descender row) (characters outside printable ASCII draw as ``?``).

numpy and zlib only at import; :func:`dendrogram_image` imports scipy for the dendrogram layout.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Sequence

import numpy as np

__all__ = ["BLACK", "FONT_H", "FONT_W", "GREY", "HIGHLIGHT", "LIGHT", "PALETTE", "WHITE", "blend_pixels", "dendrogram_image",
           "draw_line", "draw_rect", "draw_text", "encode_png", "fill_circle", "fill_rect", "glyph", "new_canvas",
           "text_size", "to_blender_pixels", "write_png"]

Color = Sequence[float]

WHITE = (1.0, 1.0, 1.0, 1.0)
BLACK = (0.0, 0.0, 0.0, 1.0)
GREY = (0.55, 0.55, 0.55, 1.0)
LIGHT = (0.88, 0.88, 0.88, 1.0)
HIGHLIGHT = (1.0, 0.9, 0.35, 1.0)
# matplotlib's tab10, then a few more: cluster colours
PALETTE: tuple[tuple[float, float, float, float], ...] = tuple(
    (int(h[0:2], 16) / 255, int(h[2:4], 16) / 255, int(h[4:6], 16) / 255, 1.0)
    for h in ("1f77b4", "ff7f0e", "2ca02c", "d62728", "9467bd", "8c564b", "e377c2", "7f7f7f", "bcbd22",
              "17becf", "393b79", "ad494a", "637939", "8c6d31", "7b4173", "3182bd"))

# --------------------------------------------------------------------------------------------------
# 5x7 bitmap font (HD44780 style): 7 rows per glyph, an 8th for the descenders of g j p q y;
# 5 bits per row (bit 4 = leftmost column), ASCII 32..126

FONT_W, FONT_H = 5, 8
_GLYPHS = (
    "00 00 00 00 00 00 00|04 04 04 04 00 00 04|0A 0A 0A 00 00 00 00|0A 0A 1F 0A 1F 0A 0A|"  # ' ' ! " #
    "04 0F 14 0E 05 1E 04|18 19 02 04 08 13 03|0C 12 14 08 15 12 0D|0C 04 08 00 00 00 00|"  # $ % & '
    "02 04 08 08 08 04 02|08 04 02 02 02 04 08|00 04 15 0E 15 04 00|00 04 04 1F 04 04 00|"  # ( ) * +
    "00 00 00 00 0C 04 08|00 00 00 1F 00 00 00|00 00 00 00 00 0C 0C|00 01 02 04 08 10 00|"  # , - . /
    "0E 11 13 15 19 11 0E|04 0C 04 04 04 04 0E|0E 11 01 02 04 08 1F|1F 02 04 02 01 11 0E|"  # 0 1 2 3
    "02 06 0A 12 1F 02 02|1F 10 1E 01 01 11 0E|06 08 10 1E 11 11 0E|1F 01 02 04 08 08 08|"  # 4 5 6 7
    "0E 11 11 0E 11 11 0E|0E 11 11 0F 01 02 0C|00 0C 0C 00 0C 0C 00|00 0C 0C 00 0C 04 08|"  # 8 9 : ;
    "02 04 08 10 08 04 02|00 00 1F 00 1F 00 00|08 04 02 01 02 04 08|0E 11 01 02 04 00 04|"  # < = > ?
    "0E 11 01 0D 15 15 0E|0E 11 11 11 1F 11 11|1E 11 11 1E 11 11 1E|0E 11 10 10 10 11 0E|"  # @ A B C
    "1C 12 11 11 11 12 1C|1F 10 10 1E 10 10 1F|1F 10 10 1E 10 10 10|0E 11 10 17 11 11 0F|"  # D E F G
    "11 11 11 1F 11 11 11|0E 04 04 04 04 04 0E|07 02 02 02 02 12 0C|11 12 14 18 14 12 11|"  # H I J K
    "10 10 10 10 10 10 1F|11 1B 15 15 11 11 11|11 11 19 15 13 11 11|0E 11 11 11 11 11 0E|"  # L M N O
    "1E 11 11 1E 10 10 10|0E 11 11 11 15 12 0D|1E 11 11 1E 14 12 11|0F 10 10 0E 01 01 1E|"  # P Q R S
    "1F 04 04 04 04 04 04|11 11 11 11 11 11 0E|11 11 11 11 11 0A 04|11 11 11 15 15 15 0A|"  # T U V W
    "11 11 0A 04 0A 11 11|11 11 11 0A 04 04 04|1F 01 02 04 08 10 1F|0E 08 08 08 08 08 0E|"  # X Y Z [
    "00 10 08 04 02 01 00|0E 02 02 02 02 02 0E|04 0A 11 00 00 00 00|00 00 00 00 00 00 1F|"  # \ ] ^ _
    "08 04 02 00 00 00 00|00 00 0E 01 0F 11 0F|10 10 16 19 11 11 1E|00 00 0E 10 10 11 0E|"  # ` a b c
    "01 01 0D 13 11 11 0F|00 00 0E 11 1F 10 0E|06 09 08 1C 08 08 08|00 00 0F 11 11 0F 01 0E|"  # d e f g
    "10 10 16 19 11 11 11|04 00 0C 04 04 04 0E|02 00 06 02 02 02 12 0C|10 10 12 14 18 14 12|"  # h i j k
    "0C 04 04 04 04 04 0E|00 00 1A 15 15 11 11|00 00 16 19 11 11 11|00 00 0E 11 11 11 0E|"  # l m n o
    "00 00 1E 11 11 1E 10 10|00 00 0F 11 11 0F 01 01|00 00 16 19 10 10 10|00 00 0E 10 0E 01 1E|"  # p q r s
    "08 08 1C 08 08 09 06|00 00 11 11 11 13 0D|00 00 11 11 11 0A 04|00 00 11 11 15 15 0A|"  # t u v w
    "00 00 11 0A 04 0A 11|00 00 11 11 11 0F 01 0E|00 00 1F 02 04 08 1F|02 04 04 08 04 04 02|"  # x y z {
    "04 04 04 04 04 04 04|08 04 04 02 04 04 08|00 00 08 15 02 00 00"  # | } ~
)


def _build_font() -> np.ndarray:
    glyphs = _GLYPHS.split("|")
    font = np.zeros((len(glyphs), FONT_H, FONT_W), dtype=bool)  # rows beyond a glyph's list stay 0
    for g, rows in enumerate(glyphs):
        for r, byte in enumerate(rows.split()):
            v = int(byte, 16)
            for c in range(FONT_W):
                font[g, r, c] = bool(v >> (FONT_W - 1 - c) & 1)
    return font


_FONT = _build_font()  # (95, 8, 5): glyph of chr(32 + i)


def glyph(ch: str) -> np.ndarray:
    """The bitmap of a character.

    Parameters
    ----------
    ch : str
        One character (``?`` is drawn for anything outside printable ASCII).

    Returns
    -------
    ndarray of bool, shape (FONT_H, FONT_W)
        Row 7 holds the descenders.
    """
    code = ord(ch)
    if not 32 <= code <= 126:
        code = ord("?")
    return _FONT[code - 32]


# --------------------------------------------------------------------------------------------------
# canvas primitives (all in place on an (H, W, 4) float array; coordinates x right, y down, pixels)


def new_canvas(height: int, width: int, color: Color = WHITE) -> np.ndarray:
    """A new image filled with one colour.

    Parameters
    ----------
    height, width : int
        Size in pixels, positive.
    color : sequence of float
        RGB or RGBA in [0, 1].

    Returns
    -------
    ndarray of float32, shape (height, width, 4)

    Raises
    ------
    ValueError
        On an empty size or a colour without 3 or 4 components.
    """
    if height < 1 or width < 1:
        raise ValueError(f"canvas size must be positive, got {height} x {width}")
    img = np.empty((int(height), int(width), 4), dtype=np.float32)
    img[:] = _rgba(color)
    return img


def _rgba(color: Color) -> np.ndarray:
    c = np.asarray(color, dtype=np.float32).ravel()
    if c.size == 3:
        c = np.append(c, np.float32(1.0))
    if c.size != 4:
        raise ValueError(f"a colour has 3 or 4 components, got {c.size}")
    return np.clip(c, 0.0, 1.0)


def blend_pixels(img: np.ndarray, rows, cols, color: Color) -> None:
    """Alpha-composite ``color`` over some pixels of ``img``, in place.

    Parameters
    ----------
    img : ndarray of float32, shape (H, W, 4)
        An RGBA canvas (:func:`new_canvas`).
    rows, cols : ndarray of int or slice
        The pixels: index arrays of equal length, or slices.
    color : sequence of float
        RGB or RGBA in [0, 1] (clipped); an opaque colour replaces the pixels.

    Examples
    --------
    >>> img = new_canvas(2, 3, (0.0, 0.0, 0.0, 1.0))
    >>> blend_pixels(img, np.array([0, 1]), np.array([2, 0]), (1.0, 1.0, 1.0, 0.5))
    >>> img[0, 2].tolist(), img[1, 1].tolist()
    ([0.5, 0.5, 0.5, 1.0], [0.0, 0.0, 0.0, 1.0])
    """
    c = _rgba(color)
    a = c[3]
    if a >= 1.0:
        img[rows, cols] = c
        return
    dst = img[rows, cols]
    out = np.empty_like(dst)
    out[..., :3] = a * c[:3] + (1.0 - a) * dst[..., :3]
    out[..., 3] = a + (1.0 - a) * dst[..., 3]
    img[rows, cols] = out


def fill_rect(img: np.ndarray, x0: float, y0: float, x1: float, y1: float, color: Color) -> None:
    """Fill the pixels x0 <= x < x1, y0 <= y < y1 (rounded, clipped to the canvas).

    Parameters
    ----------
    img : ndarray, shape (H, W, 4)
        Image to draw on, in place (x right, y down, in pixels).
    x0, y0, x1, y1 : float
        Corners in pixels.
    color : sequence of float
        RGB or RGBA in [0, 1]; alpha below 1 composites over the image.
    """
    h, w = img.shape[:2]
    xa, xb = sorted((int(round(x0)), int(round(x1))))
    ya, yb = sorted((int(round(y0)), int(round(y1))))
    xa, xb, ya, yb = max(xa, 0), min(xb, w), max(ya, 0), min(yb, h)
    if xa < xb and ya < yb:
        blend_pixels(img, slice(ya, yb), slice(xa, xb), color)


def draw_rect(img: np.ndarray, x0: float, y0: float, x1: float, y1: float, color: Color, width: int = 1) -> None:
    """Outline of the rectangle [x0, x1) x [y0, y1), ``width`` pixels inside it.

    Parameters
    ----------
    img : ndarray, shape (H, W, 4)
        Image to draw on, in place (x right, y down, in pixels).
    x0, y0, x1, y1 : float
        Corners in pixels.
    color : sequence of float
        RGB or RGBA in [0, 1].
    width : int
        Line width in pixels.
    """
    xa, xb = sorted((x0, x1))
    ya, yb = sorted((y0, y1))
    fill_rect(img, xa, ya, xb, ya + width, color)
    fill_rect(img, xa, yb - width, xb, yb, color)
    fill_rect(img, xa, ya + width, xa + width, yb - width, color)
    fill_rect(img, xb - width, ya + width, xb, yb - width, color)


def draw_line(img: np.ndarray, x0: float, y0: float, x1: float, y1: float, color: Color, width: int = 1) -> None:
    """A straight line between pixel centres (x0, y0) and (x1, y1).

    Parameters
    ----------
    img : ndarray, shape (H, W, 4)
        Image to draw on, in place (x right, y down, in pixels).
    x0, y0, x1, y1 : float
        End points in pixels.
    color : sequence of float
        RGB or RGBA in [0, 1].
    width : int
        Thickness in pixels.
    """
    width = max(int(width), 1)
    lo = (width - 1) // 2
    hi = width - lo
    if round(y0) == round(y1) or round(x0) == round(x1):  # axis-aligned: one rectangle
        xa, xb = sorted((int(round(x0)), int(round(x1))))
        ya, yb = sorted((int(round(y0)), int(round(y1))))
        fill_rect(img, xa - lo, ya - lo, xb + hi, yb + hi, color)
        return
    n = int(np.ceil(max(abs(x1 - x0), abs(y1 - y0)))) + 1
    t = np.linspace(0.0, 1.0, n)
    xs = np.rint(x0 + t * (x1 - x0)).astype(int)
    ys = np.rint(y0 + t * (y1 - y0)).astype(int)
    if width > 1:
        off = np.arange(-lo, hi)
        xs = (xs[:, None, None] + off[None, :, None] + 0 * off[None, None, :]).ravel()
        ys = (ys[:, None, None] + 0 * off[None, :, None] + off[None, None, :]).ravel()
    h, w = img.shape[:2]
    keep = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    pix = np.unique(ys[keep] * w + xs[keep])
    blend_pixels(img, pix // w, pix % w, color)


def fill_circle(img: np.ndarray, cx: float, cy: float, radius: float, color: Color,
                inner: float | None = None) -> None:
    """A filled disc: the pixels whose centres lie within ``radius`` of (cx, cy); with ``inner``, a
    ring: those at least ``inner`` away too.

    Parameters
    ----------
    img : ndarray, shape (H, W, 4)
        Image to draw on, in place (x right, y down, in pixels).
    cx, cy, radius : float
        Centre and radius in pixels.
    color : sequence of float
        RGB or RGBA in [0, 1].
    inner : float, optional
        Inner radius of a ring, in pixels.
    """
    h, w = img.shape[:2]
    ya, yb = max(int(np.floor(cy - radius)), 0), min(int(np.ceil(cy + radius)) + 1, h)
    xa, xb = max(int(np.floor(cx - radius)), 0), min(int(np.ceil(cx + radius)) + 1, w)
    if xa >= xb or ya >= yb:
        return
    yy, xx = np.mgrid[ya:yb, xa:xb]
    d2 = (xx - cx) ** 2 + (yy - cy) ** 2
    inside = d2 <= radius * radius + 0.25
    if inner is not None:
        inside &= d2 >= inner * inner - 0.25
    blend_pixels(img, yy[inside], xx[inside], color)


def text_size(text: str, scale: int = 1) -> tuple[int, int]:
    """Size of one line of text as :func:`draw_text` draws it.

    Parameters
    ----------
    text : str
    scale : int
        Pixels per font dot.

    Returns
    -------
    (int, int)
        Width and height in pixels.
    """
    if not text:
        return 0, FONT_H * scale
    return (len(text) * (FONT_W + 1) - 1) * scale, FONT_H * scale


def draw_text(img: np.ndarray, x: float, y: float, text: str, color: Color = BLACK, scale: int = 1,
              anchor: str = "left") -> tuple[int, int]:
    """Draw one line of text (clipped to the canvas).

    Parameters
    ----------
    img : ndarray, shape (H, W, 4)
        Image to draw on, in place (x right, y down, in pixels).
    x, y : float
        Anchor point in pixels; y is the top of the text.
    text : str
    color : sequence of float
        RGB or RGBA in [0, 1].
    scale : int
        Pixels per font dot.
    anchor : {'left', 'right', 'center'}
        Where ``x`` lies on the text: its left edge, right edge or centre.

    Returns
    -------
    (int, int)
        Width and height drawn, in pixels.

    Raises
    ------
    ValueError
        On an unknown ``anchor``.
    """
    scale = max(int(scale), 1)
    tw, th = text_size(text, scale)
    if anchor == "right":
        x -= tw
    elif anchor == "center":
        x -= tw / 2
    elif anchor != "left":
        raise ValueError(f"anchor must be left, right or center, got {anchor!r}")
    if not text:
        return tw, th
    bits = np.zeros((FONT_H, len(text) * (FONT_W + 1)), dtype=bool)
    for i, ch in enumerate(text):
        bits[:, i * (FONT_W + 1): i * (FONT_W + 1) + FONT_W] = glyph(ch)
    bits = bits[:, :-1]
    if scale > 1:
        bits = np.kron(bits, np.ones((scale, scale), dtype=bool))
    ys, xs = np.nonzero(bits)
    xs = xs + int(round(x))
    ys = ys + int(round(y))
    h, w = img.shape[:2]
    keep = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    if keep.any():
        blend_pixels(img, ys[keep], xs[keep], color)
    return tw, th


# --------------------------------------------------------------------------------------------------
# PNG


def _to_uint8(rgba: np.ndarray) -> np.ndarray:
    a = np.asarray(rgba)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    if a.ndim != 3 or a.shape[2] not in (3, 4):
        raise ValueError(f"image must be (H, W, 3|4), got shape {a.shape}")
    if a.dtype != np.uint8:
        f = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(f)):
            raise ValueError("image contains NaN or infinite values")
        a = np.rint(np.clip(f, 0.0, 1.0) * 255.0).astype(np.uint8)
    if a.shape[2] == 3:
        a = np.concatenate([a, np.full(a.shape[:2] + (1,), 255, dtype=np.uint8)], axis=2)
    return np.ascontiguousarray(a)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(rgba: np.ndarray, compression: int = 6) -> bytes:
    """PNG bytes (8-bit RGBA, no filter) of an image.

    Parameters
    ----------
    rgba : ndarray, shape (H, W, 4) or (H, W, 3)
        Floats in [0, 1] (clipped) or uint8; row 0 at the top.
    compression : int
        zlib level 0-9.

    Returns
    -------
    bytes

    Examples
    --------
    >>> img = new_canvas(16, 32, WHITE)
    >>> draw_line(img, 0, 0, 31, 15, BLACK)
    >>> png = encode_png(img)
    >>> png[1:4], len(png) > 50
    (b'PNG', True)
    """
    a = _to_uint8(rgba)
    h, w = a.shape[:2]
    if h < 1 or w < 1:
        raise ValueError("empty image")
    raw = np.zeros((h, 1 + 4 * w), dtype=np.uint8)  # filter byte 0 per row
    raw[:, 1:] = a.reshape(h, 4 * w)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)  # 8-bit, colour type 6 (RGBA)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(raw.tobytes(), compression)) + _chunk(b"IEND", b""))


def write_png(path: str | os.PathLike, rgba: np.ndarray) -> str:
    """Write an image as a PNG file.

    Parameters
    ----------
    path : str or os.PathLike
    rgba : ndarray, shape (H, W, 4) or (H, W, 3)
        As in :func:`encode_png`.

    Returns
    -------
    str
        The absolute path written.

    Raises
    ------
    OSError
        If the file cannot be written.
    """
    data = encode_png(rgba)
    path = os.path.abspath(os.fspath(path))
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def to_blender_pixels(rgba: np.ndarray) -> np.ndarray:
    """Flat float32 RGBA for ``bpy.types.Image.pixels.foreach_set`` (Blender's rows start at the bottom).

    Parameters
    ----------
    rgba : ndarray, shape (H, W, 4)
        Row 0 at the top.

    Returns
    -------
    ndarray of float32, shape (H * W * 4,)

    Raises
    ------
    ValueError
        If ``rgba`` is not (H, W, 4).
    """
    a = np.asarray(rgba, dtype=np.float32)
    if a.ndim != 3 or a.shape[2] != 4:
        raise ValueError(f"image must be (H, W, 4), got shape {a.shape}")
    return np.ascontiguousarray(a[::-1]).ravel()


# --------------------------------------------------------------------------------------------------
# dendrogram


def _leaf_sets(linkage: np.ndarray, m: int) -> list[frozenset[int]]:
    """Leaves under every node id 0 .. 2m-2 (ids >= m are linkage rows, as scipy numbers them)."""
    sets: list[frozenset[int]] = [frozenset((i,)) for i in range(m)]
    for a, b in linkage[:, :2].astype(int):
        sets.append(sets[a] | sets[b])
    return sets


def _nice_step(span: float, target: int = 6) -> float:
    raw = span / max(target, 1)
    if raw <= 0 or not np.isfinite(raw):
        return 1.0
    mag = 10.0 ** np.floor(np.log10(raw))
    for f in (1.0, 2.0, 2.5, 5.0, 10.0):
        if f * mag >= raw:
            return float(f * mag)
    return float(10.0 * mag)


def _fmt_tick(v: float, step: float) -> str:
    decimals = max(0, int(-np.floor(np.log10(step))) + (1 if step / 10 ** np.floor(np.log10(step)) == 2.5 else 0))
    return f"{v:.{min(decimals, 6)}f}"


def dendrogram_image(linkage: np.ndarray, labels: Sequence[str], *, width: int = 900,
                     highlight: Sequence[int] | None = None, title: str = "",
                     clusters: Sequence[int] | None = None, n_clusters: int | None = None,
                     label_scale: int | None = None) -> np.ndarray:
    """A horizontal dendrogram (leaves on the left with their labels, merge distance to the right).

    Links and labels are coloured by cluster; links joining clusters are grey.

    Parameters
    ----------
    linkage : ndarray, shape (m - 1, 4)
        scipy linkage matrix.
    labels : sequence of str, length m
        Leaf names, in input order.
    width : int
        Image width in pixels, at least 200.
    highlight : sequence of int, optional
        Leaves (input indices) that get a yellow band and a marker.
    title : str
    clusters : sequence of int, length m, optional
        A flat cluster label per leaf (e.g. :attr:`anim_signals.manifolds.elastic.Clustering.labels`).
    n_clusters : int, optional
        Without ``clusters``: scipy ``fcluster`` maxclust; without either, scipy's default cut at
        0.7 x the largest merge distance.
    label_scale : int, optional
        Text scale of the labels (default: chosen from the number of leaves).

    Returns
    -------
    ndarray of float32, shape (H, width, 4)
        RGBA in [0, 1], row 0 at the top; H grows with the number of leaves.

    Raises
    ------
    ValueError
        On no labels, a linkage of the wrong shape, a width below 200 or a ``clusters`` of the
        wrong length.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.cluster.hierarchy import linkage
    >>> points = np.array([[0.0], [0.1], [5.0], [5.2]])
    >>> img = dendrogram_image(linkage(points, "average"), ["walk", "walk 2", "jump", "jump 2"], width=400)
    >>> img.shape[1:], img.dtype.name
    ((400, 4), 'float32')
    """
    from scipy.cluster.hierarchy import dendrogram, fcluster

    z = np.asarray(linkage, dtype=float)
    m = len(labels)
    if m < 1:
        raise ValueError("no leaves to draw")
    if m == 1:
        z = np.zeros((0, 4))
    elif z.ndim != 2 or z.shape != (m - 1, 4):
        raise ValueError(f"linkage must be ({m - 1}, 4) for {m} labels, got shape {z.shape}")
    width = int(width)
    if width < 200:
        raise ValueError(f"width must be at least 200 pixels, got {width}")
    if clusters is not None:
        flat = np.asarray(clusters, dtype=int)
        if flat.shape != (m,):
            raise ValueError(f"clusters must hold one label per leaf ({m}), got shape {flat.shape}")
    elif m == 1:
        flat = np.ones(1, dtype=int)
    elif n_clusters is not None:
        flat = fcluster(z, t=max(1, min(int(n_clusters), m)), criterion="maxclust")
    else:
        flat = fcluster(z, t=0.7 * float(z[:, 2].max()) if len(z) else 0.0, criterion="distance")
    # colours by cluster, numbered in dendrogram order so neighbours differ
    sets = _leaf_sets(z, m)
    if m > 1:
        dn = dendrogram(z, no_plot=True, link_color_func=lambda k: str(k))
        order = [int(i) for i in dn["leaves"]]
    else:
        dn = {"icoord": [], "dcoord": [], "color_list": []}
        order = [0]
    colour_of: dict[int, tuple[float, float, float, float]] = {}
    for leaf in order:
        lab = int(flat[leaf])
        if lab not in colour_of:
            colour_of[lab] = PALETTE[len(colour_of) % len(PALETTE)]

    def node_colour(node: int):
        labs = {int(flat[i]) for i in sets[node]}
        return colour_of[labs.pop()] if len(labs) == 1 else GREY

    scale = label_scale if label_scale is not None else (2 if m <= 40 else 1)
    scale = max(int(scale), 1)
    row_h = (FONT_H + 4) * scale
    margin = 10
    title_h = (FONT_H * 2 + 12) if title else 0
    label_w = max(text_size(str(s), scale)[0] for s in labels) + 14 * scale
    label_w = min(label_w, width // 2)
    axis_h = FONT_H + 16
    tree_x0 = margin + label_w
    tree_x1 = width - margin - 4 * (FONT_W + 1)
    top = margin + title_h
    height = top + m * row_h + axis_h + margin
    img = new_canvas(height, width)
    if title:
        draw_text(img, margin, margin, title, BLACK, scale=2)
    dmax = float(z[:, 2].max()) if len(z) and z[:, 2].max() > 0 else 1.0
    tree_w = max(tree_x1 - tree_x0, 10)

    def xd(d):
        return tree_x0 + float(d) / dmax * tree_w

    def yi(ic):
        return top + (float(ic) - 5.0) / 10.0 * row_h + row_h / 2.0

    # axis with ticks (drawn first: links go over the grid)
    step = _nice_step(dmax)
    axis_y = top + m * row_h + 3
    draw_line(img, tree_x0, axis_y, xd(dmax), axis_y, BLACK)
    v = 0.0
    while v <= dmax * (1 + 1e-9):
        x = xd(v)
        draw_line(img, x, top, x, axis_y - 1, LIGHT)
        draw_line(img, x, axis_y, x, axis_y + 3, BLACK)
        draw_text(img, x, axis_y + 6, _fmt_tick(v, step), BLACK, anchor="center")
        v += step
    highlight_set = {int(i) for i in (highlight or ())}
    for pos, leaf in enumerate(order):
        y = top + pos * row_h
        if leaf in highlight_set:
            fill_rect(img, margin - 4, y, tree_x0, y + row_h, HIGHLIGHT)
            fill_circle(img, tree_x0 - 5 * scale, y + row_h / 2.0, 2.0 * scale, BLACK)
        draw_text(img, tree_x0 - 10 * scale, y + 2 * scale, str(labels[leaf]), colour_of[int(flat[leaf])],
                  scale=scale, anchor="right")
    lw = 2 if m <= 60 else 1
    for ic, dc, key in zip(dn["icoord"], dn["dcoord"], dn["color_list"]):
        col = node_colour(int(key))
        (i0, _, _, i3), (d0, d1, _, d3) = ic, dc
        draw_line(img, xd(d0), yi(i0), xd(d1), yi(i0), col, lw)
        draw_line(img, xd(d1), yi(i0), xd(d1), yi(i3), col, lw)
        draw_line(img, xd(d3), yi(i3), xd(d1), yi(i3), col, lw)
    if m == 1:
        draw_line(img, tree_x0, yi(5.0), tree_x0 + 10, yi(5.0), colour_of[int(flat[0])], lw)
    return img
