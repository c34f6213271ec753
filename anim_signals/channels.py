"""Channel preparation: what each channel is, and curves made continuous signals before any fitting.

Every tool sees a clip as an ``(n_frames, n_channels)`` float array with one *kind* per channel
(:data:`EULER`, :data:`QUATERNION`, :data:`LOCATION`, :data:`SCALE`, :data:`SHAPE_KEY`,
:data:`OTHER`: the strings here are the only definition) and, where channels form a rotation, a
grouping key per channel (the bone or data path the channel belongs to).

Euler tracks from mocap wrap at +-180 degrees and quaternion tracks flip sign between
equivalent rotations; a spline through such a jump would swing through the whole circle:
:func:`make_continuous` removes both.  Rotations are measured in radians throughout; a change e
of a unit quaternion's components turns the rotation by about ``QUATERNION_ANGLE * e`` = 2e
radians, which is how tolerances, errors and weights of quaternion channels are converted
(:func:`tolerances_by_kind`, :func:`rotation_degrees`, :func:`errors_by_kind`,
:func:`radian_weights`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "EULER",
    "EULER_ORDERS",
    "KINDS",
    "LOCATION",
    "OTHER",
    "QUATERNION",
    "QUATERNION_ANGLE",
    "SCALE",
    "SHAPE_KEY",
    "STILL_SPAN",
    "KindErrors",
    "check_finite",
    "continuous_quaternions",
    "errors_by_kind",
    "euler_filter",
    "euler_triples",
    "finite_max",
    "finite_rms",
    "location_mask",
    "make_continuous",
    "moving_channels",
    "quaternion_groups",
    "radian_weights",
    "rotation_degrees",
    "tolerances_by_kind",
    "unwrap_angles",
]

# Channel kinds: what a channel animates.
LOCATION = "LOCATION"  # scene units
EULER = "EULER"  # one Euler angle, radians
QUATERNION = "QUATERNION"  # one component of a (w, x, y, z) rotation quaternion
SCALE = "SCALE"
SHAPE_KEY = "SHAPE_KEY"  # a shape key's value
OTHER = "OTHER"  # any other value
KINDS = (LOCATION, EULER, QUATERNION, SCALE, SHAPE_KEY, OTHER)

# Blender's Euler rotation modes.
EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")

# Radians of rotation per unit change of a unit quaternion's components (a small change e of the
# components turns the rotation by about 2e: q = (cos(a/2), sin(a/2) n)).
QUATERNION_ANGLE = 2.0

# A channel counts as moving when its samples span more than this (float32 keys: ~1e-7 relative).
STILL_SPAN = 1e-6


def unwrap_angles(values: np.ndarray) -> np.ndarray:
    """Remove 2*pi jumps along the frame axis.

    Parameters
    ----------
    values : ndarray, shape (N,) or (N, M)
        Angles in radians, frames along axis 0.

    Returns
    -------
    ndarray, same shape
        Angles shifted by whole turns so consecutive frames differ by at most pi.
    """
    return np.unwrap(np.asarray(values, dtype=float), axis=0)


def euler_filter(angles: np.ndarray, order: str) -> np.ndarray:
    """Euler triples made continuous: 2*pi wraps *and* gimbal flips removed.

    Every Tait-Bryan rotation has a second Euler triple: first and last angle + pi, middle angle
    pi - middle.  Mocap exporters switch between the two (jumps of up to 180 degrees on all three
    channels at once); like Blender's Discontinuity (Euler) Filter, each frame takes the triple
    closest to the previous frame, each angle shifted by whole turns.

    Parameters
    ----------
    angles : ndarray, shape (N, 3)
        Rotation angles (x, y, z) in radians, one row per frame.
    order : str
        Blender rotation mode, one of :data:`EULER_ORDERS` (e.g. ``'XYZ'``).

    Returns
    -------
    ndarray, shape (N, 3)
        The same rotations, continuous from frame to frame (the first frame unchanged).

    Raises
    ------
    ValueError
        If ``angles`` is not (N, 3) or ``order`` is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> flipped = np.array([[0.1, 0.2, 0.3], [0.1 + np.pi, np.pi - 0.2, 0.3 + np.pi]])
    >>> np.round(euler_filter(flipped, "XYZ"), 6).tolist()
    [[0.1, 0.2, 0.3], [0.1, 0.2, 0.3]]
    """
    a = np.array(angles, dtype=float, copy=True)
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"Euler angles must be (frames, 3), got {a.shape}")
    if order not in EULER_ORDERS:
        raise ValueError(f"unknown Euler order {order!r}")
    axes = ["XYZ".index(ax) for ax in order]
    two_pi = 2.0 * np.pi
    for k in range(1, a.shape[0]):
        prev = a[k - 1]
        cand = a[k].copy()
        alt = cand.copy()
        alt[axes[0]] += np.pi
        alt[axes[1]] = np.pi - alt[axes[1]]
        alt[axes[2]] += np.pi
        cand += two_pi * np.round((prev - cand) / two_pi)
        alt += two_pi * np.round((prev - alt) / two_pi)
        a[k] = alt if np.sum((alt - prev) ** 2) < np.sum((cand - prev) ** 2) - 1e-12 else cand
    return a


def continuous_quaternions(quats: np.ndarray) -> np.ndarray:
    """Flip signs so consecutive quaternions lie in the same hemisphere.

    Parameters
    ----------
    quats : ndarray, shape (N, 4)
        Quaternions (w, x, y, z), one row per frame.

    Returns
    -------
    ndarray, shape (N, 4)
        The same rotations with ``q[k] . q[k-1] >= 0`` (the first frame unchanged).
    """
    q = np.array(quats, dtype=float, copy=True)
    if q.shape[0] < 2:
        return q
    dots = np.einsum("ij,ij->i", q[1:], q[:-1])
    flips = np.concatenate([[1.0], np.cumprod(np.where(dots < 0.0, -1.0, 1.0))])
    return q * flips[:, None]


def check_finite(values: np.ndarray, names: Sequence[str] | None = None) -> None:
    """Raise ValueError naming the first channel that holds NaN or infinite values.

    Parameters
    ----------
    values : ndarray, shape (N,) or (N, M)
        Samples, one column per channel.
    names : sequence of str, optional
        Channel names for the message (default ``'channel <index>'``).

    Raises
    ------
    ValueError
        If any sample is NaN or infinite: the message names the channel, value and sample.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    bad = ~np.isfinite(values)
    if not bad.any():
        return
    col = int(np.argmax(bad.any(axis=0)))
    row = int(np.argmax(bad[:, col]))
    name = names[col] if names is not None and col < len(names) else f"channel {col}"
    raise ValueError(f"{name} has a non-finite value ({values[row, col]}) at sample {row}")


