"""Generated mesh sequences for tests, demos and the real-window stage (no files needed)."""

from __future__ import annotations

import numpy as np

from ..validation import positive_int

__all__ = ["wavy_flag"]


def wavy_flag(n_frames: int = 24, nx: int = 9) -> tuple[np.ndarray, list[tuple[int, int, int, int]], np.ndarray]:
    """A square grid waved by three modes with different phases: a pose manifold close to 2-D, so
    its pose-space canvas shows a clear loop of frames.

    Parameters
    ----------
    n_frames : int
        Frames of one period, >= 1.
    nx : int
        Vertices along each side of the grid, >= 2.

    Returns
    -------
    vertices : ndarray, shape (nx * nx, 3)
        The flat rest grid over [-1, 1]^2.
    faces : list of (int, int, int, int)
        Quads, counter-clockwise seen from +z.
    frames : ndarray, shape (n_frames, nx * nx, 3)
        Vertex positions per frame (x and y as at rest, z waved).

    Raises
    ------
    ValueError
        On non-positive counts or ``nx < 2``.

    Examples
    --------
    >>> vertices, faces, frames = wavy_flag(8, nx=3)
    >>> vertices.shape, len(faces), frames.shape
    ((9, 3), 4, (8, 9, 3))
    """
    n_frames = positive_int("n_frames", n_frames)
    nx = positive_int("nx", nx, minimum=2)
    xs, ys = np.meshgrid(np.linspace(-1.0, 1.0, nx), np.linspace(-1.0, 1.0, nx))
    vertices = np.column_stack([xs.ravel(), ys.ravel(), np.zeros(nx * nx)])
    faces = [(i * nx + j, i * nx + j + 1, (i + 1) * nx + j + 1, (i + 1) * nx + j)
             for i in range(nx - 1) for j in range(nx - 1)]
    t = 2.0 * np.pi * np.arange(n_frames)[:, None] / n_frames
    x, y = vertices[None, :, 0], vertices[None, :, 1]
    frames = np.repeat(vertices[None], n_frames, axis=0)
    frames[:, :, 2] = 0.35 * np.sin(2.0 * x + t) + 0.2 * np.cos(1.5 * y - 2.0 * t) + 0.1 * x * y * np.sin(3.0 * t)
    return vertices, faces, frames
