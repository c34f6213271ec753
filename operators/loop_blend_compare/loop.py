"""Make Cyclic in Blender: which curves loop on which frames, and writing the loop.

:func:`plan_loop` checks the input and samples every curve of the active object (its own action
and its shape keys'), finding the cycle when asked (raises :class:`MotionInputError` with a
message for the user); :func:`run_loop` projects the clip onto the closest closed motion with the
core (``anim_signals.manifolds.loop``); :func:`write_loop` writes dense keys (into a copy of each action when
asked) and measures the seam before and after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from ...anim_signals.channels import (
    finite_max,
    finite_rms,
    location_mask,
    moving_channels,
    radian_weights,
    rotation_degrees,
)
from ...anim_signals.manifolds import find_cycle, from_motion_curve, joint_seam, make_loop, select_travel
from ..blender_data.actions import (
    action_edit_reason,
    animated_ids,
    fcurve_locked,
    get_action,
    keep_frame_range,
    list_fcurves,
    set_action_frame_range,
    slot_identifier,
    writable_curves,
)
from ..blender_data.armatures import (
    bone_heads_world,
    bone_hierarchy,
    cm_per_unit,
    figure_height,
    travel_channels,
)
from ..blender_data.channels import channel_specs, continuous_values
from ..blender_data.fcurves import add_cycles_modifier, keep_keys, modifier_types, write_dense
from ..common.transaction import current_transaction
from .clips import (
    MIN_FRAMES,
    MotionInputError,
    check_finite,
    frame_range,
    sample_frames,
    shared_frames_note,
    spec_kinds,
    spec_owners,
    whole_frames,
)

__all__ = ["LoopJob", "LoopPlan", "LoopSummary", "plan_loop", "run_loop", "world_seam", "write_loop"]

# find_cycle's score (seam mismatch in typical frame-to-frame changes) above which a warning is given.
POOR_CYCLE_SCORE = 3.0


@dataclass
class LoopJob:
    """One animated ID (object or shape keys) and its curves in the loop."""

    id_data: Any
    action: Any
    slot_identifier: str | None
    fcurves: list
    specs: list
    columns: slice  # its columns in the plan's combined curve


@dataclass
class LoopPlan:
    """What :func:`plan_loop` read: the curves of every job side by side, on the loop's frames."""

    jobs: list[LoopJob]
    object_name: str
    frames: np.ndarray  # (N,) whole frames of the loop range
    values: np.ndarray  # (N, M) sampled channel values (all jobs side by side)
    curve: np.ndarray  # (N, M) continuous motion curve
    kinds: list[str]
    owners: list[str]
    travel: list[int]
    labels: list[str]
    auto_cycle: Any = None  # manifolds.Cycle when the range was found automatically
    warnings: list[str] = field(default_factory=list)
    weights: Any = None  # per channel: radians 1, location 2 / figure height (one scale for the core)


def _usable_curves(fcurves, warnings: list[str], what: str) -> list:
    """Curves a tool may rewrite: not locked, no F-modifier other than Cycles (left alone, warned)."""
    usable = []
    n_locked = n_mod = 0
    for fc in fcurves:
        if fcurve_locked(fc):
            n_locked += 1
        elif modifier_types(fc) - {"CYCLES"}:
            n_mod += 1
        else:
            usable.append(fc)
    if n_locked:
        warnings.append(f"{what}: skipped {n_locked} locked curve(s)")
    if n_mod:
        warnings.append(f"{what}: skipped {n_mod} curve(s) with F-curve modifiers other than Cycles")
    return usable


def _unit_weights(jobs, kinds) -> np.ndarray:
    """Per-channel weights putting location on the scale of rotations in radians: 2 / figure height
    for armature channels (their units are the armature's: cm for many BVH files), 1 otherwise
    (quaternion components too: the loop weighs them as they are)."""
    weights = np.ones(len(kinds))
    for job in jobs:
        height = figure_height(job.id_data) if isinstance(job.id_data, bpy.types.Object) else 0.0
        weights[job.columns] = radian_weights(kinds[job.columns], height, quaternion=1.0)
    return weights