# ------------------------------------------------------------------------------------------
# Channels grouped into rotations, and a clip made continuous
# ------------------------------------------------------------------------------------------


def quaternion_groups(kinds: Sequence[str], owners: Sequence[str] | None = None) -> list[np.ndarray]:
    """Column indices of each complete quaternion (4 QUATERNION channels of one owner, in order).

    Parameters
    ----------
    kinds : sequence of str, length n
        Kind of each channel.
    owners : sequence of str, length n, optional
        Grouping key of each channel (the bone, or the data path, its rotation belongs to);
        without it, consecutive runs of 4 quaternion channels form the groups.

    Returns
    -------
    list of ndarray of int, shape (4,)
        One entry per key with exactly four quaternion channels, in column order; keys with
        fewer or more are left out.

    Examples
    --------
    >>> [g.tolist() for g in quaternion_groups([QUATERNION] * 4 + [LOCATION] + [QUATERNION] * 3)]
    [[0, 1, 2, 3]]
    """
    idx = [j for j, k in enumerate(kinds) if k == QUATERNION]
    if owners is None:
        return [np.array(idx[i:i + 4]) for i in range(0, len(idx) - len(idx) % 4, 4)]
    by_owner: dict[str, list[int]] = {}
    for j in idx:
        by_owner.setdefault(owners[j], []).append(j)
    return [np.array(cols) for cols in by_owner.values() if len(cols) == 4]


