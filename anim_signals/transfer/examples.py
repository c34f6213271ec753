"""Deformation transfer by example poses (Cashman and Hormann §4.3), in the vertex or the gradient shape space.

Cashman and Hormann, "A continuous, editable representation for deforming mesh sequences with
separate signals for time, pose and shape", §4.3, after Baran et al., "Semantic Deformation
Transfer": given example pairs ``(q_j, r_j)``, ``j = 0..m`` (``j = 0`` the rest pose of each mesh),
the source frames ``z_i`` are written in the basis ``h_0 = q_0``, ``h_j = q_j - q_0`` by the normal
equations ``H^T H X = H^T Y^T`` (``Y``'s rows ``z_i - q_0``), and the target frames are
``r_0 + sum_j x_ij (r_j - r_0)``.  No correspondence between the meshes is needed; the meshes may
differ in vertex count and connectivity.

The shape space is either the vertex coordinates ``R^{3V}`` (:class:`VertexSpace`) or the
deformation-gradient space ``R^{9F+3}`` (:class:`~anim_signals.transfer.gradients.GradientSpace`),
where rotations are blended as rotation vectors; the seed's Figure 7 shows the latter avoiding
the shrinking of linearly blended vertex positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .gradients import GradientSpace
from .meshes import TriangleMesh, check_frames, check_topology

__all__ = [
    "ExampleTransfer",
    "VertexSpace",
    "check_examples_independent",
    "example_coordinates",
    "make_shape_space",
    "transfer_by_examples",
]

SpaceName = Literal["vertex", "gradient"]
DEPENDENCE_TOLERANCE = 1e-5


class VertexSpace:
    """The vertex-coordinate shape space ``R^{3V}``: a pose is its vertices, stacked.

    Parameters
    ----------
    n_vertices : int

    Attributes
    ----------
    dimension : int
        ``3 V``.

    Examples
    --------
    >>> space = VertexSpace(2)
    >>> space.encode(np.arange(6.0).reshape(2, 3)).tolist()
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    >>> space.decode(np.zeros(6)).shape
    (2, 3)
    """

    def __init__(self, n_vertices: int) -> None:
        self.n_vertices = int(n_vertices)
        self.dimension = 3 * self.n_vertices

    def encode(self, frames: np.ndarray) -> np.ndarray:
        """Feature vectors ``(3V,)`` or ``(n, 3V)`` of poses ``(V, 3)`` or ``(n, V, 3)``."""
        x = np.asarray(frames, dtype=np.float64)
        if x.shape[-2:] != (self.n_vertices, 3):
            raise ValueError(f"expected poses of shape (n, {self.n_vertices}, 3), got {x.shape}")
        return x.reshape(x.shape[:-2] + (self.dimension,))

    def decode(self, features: np.ndarray) -> np.ndarray:
        """Poses ``(V, 3)`` or ``(n, V, 3)`` of feature vectors."""
        z = np.asarray(features, dtype=np.float64)
        if z.shape[-1] != self.dimension:
            raise ValueError(f"expected features of length {self.dimension}, got shape {z.shape}")
        return z.reshape(z.shape[:-1] + (self.n_vertices, 3))


def make_shape_space(kind: SpaceName, mesh: TriangleMesh) -> VertexSpace | GradientSpace:
    """The shape space of a mesh by name.

    Parameters
    ----------
    kind : {"vertex", "gradient"}
        ``R^{3V}`` or ``R^{9F+3}``.
    mesh : TriangleMesh
        Its vertices are the reference pose (for the gradient space).

    Returns
    -------
    VertexSpace or GradientSpace

    Raises
    ------
    ValueError
        On an unknown kind, or (gradient space) a mesh that cannot be solved for.
    """
    if kind == "vertex":
        return VertexSpace(mesh.n_vertices)
    if kind == "gradient":
        return GradientSpace(mesh)
    raise ValueError(f"the shape space must be 'vertex' or 'gradient', got {kind!r}")


def _label(names: Sequence[str] | None, j: int) -> str:
    if names is not None:
        return repr(names[j])
    return "the rest pose" if j == 0 else f"example {j}"


def check_examples_independent(basis: np.ndarray, names: Sequence[str] | None = None, *,
                               tolerance: float = DEPENDENCE_TOLERANCE) -> None:
    """Refuse linearly dependent example offsets ``h_j = q_j - q_0``, naming the examples involved.

    The columns are taken in order; one whose distance to the span of the earlier ones is below
    ``tolerance`` times its length is reported with its coefficients.

    Parameters
    ----------
    basis : ndarray, shape (d, m)
        Column ``j - 1`` is ``q_j - q_0``.
    names : sequence of str, optional
        ``m + 1`` names, the rest pose's first (default: "the rest pose", "example 1", ...).
    tolerance : float, optional
        Relative distance below which an example counts as dependent.

    Raises
    ------
    ValueError
        "example 'b' is the same as the rest pose 'rest'", or "example 'c' is a linear combination of
        the rest pose and the other examples: 'c' - 'rest' = 0.5 ('a' - 'rest') + ...".

    Examples
    --------
    >>> h = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]])  # the third is twice the first
    >>> check_examples_independent(h, ["rest", "a", "b", "c"])
    Traceback (most recent call last):
    ...
    ValueError: the examples are linearly dependent: example 'c' is a blend of the others: 'c' - 'rest' = 2 ('a' - 'rest')
    """
    h = np.asarray(basis, dtype=np.float64)
    if h.ndim != 2:
        raise ValueError(f"the example basis must be (d, m), got shape {h.shape}")
    d, m = h.shape
    if names is not None and len(names) != m + 1:
        raise ValueError(f"{len(names)} names for the rest pose and {m} examples")
    scale = float(np.abs(h).max()) if h.size else 0.0
    accepted: list[int] = []
    q = np.zeros((d, 0))
    for j in range(m):
        col = h[:, j]
        norm = float(np.linalg.norm(col))
        if norm <= tolerance * scale or norm == 0.0:
            raise ValueError(f"the examples are linearly dependent: example {_label(names, j + 1)} is the same as "
                             f"{_label(names, 0) if names is not None else 'the rest pose'}")
        r = col - q @ (q.T @ col)
        r = r - q @ (q.T @ r)
        rn = float(np.linalg.norm(r))
        if rn <= tolerance * norm:
            coef = np.linalg.lstsq(h[:, accepted], col, rcond=None)[0]
            rest = _label(names, 0)
            terms = [f"{c:.4g} ({_label(names, k + 1)} - {rest})" for c, k in zip(coef, accepted)
                     if abs(c) > 1e-3 * np.abs(coef).max()]
            raise ValueError(
                f"the examples are linearly dependent: example {_label(names, j + 1)} is a blend of the others: "
                f"{_label(names, j + 1)} - {rest} = " + " + ".join(terms)
            )
        q = np.concatenate([q, (r / rn)[:, None]], axis=1)
        accepted.append(j)


def example_coordinates(rest: np.ndarray, examples: np.ndarray, frames: np.ndarray, *,
                        names: Sequence[str] | None = None,
                        tolerance: float = DEPENDENCE_TOLERANCE) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates of frames in the examples' basis by the seed's normal equations ``H^T H X = H^T Y^T``.

    Parameters
    ----------
    rest : ndarray, shape (d,)
        ``q_0`` in a shape space.
    examples : ndarray, shape (m, d)
        ``q_1 .. q_m``.
    frames : ndarray, shape (n, d)
        ``z_1 .. z_n``.
    names : sequence of str, optional
        ``m + 1`` names for messages, the rest pose's first.
    tolerance : float, optional
        See :func:`check_examples_independent`.

    Returns
    -------
    weights : ndarray, shape (n, m)
        ``x_i``: ``z_i ~ q_0 + sum_j x_ij (q_j - q_0)``.
    residual : ndarray, shape (n, d)
        ``z_i - q_0 - H x_i``, the part of each frame the examples cannot express.

    Raises
    ------
    ValueError
        On size mismatches, no examples, or linearly dependent examples (named).

    Examples
    --------
    >>> w, res = example_coordinates(np.zeros(3), np.eye(3)[:2], np.array([[0.5, 2.0, 1.0]]))
    >>> w.tolist(), res.tolist()
    ([[0.5, 2.0]], [[0.0, 0.0, 1.0]])
    """
    q0 = np.asarray(rest, dtype=np.float64).reshape(-1)
    q = np.asarray(examples, dtype=np.float64)
    z = np.asarray(frames, dtype=np.float64)
    if q.ndim != 2 or q.shape[0] == 0:
        raise ValueError("at least one example besides the rest pose is needed")
    if q.shape[1] != q0.size or z.ndim != 2 or z.shape[1] != q0.size:
        raise ValueError(f"the rest pose, examples and frames must have {q0.size} values each")
    h = (q - q0).T
    check_examples_independent(h, names, tolerance=tolerance)
    y = z - q0
    factor = cho_factor(h.T @ h)
    weights = cho_solve(factor, h.T @ y.T).T
    return weights, y - weights @ h.T


