"""Operators ``anim_signals.make_cyclic``, ``anim_signals.blend_actions``, ``anim_signals.compare_actions``
(Eslitzbichler, motion manifolds: loop / blend / compare).

Thin, like :mod:`.fit`: a *plan* reads and checks the Blender data through :mod:`.bridge` (raising
:class:`MotionInputError` on bad input, nothing changed), the core (``anim_signals.loop`` /
``elastic`` / ``skeleton`` / ``raster``) computes on arrays, and a *write* step puts the result
back through :mod:`.bridge`. Nothing is written before the computation has finished, so a failed
or cancelled run leaves the user's data untouched.
"""

import json
import math
import os
import tempfile
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..anim_signals import motion
from ..anim_signals.channels import check_finite
from . import bridge
from .common.menus import add_to_menus, remove_from_menus
from .common.modal import StepwiseModal

MIN_FRAMES = 4
CLUSTER_PROPERTY = "anim_signals_cluster"
DENDROGRAM_IMAGE = "Anim Signals Dendrogram"
DENDROGRAM_FILE = "anim_signals_dendrogram.png"
ROTATION_KINDS = (bridge.EULER, bridge.QUATERNION)
# A channel counts as moving when its samples span more than this (float32 keys: ~1e-7 relative).
STILL_SPAN = 1e-6
# find_cycle's score (seam mismatch in typical frame-to-frame changes) above which a warning is given.
POOR_CYCLE_SCORE = 3.0


class MotionInputError(Exception):
    """Bad input: reported to the user, nothing changed."""


# ------------------------------------------------------------------------------------------
# Shared helpers (arrays)
# ------------------------------------------------------------------------------------------


def _kinds(specs) -> list[str]:
    return [s.kind for s in specs]


def _owners(specs, prefix: str = "") -> list[str]:
    return [prefix + s.owner_path for s in specs]


def _continuous(values: np.ndarray, specs, owners: Sequence[str]) -> np.ndarray:
    """The clip as one continuous curve: Euler wraps and gimbal flips removed (rotation order known),
    quaternions sign-continuous."""
    return motion.to_motion_curve(
        values, _kinds(specs), owners, [s.rotation_mode for s in specs], [s.array_index for s in specs]
    )


def _rotation_deg(values: np.ndarray, kinds: Sequence[str]) -> np.ndarray:
    """Per-channel rotation amounts in degrees (a quaternion component change e is about 2e radians);
    NaN for channels that are not rotations."""
    out = np.full(len(kinds), np.nan)
    for j, k in enumerate(kinds):
        if k == bridge.EULER:
            out[j] = math.degrees(float(values[j]))
        elif k == bridge.QUATERNION:
            out[j] = math.degrees(2.0 * float(values[j]))
    return out


