"""Images: numpy pixels into Image datablocks.

Owns :func:`write_image`, which the tools use to show a picture inside Blender (the compare
tool's dendrogram) and keep it in the .blend. Pixels are written with one ``foreach_set``.
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np


def write_image(name: str, rgba: np.ndarray) -> bpy.types.Image:
    """An Image datablock ``name`` holding ``rgba``, packed so it is saved with the .blend.

    Parameters
    ----------
    name
        A local image of that name is reused (resized when needed); a linked one is left alone
        and a new image made instead.
    rgba
        (H, W, 4) floats in [0, 1], row 0 at the top.

    Raises
    ------
    ValueError
        ``rgba`` is not (H, W, 4).
    RuntimeError
        Blender could not pack the image.
    """
    rgba = np.asarray(rgba, dtype=np.float32)
    if rgba.ndim != 3 or rgba.shape[2] != 4:
        raise ValueError(f"expected an (H, W, 4) image, got {rgba.shape}")
    h, w = int(rgba.shape[0]), int(rgba.shape[1])
    img = bpy.data.images.get(name)
    if img is not None and img.library is not None:
        img = None
    if img is None:
        img = bpy.data.images.new(name, w, h, alpha=True)
    elif tuple(img.size) != (w, h):
        img.scale(w, h)
    pixels: Any = img.pixels
    pixels.foreach_set(np.ascontiguousarray(rgba[::-1]).ravel())  # Blender's row 0 is the bottom
    img.update()
    img.pack()
    return img