@dataclass(frozen=True, eq=False)
class ExampleTransfer:
    """The result of :func:`transfer_by_examples`.

    Attributes
    ----------
    frames : ndarray, shape (n, V_target, 3)
        The target animation.
    weights : ndarray, shape (n, m)
        Each source frame's coordinates in the examples' basis (the shape signal's ``x_i``).
    fit_error : ndarray, shape (n,)
        RMS vertex distance (source units) between each source frame and its reconstruction from
        the source examples: what the examples cannot express (0 when the frame is in their span).
    fit_relative : ndarray, shape (n,)
        ``|z_i - q_0 - H x_i| / |z_i - q_0|`` in the shape space (0 for a frame equal to the rest pose).
    space : str
        ``"vertex"`` or ``"gradient"``.
    """

    frames: np.ndarray
    weights: np.ndarray
    fit_error: np.ndarray
    fit_relative: np.ndarray
    space: str


def _examples_array(examples: np.ndarray | Sequence[np.ndarray], side: str,
                    names: Sequence[str] | None) -> np.ndarray:
    items = list(examples) if not isinstance(examples, np.ndarray) or examples.ndim == 3 else None
    if items is None:
        raise ValueError(f"the {side} examples must be (m + 1, V, 3): the rest pose and m examples")
    if len(items) < 2:
        raise ValueError(f"the {side} needs its rest pose and at least one example, got {len(items)} shapes")
    first = np.asarray(items[0], dtype=np.float64)
    if first.ndim != 2 or first.shape[1] != 3:
        raise ValueError(f"the {side} rest pose must have shape (V, 3), got {first.shape}")
    n_v = first.shape[0]
    out = np.empty((len(items), n_v, 3))
    for j, item in enumerate(items):
        a = np.asarray(item, dtype=np.float64)
        label = _label(names, j)
        if a.ndim != 2 or a.shape[1] != 3 or a.shape[0] != n_v:
            raise ValueError(f"the {side} example {label} has shape {a.shape}, the {side} rest pose ({n_v}, 3): "
                             "its topology differs from its mesh")
        bad = np.flatnonzero(~np.isfinite(a).all(axis=1))
        if bad.size:
            raise ValueError(f"the {side} example {label} has NaN or infinite coordinates at vertices "
                             + ", ".join(str(b) for b in bad[:8]))
        out[j] = a
    return out


