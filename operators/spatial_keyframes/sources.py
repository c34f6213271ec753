"""What spatial keyframes are built from: checking the active armature and its action, and reading
every bone's local rotation per frame (:func:`plan_build`). Nothing here writes.

Kept by spatial keyframes: every bone's rotation, and (not modelled, left as it is) the root
bones' location and the object's own transforms. Refused, with a message saying so: scale
animation, location animation of child bones, and rotation curves a bone's rotation mode ignores
(a channel counts as animated when its values move; a constant key is fine).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...anim_signals.spatialkeys import as_quaternions
from ..blender_data.actions import (
    action_frame_range,
    find_action,
    get_action,
    id_read_only_reason,
    tweak_mode_reason,
)
from ..blender_data.bone_rotations import BoneRotations, other_moving_channels, read_bone_rotations
from ..blender_data.fcurves import KeyframeError
from ..common import InputError
from .properties import MIN_MARKERS

__all__ = ["COMPACT_MARK", "MAX_FRAMES", "BuildPlan", "SpatialKeyframesInputError", "distinct_poses", "plan_build"]

MAX_FRAMES = 5000
"""Frames a model is built from: the projections keep an N x N pose-distance matrix (200 MB at
5000 frames) and Algorithm 1 evaluates the RBF for every frame on every pass."""
COMPACT_MARK = "anim_signals_compacted_from"
"""ID property of an action Compact Action wrote: the name of the action it was made from."""
SAME_POSE = 1e-6
"""Quaternion components closer than this are the same pose (float32 keys round at ~1e-7)."""


class SpatialKeyframesInputError(InputError):
    """Bad input: reported to the user, nothing changed."""


@dataclass
class BuildPlan:
    """What a build reads and how (from :func:`plan_build`), and what the steps compute."""

    ob: Any
    object_name: str
    action_name: str
    rotations: BoneRotations
    count: int
    selection: str  # core names: "uniform", ...
    projection: str  # core names: "mds", ...
    optimise: bool
    compact: bool = False
    action: Any = None  # the action read (bpy.types.Action)
    replaced: Any = None  # compaction: the earlier compaction assigned now, removed once unused
    warnings: list[str] = field(default_factory=list)  # reported after the checks
    late_warnings: list[str] = field(default_factory=list)  # found by the steps, reported when writing
    # filled by building.iter_build
    clip: Any = None  # SpatialKeyframeClip
    error: float = 0.0
    rows: list[dict] = field(default_factory=list)  # compaction: the temporal schemes at the same keys
    reconstructed: np.ndarray | None = None  # compaction: (N, J, 4)


def distinct_poses(quaternions: np.ndarray) -> int:
    """Number of different poses among the frames ((N, J, 4) unit quaternions, w >= 0)."""
    q = np.asarray(quaternions, dtype=float)
    rounded = np.round(as_quaternions(q).reshape(len(q), -1) / SAME_POSE).astype(np.int64)
    return int(len(np.unique(rounded, axis=0)))


def _check_object(ob: Any, compact: bool) -> Any:
    if ob.type != "ARMATURE":
        raise SpatialKeyframesInputError(
            f'"{ob.name}" is a {ob.type.lower()} object: spatial keyframes are built from an armature\'s action')
    if ob.pose is None:  # an armature object never evaluated yet (created by a script this moment)
        raise SpatialKeyframesInputError(f'"{ob.name}" has no pose yet: update the view layer first')
    action = get_action(ob)
    if action is None:
        raise SpatialKeyframesInputError(f'"{ob.name}" has no action: animate its bones (or assign an action) first')
    reason = id_read_only_reason(ob) or tweak_mode_reason(ob)
    if reason is None and compact:
        reason = id_read_only_reason(ob.data)
    if reason:
        raise SpatialKeyframesInputError(reason)
    return action


def marker_count(n_frames: int, key_mode: str, ratio: float, count: int) -> int:
    """Markers asked for, checked against the clip; raises :class:`SpatialKeyframesInputError`."""
    if key_mode == "RATIO":
        if not 0.0 < ratio <= 1.0:
            raise SpatialKeyframesInputError(f"Ratio must be in (0, 1], got {ratio:g}")
        m = int(round(ratio * n_frames))
        if m < MIN_MARKERS:
            raise SpatialKeyframesInputError(
                f"A ratio of {ratio:g} gives {m} marker{'s' if m != 1 else ''} on {n_frames} frames: at least "
                f"{MIN_MARKERS} are needed to span the plane (raise the ratio to {MIN_MARKERS / n_frames:.3g} or "
                "give a count)")
    else:
        m = int(count)
        if m < MIN_MARKERS:
            raise SpatialKeyframesInputError(f"{m} markers: at least {MIN_MARKERS} are needed to span the plane")
    if m > n_frames:
        raise SpatialKeyframesInputError(
            f"The action has {n_frames} frames (poses): fewer than the {m} markers asked for")
    return m


def plan_build(ob: Any, *, key_mode: str = "RATIO", ratio: float = 0.03, count: int = 8, selection: str = "UNIFORM",
               projection: str = "MDS", optimise: bool = True, compact: bool = False) -> BuildPlan:
    """Check ``ob`` and its action, read the bones' rotations on every whole frame of the action's
    range, and plan the build (``compact``: also the comparison and a rewritten action; when the
    assigned action is an earlier compaction whose original still exists, the original is read).

    Raises :class:`SpatialKeyframesInputError` (nothing changed) for: another kind of object, no
    action, linked or overridden data, NLA tweak mode, no rotation curves, keys that cannot be
    sampled, more than :data:`MAX_FRAMES` frames, scale or child-bone location animation, fewer than
    three markers, fewer frames or distinct poses than markers.
    """
    action = _check_object(ob, compact)
    replaced = None
    source = find_action(str(action.get(COMPACT_MARK, ""))) if compact and action.get(COMPACT_MARK) else None
    if source is not None and source != action:
        # compacting again (other settings): redo it from the original, not from the played-back clip
        replaced, action = action, source
    try:
        start, end = action_frame_range(action)
    except KeyframeError as err:
        raise SpatialKeyframesInputError(str(err)) from err
    n_frames = end - start + 1
    if n_frames > MAX_FRAMES:
        raise SpatialKeyframesInputError(
            f'Action "{action.name}" spans {n_frames} frames ({start}-{end}): spatial keyframes are built from at '
            f"most {MAX_FRAMES} (the projection compares every pair of frames); shorten its frame range")
    frames = np.arange(start, end + 1, dtype=np.float64)
    try:
        rotations = read_bone_rotations(ob, frames, action)
        others = other_moving_channels(ob, frames, action)
    except KeyframeError as err:
        raise SpatialKeyframesInputError(str(err)) from err
    if not any(rotations.animated):
        raise SpatialKeyframesInputError(
            f'Action "{action.name}" animates no bone rotation of "{ob.name}" (in the bones\' rotation modes): '
            "spatial keyframes blend rotations")
    if others:
        listed = ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else "")
        raise SpatialKeyframesInputError(
            f"Spatial keyframes keep every bone's rotation and the root bone's location only, but {listed} "
            "also move: bake them into rotations or remove those curves first")
    m = marker_count(n_frames, key_mode, ratio, count)
    n_distinct = distinct_poses(rotations.quaternions)
    if n_distinct < m:
        raise SpatialKeyframesInputError(
            f'Action "{action.name}" holds only {n_distinct} distinct pose{"s" if n_distinct != 1 else ""} on '
            f"{n_frames} frames (the others repeat them): fewer than the {m} markers asked for, which must be "
            "distinct points on the plane")
    plan = BuildPlan(ob=ob, object_name=ob.name, action_name=action.name, rotations=rotations, count=m,
                     selection=selection.lower(), projection=projection.lower(), optimise=bool(optimise),
                     compact=compact, action=action, replaced=replaced)
    if replaced is not None:
        plan.warnings.append(f'"{replaced.name}" is a compaction of "{action.name}": compacting "{action.name}" again')
    return plan
