"""Mocap compaction with spatial keyframes, and its comparison with temporal keyframes.

Costa and Esperança, "Enhancing Spatial Keyframe Animations with Motion Capture", §3 and §5: a
clip becomes its key poses plus the 2D projection of every frame (a trajectory); playing it back
back-projects the trajectory through the RBF of the key poses. Sizes follow the seed's eqs. (2)-(4)
(numbers stored; the root translation is left to a separate scheme, as in the seed), the error is
eq. (1) summed over frames and divided by frames and joints ("error per frame per joint").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .backprojection import RotationRBF, fit_rotation_rbf, optimise_projection
from .distance import distance_matrix, joint_weights, pose_distance, pose_vectors
from .projection import project
from .rotations import as_matrices, as_quaternions
from .selection import select_keyframes
from .temporal import TEMPORAL_SCHEMES, interpolate_temporal

__all__ = ["MARKER_SPACING", "SpatialKeyframeClip", "compact_clip", "compare_schemes", "error_per_frame_per_joint",
           "spatial_size", "temporal_size", "uncompressed_size"]


def uncompressed_size(n_frames: float, n_joints: int, header: float = 0.0) -> float:
    """Eq. (2): ``m(f) = h + f (3 dof + 3)``, numbers stored for the full clip.

    Three rotation angles per joint and the root's translation per frame.

    Parameters
    ----------
    n_frames : float
    n_joints : int
        The seed's ``dof`` (31 for CMU).
    header : float
        ``h``, the skeleton description.

    Returns
    -------
    float

    Examples
    --------
    >>> uncompressed_size(100, 31)
    9600.0
    """
    return float(header + n_frames * (3 * n_joints + 3))


def temporal_size(n_frames: float, n_joints: int, ratio: float, header: float = 0.0) -> float:
    """Eq. (3): ``c_t(f) = h + f (r_kf (3 dof + 1) + 3)``: keys with a frame index, root path.

    Parameters
    ----------
    n_frames : float
    n_joints : int
    ratio : float
        Keyframes per frame, ``r_kf``.
    header : float

    Returns
    -------
    float

    Examples
    --------
    >>> round(temporal_size(1e6, 31, 0.03) / uncompressed_size(1e6, 31), 4)  # the seed's 6.06 %
    0.0606
    """
    return float(header + n_frames * (ratio * (3 * n_joints + 1) + 3))


def spatial_size(n_frames: float, n_joints: int, ratio: float, header: float = 0.0) -> float:
    """Eq. (4): ``c_skf(f) = h + f (r_kf (3 dof + 1) + 5)``: eq. (3) plus a 2D point per frame.

    Parameters
    ----------
    n_frames : float
    n_joints : int
    ratio : float
    header : float

    Returns
    -------
    float

    Examples
    --------
    >>> round(spatial_size(1e6, 31, 0.03) / uncompressed_size(1e6, 31), 4)  # the seed's 8.15 %
    0.0815
    """
    return float(header + n_frames * (ratio * (3 * n_joints + 1) + 5))


def error_per_frame_per_joint(original: ArrayLike, reconstructed: ArrayLike,
                              weights: ArrayLike | None = None) -> float:
    """The seed's reconstruction error: eq. (1) summed over frames, over frames and joints.

    Parameters
    ----------
    original, reconstructed : array_like, shape (N, J, 4) or (N, J, 3, 3)
    weights : array_like, shape (J,), optional
        Eq. (1)'s joint weights (the seed's: :func:`~anim_signals.spatialkeys.distance.joint_weights`).

    Returns
    -------
    float
        Weighted radians per frame per joint.

    Examples
    --------
    >>> q = np.zeros((4, 2, 4)); q[..., 0] = 1.0
    >>> error_per_frame_per_joint(q, q)
    0.0
    """
    d = pose_distance(original, reconstructed, weights)
    n, j = np.asarray(original).shape[:2]
    return float(np.sum(d) / (n * j))


MARKER_SPACING = 1e-6
"""Markers closer than this fraction of the layout's extent count as one point (the RBF through
them would be singular): adding or moving a marker there is refused."""


@dataclass(frozen=True)
class SpatialKeyframeClip:
    """A clip compacted to spatial keyframes: key poses, their markers and a 2D point per frame.

    Built by :func:`compact_clip`, every marker sits on its key frame's point of the trajectory.
    Edited on the canvas (Igarashi et al.'s spatial keyframing), markers move freely and new ones
    come from poses that are no frame of the clip: ``marker_points`` then holds the markers and a
    key of -1 marks a marker without a frame. The trajectory stays as it was; playing it back
    through the edited markers gives the edited motion.

    Attributes
    ----------
    keys : ndarray of int, shape (M,)
        Frames (trajectory rows) of the key poses; -1 for a marker added from a pose.
    key_rotations : ndarray, shape (M, J, 3, 3)
    trajectory : ndarray, shape (N, 2)
        Projection of every frame (key frames at their markers until a marker is moved).
    blend : str
        Rotation blend of the back-projection.
    marker_points : ndarray, shape (M, 2), or None
        The markers when they are not ``trajectory[keys]`` (after an edit).

    Examples
    --------
    >>> from anim_signals.spatialkeys.generated import articulated_chain
    >>> c = articulated_chain(40, 3)
    >>> sk = compact_clip(c.quaternions, c.parents, count=5, optimise=False)
    >>> moved = sk.with_marker_moved(0, sk.markers[0] + 0.1)
    >>> added = moved.with_marker_added(c.quaternions[7], (0.5, 0.5))
    >>> added.keys[-1], len(added.markers), added.without_marker(5).keys.tolist() == moved.keys.tolist()
    (-1, 6, True)
    """

    keys: np.ndarray
    key_rotations: np.ndarray
    trajectory: np.ndarray
    blend: str = "log"
    marker_points: np.ndarray | None = None

    @property
    def markers(self) -> np.ndarray:
        """The key poses' 2D points, (M, 2)."""
        if self.marker_points is not None:
            return self.marker_points
        return self.trajectory[self.keys]

    def _edited(self, keys: np.ndarray, rotations: np.ndarray, markers: np.ndarray) -> SpatialKeyframeClip:
        # copies: an edit must not share a writable array with the clip it came from
        return SpatialKeyframeClip(np.array(keys, dtype=int), np.array(rotations, dtype=float), self.trajectory,
                                   self.blend, np.array(markers, dtype=float).reshape(-1, 2))

    def _check_place(self, xy: ArrayLike, skip: int = -1) -> np.ndarray:
        p = np.asarray(xy, dtype=float).reshape(-1)
        if p.shape != (2,) or not np.all(np.isfinite(p)):
            raise ValueError(f"A marker's position must be two finite numbers, got {np.asarray(xy).tolist()}")
        others = np.delete(self.markers, skip, axis=0) if skip >= 0 else self.markers
        everything = np.concatenate([self.trajectory, self.markers, p[None]])
        extent = float(np.max(np.ptp(everything, axis=0))) if len(everything) > 1 else 1.0
        if len(others) and float(np.min(np.linalg.norm(others - p, axis=1))) <= MARKER_SPACING * max(extent, 1e-12):
            raise ValueError("Another marker is already at that point: markers must be distinct points of the plane")
        return p

    def _index(self, i: int) -> int:
        if not -len(self.keys) <= int(i) < len(self.keys):
            raise ValueError(f"Marker {i} does not exist: the model has {len(self.keys)} markers (0-{len(self.keys) - 1})")
        return int(i) % len(self.keys)

    def with_marker_moved(self, i: int, xy: ArrayLike) -> SpatialKeyframeClip:
        """The clip with marker ``i`` at ``xy`` (its key pose unchanged).

        Raises
        ------
        ValueError
            On an unknown marker, a non-finite point or one on another marker.
        """
        i = self._index(i)
        markers = self.markers.copy()
        markers[i] = self._check_place(xy, skip=i)
        return self._edited(self.keys, self.key_rotations, markers)

    def with_marker_added(self, rotations: ArrayLike, xy: ArrayLike, frame: int = -1) -> SpatialKeyframeClip:
        """The clip with one more marker: pose ``rotations`` (J, 4) or (J, 3, 3) at ``xy``.

        Parameters
        ----------
        rotations : array_like, shape (J, 4) or (J, 3, 3)
            The new key pose (the rig's current pose, say), in the clip's joint order.
        xy : (float, float)
        frame : int
            Its trajectory row, or -1 for a pose that is no frame of the clip.

        Raises
        ------
        ValueError
            On a pose of another joint count, non-finite values, a point on another marker, or a
            frame that is no row of the trajectory (nor -1).
        """
        if not -1 <= int(frame) < len(self.trajectory):
            raise ValueError(f"Frame {frame} is no row of the trajectory (0-{len(self.trajectory) - 1}, "
                             "or -1 for a pose that is no frame of the clip)")
        m = as_matrices(rotations)
        if m.shape != self.key_rotations.shape[1:]:
            raise ValueError(f"The pose has {m.shape[0] if m.ndim == 3 else '?'} joints; the model has "
                             f"{self.key_rotations.shape[1]}")
        if not np.all(np.isfinite(m)):
            raise ValueError("The pose holds NaN or infinite rotations")
        p = self._check_place(xy)
        return self._edited(np.append(self.keys, int(frame)), np.concatenate([self.key_rotations, m[None]]),
                            np.concatenate([self.markers, p[None]]))

    def without_marker(self, i: int) -> SpatialKeyframeClip:
        """The clip without marker ``i``; at least three markers stay (the plane must stay spanned).

        Raises
        ------
        ValueError
            On an unknown marker or when only three are left.
        """
        i = self._index(i)
        if len(self.keys) <= 3:
            raise ValueError("Only 3 markers left: at least 3 are needed to span the plane")
        return self._edited(np.delete(self.keys, i), np.delete(self.key_rotations, i, axis=0),
                            np.delete(self.markers, i, axis=0))

    def rbf(self) -> RotationRBF:
        """The back-projection through the markers; fit once and keep it for live posing."""
        return fit_rotation_rbf(self.markers, self.key_rotations, blend=self.blend)

    def reconstruct(self, points: ArrayLike | None = None) -> np.ndarray:
        """Back-project the trajectory (or any points of the plane) to poses, (K, J, 3, 3)."""
        return self.rbf().evaluate(self.trajectory if points is None else points)

    def size(self, header: float = 0.0) -> float:
        """Numbers stored (eq. (4) with the clip's own key count)."""
        n, m, j = len(self.trajectory), len(self.keys), self.key_rotations.shape[1]
        return spatial_size(n, j, m / n, header)

    def to_dict(self) -> dict:
        """Plain lists and strings (for ID properties or JSON); :meth:`from_dict` restores it."""
        return {"keys": [int(k) for k in self.keys],
                "key_rotations": as_quaternions(self.key_rotations).reshape(-1).tolist(),
                "n_joints": int(self.key_rotations.shape[1]),
                "trajectory": self.trajectory.reshape(-1).tolist(), "blend": self.blend,
                "markers": self.markers.reshape(-1).tolist()}

    @classmethod
    def from_dict(cls, data: dict) -> SpatialKeyframeClip:
        """The clip saved by :meth:`to_dict` (rotations stored as quaternions, exact to rounding).

        Raises
        ------
        ValueError
            On arrays that do not fit together (a damaged record).
        """
        keys = np.asarray(data["keys"], dtype=int).reshape(-1)
        q = np.asarray(data["key_rotations"], dtype=float).reshape(len(keys), int(data["n_joints"]), 4)
        traj = np.asarray(data["trajectory"], dtype=float).reshape(-1, 2)
        if np.any(keys >= len(traj)) or np.any(keys < -1):
            raise ValueError(f"marker frames {keys.tolist()} do not fit a trajectory of {len(traj)} frames")
        markers = None
        if data.get("markers") is not None and len(data["markers"]):
            markers = np.asarray(data["markers"], dtype=float).reshape(len(keys), 2)
            if np.all(keys >= 0) and np.array_equal(markers, traj[keys]):
                markers = None
        elif np.any(keys < 0):
            raise ValueError("markers without a frame need their stored positions")
        return cls(keys, as_matrices(q), traj, str(data.get("blend", "log")), markers)


def compact_clip(rotations: ArrayLike, parents: Sequence[int] | None = None, *,
                 ratio: float | None = 0.03, count: int | None = None, selection: str = "uniform",
                 projection: str = "mds", first: str = "mds", optimise: bool = True, seed: int = 0,
                 weights: ArrayLike | None = None, distances: ArrayLike | None = None,
                 blend: str = "log", keep_moving: bool = False) -> SpatialKeyframeClip:
    """Compact a clip to spatial keyframes (Costa and Esperança, Figures 3 and 4).

    Parameters
    ----------
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
        Local joint rotations per frame.
    parents : sequence of int, optional
        For the seed's joint weights; without it (and without ``weights``) all joints weigh 1.
    ratio, count
        Key count (:func:`~anim_signals.spatialkeys.selection.keyframe_count`); ``count`` wins
        when given.
    selection : {'uniform', 'scs', 'pb', 'rols'}
    projection : str
        ``pca``, ``mds``, ``force``, ``isomap``, ``lle``, ``tsne`` or ``rbfp`` (two-step, keys
        projected with ``first``).
    first : str
        RBFP's first step.
    optimise : bool
        Apply Algorithm 1 (alpha = delta = 0.5) to the projection.
    seed : int
    weights : array_like, shape (J,), optional
        Overrides the weights from ``parents``.
    distances : array_like, shape (N, N), optional
        Eq. (1) distances if already computed.
    blend : {'log', 'matrix'}
    keep_moving : bool
        Algorithm 1 read as "descend until stuck" rather than the printed one step per frame
        (:func:`~anim_signals.spatialkeys.backprojection.optimise_projection`).

    Returns
    -------
    SpatialKeyframeClip

    Examples
    --------
    >>> from anim_signals.spatialkeys.generated import articulated_chain
    >>> c = articulated_chain(60, 3)
    >>> sk = compact_clip(c.quaternions, c.parents, count=6)
    >>> sk.trajectory.shape, len(sk.keys)
    ((60, 2), 6)
    """
    mats = as_matrices(rotations)
    w = (np.asarray(weights, dtype=float) if weights is not None
         else joint_weights(parents) if parents is not None else np.ones(mats.shape[1]))
    d = distance_matrix(mats, w) if distances is None else np.asarray(distances, dtype=float)
    if count is not None:
        ratio = None
    keys = select_keyframes(selection, mats, ratio=ratio, count=count, weights=w, distances=d)
    vectors = pose_vectors(mats, w) if projection in ("pca", "lle") or first in ("pca", "lle") else None
    points = project(projection, distances=d, vectors=vectors, seed=seed, keys=keys, first=first)
    if optimise:
        points, _ = optimise_projection(points, keys, mats, w, blend=blend, keep_moving=keep_moving)
    return SpatialKeyframeClip(keys, mats[keys], points, blend)


def compare_schemes(rotations: ArrayLike, parents: Sequence[int] | None = None, *,
                    ratio: float | None = 0.03, count: int | None = None,
                    selections: Sequence[str] = ("uniform",),
                    projections: Sequence[str] = ("mds", "tsne"), optimise: Sequence[bool] = (False, True),
                    temporal: Sequence[str] = TEMPORAL_SCHEMES, seed: int = 0,
                    header: float = 0.0, keep_moving: bool = False) -> list[dict]:
    """Compact and reconstruct a clip with temporal and spatial schemes, side by side.

    Parameters
    ----------
    rotations : array_like, shape (N, J, 4) or (N, J, 3, 3)
    parents : sequence of int, optional
    ratio, count
        Key count.
    selections : sequence of str
    projections : sequence of str
        Spatial schemes (``rbfp`` uses MDS as first step).
    optimise : sequence of bool
        Run each spatial scheme without and / or with Algorithm 1.
    temporal : sequence of str
        Temporal schemes (:data:`~anim_signals.spatialkeys.temporal.TEMPORAL_SCHEMES`).
    seed : int
    header : float
        Header size for the size columns.
    keep_moving : bool
        Algorithm 1's reading (see :func:`compact_clip`).

    Returns
    -------
    list of dict
        One row per scheme: ``kind`` ('temporal' or 'spatial'), ``scheme``, ``selection``,
        ``optimised``, ``keys``, ``size`` (eq. (3) or (4)), ``size_ratio`` (to eq. (2)),
        ``error`` (per frame per joint).

    Examples
    --------
    >>> from anim_signals.spatialkeys.generated import articulated_chain
    >>> c = articulated_chain(50, 3)
    >>> rows = compare_schemes(c.quaternions, c.parents, count=5, projections=("mds",))
    >>> [r["scheme"] for r in rows]
    ['linear', 'hermite', 'slerp', 'rbf', 'mds', 'mds']
    """
    mats = as_matrices(rotations)
    n, j = mats.shape[:2]
    w = joint_weights(parents) if parents is not None else np.ones(j)
    d = distance_matrix(mats, w)
    full = uncompressed_size(n, j, header)
    frames = np.arange(n)
    rows = []
    for sel in selections:
        keys = select_keyframes(sel, mats, ratio=None if count is not None else ratio, count=count,
                                weights=w, distances=d)
        r_kf = len(keys) / n
        for scheme in temporal:
            rec = interpolate_temporal(scheme, keys, mats[keys], frames)
            size = temporal_size(n, j, r_kf, header)
            rows.append({"kind": "temporal", "scheme": scheme, "selection": sel, "optimised": False,
                         "keys": len(keys), "size": size, "size_ratio": size / full,
                         "error": error_per_frame_per_joint(mats, rec, w)})
        for proj in projections:
            vectors = pose_vectors(mats, w) if proj in ("pca", "lle") else None
            base = project(proj, distances=d, vectors=vectors, seed=seed, keys=keys)
            for opt in optimise:
                pts = optimise_projection(base, keys, mats, w, keep_moving=keep_moving)[0] if opt else base
                sk = SpatialKeyframeClip(keys, mats[keys], pts)
                size = sk.size(header)
                rows.append({"kind": "spatial", "scheme": proj, "selection": sel, "optimised": bool(opt),
                             "keys": len(keys), "size": size, "size_ratio": size / full,
                             "error": error_per_frame_per_joint(mats, sk.reconstruct(), w)})
    return rows
