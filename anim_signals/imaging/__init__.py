"""Imaging: a small RGBA raster (lines, rectangles, circles, bitmap text), PNG writing and the
dendrogram picture of a clip clustering, with numpy and zlib only.

Modules
-------
raster
    Drawing primitives, :func:`encode_png` / :func:`write_png`, :func:`dendrogram_image`.
"""

from .raster import (
    FONT_H,
    FONT_W,
    PALETTE,
    dendrogram_image,
    draw_line,
    draw_rect,
    draw_text,
    encode_png,
    fill_circle,
    fill_rect,
    new_canvas,
    text_size,
    to_blender_pixels,
    write_png,
)

__all__ = [
    "FONT_H",
    "FONT_W",
    "PALETTE",
    "dendrogram_image",
    "draw_line",
    "draw_rect",
    "draw_text",
    "encode_png",
    "fill_circle",
    "fill_rect",
    "new_canvas",
    "text_size",
    "to_blender_pixels",
    "write_png",
]
