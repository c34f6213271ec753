"""Colours of the pose-space canvas: one palette for the gpu drawing and the PNG rendering.

RGBA tuples in [0, 1] (linear, as Blender's ``gpu`` shaders and :mod:`anim_signals.imaging.raster`
take them), and :func:`time_colors`, the ramp that colours frames by time.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "AXIS",
    "BACKGROUND",
    "CURRENT",
    "CURSOR",
    "CURVE",
    "DIM_TEXT",
    "GRID",
    "HANDLE",
    "MARKER",
    "OUTLINE",
    "PIN",
    "POLYGON",
    "SITE",
    "STROKE",
    "TEXT",
    "time_colors",
]

# viridis (perceptually uniform, lightness increasing monotonically): matplotlib's values at 0, 1/8, ..., 1
_RAMP = np.array([
    (0.267004, 0.004874, 0.329415), (0.278826, 0.175490, 0.483397), (0.229739, 0.322361, 0.545706),
    (0.172719, 0.448791, 0.557885), (0.127568, 0.566949, 0.550556), (0.157851, 0.683765, 0.501686),
    (0.369214, 0.788888, 0.382914), (0.678489, 0.863742, 0.189503), (0.993248, 0.906157, 0.143936),
])
_RAMP_X = np.linspace(0.0, 1.0, len(_RAMP))

BACKGROUND = (0.13, 0.13, 0.14, 1.0)
GRID = (0.19, 0.19, 0.21, 1.0)
AXIS = (0.27, 0.27, 0.30, 1.0)
TEXT = (0.86, 0.86, 0.86, 1.0)
DIM_TEXT = (0.60, 0.60, 0.62, 1.0)
CURVE = (1.0, 0.55, 0.20, 1.0)
POLYGON = (0.55, 0.62, 0.80, 1.0)
HANDLE = (0.62, 0.74, 1.0, 1.0)
SITE = (0.92, 0.92, 0.92, 1.0)
PIN = (1.0, 0.30, 0.30, 1.0)
CURRENT = (1.0, 1.0, 1.0, 1.0)
CURSOR = (0.35, 0.95, 0.95, 1.0)
STROKE = (0.95, 0.40, 0.85, 1.0)
OUTLINE = (0.05, 0.05, 0.05, 1.0)
MARKER = (0.96, 0.26, 0.36, 1.0)  # spatial keyframes' markers (diamonds); no pins share their canvas


def time_colors(times: np.ndarray) -> np.ndarray:
    """Colours on the viridis ramp: the earliest time dark violet, the latest bright yellow.

    Parameters
    ----------
    times : array_like, shape (n,)
        Frame times; colours are spread over [min(times), max(times)], a single or constant time
        gets the ramp's middle.

    Returns
    -------
    ndarray, shape (n, 4)
        RGBA in [0, 1].
    """
    t = np.asarray(times, dtype=float).ravel()
    out = np.ones((t.size, 4))
    if t.size == 0:
        return out
    lo, hi = float(np.min(t)), float(np.max(t))
    u = (t - lo) / (hi - lo) if hi > lo else np.full(t.size, 0.5)
    for c in range(3):
        out[:, c] = np.interp(u, _RAMP_X, _RAMP[:, c])
    return out