def euler_triples(kinds: Sequence[str], owners: Sequence[str] | None,
                  rotation_modes: Sequence[str | None] | None,
                  indices: Sequence[int] | None = None) -> list[tuple[np.ndarray, str]]:
    """Columns (x, y, z) and rotation order of every complete Euler rotation whose order is known.

    Parameters
    ----------
    kinds : sequence of str, length n
        Kind of each channel.
    owners : sequence of str, length n, or None
        Owner of each channel (bone name); None: no triples.
    rotation_modes : sequence of str or None, length n, or None
        Each channel's owner's rotation mode (e.g. ``'ZXY'``); None: no triples.
    indices : sequence of int, length n, optional
        Each channel's component (F-curve array_index); default: in x, y, z order.

    Returns
    -------
    list of (ndarray of int, shape (3,), str)
    """
    if owners is None or rotation_modes is None:
        return []
    by_owner: dict[str, list[int]] = {}
    for j, k in enumerate(kinds):
        if k == EULER:
            by_owner.setdefault(owners[j], []).append(j)
    out = []
    for cols in by_owner.values():
        mode = rotation_modes[cols[0]]
        if len(cols) == 3 and mode in EULER_ORDERS:
            if indices is not None:
                comps = [int(indices[c]) for c in cols]
                if sorted(comps) != [0, 1, 2]:
                    continue
                cols = [c for _, c in sorted(zip(comps, cols))]
            out.append((np.array(cols), str(mode)))
    return out


def make_continuous(values: np.ndarray, kinds: Sequence[str], owners: Sequence[str] | None = None,
                    rotation_modes: Sequence[str | None] | None = None,
                    indices: Sequence[int] | None = None) -> np.ndarray:
    """Channel samples as one continuous curve: Euler columns unwrapped, quaternions sign-continuous.

    The one preparation of every tool (Fit Spline, the motion manifolds' ``to_motion_curve``).
    With ``owners`` and ``rotation_modes``, complete Euler triples also lose gimbal flips
    (:func:`euler_filter`), which raw mocap has; the other Euler columns are unwrapped
    (:func:`unwrap_angles`); every complete quaternion (:func:`quaternion_groups` by ``owners``)
    is made hemisphere-continuous (:func:`continuous_quaternions`). Other kinds are copied.

    Parameters
    ----------
    values : ndarray, shape (N, n)
        One column per channel; angles in radians.
    kinds : sequence of str, length n
        Kind of each channel (:data:`EULER`, :data:`QUATERNION`, :data:`LOCATION`, other).
    owners : sequence of str, length n, optional
        Grouping key of each channel's rotation (the bone, or the data path).
    rotation_modes : sequence of str or None, length n, optional
        Each channel's owner's rotation mode, e.g. ``'ZXY'``.
    indices : sequence of int, length n, optional
        Each channel's component (F-curve array_index) when a triple is not stored in x, y, z
        order.

    Returns
    -------
    ndarray, shape (N, n)
        A new array; ``values`` is not changed.

    Raises
    ------
    ValueError
        If ``values`` is not (N, len(kinds)).

    Examples
    --------
    >>> wrapped = np.array([[3.0], [-3.0]])  # radians, across +-pi
    >>> np.round(make_continuous(wrapped, [EULER]), 4).ravel().tolist()
    [3.0, 3.2832]
    """
    curve = np.array(values, dtype=float, copy=True)
    if curve.ndim != 2 or curve.shape[1] != len(kinds):
        raise ValueError(f"values must be (frames, {len(kinds)}), got {curve.shape}")
    triples = euler_triples(kinds, owners, rotation_modes, indices)
    filtered: set[int] = set()
    for cols, order in triples:
        curve[:, cols] = euler_filter(curve[:, cols], order)
        filtered.update(int(c) for c in cols)
    euler = [j for j, k in enumerate(kinds) if k == EULER and j not in filtered]
    if euler:
        curve[:, euler] = unwrap_angles(curve[:, euler])
    for cols in quaternion_groups(kinds, owners):
        curve[:, cols] = continuous_quaternions(curve[:, cols])
    return curve


