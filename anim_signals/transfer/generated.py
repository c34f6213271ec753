"""Generated meshes for tests, demos and benchmarks that need no user files (numpy only)."""

from __future__ import annotations

import numpy as np

__all__ = ["open_cylinder"]


def open_cylinder(around: int, along: int, *, radius: float = 0.3, length: float = 2.0,
                  triangles: bool = False) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """An open cylinder along z: quads, or triangles whose diagonals alternate like a checkerboard.

    Two cylinders with different ``around`` / ``along`` / ``triangles`` are the same surface with
    different connectivity, the case deformation transfer exists for. ``around`` a multiple of 4
    gives every such cylinder the same bounding box.

    Parameters
    ----------
    around : int
        Vertices around each ring (>= 3).
    along : int
        Rings along z (>= 2), from z = 0 to z = ``length``.
    radius, length : float
        Size in scene units.
    triangles : bool
        Split every quad into two triangles (checkerboard diagonals) instead of keeping quads.

    Returns
    -------
    vertices : ndarray, shape (around * along, 3)
        Ring by ring, each ring counter-clockwise from +x.
    faces : list of tuple of int
        Quads ``(a, b, c, d)`` or triangles, outward-facing.

    Raises
    ------
    ValueError
        If ``around < 3`` or ``along < 2``.

    Examples
    --------
    >>> v, f = open_cylinder(8, 3, triangles=True)
    >>> v.shape, len(f)
    ((24, 3), 32)
    """
    if around < 3 or along < 2:
        raise ValueError(f"a cylinder needs around >= 3 and along >= 2, got {around} x {along}")
    phi = 2.0 * np.pi * np.arange(around) / around
    z = np.repeat(np.linspace(0.0, length, along), around)
    vertices = np.column_stack([radius * np.cos(np.tile(phi, along)), radius * np.sin(np.tile(phi, along)), z])
    faces: list[tuple[int, ...]] = []
    for r in range(along - 1):
        for s in range(around):
            a, b = r * around + s, r * around + (s + 1) % around
            c, d = (r + 1) * around + (s + 1) % around, (r + 1) * around + s
            if not triangles:
                faces.append((a, b, c, d))
            elif (r + s) % 2:
                faces += [(a, b, c), (a, c, d)]
            else:
                faces += [(a, b, d), (b, c, d)]
    return vertices, faces