def _loopable_ids(ob, warnings: list[str]) -> list[tuple[Any, Any, list]]:
    """(ID, action, usable curves) of every animated ID of ``ob`` that has curves to loop."""
    if ob is None:
        raise MotionInputError("No active object: select an animated object")
    ids = animated_ids(ob, "AUTO")
    if not ids:
        raise MotionInputError(f'"{ob.name}" has no animation data (no action to loop)')
    found = []
    for id_data in ids:
        action = get_action(id_data)
        if action is None:  # pragma: no cover - animated_ids('AUTO') only lists IDs with an action
            continue
        reason = action_edit_reason(id_data, action)
        if reason:
            raise MotionInputError(reason)
        usable = _usable_curves(list_fcurves(id_data), warnings, f'"{id_data.name}"')
        if usable:
            found.append((id_data, action, usable))
    if not found:
        raise MotionInputError(f'The action of "{ob.name}" has no F-curves that can be looped')
    return found


def _loop_frames(found, range_mode: str, frame_start: int, frame_end: int) -> np.ndarray:
    """The whole frames to loop: of the first (object's own) action, or a custom range."""
    if range_mode == "CUSTOM":
        lo, hi = int(frame_start), int(frame_end)
        if hi < lo:
            raise MotionInputError(f"The frame range {lo}-{hi} is empty: the end must come after the start")
    else:
        lo, hi = frame_range(found[0][1], [fc for _, _, fcs in found for fc in fcs])
    n = hi - lo + 1
    if n < MIN_FRAMES:
        raise MotionInputError(
            f'The clip is too short to loop: {n} frame(s) ({lo}-{hi}), at least {MIN_FRAMES} are needed'
            + shared_frames_note([fc for _, _, fcs in found for fc in fcs], n)
        )
    return whole_frames([fc for _, _, fcs in found for fc in fcs], lo, hi)


def _find_cycle(plan: LoopPlan, min_period: int, max_period: int) -> None:
    """Narrow the plan to the best cycle inside its frames (``plan.auto_cycle``)."""
    lo = int(plan.frames[0])
    if min_period and max_period and max_period < min_period:
        raise MotionInputError(f"The max period ({max_period}) is shorter than the min period ({min_period})")
    try:
        cyc = find_cycle(plan.curve, travel=plan.travel, min_period=min_period or None,
                              max_period=max_period or None, weights=plan.weights)
    except ValueError as err:
        raise MotionInputError(f"No cycle found on frames {lo}-{int(plan.frames[-1])}: {err}") from err
    start, stop = int(cyc.start), int(cyc.stop)
    if stop - start + 1 < MIN_FRAMES:
        raise MotionInputError(f"The cycle found is too short to loop ({stop - start + 1} frames)")
    plan.auto_cycle = cyc
    if float(cyc.score) > POOR_CYCLE_SCORE:
        plan.warnings.append(
            f"The best cycle found (frames {lo + start}-{lo + stop}) still has a seam of about "
            f"{float(cyc.score):.1f} typical frame steps: the clip may not hold a whole cycle"
        )
    plan.frames = plan.frames[start : stop + 1]
    plan.values = plan.values[start : stop + 1]
    plan.curve = plan.curve[start : stop + 1]
    if not moving_channels(plan.curve).any():
        raise MotionInputError(f"Nothing moves on the cycle found (frames {lo + start}-{lo + stop})")