# ------------------------------------------------------------------------------------------
# Units by kind: tolerances, weights, errors
# ------------------------------------------------------------------------------------------


def location_mask(kinds: Sequence[str]) -> np.ndarray:
    """Which channels are locations.

    Parameters
    ----------
    kinds : sequence of str, length n

    Returns
    -------
    ndarray of bool, shape (n,)
    """
    return np.array([k == LOCATION for k in kinds], dtype=bool)


def tolerances_by_kind(kinds: Sequence[str], rotation_deg: float, location: float, other: float) -> np.ndarray:
    """Per-channel tolerances in each channel's own units, from one tolerance per kind.

    Parameters
    ----------
    kinds : sequence of str, length n
        Kind of each channel.
    rotation_deg : float
        Rotation tolerance in degrees: radians on Euler channels, radians / :data:`QUATERNION_ANGLE`
        on quaternion components.
    location : float
        Tolerance of :data:`LOCATION` channels, in scene units.
    other : float
        Tolerance of every other channel (scale, shape keys, ...), in its units.

    Returns
    -------
    ndarray, shape (n,)

    Examples
    --------
    >>> tolerances_by_kind([EULER, QUATERNION, LOCATION, SCALE], 180.0, 0.01, 0.1).round(4).tolist()
    [3.1416, 1.5708, 0.01, 0.1]
    """
    rot = math.radians(rotation_deg)
    tol = np.empty(len(kinds))
    for j, kind in enumerate(kinds):
        if kind == EULER:
            tol[j] = rot
        elif kind == QUATERNION:
            tol[j] = rot / QUATERNION_ANGLE
        elif kind == LOCATION:
            tol[j] = location
        else:
            tol[j] = other
    return tol


def radian_weights(kinds: Sequence[str], figure_height: float = 0.0, *,
                   quaternion: float = QUATERNION_ANGLE) -> np.ndarray:
    """Per-channel factors that put channels on the scale of radians (channel x weight).

    Parameters
    ----------
    kinds : sequence of str, length n
        Kind of each channel.
    figure_height : float
        Height of the figure the locations move, in their units (an armature's in its own:
        cm for many BVH files); locations weigh ``2 / figure_height`` (a move by half the
        figure's height counts as one radian). 0 or less: locations weigh 1.
    quaternion : float
        Weight of quaternion components (default :data:`QUATERNION_ANGLE`: a change e is about
        2e radians).

    Returns
    -------
    ndarray, shape (n,)
        Euler and other channels 1.

    Examples
    --------
    >>> radian_weights([EULER, QUATERNION, LOCATION, OTHER], figure_height=4.0).tolist()
    [1.0, 2.0, 0.5, 1.0]
    """
    scale = np.ones(len(kinds))
    for j, kind in enumerate(kinds):
        if kind == QUATERNION:
            scale[j] = quaternion
        elif kind == LOCATION and figure_height > 0.0:
            scale[j] = 2.0 / figure_height
    return scale


def rotation_degrees(values: np.ndarray, kinds: Sequence[str]) -> np.ndarray:
    """Per-channel rotation amounts (changes, errors) in degrees.

    Parameters
    ----------
    values : ndarray, shape (n,)
        One amount per channel in channel units: radians on Euler channels, component units on
        quaternion channels (a change e is about :data:`QUATERNION_ANGLE` * e radians).
    kinds : sequence of str, length n

    Returns
    -------
    ndarray, shape (n,)
        Degrees; NaN for channels that are not rotations.

    Examples
    --------
    >>> rotation_degrees(np.array([np.pi, np.pi / 4, 1.0]), [EULER, QUATERNION, LOCATION]).tolist()
    [180.0, 90.0, nan]
    """
    out = np.full(len(kinds), np.nan)
    for j, kind in enumerate(kinds):
        if kind == EULER:
            out[j] = math.degrees(float(values[j]))
        elif kind == QUATERNION:
            out[j] = math.degrees(QUATERNION_ANGLE * float(values[j]))
    return out


