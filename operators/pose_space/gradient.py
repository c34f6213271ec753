"""The deformation-gradient shape space of a pose space (Cashman and Hormann §5): mesh frames become
rows of per-triangle rotation and stretch values that the core builds the pose space on, and the
model's rows become vertex positions again by the factorised Poisson solve.

Pure numpy over :class:`anim_signals.transfer.GradientSpace`; Blender data is read and written by
the callers (:mod:`.building`, :mod:`.posing`). A row is ``9 F + 3`` values: per triangle the
rotation vector (radians) and the 6 stretch values of its deformation gradient relative to the
reference pose, then the mean of the vertices divided by the reference's bounding-box diagonal,
so every value is dimensionless (radians of rotation, fractions of stretch). The build still
meets its Tolerance on vertex positions: it decodes every frame of the model and tightens the
core's tolerance on the rows until the decoded vertices are within it (``building``).
"""

from __future__ import annotations

import numpy as np

from ...anim_signals.transfer import GradientSpace, TriangleMesh

__all__ = ["SHAPE_SPACES", "GradientRows"]

SHAPE_SPACES = ("VERTEX", "GRADIENT")


class GradientRows:
    """Encode mesh frames as gradient-space rows and decode rows to vertex positions.

    Parameters
    ----------
    reference : ndarray, shape (V, 3)
        The pose whose gradients are the identity (the first frame read).
    faces : ndarray of int, shape (F, 3)
        Triangles (Blender's loop triangles of the source mesh).
    name : str
        How messages name the mesh.

    Raises
    ------
    ValueError
        When the mesh cannot carry the Poisson solve (loose vertices, non-manifold edges, zero-area
        triangles, separate parts): the message names them.
    """

    def __init__(self, reference: np.ndarray, faces: np.ndarray, *, name: str = "mesh") -> None:
        ref = np.asarray(reference, dtype=np.float64).reshape(-1, 3)
        self.space = GradientSpace(TriangleMesh(ref, np.asarray(faces, dtype=np.int64).reshape(-1, 3), name=name))
        self.n_vertices = len(ref)
        diagonal = float(np.linalg.norm(np.ptp(ref, axis=0)))
        self.translation_scale = diagonal if diagonal > 0.0 else 1.0

    @property
    def dimension(self) -> int:
        """Values per row, ``9 F + 3``."""
        return int(self.space.dimension)

    def encode(self, frames: np.ndarray) -> np.ndarray:
        """Rows ``(n, 9F+3)`` of frames given as ``(n, 3V)`` or ``(n, V, 3)``."""
        x = np.asarray(frames, dtype=np.float64).reshape(-1, self.n_vertices, 3)
        rows = self.space.encode(x)
        rows[:, -3:] /= self.translation_scale
        return rows

    def decode(self, rows: np.ndarray, *, batch: int = 64) -> np.ndarray:
        """Vertex positions ``(n, V, 3)`` of rows ``(n, 9F+3)`` (or ``(V, 3)`` of one row), solved
        ``batch`` rows at a time to bound the memory of the per-triangle matrices."""
        z = np.array(rows, dtype=np.float64)
        single = z.ndim == 1
        z = z.reshape(-1, self.dimension)
        z[:, -3:] *= self.translation_scale
        out = np.empty((len(z), self.n_vertices, 3))
        for i in range(0, len(z), batch):
            out[i:i + batch] = self.space.decode(z[i:i + batch])
        return out[0] if single else out
