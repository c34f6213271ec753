"""The pose-space representation psi = h o g o f and its reconstruction from frames.

Cashman and Hormann, "A continuous, editable representation for deforming mesh sequences with
separate signals for time, pose and shape" (section numbers below refer to it):
:func:`build_pose_space` chooses m, l, k (given, from one tolerance, or the interpolating case) and
fits the three signals of :mod:`.signals`; :class:`PoseSpace` holds them, evaluates psi and returns a
new model for every edit (§4). :func:`default_tolerance` and :func:`is_static` are the checks and
defaults a caller applies to raw frames before building.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike

from ..splines import bspline
from ..validation import (
    MAX_MAGNITUDE,
    finite_array,
    finite_result,
    finite_scalar,
    positive,
    positive_int,
)
from .signals import (
    DEGREE,
    PoseSignal,
    ShapeSignal,
    TimeSignal,
    _frames_matrix,
    _spread,
    _time_control_points,
    centripetal_params,
    control_reach,
    fit_pose_signal,
    fit_time_signal,
    mds_positions,
    piegl_tiller_knots,
    shape_signal,
)
from .sites import _greedy_sites

__all__ = [
    "DEFAULT_TOLERANCE_FRACTION",
    "STATIC_SPAN",
    "PoseSpace",
    "bbox_diagonal",
    "build_pose_space",
    "default_tolerance",
    "is_static",
]

DEFAULT_TOLERANCE_FRACTION = 0.002  # of the bounding-box diagonal of the mean frame (meshes)
STATIC_SPAN = 1e-6  # relative: frames whose values change less than this are a static sequence

@dataclass(frozen=True)
class PoseSpace:
    """A frame sequence as psi = h o g o f: shape, pose and time signals (:func:`build_pose_space`).

    Immutable: every edit (§4) returns a new PoseSpace; :meth:`to_dict` / :meth:`from_dict`
    round-trip it through plain arrays.

    Attributes
    ----------
    shape : ShapeSignal
    latent : ndarray, shape (n, m)
        Shape coordinates x_i of the frames.
    positions : ndarray, shape (n, 2)
        Pose-space positions p_i.
    pose : PoseSignal
    time : TimeSignal
    site_order : ndarray of int, shape (n,)
        Greedy site order; the sites are ``positions[site_order[:site_count]]``.  Past the sites
        the frames follow by their error under the fitted pose signal, largest first (the first
        of them is the greedy's next site; an interpolating build orders only its first four).
    pins : dict of int to ndarray, shape (2,)
        Frames pinned to pose-space points.
    residual : float
        Sum of squared shape-signal residuals of the frames.
    row_size : int
        Values per row (3: a vertex) for per-row errors.
    site_count : int
        Prefix of ``site_order`` used (l before merging repeated poses); 0: ``pose.l``.
    source_frames : ndarray, shape (n,), or None
        Frame numbers of the reconstructed frames (rows of ``positions``).
    time_authored : bool
        The time signal was edited by hand: relayouts (pins) keep it.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0.0, 2 * np.pi, 24, endpoint=False)
    >>> z = np.column_stack([np.cos(t), np.sin(t), np.cos(2 * t), 0.5 * np.sin(3 * t)])  # 24 frames
    >>> space = build_pose_space(z, row_size=1)
    >>> space.n, space.m, space.l, space.k  # the interpolating case: exact at every frame
    (24, 4, 24, 26)
    >>> bool(np.allclose(space.evaluate(space.frames), z))
    True
    >>> space.resample(np.linspace(1.0, 24.0, 47)).shape  # half speed
    (47, 4)
    >>> small = build_pose_space(z, row_size=1, tolerance=0.05)
    >>> bool(small.reconstruction_error(z)["rms"] <= 0.05), small.k < space.k
    (True, True)
    """

    shape: ShapeSignal
    latent: np.ndarray
    positions: np.ndarray
    pose: PoseSignal
    time: TimeSignal
    site_order: np.ndarray
    pins: dict[int, np.ndarray] = field(default_factory=dict)
    residual: float = 0.0
    row_size: int = 3
    site_count: int = 0
    source_frames: np.ndarray | None = None
    time_authored: bool = False

    @property
    def n(self) -> int:
        """Reconstructed frames."""
        return int(self.positions.shape[0])

    @property
    def k(self) -> int:
        """Time-signal control points."""
        return self.time.k

    @property
    def l(self) -> int:  # noqa: E743  (the paper's name)
        """Pose-signal sites."""
        return self.pose.l

    @property
    def m(self) -> int:
        """Shape-subspace dimension."""
        return self.shape.m

    @property
    def frames(self) -> np.ndarray:
        """Frame numbers the time signal plays (after a sketch, loop or re-timing: the new ones)."""
        return self.time.frames

    @property
    def reconstructed_frames(self) -> np.ndarray:
        """Frame numbers of the frames the model was built from (one per row of ``positions``)."""
        if self.source_frames is not None:
            return self.source_frames
        return self.time.frames if self.time.frames.shape[0] == self.n else np.arange(1.0, self.n + 1.0)

    @property
    def time_edited(self) -> bool:
        """The time signal no longer plays the reconstructed frames (sketch, loop, re-timing)."""
        return self.time.frames.shape[0] != self.n or not np.array_equal(self.time.frames, self.reconstructed_frames)

    def weights_at(self, p: np.ndarray) -> np.ndarray:
        """g(p): shape coordinates (shape-key values) at pose-space points (..., 2) -> (..., m)."""
        return self.pose.evaluate(p)

    def at(self, p: np.ndarray) -> np.ndarray:
        """h(g(p)): the shape at pose-space points (..., 2) -> (..., d)."""
        return self.shape.decode(self.pose.evaluate(p))

    def evaluate(self, times: np.ndarray) -> np.ndarray:
        """psi(t) = h(g(f(t))) for frame times (...,) -> (..., d)."""
        return self.at(self.time.evaluate(times))

    def latent_error(self) -> np.ndarray:
        """Per-frame squared error (n,) of g(f(i)) against x_i (the part of eq. 2 inside the subspace).

        Raises
        ------
        ValueError
            When the time signal was edited (the frames are no longer the reconstructed ones).
        """
        if self.time_edited:
            raise ValueError("the time signal was edited (new frames): the reconstruction error refers to the "
                             "original frames and is not defined for the edited sequence")
        return np.sum((self.latent - self.weights_at(self.time.evaluate(self.frames))) ** 2, axis=1)

    def reconstruction_error(self, z: np.ndarray | None = None) -> dict[str, float]:
        """Reconstruction error (eq. 2) as RMS and max error per row (vertex) over the frames.

        Parameters
        ----------
        z : ndarray, shape (n, d), optional
            The original frames. Without them the RMS is computed from the stored residual of h
            and the latent error (exact for PCA shape signals, whose H is orthonormal) and the
            max is NaN.

        Returns
        -------
        dict
            ``{'rms': float, 'max': float}`` in the frames' units.
        """
        d = self.shape.h0.size
        rows = max(1, d // max(1, self.row_size))
        if z is not None:
            diff = np.asarray(z, dtype=float) - self.evaluate(self.frames)
            per_row = np.linalg.norm(diff.reshape(diff.shape[0], -1, self.row_size), axis=2) if \
                d % self.row_size == 0 else np.abs(diff)
            return {"rms": float(np.sqrt(np.mean(per_row**2))), "max": float(per_row.max())}
        total = self.residual + float(self.latent_error().sum())
        return {"rms": float(np.sqrt(total / (self.n * rows))), "max": float("nan")}

    # -- edits (§4): every edit returns a new PoseSpace ----------------------------------------

    def with_control_point(self, j: int, xy: Sequence[float]) -> PoseSpace:
        """Move time-signal control point j (§4.1): frames outside its support are unchanged.

        Raises ValueError on an index out of range or a position that is not a finite (x, y).
        """
        j = positive_int("j", j, minimum=-(2**63))
        if not 0 <= j < self.k:
            raise ValueError(f"control point {j} is outside 0..{self.k - 1}")
        control = self.time.control.copy()
        control[j] = _point("xy", xy)
        return replace(self, time=replace(self.time, control=control), time_authored=True,
                       source_frames=self.reconstructed_frames)

    def with_pins(self, pins: Mapping[int, ArrayLike]) -> PoseSpace:
        """Pin frames to pose-space points (§3.2.1): MDS re-solved, g and f refitted (same l, k)."""
        merged = {**self.pins, **_checked_pins(pins, self.n)}
        return self._relayout(mds_positions(self.latent, pins=merged, init=self.positions), merged)

    def without_pins(self) -> PoseSpace:
        """All pins removed: MDS re-solved from the current layout, g and f refitted."""
        return self._relayout(mds_positions(self.latent, init=self.positions), {})

    def _relayout(self, positions: np.ndarray, pins: dict[int, np.ndarray]) -> PoseSpace:
        """New positions: g refitted on the same sites; f refitted through them unless the time signal
        was authored (sketch, loop, re-timing), which is kept as drawn."""
        pose = fit_pose_signal(positions, self.latent, positions[self.site_order[: self.site_count or self.l]])
        keep = self.time_authored or self.time_edited
        time = self.time if keep else fit_time_signal(positions, self.k, self.reconstructed_frames)
        return replace(self, positions=positions, pose=pose, time=time, pins=pins,
                       source_frames=self.reconstructed_frames)

    def with_times(self, frames: np.ndarray, taus: np.ndarray) -> PoseSpace:
        """Re-time (§4.2): new frame numbers ``frames`` play the sequence at old frame times ``taus``
        (same curve; e.g. frames 1..2n with taus 1..n at half steps is slow motion)."""
        frames = finite_array("frames", frames, min_length=None, max_abs=MAX_MAGNITUDE).reshape(-1)
        taus = finite_array("taus", taus, min_length=None, max_abs=MAX_MAGNITUDE).reshape(-1)
        if frames.size > MAX_FRAMES:
            raise ValueError(f"frames: {frames.size} frames is more than the {MAX_FRAMES} a pose space plays")
        if frames.shape != taus.shape or frames.size < 2:
            raise ValueError("need at least 2 new frames, one old time each")
        if np.any(np.diff(frames) <= 0) or not np.all(np.isfinite(taus)):
            raise ValueError("new frame numbers must increase and the old times must be finite")
        params = self.time.rho(taus)
        if np.any(np.diff(params) < 0):
            raise ValueError("re-timing cannot run the sequence backwards (old times must not decrease)")
        params = params + 1e-12 * np.arange(params.size)  # PCHIP needs strictly increasing data
        return replace(self, time=replace(self.time, params=params, frames=frames),
                       source_frames=self.reconstructed_frames, time_authored=True)

    def resample(self, taus: np.ndarray) -> np.ndarray:
        """psi at new frame times (§4.2): slow motion, speed-up, frame-rate conversion."""
        return self.evaluate(finite_array("taus", taus, min_length=None, max_abs=MAX_MAGNITUDE))

    def with_stroke(self, stroke: np.ndarray, n_frames: int) -> PoseSpace:
        """A new time signal along a sketched stroke (§4.4): uniform knots and parameters."""
        pts = finite_array("stroke", stroke, min_length=None, max_abs=MAX_MAGNITUDE)
        if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] < 2:
            raise ValueError("a stroke needs at least 2 points (x, y)")
        n_frames = positive_int("n_frames", n_frames, minimum=2)
        if n_frames > MAX_FRAMES:
            raise ValueError(f"n_frames is {n_frames}: a pose space plays at most {MAX_FRAMES} frames")
        k = max(DEGREE + 1, pts.shape[0])
        if pts.shape[0] < k:  # too few points: resample the polyline
            pts = _resample_polyline(pts, k)
        knots = bspline.clamped_knots(np.linspace(0.0, 1.0, k - DEGREE + 1)[1:-1], 0.0, 1.0, DEGREE)
        # control points from the stroke: the stroke's points at the Greville abscissae
        greville = np.array([knots[j + 1:j + DEGREE + 1].mean() for j in range(k)])
        control = _resample_polyline(pts, k, at=greville)
        frames = np.arange(1.0, n_frames + 1.0)
        params = np.linspace(0.0, 1.0, n_frames)
        return replace(self, time=TimeSignal(control, knots, params, frames), source_frames=self.reconstructed_frames,
                       time_authored=True)

    def with_loop(self, after_time: float, points: np.ndarray, frames_added: int | None = None) -> PoseSpace:
        """Insert a loop through ``points`` after frame ``after_time`` (§4.1, Fig. 5).

        The spline is split at u* = rho(after_time) by knot insertion (which does not change it), a
        loop segment through the points is inserted that leaves and rejoins the curve with its own
        tangent, and frames after the loop shift by the frames added.  Frames up to ``after_time``
        and after the loop keep their exact shapes.
        """
        from scipy.interpolate import insert

        pts = np.atleast_2d(finite_array("points", points, min_length=None, max_abs=MAX_MAGNITUDE))
        if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] == 0:
            raise ValueError("loop points must be finite (x, y) pairs")
        after_time = finite_scalar("after_time", after_time)
        if frames_added is not None:
            frames_added = positive_int("frames_added", frames_added, minimum=0)
            if frames_added > MAX_FRAMES:
                raise ValueError(f"frames_added is {frames_added}: a pose space plays at most {MAX_FRAMES} frames")
        frames = self.frames
        if not frames[0] < after_time < frames[-1]:
            raise ValueError(f"the loop must start inside the sequence ({frames[0]:g}..{frames[-1]:g})")
        u_star = float(self.time.rho(np.array([after_time]))[0])
        tck = (self.time.knots, [self.time.control[:, 0], self.time.control[:, 1]], DEGREE)
        mult = int(np.sum(np.isclose(self.time.knots, u_star)))
        if mult < DEGREE:
            tck = insert(u_star, tck, m=DEGREE - mult)
        knots = np.asarray(tck[0])
        ctrl = np.column_stack([np.asarray(tck[1][0]), np.asarray(tck[1][1])])[: knots.size - DEGREE - 1]
        split = int(np.searchsorted(knots, u_star, side="left"))  # first knot equal to u*
        joint_index = split - 1  # the control point sitting on the curve at u*
        joint = ctrl[joint_index]
        before = ctrl[joint_index - 1] if joint_index >= 1 else joint
        after = ctrl[joint_index + 1] if joint_index + 1 < ctrl.shape[0] else joint
        loop_ctrl = np.vstack([joint + (joint - before), pts, joint - (after - joint), joint])
        q = loop_ctrl.shape[0]
        span = max(1e-3, 0.25 * float(knots[-1] - knots[0]))
        # the loop's knots: q - 3 inside (u*, u* + span), then a triple knot where the curve rejoins
        inner = u_star + span * np.arange(1, q - DEGREE + 1) / (q - DEGREE + 1)
        new_knot_run = np.concatenate([inner, np.full(DEGREE, u_star + span)])
        new_knots = np.concatenate([knots[: split + DEGREE], new_knot_run, knots[split + DEGREE:] + span])
        new_ctrl = np.vstack([ctrl[: joint_index + 1], loop_ctrl, ctrl[joint_index + 1:]])
        added = int(frames_added) if frames_added else max(4, 3 * pts.shape[0])
        i_star = int(np.searchsorted(frames, after_time, side="right"))  # frames before the loop
        # frame numbers: before (unchanged), loop frames in (after_time, after_time + added], after shifted
        new_frames = np.concatenate([frames[:i_star], after_time + np.arange(1, added + 1, dtype=float),
                                     frames[i_star:] + added])
        params_before = self.time.params[:i_star]
        params_after = np.asarray(self.time.params[i_star:]) + span
        loop_params = u_star + span * np.arange(1, added + 1) / (added + 1)
        new_params = np.concatenate([params_before, loop_params, params_after])
        if new_ctrl.shape[0] != new_knots.size - DEGREE - 1:
            raise RuntimeError("inconsistent loop insertion")  # pragma: no cover
        return replace(self, time=TimeSignal(new_ctrl, new_knots, new_params, new_frames),
                       source_frames=self.reconstructed_frames, time_authored=True)

    # -- serialisation -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, np.ndarray | float | int | bool]:
        """Plain arrays and scalars (for ID properties or ``np.savez``); :meth:`from_dict` inverts it."""
        pins = np.array([[i, *v] for i, v in sorted(self.pins.items())], dtype=float).reshape(-1, 3)
        return {
            "h0": self.shape.h0, "H": self.shape.H, "orthonormal": bool(self.shape.orthonormal),
            "latent": self.latent, "positions": self.positions,
            "sites": self.pose.sites, "weights": self.pose.weights, "affine": self.pose.affine,
            "control": self.time.control, "knots": self.time.knots, "params": self.time.params,
            "frames": self.time.frames, "site_order": self.site_order, "pins": pins,
            "residual": float(self.residual), "row_size": int(self.row_size), "site_count": int(self.site_count),
            "source_frames": self.reconstructed_frames, "time_authored": bool(self.time_authored),
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> PoseSpace:
        """The PoseSpace of a :meth:`to_dict` mapping (missing optional keys take their defaults)."""

        def arr(name, ndim):
            a = np.asarray(d[name], dtype=float)
            return a.reshape((-1,) + a.shape[1:]) if ndim == 1 else a

        pins_arr = np.asarray(d.get("pins", np.zeros((0, 3))), dtype=float).reshape(-1, 3)
        return cls(
            shape=ShapeSignal(arr("h0", 1), np.atleast_2d(arr("H", 2)), bool(d.get("orthonormal", True))),
            latent=np.asarray(d["latent"], dtype=float),
            positions=np.asarray(d["positions"], dtype=float),
            pose=PoseSignal(np.asarray(d["sites"], dtype=float), np.asarray(d["weights"], dtype=float),
                            np.asarray(d["affine"], dtype=float)),
            time=TimeSignal(np.asarray(d["control"], dtype=float), arr("knots", 1), arr("params", 1),
                            arr("frames", 1)),
            site_order=np.asarray(d["site_order"], dtype=int),
            pins={int(r[0]): r[1:].copy() for r in pins_arr},
            residual=float(d.get("residual", 0.0)),
            row_size=int(d.get("row_size", 3)),
            site_count=int(d.get("site_count", 0)),
            source_frames=np.asarray(d["source_frames"], dtype=float).reshape(-1) if "source_frames" in d else None,
            time_authored=bool(d.get("time_authored", False)),
        )


def _bend_collinear(p: np.ndarray, pinned: set[int]) -> np.ndarray:
    """A one-dimensional layout (a sequence driven by one slider) bent into a shallow arc.

    The thin-plate spline's affine part needs positions spread in 2D; an arc of height 5 % of the
    extent keeps the order and the distances along the line almost unchanged.  Pinned rows stay.
    """
    c = p - p.mean(axis=0)
    _, s, vt = np.linalg.svd(c, full_matrices=False)
    direction = vt[0] if s.size and s[0] > 0 else np.array([1.0, 0.0])
    normal = np.array([-direction[1], direction[0]])
    along = c @ direction
    extent = float(np.ptp(along)) or 1.0
    u = (along - along.min()) / extent
    out = p + (0.2 * extent * u * (1.0 - u))[:, None] * normal  # peak 0.05 * extent
    for i in pinned:
        out[i] = p[i]
    return out


def _resample_polyline(pts: np.ndarray, count: int, at: np.ndarray | None = None) -> np.ndarray:
    seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    if s[-1] <= 0.0:
        return np.repeat(pts[:1], count, axis=0)
    s /= s[-1]
    targets = np.linspace(0.0, 1.0, count) if at is None else np.clip(np.asarray(at, dtype=float), 0.0, 1.0)
    return np.column_stack([np.interp(targets, s, pts[:, 0]), np.interp(targets, s, pts[:, 1])])


def bbox_diagonal(z: ArrayLike) -> float:
    """Diagonal of the bounding box of the mean frame's vertices.

    Parameters
    ----------
    z : array_like, shape (n, 3V)
        Frames as rows of stacked vertex coordinates (x, y, z per vertex).

    Returns
    -------
    float
        Length of the diagonal, in the frames' units; 1.0 when it is zero (one vertex, or every
        vertex at the same place).

    Raises
    ------
    ValueError
        When the row length is not a multiple of 3.
    """
    pts = np.asarray(z).mean(axis=0).reshape(-1, 3)
    return float(np.linalg.norm(np.ptp(pts, axis=0))) or 1.0


def default_tolerance(z: ArrayLike) -> float:
    """The tolerance of a mesh build when none is given: ``DEFAULT_TOLERANCE_FRACTION`` of the size.

    Parameters
    ----------
    z : array_like, shape (n, 3V)
        Frames as rows of stacked vertex coordinates.

    Returns
    -------
    float
        RMS error per vertex (:func:`build_pose_space`'s ``tolerance``), in the frames' units:
        ``DEFAULT_TOLERANCE_FRACTION * bbox_diagonal(z)``.

    Raises
    ------
    ValueError
        When the row length is not a multiple of 3.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[0.0, 0.0, 0.0, 3.0, 4.0, 0.0]] * 4)  # two vertices 5 units apart
    >>> round(default_tolerance(z), 12)
    0.01
    """
    return DEFAULT_TOLERANCE_FRACTION * bbox_diagonal(z)


def is_static(z: ArrayLike, span: float = STATIC_SPAN) -> bool:
    """Whether the frames do not move: no value changes by more than ``span`` x the largest value.

    Parameters
    ----------
    z : array_like, shape (n, d)
        Frames as rows (finite values).
    span : float
        Relative threshold.

    Returns
    -------
    bool
        ``max_j (max_i z_ij - min_i z_ij) <= span * max_ij |z_ij|`` (the largest value taken as 1
        when every value is 0): a static sequence, which has no pose space.
    """
    zs = np.asarray(z)
    moved = float(np.ptp(zs, axis=0).max())
    size = float(np.abs(zs).max()) or 1.0
    return moved <= span * max(size, 1e-300)


# Frames a pose space plays at most (a re-timing, sketch or loop that asks for more is refused:
# every frame is evaluated and, in Blender, keyed).
MAX_FRAMES = 1_000_000


def _point(name: str, xy: ArrayLike) -> np.ndarray:
    """A finite pose-space point (x, y), or ValueError naming ``name``."""
    p = finite_array(name, xy, min_length=None, max_abs=MAX_MAGNITUDE).reshape(-1)
    if p.shape != (2,):
        raise ValueError(f"{name} must be a point (x, y), got {p.size} number(s)")
    return p


def _checked_pins(pins: Mapping[int, ArrayLike], n: int) -> dict[int, np.ndarray]:
    """Pins as {frame index: finite (x, y)}, each index within 0..n-1."""
    out = {}
    for i, v in dict(pins).items():
        index = positive_int("pins", i, minimum=0)
        if index >= n:
            raise ValueError(f"pins: frame index {index} is out of range 0..{n - 1}")
        out[index] = _point(f"pins[{index}]", v)
    return out


def build_pose_space(
    z: np.ndarray,
    *,
    frames: np.ndarray | None = None,
    m: int | None = None,
    l: int | None = None,  # noqa: E741  (the paper's name)
    k: int | None = None,
    tolerance: float | None = None,
    pins: Mapping[int, ArrayLike] | None = None,
    row_size: int = 3,
    shape: tuple[ShapeSignal, np.ndarray] | None = None,
    positions: np.ndarray | None = None,
) -> PoseSpace:
    """Reconstruct psi = h o g o f from frames (Cashman and Hormann, §3).

    k, l, m are given, or chosen from one ``tolerance`` (RMS error per row of ``row_size`` values,
    e.g. per vertex in scene units): m keeps the shape error within tolerance/sqrt(3), l the
    shape + pose error within tolerance*sqrt(2/3), k the total within tolerance.  Without either,
    the interpolation case k - 2 = l = m + 1 = n reproduces every frame exactly.

    Parameters
    ----------
    z : ndarray, shape (n, d)
        Frames as rows, n >= 4 (stacked vertex coordinates, or an armature's pose vectors).
    frames : ndarray, shape (n,), optional
        Frame numbers (default ``1 .. n``).
    m : int, optional
        Shape-subspace dimension.
    l : int, optional
        Pose-signal sites, 3 .. n.
    k : int, optional
        Time-signal control points, 4 .. n + 2.
    tolerance : float, optional
        RMS error per row that chooses the missing m, l, k.
    pins : mapping of int to (float, float), optional
        Frames pinned to pose-space points.
    row_size : int
        Values per row (3: a vertex; 1: each value on its own).
    shape : (ShapeSignal, ndarray of shape (n, m)), optional
        A ready shape signal and coordinates (e.g. :func:`shape_signal_from_examples`).
    positions : ndarray, shape (n, 2), optional
        Pose-space positions laid out by hand instead of MDS (§4.4: example poses laid out by the
        user, a sequence then sketched through them with :meth:`PoseSpace.with_stroke`).

    Returns
    -------
    PoseSpace

    Raises
    ------
    ValueError
        On fewer than 4 frames, NaN / infinite values, a static sequence, collinear or
        malformed ``positions``, bad pins, m, l, k out of range, or a given k whose time signal
        throws control points more than ``MAX_CONTROL_REACH`` layout extents out (k close to n).
    """
    z = _frames_matrix(z)
    n, d = z.shape
    row_size = positive_int("row_size", row_size, minimum=1)
    m = None if m is None else positive_int("m", m, minimum=1)
    l = None if l is None else positive_int("l", l, minimum=1)  # noqa: E741
    k = None if k is None else positive_int("k", k, minimum=1)
    tolerance = None if tolerance is None else positive("tolerance", tolerance)
    pins = None if pins is None else _checked_pins(pins, n)
    if frames is not None:
        frames = finite_array("frames", frames, ndim=1, min_length=None, max_abs=MAX_MAGNITUDE)
        if frames.shape != (n,):
            raise ValueError(f"frames has shape {frames.shape}, expected ({n},) (one per row of z)")
        if np.any(np.diff(frames) <= 0):
            raise ValueError("frames must be strictly increasing")
    rows = max(1, d // max(1, row_size))
    if shape is None:
        if m is None and tolerance is None:
            m_use = min(n - 1, d)
            sig, x = shape_signal(z, m=None, row_size=row_size)
            if sig.m < m_use:
                m_use = sig.m
            sig, x = shape_signal(z, m=m_use, row_size=row_size)
        else:
            sig, x = shape_signal(z, m=m, tolerance=None if m is not None else tolerance / np.sqrt(3.0),
                                  row_size=row_size)
    else:
        sig, x = shape
    residual = float(np.sum((z - sig.decode(x)) ** 2))
    if positions is not None:
        positions = np.asarray(positions, dtype=float)
        if positions.shape != (n, 2) or not np.all(np.isfinite(positions)):
            raise ValueError(f"positions must be {n} finite (x, y) pairs")
        if not _spread(positions):
            raise ValueError("the given positions are collinear: spread the poses in 2D")
    else:
        positions = mds_positions(x, pins=pins)
        if not _spread(positions):
            positions = _bend_collinear(positions, pinned=set(int(i) for i in (pins or {})))
    if l is None and tolerance is None:
        l_use = n  # every frame is a site: the order of all but the first four does not matter
        order, _ = _greedy_sites(positions, x, count=min(4, n))
    elif l is not None:
        l_use = int(l)
        if not 3 <= l_use <= n:
            raise ValueError(f"l must be between 3 and n = {n}, got {l_use}")
        order, _ = _greedy_sites(positions, x, count=l_use)
    else:
        assert tolerance is not None
        # the greedy order stops at the first l whose fit error is within the budget: the fits are
        # nested, so that is the smallest such l (seed §3.2.2)
        budget = (tolerance**2) * (2.0 / 3.0) * n * rows - residual
        order, l_use = _greedy_sites(positions, x, count=n, budget=budget)
    pose = fit_pose_signal(positions, x, positions[order[:l_use]])
    if tolerance is not None and l is None:
        # the incremental errors of the greedy order are confirmed by the fit itself
        while l_use < n and _pose_error(pose, x, positions) > budget + 1e-9 * abs(budget):
            l_use += 1
            pose = fit_pose_signal(positions, x, positions[order[:l_use]])
    frames_arr = np.arange(1.0, n + 1.0) if frames is None else np.asarray(frames, dtype=float)
    if k is None and tolerance is None:
        k_use = n + 2
    elif k is not None:
        k_use = int(k)
    else:
        assert tolerance is not None
        k_use = _smallest_k(positions, x, pose, (tolerance**2) * n * rows - residual)
    time = fit_time_signal(positions, k_use, frames_arr)
    if k is not None:
        reach = control_reach(time.control, positions)
        if reach > MAX_CONTROL_REACH:
            raise ValueError(
                f"k = {k_use}: the time signal's control points would lie {reach:.3g} times the frames' "
                f"extent away from them (a least-squares fit with k close to n = {n} is nearly singular), "
                f"which leaves nothing to see on the canvas: choose a smaller k, k = {n + 2} to interpolate "
                "the frames, or a tolerance")
    finite_result("the pose-space layout", positions)
    finite_result("the time signal", time.control)
    fixed = {int(i): np.asarray(v, dtype=float) for i, v in (pins or {}).items()}
    return PoseSpace(sig, x, positions, pose, time, order, fixed, residual, row_size, l_use, frames_arr)


# A tolerance build accepts a time signal only if no control point is further than this many layout
# extents from the layout's centre (the frames reach 0.5): with k close to n the least squares is
# nearly singular and fits the frames with control points thrown far out, which ruins the canvas.
MAX_CONTROL_REACH = 3.0


def _smallest_k(positions: np.ndarray, x: np.ndarray, pose: PoseSignal, budget: float) -> int:
    """The time signal's k for a build with a tolerance: a k in 4..n that passes (its error
    sum_i |x_i - g(f(i))|^2 is within ``budget`` and its control points stay near the frames,
    ``MAX_CONTROL_REACH``) while k - 1 fails; n + 2 (interpolation) when the search finds none.

    The error falls with k almost monotonically, so galloping (4, 5, 7, 11, 19, ...) then bisection
    finds such a k with O(log n) fits of O(n) each instead of one fit per candidate.  An accepted k
    was scored on all frames; it is the smallest passing k when passing is monotone in k (where it
    is not, a passing k below the one found may be missed: the build then keeps a few more control
    points than it needs, never fewer).
    """
    n = positions.shape[0]
    t = centripetal_params(positions)
    candidates = list(range(DEGREE + 1, n + 1))  # n + 1 adds nothing over n but conditioning trouble

    # a candidate is first scored on every stride-th frame: one whose estimate is over twice the
    # budget is rejected there (far from the boundary, the estimate cannot be that wrong); the rest
    # are scored on all frames, so an accepted k always meets the budget on every frame
    stride = max(1, n // 512)
    sample = np.arange(0, n, stride)

    def passes(index: int) -> bool:
        knots = piegl_tiller_knots(t, candidates[index])
        try:
            control = _time_control_points(t, knots, positions, dense_fallback=False)
        except ValueError:
            return False
        if control_reach(control, positions) > MAX_CONTROL_REACH:
            return False
        if stride > 1:
            estimate = _pose_error(pose, x[sample], bspline.evaluate(knots, control, t[sample], DEGREE))
            if estimate * (n / sample.size) > 2.0 * budget:
                return False
        return _pose_error(pose, x, bspline.evaluate(knots, control, t, DEGREE)) <= budget

    # gallop over indices 0, 1, 3, 7, ... to the first passing candidate (index len: n + 2, which
    # interpolates the positions, when none does), then bisect down to one whose predecessor fails
    failing, passing, index, step = -1, len(candidates), 0, 1
    while index < len(candidates):
        if passes(index):
            passing = index
            break
        failing = index
        index += step
        step *= 2
    while passing - failing > 1:
        mid = (passing + failing) // 2
        if passes(mid):
            passing = mid
        else:
            failing = mid
    return candidates[passing] if passing < len(candidates) else n + 2


def _pose_error(pose: PoseSignal, x: np.ndarray, points: np.ndarray) -> float:
    """sum_i |x_i - g(points_i)|^2, in blocks of rows (the kernel matrix of all rows at once is n x l)."""
    block = max(1, (1 << 21) // max(1, pose.l))
    total = 0.0
    for lo in range(0, points.shape[0], block):
        diff = x[lo:lo + block] - pose.evaluate(points[lo:lo + block])
        total += float(np.einsum("ij,ij->", diff, diff))
    return total