def plan_loop(
    ob,
    *,
    range_mode: str = "ACTION",
    frame_start: int = 1,
    frame_end: int = 100,
    min_period: int = 0,
    max_period: int = 0,
    travel: str = "AUTO",
) -> LoopPlan:
    """Check the input and sample every curve on the loop range. Raises MotionInputError."""
    warnings: list[str] = []
    found = _loopable_ids(ob, warnings)
    frames = _loop_frames(found, range_mode, frame_start, frame_end)

    jobs: list[LoopJob] = []
    blocks, kinds, owners, labels, all_specs = [], [], [], [], []
    col = 0
    for i, (id_data, action, usable) in enumerate(found):
        specs = channel_specs(id_data, usable)
        values = sample_frames(usable, frames)
        blocks.append(values)
        kinds += spec_kinds(specs)
        owners += spec_owners(specs, f"{i}:")
        all_specs += specs
        labels += [f"{id_data.name}: {s.label}" for s in specs]
        jobs.append(LoopJob(id_data, action, slot_identifier(id_data), usable, specs, slice(col, col + len(usable))))
        col += len(usable)
    values = np.concatenate(blocks, axis=1)
    check_finite(values, labels, "loop")
    curve = continuous_values(values, all_specs, owners)
    if not moving_channels(curve).any():
        lo, hi = int(frames[0]), int(frames[-1])
        raise MotionInputError(f'Nothing moves: all {curve.shape[1]} curve(s) of "{ob.name}" are constant on frames {lo}-{hi}')

    travel_cols: list[int] = []
    if travel == "AUTO":
        for job in jobs:
            travel_cols += [job.columns.start + j for j in travel_channels(job.id_data, job.specs)]
        travel_cols = select_travel(curve, travel_cols)  # forward travel yes, sideways sway no

    plan = LoopPlan(jobs, ob.name, frames, values, curve, kinds, owners, travel_cols, labels, warnings=warnings,
                    weights=_unit_weights(jobs, kinds))
    if range_mode == "AUTO":
        _find_cycle(plan, min_period, max_period)
    return plan


@dataclass
class LoopSummary:
    """The numbers of a finished loop (stored by ``AnimSignalsLoopResult.store``)."""

    object_name: str = ""
    action_names: list[str] = field(default_factory=list)
    frame_start: int = 0
    frame_end: int = 0
    auto_range: bool = False
    travel_channels: int = 0
    curves: int = 0
    pose_before_deg: float = 0.0
    pose_after_deg: float = 0.0
    velocity_before_deg: float = 0.0
    velocity_after_deg: float = 0.0
    pose_before_loc: float = 0.0
    pose_after_loc: float = 0.0
    velocity_before_loc: float = 0.0
    velocity_after_loc: float = 0.0
    joint_pose_before_cm: float = -1.0  # < 0: not an armature
    joint_pose_after_cm: float = -1.0
    joint_velocity_before_cm: float = -1.0
    joint_velocity_after_cm: float = -1.0
    rms_deviation_deg: float = 0.0
    rms_deviation_loc: float = 0.0
    iterations: int = 0
    converged: bool = True
    seconds: float = 0.0

    def message(self) -> str:
        rng = f"frames {self.frame_start}-{self.frame_end}" + (" (found automatically)" if self.auto_range else "")
        parts = [f'Looped "{self.object_name}" on {rng}, {self.curves} curves -> {", ".join(self.action_names)}']
        parts.append(
            f"seam pose {self.pose_before_deg:.3g} -> {self.pose_after_deg:.3g} deg, "
            f"velocity {self.velocity_before_deg:.3g} -> {self.velocity_after_deg:.3g} deg/frame"
        )
        if self.joint_pose_before_cm >= 0.0:
            parts.append(
                f"joints {self.joint_pose_before_cm:.3g} -> {self.joint_pose_after_cm:.3g} cm, "
                f"velocity {self.joint_velocity_before_cm:.3g} -> {self.joint_velocity_after_cm:.3g} cm/frame"
            )
        parts.append(f"RMS change {self.rms_deviation_deg:.3g} deg")
        if self.travel_channels:
            parts.append(f"{self.travel_channels} travel channel(s) kept moving")
        if not self.converged:
            parts.append("closure did not fully converge")
        return "; ".join(parts)


def world_seam(scene, ob, lo: int, hi: int, *, travel: bool) -> tuple[float, float]:
    """Seam jump of an armature's world-space joints in cm, as a loop over frames lo..hi plays:
    pose and velocity (see :func:`anim_signals.manifolds.joint_seam`), the roots' horizontal travel over the
    cycle taken out when ``travel``."""
    heads = bone_heads_world(scene, ob, [lo, lo + 1, hi - 1, hi])
    if heads.shape[1] == 0:
        return 0.0, 0.0
    roots = None
    if travel:
        _, parents = bone_hierarchy(ob)
        roots = [i for i, p in enumerate(parents) if p < 0] or [0]
    pose, velocity = joint_seam(heads, roots)
    unit = cm_per_unit(scene)
    return pose * unit, velocity * unit