@dataclass
class KindErrors:
    """Errors summarised by kind (:func:`errors_by_kind`); 0.0 where no channel has the kind.

    Attributes
    ----------
    max_rotation_deg, rms_rotation_deg : float
        Euler and quaternion channels, in degrees.
    max_location, rms_location : float
        Location channels, in their units.
    max_other, rms_other : float
        Every other channel, in its units.
    """

    max_rotation_deg: float = 0.0
    rms_rotation_deg: float = 0.0
    max_location: float = 0.0
    rms_location: float = 0.0
    max_other: float = 0.0
    rms_other: float = 0.0


def errors_by_kind(max_abs: np.ndarray, rms: np.ndarray, kinds: Sequence[str]) -> KindErrors:
    """Per-channel errors summarised by kind: the largest, and the RMS over channels of each kind.

    Parameters
    ----------
    max_abs, rms : ndarray, shape (n,)
        Each channel's largest and root-mean-square error, in channel units (rotations converted
        by :func:`rotation_degrees`).
    kinds : sequence of str, length n

    Returns
    -------
    KindErrors
        The RMS of a kind is the root of the mean of its channels' squared RMS errors.

    Examples
    --------
    >>> e = errors_by_kind(np.array([0.01, 0.02]), np.array([0.003, 0.004]), [LOCATION, LOCATION])
    >>> round(e.max_location, 6), round(e.rms_location, 6), e.max_rotation_deg
    (0.02, 0.003536, 0.0)
    """
    deg_max, deg_rms = rotation_degrees(max_abs, kinds), rotation_degrees(rms, kinds)
    out = KindErrors()
    rot_sq: list[float] = []
    loc_sq: list[float] = []
    oth_sq: list[float] = []
    for j, kind in enumerate(kinds):
        if kind in (EULER, QUATERNION):
            out.max_rotation_deg = max(out.max_rotation_deg, float(deg_max[j]))
            rot_sq.append(float(deg_rms[j]) ** 2)
        elif kind == LOCATION:
            out.max_location = max(out.max_location, float(max_abs[j]))
            loc_sq.append(float(rms[j]) ** 2)
        else:
            out.max_other = max(out.max_other, float(max_abs[j]))
            oth_sq.append(float(rms[j]) ** 2)
    out.rms_rotation_deg = float(np.sqrt(np.mean(rot_sq))) if rot_sq else 0.0
    out.rms_location = float(np.sqrt(np.mean(loc_sq))) if loc_sq else 0.0
    out.rms_other = float(np.sqrt(np.mean(oth_sq))) if oth_sq else 0.0
    return out


# ------------------------------------------------------------------------------------------
# Which channels move; maxima and RMS that skip non-finite entries
# ------------------------------------------------------------------------------------------


def moving_channels(values: np.ndarray) -> np.ndarray:
    """Which channels move: their samples span more than :data:`STILL_SPAN`.

    Parameters
    ----------
    values : ndarray, shape (n_frames, n_channels)

    Returns
    -------
    ndarray of bool, shape (n_channels,)
        All False when there are no frames.

    Examples
    --------
    >>> moving_channels(np.array([[0.0, 1.0], [0.0, 2.0]])).tolist()
    [False, True]
    """
    if not values.shape[0]:
        return np.zeros(values.shape[1], dtype=bool)
    return np.ptp(values, axis=0) > STILL_SPAN


def finite_max(values: np.ndarray) -> float:
    """The largest finite value of ``values`` (any shape); 0.0 when there is none.

    Examples
    --------
    >>> finite_max(np.array([1.0, np.nan, 3.0])), finite_max(np.array([np.nan]))
    (3.0, 0.0)
    """
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else 0.0


def finite_rms(values: np.ndarray) -> float:
    """The root mean square of the finite values of ``values`` (any shape); 0.0 when there is none.

    Examples
    --------
    >>> round(finite_rms(np.array([3.0, np.nan, 4.0])), 6)  # sqrt((9 + 16) / 2)
    3.535534
    """
    finite = values[np.isfinite(values)]
    return float(np.sqrt(np.mean(finite * finite))) if finite.size else 0.0