def transfer_by_examples(source_frames: np.ndarray | Sequence[np.ndarray],
                         source_examples: np.ndarray | Sequence[np.ndarray],
                         target_examples: np.ndarray | Sequence[np.ndarray], *,
                         space: SpaceName = "vertex", source_faces: np.ndarray | None = None,
                         target_faces: np.ndarray | None = None, names: Sequence[str] | None = None,
                         frame_numbers: Sequence[int] | None = None,
                         tolerance: float = DEPENDENCE_TOLERANCE) -> ExampleTransfer:
    """Transfer a source animation to a target through matching example poses (Cashman and Hormann §4.3).

    Each source frame is written in the basis of the source examples (the rest pose ``q_0`` plus
    ``q_j - q_0``, least squares by the normal equations); the target frame has the same
    coordinates in the basis of the target examples: ``r_0 + sum_j x_ij (r_j - r_0)``.

    Parameters
    ----------
    source_frames : ndarray, shape (n, V_source, 3), or sequence of (V_source, 3) arrays
    source_examples : ndarray, shape (m + 1, V_source, 3), or sequence
        ``q_0`` (the rest pose) then ``q_1 .. q_m``.
    target_examples : ndarray, shape (m + 1, V_target, 3), or sequence
        ``r_0 .. r_m``, in the same order: ``r_j`` is the target's version of ``q_j``.
    space : {"vertex", "gradient"}, optional
        The shape space the basis and blend live in: ``R^{3V}`` (default) or the deformation
        gradients ``R^{9F+3}`` (needs the faces; rotations blend without shrinking).
    source_faces, target_faces : ndarray of int, shape (F, 3), optional
        Needed for the gradient space.
    names : sequence of str, optional
        ``m + 1`` example names for messages (e.g. shape-key names), the rest pose's first.
    frame_numbers : sequence of int, optional
        Scene frames of ``source_frames``, for messages.
    tolerance : float, optional
        Relative distance below which an example counts as a blend of the others.

    Returns
    -------
    ExampleTransfer

    Raises
    ------
    ValueError
        On example lists of different lengths, an example whose vertex count differs from its rest
        pose, NaN, linearly dependent examples (named), source frames with another vertex count
        (the frame named), a missing face list or, in the gradient space, a mesh that cannot be
        solved for.

    Examples
    --------
    A source triangle whose example stretches it along x, a target twice its size:

    >>> q0 = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    >>> q1 = q0 * [2.0, 1.0, 1.0]
    >>> r0, r1 = 2.0 * q0, 2.0 * q1
    >>> result = transfer_by_examples([q0 * [1.5, 1.0, 1.0]], [q0, q1], [r0, r1])
    >>> result.weights.round(12).tolist(), result.frames[0, 1].round(12).tolist(), result.fit_error.round(12).tolist()
    ([[0.5]], [3.0, 0.0, 0.0], [0.0])
    """
    src = _examples_array(source_examples, "source", names)
    tgt = _examples_array(target_examples, "target", names)
    if len(src) != len(tgt):
        raise ValueError(f"{len(src)} source shapes but {len(tgt)} target shapes: the examples must pair up")
    if names is not None and len(names) != len(src):
        raise ValueError(f"{len(names)} names for {len(src)} example shapes (the rest pose included)")
    frames = check_frames(source_frames, src.shape[1], name="source", frame_numbers=frame_numbers)
    source_space: VertexSpace | GradientSpace
    target_space: VertexSpace | GradientSpace
    if space == "vertex":
        source_space = VertexSpace(src.shape[1])
        target_space = VertexSpace(tgt.shape[1])
    elif space == "gradient":
        if source_faces is None or target_faces is None:
            raise ValueError("the gradient shape space needs the faces of both meshes")
        source_mesh = TriangleMesh(src[0], source_faces, name="source")
        target_mesh = TriangleMesh(tgt[0], target_faces, name="target")
        check_topology(target_mesh)
        check_topology(source_mesh)
        source_space = GradientSpace(source_mesh, check=False)
        target_space = GradientSpace(target_mesh, check=False)
    else:
        raise ValueError(f"the shape space must be 'vertex' or 'gradient', got {space!r}")

    q = source_space.encode(src)
    z = source_space.encode(frames)
    weights, residual = example_coordinates(q[0], q[1:], z, names=names, tolerance=tolerance)
    r = target_space.encode(tgt)
    out = target_space.decode(r[0] + weights @ (r[1:] - r[0]))

    fitted = z - residual
    rebuilt = source_space.decode(fitted)
    fit_error = np.sqrt(np.mean(np.sum((rebuilt - frames) ** 2, axis=2), axis=1))
    offset = np.linalg.norm(z - q[0], axis=1)
    res = np.linalg.norm(residual, axis=1)
    fit_relative = np.divide(res, offset, out=np.zeros_like(res), where=offset > 0.0)
    return ExampleTransfer(out, weights, fit_error, fit_relative, space)