def _max_of(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else 0.0


def _rms_of(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.sqrt(np.mean(finite * finite))) if finite.size else 0.0


def _location_mask(kinds: Sequence[str]) -> np.ndarray:
    return np.array([k == bridge.LOCATION for k in kinds], dtype=bool)


def harmonise(curve: np.ndarray, reference: np.ndarray, kinds: Sequence[str], owners: Sequence[str]) -> np.ndarray:
    """``curve`` moved next to ``reference`` (same channels): Euler channels shifted by whole turns,
    quaternion tracks flipped to the reference's hemisphere. The same poses, comparable numbers."""
    out = np.array(curve, dtype=float, copy=True)
    for j, k in enumerate(kinds):
        if k == bridge.EULER:
            turns = np.round((float(np.mean(reference[:, j])) - float(np.mean(out[:, j]))) / (2.0 * np.pi))
            out[:, j] += 2.0 * np.pi * turns
    for cols in motion.quaternion_groups(kinds, owners):
        if float(np.dot(out[:, cols].mean(axis=0), reference[:, cols].mean(axis=0))) < 0.0:
            out[:, cols] *= -1.0
    return out


def _moving(values: np.ndarray) -> np.ndarray:
    return np.ptp(values, axis=0) > STILL_SPAN if values.shape[0] else np.zeros(values.shape[1], dtype=bool)


def _usable_curves(fcurves, warnings: list[str], what: str) -> list:
    """Curves a tool may rewrite: not locked, no F-modifier other than Cycles (left alone, warned)."""
    usable = []
    n_locked = n_mod = 0
    for fc in fcurves:
        if bridge.fcurve_locked(fc):
            n_locked += 1
        elif bridge.modifier_types(fc) - {"CYCLES"}:
            n_mod += 1
        else:
            usable.append(fc)
    if n_locked:
        warnings.append(f"{what}: skipped {n_locked} locked curve(s)")
    if n_mod:
        warnings.append(f"{what}: skipped {n_mod} curve(s) with F-curve modifiers other than Cycles")
    return usable


def _check_finite(values: np.ndarray, labels: list[str], verb: str) -> None:
    try:
        check_finite(values, labels)
    except ValueError as err:
        raise MotionInputError(f"Cannot {verb} non-finite data: {err}") from err


# ==========================================================================================
# 1. Make cyclic
# ==========================================================================================


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
    jobs: list[LoopJob]
    object_name: str
    frames: np.ndarray  # (N,) whole frames of the loop range
    values: np.ndarray  # (N, M) sampled channel values (all jobs side by side)
    curve: np.ndarray  # (N, M) continuous motion curve
    kinds: list[str]
    owners: list[str]
    travel: list[int]
    labels: list[str]
    auto_cycle: Any = None  # loop.Cycle when the range was found automatically
    warnings: list[str] = field(default_factory=list)
    weights: Any = None  # per channel: radians 1, location 2 / figure height (one scale for the core)


def _unit_weights(jobs, kinds: Sequence[str]) -> np.ndarray:
    """Per-channel weights putting location on the scale of rotations in radians: 2 / figure height
    for armature channels (their units are the armature's: cm for many BVH files), 1 otherwise."""
    weights = np.ones(len(kinds))
    for job in jobs:
        height = bridge.figure_height(job.id_data) if isinstance(job.id_data, bpy.types.Object) else 0.0
        if height > 0.0:
            for j in range(job.columns.start, job.columns.stop):
                if kinds[j] == bridge.LOCATION:
                    weights[j] = 2.0 / height
    return weights


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
    if ob is None:
        raise MotionInputError("No active object: select an animated object")
    ids = bridge.animated_ids(ob, "AUTO")
    if not ids:
        raise MotionInputError(f'"{ob.name}" has no animation data (no action to loop)')
    warnings: list[str] = []
    jobs_src = []
    for id_data in ids:
        adt = id_data.animation_data
        action = bridge.get_action(id_data)
        if getattr(adt, "use_tweak_mode", False):
            raise MotionInputError(f'"{id_data.name}" is in NLA tweak mode: exit tweak mode first')
        if action is None:  # pragma: no cover - animated_ids('AUTO') only lists IDs with an action
            continue
        reason = bridge.id_read_only_reason(id_data) or bridge.id_read_only_reason(action)
        if reason:
            raise MotionInputError(reason)
        fcurves = bridge.list_fcurves(id_data)
        usable = _usable_curves(fcurves, warnings, f'"{id_data.name}"')
        if usable:
            jobs_src.append((id_data, action, usable))
    if not jobs_src:
        raise MotionInputError(f'The action of "{ob.name}" has no F-curves that can be looped')

    # The frame range: of the first (object's own) action, a custom one, or all of it for AUTO.
    first_action = jobs_src[0][1]
    all_curves = [fc for _, _, fcs in jobs_src for fc in fcs]
    if range_mode == "CUSTOM":
        lo, hi = int(frame_start), int(frame_end)
        if hi < lo:
            raise MotionInputError(f"The frame range {lo}-{hi} is empty: the end must come after the start")
    else:
        lo, hi = bridge.action_frame_range(first_action, all_curves)
    n = hi - lo + 1
    if n < MIN_FRAMES:
        raise MotionInputError(
            f'The clip is too short to loop: {n} frame(s) ({lo}-{hi}), at least {MIN_FRAMES} are needed'
        )
    frames = np.arange(lo, hi + 1, dtype=np.float64)

    jobs: list[LoopJob] = []
    blocks, kinds, owners, labels, all_specs = [], [], [], [], []
    col = 0
    for i, (id_data, action, usable) in enumerate(jobs_src):
        specs = bridge.channel_specs(id_data, usable)
        _, values = bridge.sample_curves(usable, frames)
        blocks.append(values)
        kinds += _kinds(specs)
        owners += _owners(specs, f"{i}:")
        all_specs += specs
        labels += [f"{id_data.name}: {s.label}" for s in specs]
        jobs.append(LoopJob(id_data, action, bridge.slot_identifier(id_data), usable, specs, slice(col, col + len(usable))))
        col += len(usable)
    values = np.concatenate(blocks, axis=1)
    _check_finite(values, labels, "loop")
    curve = _continuous(values, all_specs, owners)
    if not _moving(curve).any():
        raise MotionInputError(f'Nothing moves: all {curve.shape[1]} curve(s) of "{ob.name}" are constant on frames {lo}-{hi}')

    travel_cols: list[int] = []
    if travel == "AUTO":
        for job in jobs:
            travel_cols += [job.columns.start + j for j in bridge.travel_channels(job.id_data, job.specs)]
        from ..anim_signals import loop as _loop

        travel_cols = _loop.select_travel(curve, travel_cols)  # forward travel yes, sideways sway no

    plan = LoopPlan(jobs, ob.name, frames, values, curve, kinds, owners, travel_cols, labels, warnings=warnings,
                    weights=_unit_weights(jobs, kinds))
    if range_mode == "AUTO":
        from ..anim_signals import loop

        if min_period and max_period and max_period < min_period:
            raise MotionInputError(f"The max period ({max_period}) is shorter than the min period ({min_period})")
        try:
            cyc = loop.find_cycle(curve, travel=travel_cols, min_period=min_period or None,
                                  max_period=max_period or None, weights=plan.weights)
        except ValueError as err:
            raise MotionInputError(f"No cycle found on frames {lo}-{hi}: {err}") from err
        start, stop = int(cyc.start), int(cyc.stop)
        if stop - start + 1 < MIN_FRAMES:
            raise MotionInputError(f"The cycle found is too short to loop ({stop - start + 1} frames)")
        plan.auto_cycle = cyc
        if float(cyc.score) > POOR_CYCLE_SCORE:
            warnings.append(
                f"The best cycle found (frames {lo + start}-{lo + stop}) still has a seam of about "
                f"{float(cyc.score):.1f} typical frame steps: the clip may not hold a whole cycle"
            )
        plan.frames = frames[start : stop + 1]
        plan.values = values[start : stop + 1]
        plan.curve = curve[start : stop + 1]
        if not _moving(plan.curve).any():
            raise MotionInputError(f"Nothing moves on the cycle found (frames {lo + start}-{lo + stop})")
    return plan


@dataclass
class LoopSummary:
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


def _armature_jobs(plan: LoopPlan) -> list[LoopJob]:
    return [j for j in plan.jobs if isinstance(j.id_data, bpy.types.Object) and j.id_data.type == "ARMATURE"]


def world_seam(scene, ob, lo: int, hi: int, *, travel: bool) -> tuple[float, float]:
    """Seam jump of an armature's world-space joints in cm, as a loop over frames lo..hi plays:
    pose |h(hi) - h(lo) - d| (d: the roots' horizontal travel over the cycle when ``travel``) and
    velocity |(h(hi) - h(hi-1)) - (h(lo+1) - h(lo))|, the largest over joints."""
    heads = bridge.bone_heads_world(scene, ob, [lo, lo + 1, hi - 1, hi])
    if heads.shape[1] == 0:
        return 0.0, 0.0
    unit = 100.0 * float(scene.unit_settings.scale_length or 1.0)
    offset = np.zeros(3)
    if travel:
        _, parents = bridge.bone_hierarchy(ob)
        roots = [i for i, p in enumerate(parents) if p < 0] or [0]
        offset = (heads[3, roots] - heads[0, roots]).mean(axis=0)
        offset[2] = 0.0
    pose = np.linalg.norm(heads[3] - heads[0] - offset, axis=-1).max()
    vel = np.linalg.norm((heads[3] - heads[2]) - (heads[1] - heads[0]), axis=-1).max()
    return float(pose) * unit, float(vel) * unit


def run_loop(plan: LoopPlan, *, velocity_window: int = 0):
    """The core's loop on the plan's curve (no Blender data touched)."""
    from ..anim_signals import loop

    try:
        return loop.make_loop(plan.curve, travel=plan.travel, velocity_window=velocity_window or None,
                              weights=plan.weights)
    except ValueError as err:
        raise MotionInputError(f"Cannot loop this clip: {err}") from err


def write_loop(plan: LoopPlan, result, *, add_cycles: bool = True, keep_original: bool = True, scene=None) -> LoopSummary:
    """Write the looped curve as dense keys (a new action per original when ``keep_original``)."""
    lo, hi = int(plan.frames[0]), int(plan.frames[-1])
    s = LoopSummary(object_name=plan.object_name, frame_start=lo, frame_end=hi, auto_range=plan.auto_cycle is not None)
    s.travel_channels = len(plan.travel)
    s.curves = plan.curve.shape[1]
    s.iterations = int(result.iterations)
    s.converged = bool(result.converged)
    kinds = plan.kinds
    loc = _location_mask(kinds)
    s.pose_before_deg = _max_of(_rotation_deg(result.before.pose, kinds))
    s.pose_after_deg = _max_of(_rotation_deg(result.after.pose, kinds))
    s.velocity_before_deg = _max_of(_rotation_deg(result.before.velocity, kinds))
    s.velocity_after_deg = _max_of(_rotation_deg(result.after.velocity, kinds))
    s.rms_deviation_deg = _rms_of(_rotation_deg(result.deviation_rms, kinds))
    if loc.any():
        s.pose_before_loc = float(np.max(result.before.pose[loc]))
        s.pose_after_loc = float(np.max(result.after.pose[loc]))
        s.velocity_before_loc = float(np.max(result.before.velocity[loc]))
        s.velocity_after_loc = float(np.max(result.after.velocity[loc]))
        s.rms_deviation_loc = _rms_of(np.asarray(result.deviation_rms, dtype=float)[loc])

    arm_jobs = _armature_jobs(plan) if scene is not None else []
    travel_set = set(plan.travel)

    def _job_travels(job: LoopJob) -> bool:
        return any(c in travel_set for c in range(job.columns.start, job.columns.stop))

    joints_before = [world_seam(scene, j.id_data, lo, hi, travel=_job_travels(j)) for j in arm_jobs]

    values = motion.from_motion_curve(result.values, plan.kinds, plan.owners)
    copies: dict[str, Any] = {}
    for job in plan.jobs:
        if keep_original:
            key = job.action.name
            if key not in copies:
                copies[key] = bridge.copy_action(job.action, f"{job.action.name}.loop")
            action = copies[key]
            bridge.assign_action(job.id_data, action, job.slot_identifier)
            slot = bridge.get_slot(job.id_data)
            targets = []
            for spec in job.specs:
                fc = bridge.find_fcurve(action, slot, spec.data_path, spec.array_index)
                if fc is None:  # pragma: no cover - the copy has every curve of the original
                    raise RuntimeError(f"{spec.label} missing in the copied action {action.name}")
                targets.append(fc)
        else:
            action = job.action
            targets = job.fcurves
        for j, fc in enumerate(targets):
            bridge.write_dense(fc, plan.frames, values[:, job.columns.start + j])
            if add_cycles:
                bridge.add_cycles(fc, "REPEAT_OFFSET")
        bridge.set_action_frame_range(action, lo, hi, cyclic=add_cycles)
        if action.name not in s.action_names:
            s.action_names.append(action.name)

    if arm_jobs:
        after = [world_seam(scene, j.id_data, lo, hi, travel=_job_travels(j)) for j in arm_jobs]
        s.joint_pose_before_cm = max(b[0] for b in joints_before)
        s.joint_velocity_before_cm = max(b[1] for b in joints_before)
        s.joint_pose_after_cm = max(a[0] for a in after)
        s.joint_velocity_after_cm = max(a[1] for a in after)
    return s


def store_loop_summary(scene, s: LoopSummary) -> None:
    res = getattr(getattr(scene, "anim_signals", None), "last_loop", None)
    if res is None:
        return
    res.valid = True
    res.object_name = s.object_name
    res.action_name = ", ".join(s.action_names)
    res.frame_start = s.frame_start
    res.frame_end = s.frame_end
    res.auto_range = s.auto_range
    res.curves = s.curves
    res.travel_channels = s.travel_channels
    for name in (
        "pose_before_deg",
        "pose_after_deg",
        "velocity_before_deg",
        "velocity_after_deg",
        "pose_before_loc",
        "pose_after_loc",
        "velocity_before_loc",
        "velocity_after_loc",
        "joint_pose_before_cm",
        "joint_pose_after_cm",
        "joint_velocity_before_cm",
        "joint_velocity_after_cm",
        "rms_deviation_deg",
        "rms_deviation_loc",
        "seconds",
    ):
        setattr(res, name, float(getattr(s, name)))
    res.iterations = s.iterations
    res.converged = s.converged


# ==========================================================================================
# 2. Blend
# ==========================================================================================


@dataclass
class Clip:
    """One action sampled on its whole frames (no assignment needed)."""

    action: Any
    fcurves: list  # matched curves, in the plan's channel order
    frames: np.ndarray
    values: np.ndarray
    curve: np.ndarray
    cycles: bool  # every matched curve has a Cycles modifier
    user: Any = None  # an object animated by this action (for travel axes), or None


@dataclass
class BlendPlan:
    a: Clip
    b: Clip
    keys: list[tuple[str, int]]  # (data_path, array_index) of the common channels
    specs: list
    kinds: list[str]
    owners: list[str]
    slot_identifier: str | None  # the slot of A the curves were read from (4.4+)
    closed: bool
    travel: list[int]
    weights: list[float]
    target: Any = None  # the ID the first result is assigned to (None: not assigned)
    missing_in_a: list[str] = field(default_factory=list)
    missing_in_b: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _find_action(name: str):
    name = name.strip()
    if not name:
        return None
    action = bpy.data.actions.get(name)
    if action is None:
        raise MotionInputError(f'No action named "{name}"')
    return action


def _user_of(action, ob):
    """An object animated by ``action``: the active object when it uses it, else any user."""
    if ob is not None and bridge.get_action(ob) == action:
        return ob
    users = bridge.objects_using_action(action)
    return users[0] if users else None


def _sample_action(action, fcurves, what: str) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = bridge.action_frame_range(action, fcurves)
    n = hi - lo + 1
    if n < MIN_FRAMES:
        raise MotionInputError(f'{what} "{action.name}" is too short: {n} frame(s), at least {MIN_FRAMES} are needed')
    frames = np.arange(lo, hi + 1, dtype=np.float64)
    _, values = bridge.sample_curves(fcurves, frames)
    _check_finite(values, [f'"{action.name}": {fc.data_path}[{fc.array_index}]' for fc in fcurves], "use")
    return frames, values


def _nearly_closed(curve: np.ndarray, travel: Sequence[int]) -> bool:
    """The clip ends close to where it starts: every channel's seam jump within three median
    frame-to-frame changes (plus 1 % of its range), travel channels measured with their offset."""
    from ..anim_signals import loop

    jump = loop.seam_jump(curve, travel=travel)
    med, _ = loop.median_frame_change(curve)
    allowed = 3.0 * np.asarray(med) + 0.01 * np.ptp(curve, axis=0) + 1e-6
    return bool(np.all(np.asarray(jump.pose) <= allowed))


def _blend_target(ob, keys: Sequence[tuple[str, int]]):
    """The ID of the active object that can play curves with these paths (object, then shape keys)."""
    if ob is None:
        return None
    paths = [k[0] for k in keys]
    candidates = [ob]
    data = getattr(ob, "data", None)
    sk = getattr(data, "shape_keys", None) if data is not None else None
    if sk is not None:
        candidates.append(sk)
    for id_data in candidates:
        if bridge.id_read_only_reason(id_data) is None and bridge.id_has_paths(id_data, paths):
            return id_data
    return None


def plan_blend(
    ob,
    action_a: str,
    action_b: str,
    *,
    weight: float = 0.5,
    count: int = 0,
    cyclic: str = "AUTO",
    assign: bool = True,
) -> BlendPlan:
    """Check and sample both actions on their common channels. Raises MotionInputError."""
    a_act, b_act = _find_action(action_a), _find_action(action_b)
    if a_act is None or b_act is None:
        raise MotionInputError("Pick two actions to blend (Action A and Action B)")
    if not (0.0 <= weight <= 1.0) or not math.isfinite(weight):
        raise MotionInputError(f"The weight must be between 0 and 1 (got {weight})")
    user_a, user_b = _user_of(a_act, ob), _user_of(b_act, ob)
    fcs_a = bridge.fcurves_of_action(a_act, user_a)
    fcs_b = bridge.fcurves_of_action(b_act, user_b)
    for act, fcs in ((a_act, fcs_a), (b_act, fcs_b)):
        if not fcs:
            raise MotionInputError(f'Action "{act.name}" has no F-curves')
    by_a = {(fc.data_path, fc.array_index): fc for fc in fcs_a}
    by_b = {(fc.data_path, fc.array_index): fc for fc in fcs_b}
    keys = [k for k in by_a if k in by_b]
    missing_in_b = [f"{p}[{i}]" for (p, i) in by_a if (p, i) not in by_b]
    missing_in_a = [f"{p}[{i}]" for (p, i) in by_b if (p, i) not in by_a]
    if not keys:
        raise MotionInputError(
            f'Actions "{a_act.name}" and "{b_act.name}" have no channels in common '
            f"(no F-curve with the same data path and index): nothing to blend"
        )
    warnings = []
    if missing_in_b:
        warnings.append(f'{len(missing_in_b)} channel(s) of "{a_act.name}" missing from "{b_act.name}" (left out): ' + _short(missing_in_b))
    if missing_in_a:
        warnings.append(f'{len(missing_in_a)} channel(s) of "{b_act.name}" missing from "{a_act.name}" (left out): ' + _short(missing_in_a))

    curves_a = [by_a[k] for k in keys]
    curves_b = [by_b[k] for k in keys]
    specs = bridge.channel_specs_of_action(curves_a, user_a)
    kinds, owners = _kinds(specs), _owners(specs)
    frames_a, values_a = _sample_action(a_act, curves_a, "Action")
    frames_b, values_b = _sample_action(b_act, curves_b, "Action")
    specs_b = bridge.channel_specs_of_action(curves_b, user_b)
    curve_a = _continuous(values_a, specs, owners)
    curve_b = harmonise(_continuous(values_b, specs_b, owners), curve_a, kinds, owners)
    for act, c in ((a_act, curve_a), (b_act, curve_b)):
        if not _moving(c).any():
            raise MotionInputError(f'Nothing moves in "{act.name}" (its {len(keys)} common channel(s) are constant): nothing to blend')

    from ..anim_signals import loop as _loop

    travel = bridge.travel_channels(user_a, specs) if user_a is not None else []
    travel = sorted(set(_loop.select_travel(curve_a, travel)) | set(_loop.select_travel(curve_b, travel)))
    cycles_a = all(bridge.has_cycles(fc) for fc in curves_a)
    cycles_b = all(bridge.has_cycles(fc) for fc in curves_b)
    if cyclic == "CLOSED":
        closed = True
    elif cyclic == "OPEN":
        closed = False
    else:
        closed = (cycles_a or _nearly_closed(curve_a, travel)) and (cycles_b or _nearly_closed(curve_b, travel))
    weights = [i / (count + 1) for i in range(1, count + 1)] if count > 0 else [float(weight)]
    target = _blend_target(ob, keys) if assign else None
    if assign and ob is not None and target is None:
        warnings.append(f'"{ob.name}" cannot play the blended channels: the result is not assigned')
    return BlendPlan(
        a=Clip(a_act, curves_a, frames_a, values_a, curve_a, cycles_a, user_a),
        b=Clip(b_act, curves_b, frames_b, values_b, curve_b, cycles_b, user_b),
        keys=keys,
        specs=specs,
        kinds=kinds,
        owners=owners,
        slot_identifier=bridge.action_slot_identifier(a_act, user_a),
        closed=closed,
        travel=travel,
        weights=weights,
        target=target,
        missing_in_a=missing_in_a,
        missing_in_b=missing_in_b,
        warnings=warnings,
    )


def _short(items: Sequence[str], n: int = 4) -> str:
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def run_blend(plan: BlendPlan, *, align: bool = True) -> list[np.ndarray]:
    """Geodesic blends on the motion manifold (arrays only; nothing written)."""
    from ..anim_signals import elastic

    try:
        curves = elastic.blend(plan.a.curve, plan.b.curve, plan.weights, closed=plan.closed, align=align,
                               travel=plan.travel)
    except ValueError as err:
        raise MotionInputError(f"Cannot blend: {err}") from err
    return [motion.from_motion_curve(c, plan.kinds, plan.owners) for c in curves]


def blend_name(a: str, b: str, s: float) -> str:
    return f"{a}+{b} {s:.2f}"


@dataclass
class BlendSummary:
    action_names: list[str] = field(default_factory=list)
    channels: int = 0
    closed: bool = False
    aligned: bool = True
    assigned_to: str = ""
    missing_in_a: int = 0
    missing_in_b: int = 0
    seconds: float = 0.0

    def message(self) -> str:
        kind = "closed (cyclic)" if self.closed else "open"
        msg = f"Blended {self.channels} common channels ({kind}{', aligned' if self.aligned else ''}): " + ", ".join(
            f'"{n}"' for n in self.action_names
        )
        if self.assigned_to:
            msg += f'; assigned "{self.action_names[0]}" to "{self.assigned_to}"'
        return msg + f"; {self.seconds:.2f} s"


def write_blend(plan: BlendPlan, results: Sequence[np.ndarray], *, align: bool = True) -> BlendSummary:
    """One new action per blend (a copy of A holding only the common channels, dense keys)."""
    s = BlendSummary(channels=len(plan.keys), closed=plan.closed, aligned=align)
    s.missing_in_a, s.missing_in_b = len(plan.missing_in_a), len(plan.missing_in_b)
    wanted = set(plan.keys)
    a = plan.a.action
    new_actions = []
    for w, values in zip(plan.weights, results, strict=True):
        act = bridge.duplicate_action(a, blend_name(a.name, plan.b.action.name, w))
        act.use_fake_user = True  # kept when saved, assigned or not
        slot = None
        if plan.slot_identifier is not None and hasattr(act, "slots"):
            slot = act.slots.get(plan.slot_identifier)
        for fc in bridge.action_fcurves(act, slot):
            if (fc.data_path, fc.array_index) not in wanted:
                bridge.remove_fcurve(act, slot, fc)
        start = int(round((1.0 - w) * plan.a.frames[0] + w * plan.b.frames[0]))
        frames = start + np.arange(values.shape[0], dtype=np.float64)
        for j, (path, index) in enumerate(plan.keys):
            target = bridge.find_fcurve(act, slot, path, index)
            if target is None:  # pragma: no cover - the copy has every curve of A
                raise RuntimeError(f"{path}[{index}] missing in the copied action {act.name}")
            bridge.clear_modifiers(target)
            bridge.write_dense(target, frames, values[:, j])
            if plan.closed:
                bridge.add_cycles(target, "REPEAT_OFFSET")
        bridge.set_action_frame_range(act, frames[0], frames[-1], cyclic=plan.closed)
        new_actions.append(act)
        s.action_names.append(act.name)
    if plan.target is not None and new_actions:
        old = bridge.get_action(plan.target)
        if old is not None and old.library is None and old.users <= 1:
            old.use_fake_user = True  # about to lose its last user
        try:
            bridge.assign_action(plan.target, new_actions[0], plan.slot_identifier)
            s.assigned_to = plan.target.name
        except (RuntimeError, TypeError, ValueError):  # pragma: no cover - slot of another ID type
            pass
    return s


def store_blend_summary(scene, s: BlendSummary) -> None:
    res = getattr(getattr(scene, "anim_signals", None), "last_blend", None)
    if res is None:
        return
    res.valid = True
    res.action_names = ", ".join(s.action_names)
    res.channels = s.channels
    res.closed = s.closed
    res.assigned_to = s.assigned_to
    res.missing_in_a = s.missing_in_a
    res.missing_in_b = s.missing_in_b
    res.seconds = s.seconds


# ==========================================================================================
# 3. Compare
# ==========================================================================================


@dataclass
class ComparePlan:
    actions: list  # bpy Actions, in the order compared
    curves: list[np.ndarray]  # one (N_i, n) curve per action, same channels
    features: str
    reference: int | None  # index of the active object's action
    image_path: str
    warnings: list[str] = field(default_factory=list)
    distances: np.ndarray | None = None
    scene: Any = None
    body_jobs: list = field(default_factory=list)  # BODY: actions still to evaluate into curves


def parse_action_names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def resolve_image_path(image_path: str) -> str:
    """'' -> "//anim_signals_dendrogram.png" next to a saved .blend, else the temp dir."""
    if not image_path.strip():
        if bpy.data.is_saved:
            return bpy.path.abspath("//" + DENDROGRAM_FILE)
        return os.path.join(tempfile.gettempdir(), DENDROGRAM_FILE)
    path = bpy.path.abspath(image_path.strip())
    if not path.lower().endswith(".png"):
        path += ".png"
    return path


def _bones_of(keys) -> set[str]:
    return {b for p, _ in keys if (b := bridge.bone_name_of_path(p))}


def _mismatch(ref_keys, keys) -> str:
    """What differs between two sets of channels: whole bones first, then single channels."""
    ref_set, key_set = set(ref_keys), set(keys)
    missing = [k for k in ref_keys if k not in key_set]
    extra = [k for k in keys if k not in ref_set]
    miss_b = sorted(_bones_of(missing) - _bones_of(keys))
    extra_b = sorted(_bones_of(extra) - _bones_of(ref_keys))
    # Channels not explained by a whole missing / extra bone.
    miss_c = [f"{p}[{i}]" for p, i in missing if bridge.bone_name_of_path(p) not in miss_b]
    extra_c = [f"{p}[{i}]" for p, i in extra if bridge.bone_name_of_path(p) not in extra_b]
    parts = []
    if miss_b:
        parts.append("missing bones " + _short(miss_b))
    if extra_b:
        parts.append("extra bones " + _short(extra_b))
    if miss_c:
        parts.append("missing channels " + _short(miss_c))
    if extra_c:
        parts.append("extra channels " + _short(extra_c))
    return "; ".join(parts)


def _channel_curves(actions, ob) -> list[np.ndarray]:
    """Rotation channels by name: every action must have the same ones."""
    ref_keys: list[tuple[str, int]] | None = None
    ref_name = ""
    kinds: list[str] = []
    owners: list[str] = []
    curves: list[np.ndarray] = []
    for action in actions:
        user = _user_of(action, ob)
        fcs = bridge.fcurves_of_action(action, user)
        specs = bridge.channel_specs_of_action(fcs, user)
        rot = [(fc, sp) for fc, sp in zip(fcs, specs, strict=True) if sp.kind in ROTATION_KINDS]
        if not rot:
            raise MotionInputError(f'Action "{action.name}" has no rotation channels to compare (try Body features)')
        by_key = {(sp.data_path, sp.array_index): (fc, sp) for fc, sp in rot}
        if ref_keys is None:
            ref_keys, ref_name = list(by_key), action.name
            kinds = [by_key[k][1].kind for k in ref_keys]
            owners = [by_key[k][1].owner_path for k in ref_keys]
        elif set(by_key) != set(ref_keys):
            raise MotionInputError(
                f'Action "{action.name}" has different rotation channels than "{ref_name}" '
                f"({_mismatch(ref_keys, list(by_key))}): compare clips of one skeleton, or use Body features "
                "to compare different rigs"
            )
        ordered = [by_key[k][0] for k in ref_keys]
        _, values = _sample_action(action, ordered, "Action")
        c = _continuous(values, [by_key[k][1] for k in ref_keys], owners)
        if curves:
            c = harmonise(c, curves[0], kinds, owners)
        if not _moving(c).any():
            raise MotionInputError(f'Nothing moves in "{action.name}" (all rotation channels are constant): nothing to compare')
        curves.append(c)
    return curves


def _armature_for(action, active_arm):
    """The armature to play ``action`` on: one that uses it, else the active armature, else any
    armature, as long as it has every bone the action animates."""
    users = [o for o in bridge.objects_using_action(action) if o.type == "ARMATURE"]
    if users:
        return users[0]
    bones = {b for fc in bridge.fcurves_of_action(action) if (b := bridge.bone_name_of_path(fc.data_path))}
    if not bones:
        raise MotionInputError(
            f'No armature to evaluate "{action.name}" on: it animates no bones (Body features need an armature action)'
        )
    others = [o for o in bpy.data.objects if o.type == "ARMATURE" and o != active_arm]
    for arm in ([active_arm] if active_arm is not None else []) + others:
        if bones <= set(arm.pose.bones.keys()):
            return arm
    raise MotionInputError(
        f'No armature to evaluate "{action.name}" on: no armature has its bones ({_short(sorted(bones))}); '
        "assign the action to its armature"
    )


@dataclass
class BodyJob:
    """One action to play on an armature for body features (sampled while comparing)."""

    action: Any
    armature: Any
    frames: np.ndarray  # evenly spaced (possibly fractional) frames over the action's range


def _body_jobs(actions, ob, n_samples: int) -> list[BodyJob]:
    """Check every action can be played on an armature with the canonical joints (cheap: no evaluation)."""
    from ..anim_signals import skeleton

    active_arm = ob if ob is not None and ob.type == "ARMATURE" else None
    jobs = []
    for action in actions:
        arm = _armature_for(action, active_arm)
        fcs = bridge.fcurves_of_action(action, arm if bridge.get_action(arm) == action else None)
        if not fcs:
            raise MotionInputError(f'Action "{action.name}" has no F-curves')
        whole, _ = _sample_action(action, fcs, "Action")  # length and finite checks
        names, parents = bridge.bone_hierarchy(arm)
        found = skeleton.canonical_joints(names, parents)
        missing = [k for k in skeleton.REQUIRED if k not in found]
        if missing:
            raise MotionInputError(
                f'Armature "{arm.name}" (playing "{action.name}") lacks the canonical joints {", ".join(missing)} '
                "that Body features need (humanoid bone names)"
            )
        frames = np.linspace(whole[0], whole[-1], min(whole.size, max(int(n_samples), MIN_FRAMES)))
        jobs.append(BodyJob(action, arm, frames))
    return jobs


def body_curve(job: BodyJob, scene) -> np.ndarray:
    """Skeleton-independent features of one action: world joint heads of its armature playing it
    (the armature's own action and slot restored afterwards)."""
    from ..anim_signals import skeleton

    heads = bridge.bone_heads_with_action(scene, job.armature, job.action, job.frames.tolist())
    names, parents = bridge.bone_hierarchy(job.armature)
    try:
        feats = np.asarray(skeleton.body_features(heads, names, parents), dtype=float)
    except ValueError as err:
        raise MotionInputError(f'"{job.action.name}" on armature "{job.armature.name}": {err}') from err
    _check_finite(feats, [f'"{job.action.name}" body feature {k}' for k in range(feats.shape[1])], "compare")
    if not _moving(feats).any():
        raise MotionInputError(f'Nothing moves in "{job.action.name}" on "{job.armature.name}": nothing to compare')
    return feats


def plan_compare(
    ob,
    scene,
    *,
    actions: str = "",
    features: str = "CHANNELS",
    n_samples: int = 100,
    image_path: str = "",
) -> ComparePlan:
    """Pick, check and sample the actions. Raises MotionInputError."""
    warnings: list[str] = []
    names = parse_action_names(actions)
    if names:
        chosen = []
        for name in names:
            act = _find_action(name)
            if act not in chosen:
                chosen.append(act)
    else:
        chosen = [a for a in bpy.data.actions if bridge.fcurves_of_action(a)]
        if features == "BODY":
            chosen = [a for a in chosen if any(bridge.bone_name_of_path(fc.data_path) for fc in bridge.fcurves_of_action(a))]
    if len(chosen) < 2:
        where = "listed" if names else "with F-curves in the file"
        raise MotionInputError(f"Need at least 2 actions to compare, got {len(chosen)} {where}")
    if n_samples < MIN_FRAMES:
        raise MotionInputError(f"Samples must be at least {MIN_FRAMES}")
    path = resolve_image_path(image_path)
    plan = ComparePlan(chosen, [], features, None, path, warnings, scene=scene)
    if features == "BODY":
        plan.body_jobs = _body_jobs(chosen, ob, n_samples)  # evaluated step by step in iter_compare
    else:
        plan.curves = _channel_curves(chosen, ob)
    ref_action = bridge.get_action(ob) if ob is not None else None
    plan.reference = chosen.index(ref_action) if ref_action in chosen else None
    return plan


def iter_compare(plan: ComparePlan, *, metric: str = "ELASTIC", cyclic: bool = True, n_samples: int = 100) -> Generator[float, None, None]:
    """Distance matrix of the plan's curves, step by step: yields progress in [0, 1]; sets plan.distances."""
    from ..anim_signals import elastic

    # Body features first (one action per step: played on its armature and restored), then distances.
    share = 0.3 if plan.body_jobs else 0.0
    n_jobs = len(plan.body_jobs)
    for i, job in enumerate(plan.body_jobs):
        plan.curves.append(body_curve(job, plan.scene))
        yield share * (i + 1) / n_jobs
    plan.body_jobs = []
    try:
        for frac, dist in elastic.iter_distance_matrix(plan.curves, metric=metric.lower(), closed=cyclic, n_samples=n_samples):
            if dist is not None:
                plan.distances = np.asarray(dist, dtype=float)
            yield share + (1.0 - share) * float(min(max(frac, 0.0), 1.0))
    except ValueError as err:
        raise MotionInputError(f"Cannot compare: {err}") from err
    if plan.distances is None:  # pragma: no cover - the core always ends with the matrix
        raise ValueError("the distance computation ended without a result")


@dataclass
class CompareSummary:
    names: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    leaves: list[int] = field(default_factory=list)
    n_clusters: int = 0
    reference: str = ""
    nearest: list[tuple[str, float]] = field(default_factory=list)
    distances_to_reference: list[float] = field(default_factory=list)
    distances: list[list[float]] = field(default_factory=list)  # the full matrix, row per action
    image_name: str = ""
    image_path: str = ""
    metric: str = ""
    features: str = ""
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def message(self) -> str:
        msg = f"Compared {len(self.names)} actions ({self.features.lower()}, {self.metric.lower()}): {self.n_clusters} cluster(s)"
        if self.reference and self.nearest:
            msg += f'; nearest to "{self.reference}": ' + ", ".join(f"{n} ({d:.3g})" for n, d in self.nearest[:3])
        if self.image_path:
            msg += f"; dendrogram {self.image_path}"
        return msg + f"; {self.seconds:.2f} s"


def finish_compare(plan: ComparePlan, *, n_clusters: int = 0, metric: str = "ELASTIC") -> CompareSummary:
    """Cluster, label the actions, draw the dendrogram (image datablock + PNG file)."""
    from ..anim_signals import elastic, raster

    dist = plan.distances
    assert dist is not None
    m = len(plan.actions)
    s = CompareSummary(metric=metric, features=plan.features)
    s.names = [a.name for a in plan.actions]
    k = int(n_clusters) or None
    if k is not None and k > m:
        s.warnings.append(f"{k} clusters asked for {m} actions: using {m}")
        k = m
    clustering = elastic.cluster(dist, n_clusters=k)
    s.labels = [int(x) for x in np.asarray(clustering.labels).tolist()]
    s.distances = [[float(x) for x in row] for row in np.asarray(dist)]
    s.leaves = [int(x) for x in clustering.leaves]
    s.n_clusters = len(set(s.labels))
    if plan.reference is not None:
        s.reference = s.names[plan.reference]
        s.nearest = [(s.names[i], float(d)) for i, d in elastic.nearest(dist, plan.reference, k=min(5, m - 1))]
        s.distances_to_reference = [float(d) for d in dist[plan.reference]]
    highlight = [plan.reference] if plan.reference is not None else None
    title = f"{plan.features.lower()} features, {metric.lower()} distance"
    rgba = raster.dendrogram_image(clustering.linkage, s.names, highlight=highlight, clusters=s.labels, title=title)
    try:
        s.image_path = raster.write_png(plan.image_path, rgba)
    except OSError as err:
        s.warnings.append(f"Could not write {plan.image_path}: {err}")
    for action, label in zip(plan.actions, s.labels, strict=True):
        if bridge.id_read_only_reason(action) is None:
            action[CLUSTER_PROPERTY] = int(label)
        else:
            s.warnings.append(f'"{action.name}" is read-only: cluster {label} not stored on it')
    s.image_name = bridge.write_image(DENDROGRAM_IMAGE, rgba).name
    return s


def store_compare_summary(scene, s: CompareSummary) -> None:
    root = getattr(scene, "anim_signals", None)
    if root is None:
        return
    res = root.last_compare
    res.valid = True
    res.actions = len(s.names)
    res.clusters = s.n_clusters
    res.reference = s.reference
    res.nearest = ", ".join(f"{n} ({d:.3g})" for n, d in s.nearest)
    res.image_name = s.image_name
    res.image_path = s.image_path
    res.metric = s.metric
    res.features = s.features
    res.seconds = s.seconds
    res.matrix_json = json.dumps({"actions": s.names, "distances": s.distances, "clusters": s.labels,
                                  "metric": s.metric, "features": s.features})
    items = root.compare_results
    items.clear()
    order = s.leaves if sorted(s.leaves) == list(range(len(s.names))) else list(range(len(s.names)))
    for i in order:
        item = items.add()
        item.action_name = s.names[i]
        item.cluster = s.labels[i]
        item.distance = s.distances_to_reference[i] if s.distances_to_reference else -1.0
        item.is_reference = s.names[i] == s.reference
    root.compare_index = 0


# ==========================================================================================
# Operators
# ==========================================================================================

RANGE_ITEMS = [
    ("ACTION", "Action Range", "Loop the action's whole frame range"),
    ("CUSTOM", "Custom", "Loop the frames from Start to End"),
    ("AUTO", "Find Cycle", "Find the best cycle inside the clip (between the min and max period) and loop that"),
]
TRAVEL_ITEMS = [
    ("AUTO", "Root Travels", "The root's horizontal location (object X/Y, or the root bone's horizontal axes) keeps "
     "moving from cycle to cycle: only its velocity is looped"),
    ("NONE", "In Place", "Every channel, root location included, returns to its start value"),
]
CYCLIC_ITEMS = [
    ("AUTO", "Auto", "Closed when both clips have Cycles modifiers or end close to where they start"),
    ("OPEN", "Open", "Blend as open clips (start and end poses blended separately)"),
    ("CLOSED", "Closed", "Blend as cycles: every blend is a seamless loop (Cycles modifiers added)"),
]
FEATURE_ITEMS = [
    ("CHANNELS", "Rotation Channels", "Compare the rotation curves by name: all actions need the same bones"),
    ("BODY", "Body", "Compare world-space body features (limb directions): works across different rigs; "
     "each action is played on an armature that uses it, or on the active armature"),
]
METRIC_ITEMS = [
    ("ELASTIC", "Elastic", "Geodesic distance on the motion manifold with optimal time warping (seed method)"),
    ("LINEAR", "Linear", "Plain L2 distance between the resampled curves (baseline)"),
]

LOOP_SETTINGS = (
    "range_mode",
    "frame_start",
    "frame_end",
    "min_period",
    "max_period",
    "velocity_window",
    "travel",
    "add_cycles",
    "keep_original",
)
BLEND_SETTINGS = ("action_a", "action_b", "weight", "count", "cyclic", "align", "assign")
COMPARE_SETTINGS = ("actions", "features", "metric", "cyclic", "n_samples", "n_clusters", "image_path")


def _settings(context, name: str):
    return getattr(getattr(context.scene, "anim_signals", None), name, None)


def _fill_from_settings(op, settings, names: Sequence[str]) -> None:
    """Properties not given explicitly take the sidebar's values (menu / F3 calls)."""
    if settings is None:
        return
    for name in names:
        if not op.properties.is_property_set(name) and hasattr(settings, name):
            setattr(op, name, getattr(settings, name))


class ANIM_SIGNALS_OT_make_cyclic(bpy.types.Operator):
    """Make the active object's animation loop seamlessly: the clip is projected onto the closest cyclic motion (same start pose, length and travel), keys on every frame, Cycles modifiers added"""

    bl_idname = "anim_signals.make_cyclic"
    bl_label = "Make Cyclic"
    bl_options = {"REGISTER", "UNDO"}

    range_mode: EnumProperty(  # type: ignore[valid-type]
        name="Range",
        description="Which frames become the cycle: the action's range, a custom range, or the best cycle found in the clip",
        items=RANGE_ITEMS,
        default="ACTION",
    )
    frame_start: IntProperty(  # type: ignore[valid-type]
        name="Start",
        description="First frame of the cycle (Custom range)",
        default=1,
    )
    frame_end: IntProperty(  # type: ignore[valid-type]
        name="End",
        description="Last frame of the cycle (Custom range): it gets the first frame's pose",
        default=100,
    )
    min_period: IntProperty(  # type: ignore[valid-type]
        name="Min Period",
        description="Shortest cycle to look for, in frames (Find Cycle; 0: automatic: the first clear repeat of the motion)",
        default=0,
        min=0,
    )
    max_period: IntProperty(  # type: ignore[valid-type]
        name="Max Period",
        description="Longest cycle to look for, in frames (Find Cycle; 0: automatic)",
        default=0,
        min=0,
    )
    velocity_window: IntProperty(  # type: ignore[valid-type]
        name="Velocity Window",
        description="Frames at each end over which the velocity is matched across the seam (0: automatic)",
        default=0,
        min=0,
        soft_max=60,
    )
    travel: EnumProperty(  # type: ignore[valid-type]
        name="Travel",
        description="Whether the root keeps travelling forward from cycle to cycle (locomotion) or loops in place",
        items=TRAVEL_ITEMS,
        default="AUTO",
    )
    add_cycles: BoolProperty(  # type: ignore[valid-type]
        name="Add Cycles Modifiers",
        description="Add a Cycles F-modifier (Repeat with Offset) to every looped curve, so the loop plays forever "
        "and travelling roots keep moving forward",
        default=True,
    )
    keep_original: BoolProperty(  # type: ignore[valid-type]
        name="Keep Original",
        description='Leave the original action untouched and assign a looped copy named "<action>.loop"',
        default=True,
    )

    @classmethod
    def poll(cls, context):
        ob = context.active_object
        if ob is None:
            cls.poll_message_set("No active object")
            return False
        if not bridge.animated_ids(ob, "AUTO"):
            cls.poll_message_set("The active object has no action (nor animated shape keys)")
            return False
        return True

    def execute(self, context):
        t0 = time.perf_counter()
        try:
            plan = plan_loop(
                context.active_object,
                range_mode=self.range_mode,
                frame_start=self.frame_start,
                frame_end=self.frame_end,
                min_period=self.min_period,
                max_period=self.max_period,
                travel=self.travel,
            )
            result = run_loop(plan, velocity_window=self.velocity_window)
        except MotionInputError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for w in plan.warnings:
            self.report({"WARNING"}, w)
        summary = write_loop(plan, result, add_cycles=self.add_cycles, keep_original=self.keep_original, scene=context.scene)
        summary.seconds = time.perf_counter() - t0
        store_loop_summary(context.scene, summary)
        self.report({"INFO"} if summary.converged else {"WARNING"}, summary.message())
        return {"FINISHED"}

    def invoke(self, context, event):
        _fill_from_settings(self, _settings(context, "loop"), LOOP_SETTINGS)
        return self.execute(context)


class ANIM_SIGNALS_OT_blend_actions(bpy.types.Operator):
    """Blend two actions along the shortest path between them on the motion manifold (time-aligned), into new actions"""

    bl_idname = "anim_signals.blend_actions"
    bl_label = "Blend Actions"
    bl_options = {"REGISTER", "UNDO"}

    action_a: StringProperty(  # type: ignore[valid-type]
        name="Action A",
        description="The first action (weight 0 gives this one)",
        default="",
    )
    action_b: StringProperty(  # type: ignore[valid-type]
        name="Action B",
        description="The second action (weight 1 gives this one)",
        default="",
    )
    weight: FloatProperty(  # type: ignore[valid-type]
        name="Weight",
        description="How far from A towards B the blend lies (0: A, 1: B)",
        default=0.5,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
    )
    count: IntProperty(  # type: ignore[valid-type]
        name="In-betweens",
        description="Make this many evenly spaced blends between A and B instead of one at Weight (0: one blend at Weight)",
        default=0,
        min=0,
        soft_max=10,
    )
    cyclic: EnumProperty(  # type: ignore[valid-type]
        name="Cyclic",
        description="Blend as open clips or as seamless cycles",
        items=CYCLIC_ITEMS,
        default="AUTO",
    )
    align: BoolProperty(  # type: ignore[valid-type]
        name="Align Timing",
        description="Time-warp B onto A before blending (optimal reparametrisation), so matching phases blend together",
        default=True,
    )
    assign: BoolProperty(  # type: ignore[valid-type]
        name="Assign",
        description="Assign the (first) blended action to the active object when it can play it",
        default=True,
    )

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop_search(self, "action_a", bpy.data, "actions")
        layout.prop_search(self, "action_b", bpy.data, "actions")
        row = layout.row()
        row.enabled = self.count == 0
        row.prop(self, "weight")
        layout.prop(self, "count")
        layout.prop(self, "cyclic")
        layout.prop(self, "align")
        layout.prop(self, "assign")

    def execute(self, context):
        t0 = time.perf_counter()
        try:
            plan = plan_blend(
                context.active_object,
                self.action_a,
                self.action_b,
                weight=self.weight,
                count=self.count,
                cyclic=self.cyclic,
                assign=self.assign,
            )
            results = run_blend(plan, align=self.align)
        except MotionInputError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for w in plan.warnings:
            self.report({"WARNING"}, w)
        summary = write_blend(plan, results, align=self.align)
        summary.seconds = time.perf_counter() - t0
        store_blend_summary(context.scene, summary)
        self.report({"INFO"}, summary.message())
        return {"FINISHED"}

    def invoke(self, context, event):
        _fill_from_settings(self, _settings(context, "blend"), BLEND_SETTINGS)
        if (not self.action_a or not self.action_b) and context.window is not None and not bpy.app.background:
            return context.window_manager.invoke_props_dialog(self)
        return self.execute(context)


class ANIM_SIGNALS_OT_compare_actions(StepwiseModal, bpy.types.Operator):
    """Measure how alike actions are (distances on the motion manifold), cluster them, label each action with its cluster and draw a dendrogram"""

    bl_idname = "anim_signals.compare_actions"
    bl_label = "Compare Actions"
    bl_options = {"REGISTER", "UNDO"}

    actions: StringProperty(  # type: ignore[valid-type]
        name="Actions",
        description="Comma-separated action names to compare (empty: every action in the file)",
        default="",
    )
    features: EnumProperty(  # type: ignore[valid-type]
        name="Features",
        description="What is compared: rotation channels by name (one skeleton) or body features (any rigs)",
        items=FEATURE_ITEMS,
        default="CHANNELS",
    )
    metric: EnumProperty(  # type: ignore[valid-type]
        name="Metric",
        description="Elastic (geodesic, time-warped) or linear distance",
        items=METRIC_ITEMS,
        default="ELASTIC",
    )
    cyclic: BoolProperty(  # type: ignore[valid-type]
        name="As Cycles",
        description="Compare clips as closed cycles (each projected to a loop first; start point and speed factored "
        "out), as the seed does for clustering",
        default=True,
    )
    n_samples: IntProperty(  # type: ignore[valid-type]
        name="Samples",
        description="Samples per clip for the comparison (clips of any length are resampled to this)",
        default=100,
        min=MIN_FRAMES,
        soft_max=400,
    )
    n_clusters: IntProperty(  # type: ignore[valid-type]
        name="Clusters",
        description="Number of clusters (0: automatic, the cut of the dendrogram with the best silhouette, 2 to 10 clusters)",
        default=0,
        min=0,
        soft_max=20,
    )
    image_path: StringProperty(  # type: ignore[valid-type]
        name="Image File",
        description="Where the dendrogram PNG is written (empty: next to the saved .blend, else the temp folder)",
        default="",
        subtype="FILE_PATH",
    )

    STEP_SECONDS = 0.08  # distance work per timer event, so the UI stays responsive to ESC
    STATUS_TEXT = "Comparing actions... Esc / right-click to cancel"
    CANCELLED_TEXT = "Compare cancelled: nothing changed"
    REMOVED_TEXT = "An action was removed while comparing: nothing written"
    FAILED_PREFIX = "Compare failed: "
    FAILURES = (ValueError, MotionInputError)
    _t0 = 0.0

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        for name in COMPARE_SETTINGS:
            layout.prop(self, name)

    def _plan_or_report(self, context) -> ComparePlan | None:
        try:
            plan = plan_compare(
                context.active_object,
                context.scene,
                actions=self.actions,
                features=self.features,
                n_samples=self.n_samples,
                image_path=self.image_path,
            )
        except MotionInputError as err:
            self.report({"ERROR"}, str(err))
            return None
        for w in plan.warnings:
            self.report({"WARNING"}, w)
        return plan

    def _iter(self, plan: ComparePlan):
        return iter_compare(plan, metric=self.metric, cyclic=self.cyclic, n_samples=self.n_samples)

    def _finish(self, context, plan: ComparePlan) -> set[str]:
        summary = finish_compare(plan, n_clusters=self.n_clusters, metric=self.metric)
        summary.seconds = time.perf_counter() - self._t0
        store_compare_summary(context.scene, summary)
        for w in summary.warnings:
            self.report({"WARNING"}, w)
        self.report({"INFO"}, summary.message())
        return {"FINISHED"}

    def execute(self, context):
        self._t0 = time.perf_counter()
        plan = self._plan_or_report(context)
        if plan is None:
            return {"CANCELLED"}
        wm = context.window_manager
        wm.progress_begin(0, 100)
        try:
            for frac in self._iter(plan):
                wm.progress_update(int(100 * frac))
        except (ValueError, MotionInputError) as err:
            self.report({"ERROR"}, f"Compare failed: {err}")
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        return self._finish(context, plan)

    def invoke(self, context, event):
        _fill_from_settings(self, _settings(context, "compare"), COMPARE_SETTINGS)
        if context.window is None or bpy.app.background:
            return self.execute(context)
        self._t0 = time.perf_counter()
        plan = self._plan_or_report(context)
        if plan is None:
            return {"CANCELLED"}
        return self.start_stepping(context, plan, self._iter(plan))



def menu_func(self, context):
    layout = self.layout
    layout.separator()
    layout.operator(ANIM_SIGNALS_OT_make_cyclic.bl_idname, text="Make Cyclic (Anim Signals)")
    layout.operator(ANIM_SIGNALS_OT_blend_actions.bl_idname, text="Blend Actions (Anim Signals)...")
    layout.operator(ANIM_SIGNALS_OT_compare_actions.bl_idname, text="Compare Actions (Anim Signals)")


classes = (ANIM_SIGNALS_OT_make_cyclic, ANIM_SIGNALS_OT_blend_actions, ANIM_SIGNALS_OT_compare_actions)
_register, _unregister = bpy.utils.register_classes_factory(classes)

MENUS = ("DOPESHEET_MT_key", "GRAPH_MT_key")


def register() -> None:
    _register()
    add_to_menus(MENUS, menu_func)


def unregister() -> None:
    remove_from_menus(MENUS, menu_func)
    _unregister()