def run_loop(plan: LoopPlan, *, velocity_window: int = 0):
    """The core's loop on the plan's curve (no Blender data touched)."""
    try:
        return make_loop(plan.curve, travel=plan.travel, velocity_window=velocity_window or None,
                              weights=plan.weights)
    except ValueError as err:
        raise MotionInputError(f"Cannot loop this clip: {err}") from err


def _channel_seams(s: LoopSummary, kinds, result) -> None:
    """The seam numbers of the channels, before and after (rotations in degrees, locations)."""
    s.pose_before_deg = finite_max(rotation_degrees(result.before.pose, kinds))
    s.pose_after_deg = finite_max(rotation_degrees(result.after.pose, kinds))
    s.velocity_before_deg = finite_max(rotation_degrees(result.before.velocity, kinds))
    s.velocity_after_deg = finite_max(rotation_degrees(result.after.velocity, kinds))
    s.rms_deviation_deg = finite_rms(rotation_degrees(result.deviation_rms, kinds))
    loc = location_mask(kinds)
    if loc.any():
        s.pose_before_loc = float(np.max(result.before.pose[loc]))
        s.pose_after_loc = float(np.max(result.after.pose[loc]))
        s.velocity_before_loc = float(np.max(result.before.velocity[loc]))
        s.velocity_after_loc = float(np.max(result.after.velocity[loc]))
        s.rms_deviation_loc = finite_rms(np.asarray(result.deviation_rms, dtype=float)[loc])


def write_loop(plan: LoopPlan, result, *, add_cycles: bool = True, keep_original: bool = True, scene=None) -> LoopSummary:
    """Write the looped curve as dense keys (a new action per original when ``keep_original``).

    What is written is recorded with the running transaction (keys, Cycles modifiers, frame ranges,
    assignments; copies are new datablocks): a failure part-way takes it all back. Raises
    :class:`~..blender_data.fcurves.KeyframeError` (a ValueError) for a value that is not finite."""
    lo, hi = int(plan.frames[0]), int(plan.frames[-1])
    s = LoopSummary(object_name=plan.object_name, frame_start=lo, frame_end=hi, auto_range=plan.auto_cycle is not None)
    s.travel_channels = len(plan.travel)
    s.curves = plan.curve.shape[1]
    s.iterations = int(result.iterations)
    s.converged = bool(result.converged)
    _channel_seams(s, plan.kinds, result)

    travel_set = set(plan.travel)
    armatures = []
    if scene is not None:
        for job in plan.jobs:
            if isinstance(job.id_data, bpy.types.Object) and job.id_data.type == "ARMATURE":
                travels = any(c in travel_set for c in range(job.columns.start, job.columns.stop))
                armatures.append((job.id_data, travels))
    joints_before = [world_seam(scene, ob, lo, hi, travel=travels) for ob, travels in armatures]

    values = from_motion_curve(result.values, plan.kinds, plan.owners)
    tx = current_transaction()
    for job in plan.jobs:
        tx.keep_action(job.id_data)
    targets = writable_curves(plan.jobs, keep_original=keep_original, suffix=".loop")
    for job, (action, curves) in zip(plan.jobs, targets, strict=True):
        if not keep_original:
            tx.on_rollback(keep_frame_range(action))
        for j, fc in enumerate(curves):
            if not keep_original:
                tx.on_rollback(keep_keys(fc))
            write_dense(fc, plan.frames, values[:, job.columns.start + j])
            if add_cycles:
                add_cycles_modifier(fc, "REPEAT_OFFSET")
        set_action_frame_range(action, lo, hi, cyclic=add_cycles)
        if action.name not in s.action_names:
            s.action_names.append(action.name)

    if armatures:
        after = [world_seam(scene, ob, lo, hi, travel=travels) for ob, travels in armatures]
        s.joint_pose_before_cm = max(b[0] for b in joints_before)
        s.joint_velocity_before_cm = max(b[1] for b in joints_before)
        s.joint_pose_after_cm = max(a[0] for a in after)
        s.joint_velocity_after_cm = max(a[1] for a in after)
    return s
