"""Blender's pose evaluation for plain rigs, in numpy: world-space virtual vertices from curve values.

The "Joints" error space of Fit Spline measures each fit in object space at every original frame.
Blender's own evaluation (the depsgraph, one frame at a time) is the final word, but it costs about
0.5 ms a frame: the measures that only steer the fit (is it well inside the bound, which chains
miss) run here instead, on whole clips at once, for rigs whose evaluation this reproduces (checked
against the depsgraph on the original clip before it is trusted; see
``operators/fit_spline/object_space.py``).

The model is Blender's pose-channel evaluation with the default bone settings (inherit rotation and
scale, local location) and no constraints or drivers: a bone's pose matrix in armature space is its
parent's pose matrix, times the bone's rest matrix relative to its parent's, times the bone's own
transform T(location) R(rotation) S(scale), the quaternion normalised first (``BKE_pchan_to_mat4``,
``BKE_armature_mat_bone_to_pose``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["TRANSFORMS", "VIRTUAL_VERTICES", "PoseModel", "largest_distances", "matrix_vertex_rows", "pose_matrices",
           "pose_vertices", "rest_relative", "rotation_matrices", "shell_points"]

VIRTUAL_VERTICES = 7  # per bone: head +- shell along X, Y, Z, and the tail


def shell_points(lengths: ArrayLike, shell: float) -> np.ndarray:
    """ACL's virtual vertices in each bone's own space, homogeneous: (B, 7, 4).

    The head moved by ``shell`` both ways along the bone's X, Y and Z axes (which see the bone's
    roll as well as its direction), and the tail (0, length, 0).

    Parameters
    ----------
    lengths : array_like, shape (B,)
        Bone lengths (armature units).
    shell : float
        Shell distance (armature units).

    Returns
    -------
    ndarray, shape (B, 7, 4)

    Examples
    --------
    >>> shell_points([2.0], 0.5)[0, [0, 3, 6], :3]
    array([[ 0.5,  0. ,  0. ],
           [-0.5, -0. , -0. ],
           [ 0. ,  2. ,  0. ]])
    """
    lengths = np.asarray(lengths, dtype=float)
    local = np.zeros((lengths.size, VIRTUAL_VERTICES, 4))
    local[:, :3, :3] = np.eye(3) * float(shell)
    local[:, 3:6, :3] = -np.eye(3) * float(shell)
    local[:, 6, 1] = lengths
    local[:, :, 3] = 1.0
    return local


def _levels(parents: np.ndarray) -> list[np.ndarray]:
    """Bones grouped by depth in the hierarchy, roots first (each group's parents come before it)."""
    depth = np.full(parents.size, -1)
    for b in range(parents.size):
        chain = []
        p = b
        while p >= 0 and depth[p] < 0:
            chain.append(p)
            p = parents[p]
            if len(chain) > parents.size:
                raise ValueError("the bone hierarchy has a cycle")
        d = depth[p] if p >= 0 else -1
        for q in reversed(chain):
            d += 1
            depth[q] = d
    return [np.flatnonzero(depth == d) for d in range(int(depth.max(initial=-1)) + 1)]


def rotation_matrices(values: ArrayLike, mode: str) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of rotations as a Blender bone or object stores them.

    Parameters
    ----------
    values : array_like, shape (..., 3) or (..., 4)
        Euler angles (x, y, z) in radians for the Euler modes (``'XYZ'``: X applied first, so
        R = Rz Ry Rx), quaternions (w, x, y, z) of any non-zero norm for ``'QUATERNION'``
        (normalised, as Blender does), (angle, x, y, z) for ``'AXIS_ANGLE'``.
    mode : str
        ``'QUATERNION'``, ``'AXIS_ANGLE'`` or one of the six Euler orders.

    Returns
    -------
    ndarray, shape (..., 3, 3)

    Raises
    ------
    ValueError
        On an unknown mode or a wrong trailing size.

    Examples
    --------
    >>> rotation_matrices([0.0, 0.0, np.pi / 2], "XYZ").round(6) + 0.0  # 90 degrees about Z
    array([[ 0., -1.,  0.],
           [ 1.,  0.,  0.],
           [ 0.,  0.,  1.]])
    """
    # Closed forms in numpy rather than scipy's Rotation (which spatialkeys' as_matrices and
    # mode_values_to_quaternions use): the "Joints" search calls this for every candidate segment,
    # and on 1,500 frames x 102 bones it is several times as fast. tests/core/test_pose_kinematics.py
    # checks every mode against scipy.
    v = np.asarray(values, dtype=float)
    return np.moveaxis(_rotation_rows(np.moveaxis(v, -1, 0), mode), (0, 1), (-2, -1))


def _rotation_rows(components: np.ndarray, mode: str) -> np.ndarray:
    """:func:`rotation_matrices` with the components first, (3 or 4, ...) -> (3, 3, ...): each entry
    one contiguous array (the pose model's layout)."""
    v = components
    if mode == "QUATERNION":
        if v.shape[:1] != (4,):
            raise ValueError(f"quaternions have 4 values, got shape {np.moveaxis(v, 0, -1).shape}")
        norm = np.sqrt(np.einsum("i...,i...->...", v, v))
        safe = np.where(norm > 0, norm, 1.0)
        w = np.where(norm > 0, v[0] / safe, 1.0)
        return _unit_quaternion_rows(w, v[1] / safe, v[2] / safe, v[3] / safe)
    if mode == "AXIS_ANGLE":
        if v.shape[:1] != (4,):
            raise ValueError(f"axis-angle rotations have 4 values, got shape {np.moveaxis(v, 0, -1).shape}")
        axis = v[1:]
        norm = np.sqrt(np.einsum("i...,i...->...", axis, axis))
        unit = np.where(norm > 1e-12, axis / np.where(norm > 1e-12, norm, 1.0), 0.0)  # a zero axis: no rotation
        half = 0.5 * v[0]
        return _rotation_rows(np.concatenate([np.cos(half)[None], np.sin(half) * unit]), "QUATERNION")
    if len(mode) != 3 or sorted(mode) != ["X", "Y", "Z"]:
        raise ValueError(f"unknown rotation mode {mode!r}")
    if v.shape[:1] != (3,):
        raise ValueError(f"Euler rotations have 3 values, got shape {np.moveaxis(v, 0, -1).shape}")
    # the turns composed as quaternions, element by element (a 3x3 product per frame and bone
    # costs more): each turn in the mode's order multiplies from the left
    half = 0.5 * v
    cos, sin = np.cos(half), np.sin(half)
    k = "XYZ".index(mode[0])
    w, xyz = cos[k], [np.zeros(v.shape[1:]) for _ in range(3)]
    xyz[k] = sin[k]
    x, y, z = xyz
    for letter in mode[1:]:
        k = "XYZ".index(letter)
        c, s = cos[k], sin[k]
        # (c, s e_k) * (w, x, y, z)
        if k == 0:
            w, x, y, z = c * w - s * x, c * x + s * w, c * y - s * z, c * z + s * y
        elif k == 1:
            w, x, y, z = c * w - s * y, c * x + s * z, c * y + s * w, c * z - s * x
        else:
            w, x, y, z = c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w
    return _unit_quaternion_rows(w, x, y, z)


def _unit_quaternion_rows(w: np.ndarray, x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Rotation matrices (3, 3, ...) of unit quaternions given by their components."""
    out = np.empty((3, 3) + np.shape(w))
    xx, yy, zz, xy, xz, yz, wx, wy, wz = x * x, y * y, z * z, x * y, x * z, y * z, w * x, w * y, w * z
    out[0, 0] = 1 - 2 * (yy + zz)
    out[0, 1] = 2 * (xy - wz)
    out[0, 2] = 2 * (xz + wy)
    out[1, 0] = 2 * (xy + wz)
    out[1, 1] = 1 - 2 * (xx + zz)
    out[1, 2] = 2 * (yz - wx)
    out[2, 0] = 2 * (xz - wy)
    out[2, 1] = 2 * (yz + wx)
    out[2, 2] = 1 - 2 * (xx + yy)
    return out


# Below this many matrices, a product of affine matrices stacked numpy's way (one call, a C loop
# over tiny 3 x 4 products) is faster than entry by entry (72 whole-array calls): the pose check
# of keys shared by every curve evaluates segments of a few frames, the measures whole clips.
ENTRYWISE_FROM = 2048


def _compose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for affine matrices stored by entry, the top three rows (3, 4, ...) (the last row
    0 0 0 1 implied), broadcast over the trailing axes.

    Entry by entry over whole arrays of bones and frames: numpy's stacked 4 x 4 products loop in C
    over 150,000 tiny matrices (1,500 frames x 101 bones) at about 3x the cost.
    """
    shape = np.broadcast_shapes(a.shape[2:], b.shape[2:])
    if math.prod(shape) < ENTRYWISE_FROM:
        stacked_a, stacked_b = np.moveaxis(a, (0, 1), (-2, -1)), np.moveaxis(b, (0, 1), (-2, -1))
        stacked = stacked_a[..., :3] @ stacked_b
        stacked[..., 3] += stacked_a[..., 3]
        return np.moveaxis(stacked, (-2, -1), (0, 1))
    out = np.empty((3, 4) + shape)
    for i in range(3):
        for j in range(4):
            entry = out[i, j]
            np.multiply(a[i, 0], b[0, j], out=entry)
            entry += a[i, 1] * b[1, j]
            entry += a[i, 2] * b[2, j]
            if j == 3:
                entry += a[i, 3]
    return out


def rest_relative(parents: Sequence[int] | np.ndarray, rest: ArrayLike) -> np.ndarray:
    """Each bone's rest matrix in its parent's rest space (a root's: in the armature's), (B, 4, 4).

    Examples
    --------
    >>> rest = np.stack([np.eye(4), np.eye(4)]); rest[1, :3, 3] = [0.0, 2.0, 0.0]
    >>> rest_relative([-1, 0], rest)[1, :3, 3]
    array([0., 2., 0.])
    """
    parents = np.asarray(parents, dtype=np.int64)
    rest = np.asarray(rest, dtype=float)
    relative = rest.copy()
    child = np.flatnonzero(parents >= 0)
    relative[child] = _affine_inverse(rest[parents[child]]) @ rest[child]
    return relative


def _affine_inverse(matrices: np.ndarray) -> np.ndarray:
    """Inverses of affine 4x4 matrices (..., 4, 4) (last row 0 0 0 1), in closed form.

    A general inverse of the 3x3 part (its adjugate over its determinant), not the transpose:
    Blender's rest matrices are rigid only to float32 precision, and on a rig many metres from its
    origin the difference shows. Not LAPACK: after the fitting kernel's threads have run, OpenBLAS's
    threads take 0.1-0.5 s to wake for the first LAPACK call on this 2-core machine, for a solve
    that takes 0.05 ms.
    """
    a, b, c = matrices[..., :3, 0], matrices[..., :3, 1], matrices[..., :3, 2]
    rows = np.stack([np.cross(b, c), np.cross(c, a), np.cross(a, b)], axis=-2)  # adjugate
    det = np.einsum("...i,...i->...", a, rows[..., 0, :])
    linear = rows / det[..., None, None]
    out = np.zeros(matrices.shape)
    out[..., :3, :3] = linear
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", linear, matrices[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def pose_matrices(parents: Sequence[int] | np.ndarray, rest: ArrayLike, locations: ArrayLike, rotations: ArrayLike,
                  scales: ArrayLike, relative: np.ndarray | None = None,
                  levels: list[np.ndarray] | None = None) -> np.ndarray:
    """Armature-space pose matrices of every bone at every frame, as Blender evaluates a plain rig.

    Parameters
    ----------
    parents : sequence of int, length B
        Parent index of each bone, -1 for roots (any order).
    rest : array_like, shape (B, 4, 4)
        Each bone's rest matrix in armature space (Blender's ``bone.matrix_local``).
    locations, scales : array_like, shape (F, B, 3)
        The pose bones' ``location`` and ``scale`` per frame.
    rotations : array_like, shape (F, B, 4) or (F, B, 3, 3)
        Their rotations as quaternions (w, x, y, z), any non-zero norm, or as matrices (other
        modes: :func:`rotation_matrices`).
    relative : ndarray, shape (B, 4, 4), optional
        :func:`rest_relative` of the rig, when it is at hand (it is computed otherwise).
    levels : list of ndarray of int, optional
        The bones by depth in the hierarchy, roots first, when at hand (found otherwise).

    Returns
    -------
    ndarray, shape (F, B, 4, 4)
        Blender's ``pose_bone.matrix`` at each frame.

    Raises
    ------
    ValueError
        On shapes that disagree, a cycle in the hierarchy or a zero quaternion.

    Examples
    --------
    >>> rest = np.stack([np.eye(4), np.eye(4)]); rest[1, 1, 3] = 1.0  # a child 1 up Y
    >>> q = np.zeros((1, 2, 4)); q[..., 0] = 1.0; q[0, 0] = [0.0, 0.0, 0.0, 1.0]  # root: 180 deg about Z
    >>> m = pose_matrices([-1, 0], rest, np.zeros((1, 2, 3)), q, np.ones((1, 2, 3)))
    >>> m[0, 1, :3, 3].round(6) + 0.0
    array([ 0., -1.,  0.])
    """
    parents = np.asarray(parents, dtype=np.int64)
    rest = np.asarray(rest, dtype=float)
    loc = np.asarray(locations, dtype=float)
    scale = np.asarray(scales, dtype=float)
    n_bones = parents.size
    if rest.shape != (n_bones, 4, 4):
        raise ValueError(f"{n_bones} bones but rest matrices of shape {rest.shape}")
    if loc.ndim != 3 or loc.shape[1:] != (n_bones, 3) or scale.shape != loc.shape:
        raise ValueError(f"locations and scales must have shape (F, {n_bones}, 3), got {loc.shape} and {scale.shape}")
    rot = np.asarray(rotations, dtype=float)
    if rot.shape == loc.shape[:2] + (4,):
        rot_rows = _rotation_rows(rot.transpose(2, 1, 0), "QUATERNION")
    elif rot.shape == loc.shape[:2] + (3, 3):
        rot_rows = rot.transpose(2, 3, 1, 0)
    else:
        raise ValueError(f"rotations must have shape (F, {n_bones}, 4) or (F, {n_bones}, 3, 3), got {np.shape(rotations)}")
    if relative is None:
        relative = rest_relative(parents, rest)
    rows = _pose_rows(parents, relative, loc.transpose(2, 1, 0), rot_rows, scale.transpose(2, 1, 0),
                      _levels(parents) if levels is None else levels)
    out = np.zeros(loc.shape[:2] + (4, 4))
    out[..., :3, :] = rows.transpose(3, 2, 0, 1)
    out[..., 3, 3] = 1.0
    return out


def _pose_rows(parents: np.ndarray, relative: np.ndarray, loc: np.ndarray, rot: np.ndarray, scale: np.ndarray,
               levels: list[np.ndarray]) -> np.ndarray:
    """:func:`pose_matrices` in the pose model's layout: bones, then frames, last; locations and
    scales (3, B, F), rotations (3, 3, B, F); returns the matrices' top rows (3, 4, B, F)."""
    basis = np.empty((3, 4) + loc.shape[1:])
    basis[:, :3] = rot * scale[None]  # R @ diag(scale)
    basis[:, 3] = loc
    # every bone's matrix in its parent's pose space at once, then down the hierarchy a level at a
    # time (a level's bones gathered: whole rows of frames, bones before frames)
    out = _compose(np.moveaxis(relative[:, :3, :], 0, -1)[..., None], basis)
    for level in levels:
        above = parents[level]
        if above[0] >= 0:  # a level below the roots: bones of one depth have parents of one depth
            out[:, :, level] = _compose(out[:, :, above], out[:, :, level])
    return out


def _world_points(rows: np.ndarray, object_matrix: ArrayLike, points: ArrayLike) -> np.ndarray:
    """``object_matrix @ pose_matrix @ point`` from :func:`_pose_rows`' layout: (3, P, B, F)."""
    return _placed_points(_compose(np.asarray(object_matrix, dtype=float)[:3, :, None, None], rows), points)


def matrix_vertex_rows(pose_matrices: ArrayLike, world_matrices: ArrayLike, points: ArrayLike) -> np.ndarray:
    """World-space points of bones from their evaluated matrices, in :meth:`PoseModel.vertex_rows`'
    layout: ``world_matrix @ pose_matrix @ point`` for every frame, bone and point.

    Parameters
    ----------
    pose_matrices : array_like, shape (F, B, 4, 4)
        Each bone's pose matrix in armature space at each frame (affine: last row 0 0 0 1; float32
        as Blender stores them is fine, and a transposed view of column-major storage too).
    world_matrices : array_like, shape (F, 4, 4)
        The armature's world matrix at each frame (affine).
    points : array_like, shape (B, P, 4)
        Homogeneous points in each bone's own space (:func:`shell_points`).

    Returns
    -------
    ndarray, shape (3, P, B, F)
        Coordinates first, frames last (compare two with :func:`largest_distances`).

    Examples
    --------
    >>> pose = np.tile(np.eye(4), (2, 1, 1, 1)); pose[1, 0, :3, 3] = [0.0, 0.0, 1.0]  # frame 1: up 1
    >>> matrix_vertex_rows(pose, np.tile(np.eye(4), (2, 1, 1)), shell_points([2.0], 0.5))[:, 6, 0]
    array([[0., 0.],
           [2., 2.],
           [0., 1.]])
    """
    pose = np.moveaxis(np.asarray(pose_matrices)[..., :3, :], (0, 1), (-1, -2))  # (3, 4, B, F)
    world = np.moveaxis(np.asarray(world_matrices, dtype=float)[:, :3, :], 0, -1)[:, :, None, :]  # (3, 4, 1, F)
    return _placed_points(_compose(world, pose), points)


def _placed_points(world: np.ndarray, points: ArrayLike) -> np.ndarray:
    """Points (B, P, 4) of each bone placed by its matrices' top rows (3, 4, B, F): (3, P, B, F)."""
    points = np.asarray(points, dtype=float)
    if math.prod(world.shape[2:]) < ENTRYWISE_FROM:  # (B, F, 3, 4) @ (B, 1, 4, P)
        stacked = np.moveaxis(world, (0, 1), (-2, -1)) @ np.swapaxes(points, -1, -2)[:, None]
        return np.moveaxis(stacked, (0, 1, 2, 3), (2, 3, 0, 1))
    used, ones = points.any(axis=0), (points == 1.0).all(axis=0)  # (P, 4): a shell point has one axis and w = 1
    out = np.zeros((3, points.shape[1]) + world.shape[2:])
    for p, k in zip(*np.nonzero(used), strict=True):
        for i in range(3):
            out[i, p] += world[i, k] if ones[p, k] else world[i, k] * points[:, p, k, None]
    return out


def largest_distances(points: ArrayLike, reference: ArrayLike) -> np.ndarray:
    """Each bone's largest distance between two sets of its points over every point and frame.

    Parameters
    ----------
    points, reference : array_like, shape (3, P, B, F)
        World-space points in :meth:`PoseModel.vertex_rows`' layout.

    Returns
    -------
    ndarray, shape (B,)
        In the points' units; zeros without frames.

    Examples
    --------
    >>> a = np.zeros((3, 7, 2, 4)); b = a.copy(); b[2, 6, 1, 3] = 0.5
    >>> largest_distances(a, b)
    array([0. , 0.5])
    """
    moved = np.asarray(points, dtype=float) - np.asarray(reference, dtype=float)
    if moved.shape[-1] == 0:
        return np.zeros(moved.shape[2])
    squared = moved[0] * moved[0]
    squared += moved[1] * moved[1]
    squared += moved[2] * moved[2]
    return np.sqrt(squared.max(axis=(0, 2)))


def pose_vertices(parents: Sequence[int] | np.ndarray, rest: ArrayLike, locations: ArrayLike, rotations: ArrayLike,
                  scales: ArrayLike, object_matrix: ArrayLike, points: ArrayLike,
                  relative: np.ndarray | None = None, levels: list[np.ndarray] | None = None) -> np.ndarray:
    """World-space points of every bone at every frame: ``object_matrix @ pose_matrix @ point``.

    Parameters
    ----------
    parents, rest, locations, rotations, scales, relative, levels
        As :func:`pose_matrices`.
    object_matrix : array_like, shape (4, 4)
        The armature object's world matrix.
    points : array_like, shape (B, P, 4)
        Homogeneous points in each bone's space (:func:`shell_points`).

    Returns
    -------
    ndarray, shape (F, B, P, 3)

    Examples
    --------
    >>> one = np.ones((1, 1, 3)); q = np.array([[[1.0, 0, 0, 0]]])
    >>> pose_vertices([-1], np.eye(4)[None], 0 * one, q, one, np.eye(4), shell_points([1.0], 0.1))[0, 0, 6]
    array([0., 1., 0.])
    """
    pose = pose_matrices(parents, rest, locations, rotations, scales, relative, levels)
    rows = pose[..., :3, :].transpose(2, 3, 1, 0)
    return np.ascontiguousarray(_world_points(rows, object_matrix, points).transpose(3, 2, 1, 0))


TRANSFORMS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")


@dataclass(frozen=True)
class PoseModel:
    """A plain rig and the curves that drive it: world-space virtual vertices from curve values.

    Attributes
    ----------
    parents : ndarray of int, shape (B,)
        Parent of each bone, -1 for roots.
    rest : ndarray, shape (B, 4, 4)
        Rest matrices in armature space (``bone.matrix_local``).
    points : ndarray, shape (B, P, 4)
        Homogeneous points in each bone's space (:func:`shell_points`).
    modes : tuple of str
        Each bone's rotation mode.
    connected : ndarray of bool, shape (B,)
        Bones connected to their parent: Blender ignores their location.
    held : dict of str to ndarray
        Each of :data:`TRANSFORMS` for every bone, (B, 3) or (B, 4): what the bones hold where no
        curve drives them.
    columns : tuple of (int, str, int)
        Per curve: the bone, the transform (one of :data:`TRANSFORMS`) and the component it drives;
        bone -1 for a curve that drives none.
    object_matrix : ndarray, shape (4, 4)
        The armature object's world matrix.

    Examples
    --------
    >>> held = {"location": np.zeros((1, 3)), "rotation_quaternion": np.array([[1.0, 0, 0, 0]]),
    ...         "rotation_euler": np.zeros((1, 3)), "rotation_axis_angle": np.array([[0.0, 0, 1, 0]]),
    ...         "scale": np.ones((1, 3))}
    >>> model = PoseModel(np.array([-1]), np.eye(4)[None], shell_points([1.0], 0.1), ("XYZ",),
    ...                   np.zeros(1, bool), held, ((0, "rotation_euler", 2),), np.eye(4))
    >>> model.vertices(np.array([[np.pi / 2]]))[0, 0, 6].round(6) + 0.0  # the tail turned about Z
    array([-1.,  0.,  0.])
    """

    parents: np.ndarray
    rest: np.ndarray
    points: np.ndarray
    modes: tuple[str, ...]
    connected: np.ndarray
    held: dict[str, np.ndarray]
    columns: tuple[tuple[int, str, int], ...]
    object_matrix: np.ndarray

    @cached_property
    def relative(self) -> np.ndarray:
        """:func:`rest_relative` of the rig, computed once."""
        return rest_relative(self.parents, self.rest)

    @cached_property
    def levels(self) -> list[np.ndarray]:
        """The bones by depth in the hierarchy, roots first, found once."""
        return _levels(np.asarray(self.parents, dtype=np.int64))

    @cached_property
    def _drives(self) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
        """Per transform: the columns that drive it, their bones and components (many small
        checks of a few frames each: no loop over the curves per call)."""
        out = []
        for prop in TRANSFORMS:
            rows = [(c, bone, index) for c, (bone, p, index) in enumerate(self.columns) if bone >= 0 and p == prop]
            if rows:
                cols, bones, comps = (np.array(r, dtype=np.int64) for r in zip(*rows, strict=True))
                out.append((prop, cols, bones, comps))
        return out

    @cached_property
    def _mode_bones(self) -> list[tuple[str, str, np.ndarray]]:
        """Per rotation mode: the property it reads and its bones."""
        out = []
        for mode in sorted(set(self.modes)):
            bones = np.array([b for b, m in enumerate(self.modes) if m == mode], dtype=np.int64)
            source = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(mode, "rotation_euler")
            out.append((mode, source, bones))
        return out

    @cached_property
    def _read(self) -> tuple[str, ...]:
        """The transforms the evaluation reads: location, scale and the rotation modes' own."""
        return tuple(dict.fromkeys(("location", "scale", *(source for _, source, _ in self._mode_bones))))

    def vertex_rows(self, values: ArrayLike) -> np.ndarray:
        """World-space points (3, P, B, F), coordinates first and frames last, with the curves at
        ``values`` (F, M), M = len(columns): :meth:`vertices` in the layout the model computes in
        (compare two with :func:`largest_distances`)."""
        columns = np.asarray(values, dtype=float).T
        n_frames = columns.shape[1]
        props = {p: np.repeat(self.held[p].T[:, :, None], n_frames, axis=2) for p in self._read}
        for prop, cols, bones, comps in self._drives:
            if prop in props:  # (a rotation in a mode no bone is in moves nothing, as in Blender)
                props[prop][comps, bones] = columns[cols]
        props["location"][:, self.connected] = 0.0  # (BKE_pchan_to_mat4: a connected bone keeps its head)
        rotations = np.empty((3, 3, len(self.modes), n_frames))
        for mode, source, bones in self._mode_bones:
            rotations[:, :, bones] = _rotation_rows(props[source][:, bones], mode)
        rows = _pose_rows(np.asarray(self.parents, dtype=np.int64), self.relative, props["location"], rotations,
                          props["scale"], self.levels)
        return _world_points(rows, self.object_matrix, self.points)

    def vertices(self, values: ArrayLike) -> np.ndarray:
        """World-space points (F, B, P, 3) with the curves at ``values`` (F, M), M = len(columns)."""
        return np.ascontiguousarray(self.vertex_rows(values).transpose(3, 2, 1, 0))
