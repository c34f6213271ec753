"""Fit Spline in Blender: which curves to fit and how they are sampled, and writing the fitted keys.

:func:`plan_fit` checks the input and samples every curve (raises :class:`FitInputError` with a
message for the user), :func:`iter_plan` fits with the core, :func:`write_plan` writes the keys
(into a copy of each action when asked). Nothing is written before the fit has finished.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Generator
from dataclasses import asdict, dataclass, field
from typing import Any

import bpy
import numpy as np

from ...anim_signals import iter_fit_channels
from ...anim_signals.channels import (
    KindErrors,
    check_finite,
    errors_by_kind,
    make_continuous,
    tolerances_by_kind,
)
from ...anim_signals.splines.bezier import broken_handles
from ..blender_data.actions import (
    action_edit_reason,
    animated_ids,
    fcurve_locked,
    get_action,
    list_fcurves,
    slot_identifier,
    writable_curves,
)
from ..blender_data.armatures import bone_heads_world, cm_per_unit
from ..blender_data.channels import channel_specs
from ..blender_data.fcurves import (
    KeyframeError,
    check_keys_finite,
    count_key_frames,
    count_keys,
    curves_digest,
    keep_fitted_handles,
    keep_keys,
    sample_curves,
    write_bezier,
)
from ..common import InputError
from ..common.transaction import current_transaction

# Samples of an armature's pose compared in world space for the joint error (kept cheap).
JOINT_ERROR_SAMPLES = 48
# The name suffix of the action copies written when the originals are kept: "<action>.fit".
FIT_SUFFIX = ".fit"


class FitInputError(InputError):
    """Bad input for Fit Spline: reported to the user, nothing changed."""


@dataclass
class FitJob:
    """One animated ID (object or shape-key datablock) and the curves to fit on it."""

    id_data: Any  # bpy.types.Object | bpy.types.Key
    action: Any  # bpy.types.Action
    slot_identifier: str | None
    fcurves: list  # F-curves to fit
    specs: list  # ChannelSpec per fitted curve
    frames: np.ndarray  # (N,)
    values: np.ndarray  # (N, M) original samples
    fit_values: np.ndarray  # (N, M) unwrapped / hemisphere-continuous samples that are fitted
    tolerance: np.ndarray  # (M,)
    keys_before: int = 0
    # curves_digest of the curves when planned: a change while fitting refuses the write ("": not watched)
    digest: str = ""
    result: Any = None  # ChannelsFit once done
    # Error space "Joints" with every curve keyed on the same frames: a segment passes where the
    # rig's joints stay within the bound (key_reduction.PoseCheck), not where each curve keeps its
    # tolerance
    pose_check: Any = None


@dataclass
class FitPlan:
    jobs: list[FitJob]
    object_name: str = ""
    warnings: list[str] = field(default_factory=list)
    kept: int = 0  # curves left as they are (too few keys)
    kept_shared: int = 0  # of those, curves with more keys than keyed frames (several keys on one frame)
    joints: Any = None  # error space "Joints": the armature's object-space check (object_space.JointCheck)


# ------------------------------------------------------------------------------------------
# Preparing the input
# ------------------------------------------------------------------------------------------


def kept_text(plan: FitPlan, degree: int) -> str:
    """What the curves left as they are lack: keys on enough distinct frames (several keys on one
    frame count once)."""
    text = f"{plan.kept} with keys on fewer than {degree + 1} frames"
    if degree > 1:
        text += f" (degree {degree} needs {degree + 1})"
    if plan.kept_shared:
        text += f"; {plan.kept_shared} of them have several keys on one frame (keys sharing a frame count once)"
    return text


def _continuous(values: np.ndarray, specs) -> np.ndarray:
    """Euler tracks unwrapped (no gimbal-flip filter: each fitted curve keeps its own values up to
    whole turns) and every complete quaternion, grouped by data path, hemisphere-continuous."""
    return make_continuous(values, [s.kind for s in specs], [s.data_path for s in specs])


def plan_fit(
    ob,
    *,
    target: str = "AUTO",
    channels: str = "ALL",
    degree: int = 3,
    max_error_rotation: float = 0.5,
    max_error_location: float = 0.01,
    max_error_other: float = 0.01,
    watch_edits: bool = True,
) -> FitPlan:
    """Check the input and sample every curve to fit. Raises FitInputError on bad input.

    ``watch_edits`` keeps a digest of the curves, so that a write after a modal run refuses curves
    edited meanwhile (off for a blocking run: reading it costs 0.1-0.2 s on 1,500 x 306 keys)."""
    if ob is None:
        raise FitInputError("No active object: select an animated object")
    for value, name in ((max_error_rotation, "rotation"), (max_error_location, "location"), (max_error_other, "other")):
        if not (value > 0.0 and math.isfinite(value)):
            raise FitInputError(f"The max {name} error must be positive")
    ids = animated_ids(ob, target)
    if not ids:
        if target == "SHAPE_KEYS":
            raise FitInputError(f'"{ob.name}" has no shape keys')
        raise FitInputError(f'"{ob.name}" has no animation data (no action to fit)')
    plan = FitPlan(jobs=[], object_name=ob.name)
    selected_only = channels == "SELECTED"
    n_locked = n_modifiers = n_curves = 0
    for id_data in ids:
        adt = id_data.animation_data
        action = get_action(id_data)
        if adt is None or action is None:
            raise FitInputError(f'"{id_data.name}" has no animation data (no action to fit)')
        reason = action_edit_reason(id_data, action)
        if reason:
            raise FitInputError(reason)
        fcurves = list_fcurves(id_data, selected_only=selected_only)
        n_curves += len(fcurves)
        usable = []
        for fc in fcurves:
            if fcurve_locked(fc):
                n_locked += 1
            elif len(fc.modifiers):
                n_modifiers += 1
            else:
                try:
                    check_keys_finite(fc)
                except KeyframeError as err:
                    raise FitInputError(str(err)) from err
                keyed = count_key_frames(fc)
                if keyed < degree + 1:
                    plan.kept += 1
                    plan.kept_shared += keyed < len(fc.keyframe_points)
                else:
                    usable.append(fc)
        if not usable:
            continue
        specs = channel_specs(id_data, usable)
        try:
            frames, values = sample_curves(usable)
        except KeyframeError as err:
            raise FitInputError(str(err)) from err
        labels = [f'{id_data.name}: {s.label}' for s in specs]
        try:
            check_finite(values, labels)
        except ValueError as err:
            raise FitInputError(f"Cannot fit non-finite data: {err}") from err
        tol = tolerances_by_kind([s.kind for s in specs], max_error_rotation, max_error_location, max_error_other)
        fit_values = _continuous(values, specs)
        plan.jobs.append(
            FitJob(
                id_data=id_data,
                action=action,
                slot_identifier=slot_identifier(id_data),
                fcurves=usable,
                specs=specs,
                frames=frames,
                values=values,
                fit_values=fit_values,
                tolerance=tol,
                keys_before=count_keys(usable),
                digest=curves_digest(usable) if watch_edits else "",
            )
        )
    if n_locked:
        plan.warnings.append(f"Skipped {n_locked} locked curve(s)")
    if n_modifiers:
        plan.warnings.append(f"Skipped {n_modifiers} curve(s) with F-curve modifiers")
    if n_curves == 0:
        if selected_only:
            raise FitInputError("No F-curves selected: select curves in the Graph Editor or fit ALL channels")
        raise FitInputError(f'The action of "{ob.name}" has no F-curves')
    if not plan.jobs:
        parts = []
        if n_locked:
            parts.append(f"{n_locked} locked")
        if n_modifiers:
            parts.append(f"{n_modifiers} with modifiers")
        if plan.kept:
            parts.append(kept_text(plan, degree))
        raise FitInputError("Nothing to fit: the curves are " + ", ".join(parts))
    moving = 0
    for job in plan.jobs:
        span = job.fit_values.max(axis=0) - job.fit_values.min(axis=0)
        moving += int(np.count_nonzero(span / 2.0 > job.tolerance))
    if moving == 0:
        n = sum(len(job.fcurves) for job in plan.jobs)
        raise FitInputError(f"Nothing to fit: all {n} curve(s) are constant (within the max error)")
    return plan


# ------------------------------------------------------------------------------------------
# Fitting (a generator, so the modal operator can step it) and writing
# ------------------------------------------------------------------------------------------


def key_groups(specs, share_keys: str) -> np.ndarray | None:
    """Labels of the curves that share their key frames: None (each curve), one per owner (a pose
    bone, or the ID's own properties) for 'BONE', one for all for 'ALL'."""
    if share_keys == "ALL":
        return np.zeros(len(specs), dtype=int)
    if share_keys == "BONE":
        owners = {path: k for k, path in enumerate(dict.fromkeys(s.owner_path for s in specs))}
        return np.array([owners[s.owner_path] for s in specs], dtype=int)
    return None


def iter_plan(plan: FitPlan, share_keys: str = "CURVE", **fit_options) -> Generator[float, None, None]:
    """Fit every job of the plan; yields overall progress in [0, 1]."""
    n = len(plan.jobs)
    for i, job in enumerate(plan.jobs):
        groups = key_groups(job.specs, share_keys)
        extra = {"pose_check": job.pose_check} if job.pose_check is not None else {}
        gen = iter_fit_channels(job.fit_values, job.frames, job.tolerance, groups=groups, **fit_options, **extra)
        while True:
            try:
                frac = next(gen)
            except ValueError as err:  # the core names columns: name the curves instead
                text = re.sub(r"channel (\d+)", functools.partial(_column_label, job), str(err))
                raise ValueError(f'"{job.id_data.name}": {text}') from err
            except StopIteration as stop:
                _check_result(job, stop.value)
                job.result = stop.value
                break
            yield (i + min(max(frac, 0.0), 1.0)) / n
    yield 1.0


def _column_label(job: FitJob, match: re.Match) -> str:
    """'channel <k>' of a core message as the job's curve k."""
    column = int(match.group(1))
    return f"curve {job.specs[column].label}" if 0 <= column < len(job.specs) else match.group(0)


def _check_result(job: FitJob, fit: Any) -> None:
    """Refuse a fit whose keys are not finite (float32, as Blender stores them) before anything is
    written, naming the curve."""
    for spec, curve, values in zip(job.specs, fit.curves, job.values.T, strict=True):
        arrays = (curve.co, curve.handle_left, curve.handle_right)
        with np.errstate(over="ignore", invalid="ignore"):
            finite = all(np.isfinite(np.asarray(a, dtype=np.float64).astype(np.float32)).all() for a in arrays)
        if not finite:
            size = float(np.max(np.abs(values))) if values.size else 0.0
            raise ValueError(
                f'the fitted keys of "{job.id_data.name}": {spec.label} are not finite (its values reach {size:.3g}); '
                "nothing was written. Scale the curve's values down and fit again"
                if size > 1e15 else
                f'the fitted keys of "{job.id_data.name}": {spec.label} are not finite; nothing was written'
            )


def _joint_frames(frames: np.ndarray) -> list[int]:
    lo, hi = math.ceil(frames[0]), math.floor(frames[-1])
    if hi < lo:
        return []
    n = min(JOINT_ERROR_SAMPLES, hi - lo + 1)
    return sorted({int(round(f)) for f in np.linspace(lo, hi, n)})


@dataclass
class FitSummary(KindErrors):
    """A finished fit's numbers: the errors by kind (:class:`KindErrors`) and the rest."""

    keys_before: int = 0
    keys_after: int = 0
    curves: int = 0
    kept: int = 0
    keyed_frames: int = 0
    broken_keys: int = 0
    freed_keys: int = 0  # ALIGNED keys written FREE: Blender's re-alignment cost a sample its tolerance
    mode_used: str = ""
    distortion: float = 0.0
    joint_error_cm: float = -1.0  # < 0: not an armature
    within_tolerance: bool = True
    seconds: float = 0.0
    action_names: list[str] = field(default_factory=list)

    def message(self) -> str:
        pct = 100.0 * self.keys_after / max(self.keys_before, 1)
        parts = [
            f"Fitted {self.curves} curves ({self.mode_used}): {self.keys_before} -> {self.keys_after} keys ({pct:.1f}%)",
            f"{self.keyed_frames} keyed frames, {self.broken_keys} broken handles"
            + (f" ({self.freed_keys} aligned keys written FREE: Blender's re-alignment moved a sample past its "
               "max error)" if self.freed_keys else ""),
            f"E_D {self.distortion:.3g}",
        ]
        if self.max_rotation_deg or self.rms_rotation_deg:
            parts.append(f"rotation RMS {self.rms_rotation_deg:.3g} deg, max {self.max_rotation_deg:.3g} deg")
        if self.max_location or self.rms_location:
            parts.append(f"location RMS {self.rms_location:.3g}, max {self.max_location:.3g}")
        if self.max_other or self.rms_other:
            parts.append(f"other RMS {self.rms_other:.3g}, max {self.max_other:.3g}")
        if self.joint_error_cm >= 0:
            parts.append(f"joints max {self.joint_error_cm:.3g} cm")
        parts.append(f"{self.seconds:.2f} s")
        return "; ".join(parts)


def _summarise(plan: FitPlan) -> FitSummary:
    errors = KindErrors()
    if plan.jobs:
        errors = errors_by_kind(
            np.concatenate([np.asarray(job.result.max_abs_error, dtype=float) for job in plan.jobs]),
            np.concatenate([np.asarray(job.result.rms_error, dtype=float) for job in plan.jobs]),
            [spec.kind for job in plan.jobs for spec in job.specs],
        )
    s = FitSummary(**asdict(errors), kept=plan.kept)
    modes = set()
    n_frames_weight = []
    keyed: set[float] = set()
    for job in plan.jobs:
        fit = job.result
        for curve in fit.curves:
            keyed.update(np.round(curve.co[:, 0], 4).tolist())
            s.broken_keys += broken_handles(curve)
        s.curves += len(job.fcurves)
        s.keys_before += job.keys_before
        s.keys_after += int(fit.n_keys)
        modes.add(fit.mode_used)
        if plan.joints is None or job is not plan.joints.job:  # (the joints' measure decides for those curves)
            s.within_tolerance &= bool(fit.within_tolerance)
        n_frames_weight.append(float(fit.distortion))
    s.distortion = max(n_frames_weight) if n_frames_weight else 0.0
    s.mode_used = "/".join(sorted(modes))
    s.keyed_frames = len(keyed)
    return s


def _recheck_curves(job: FitJob) -> None:
    """Find the job's curves again (the plan's references are not trusted after other code ran) and
    refuse the write when they were removed, replaced or edited since they were read.

    Raises FitInputError naming the ID and curve; ReferenceError when the ID or action is gone."""
    name = job.id_data.name  # ReferenceError when the object (or shape keys) was removed
    if get_action(job.id_data) != job.action or job.action.name == "":
        raise FitInputError(f'The action of "{name}" was changed while fitting: nothing written; fit again')
    by_key = {(fc.data_path, fc.array_index): fc for fc in list_fcurves(job.id_data)}
    curves = []
    for spec in job.specs:
        fc = by_key.get((spec.data_path, spec.array_index))
        if fc is None:
            raise FitInputError(f'The curve {spec.label} of "{name}" was removed while fitting: nothing written')
        curves.append(fc)
    if job.digest and curves_digest(curves) != job.digest:
        raise FitInputError(f'The curves of "{name}" were edited while fitting: nothing written; fit again')
    job.fcurves = curves


def write_plan(plan: FitPlan, *, keep_original: bool, scene=None) -> FitSummary:
    """Write every finished job's keys into Blender (a copy of each action when keep_original).

    Each job's curves are found again and compared with what was fitted first (FitInputError when
    they were removed or edited meanwhile). Everything written is recorded with the running
    transaction (keys, assignments; copies are new datablocks), so a failure part-way takes it all
    back."""
    summary = _summarise(plan)
    armature_jobs = [
        job
        for job in plan.jobs
        if isinstance(job.id_data, bpy.types.Object) and job.id_data.type == "ARMATURE" and scene is not None
        and plan.joints is None  # "Joints" measured every frame already
    ]
    if plan.joints is not None:
        summary.joint_error_cm = plan.joints.error_cm
        summary.within_tolerance &= plan.joints.met
    before: dict[str, tuple[list[int], np.ndarray]] = {}
    for job in armature_jobs:
        frames = _joint_frames(job.frames)
        before[job.id_data.name] = (frames, bone_heads_world(scene, job.id_data, frames))

    tx = current_transaction()
    for job in plan.jobs:
        _recheck_curves(job)
        tx.keep_action(job.id_data)
    targets = writable_curves(plan.jobs, keep_original=keep_original, suffix=FIT_SUFFIX)
    for job, (_, curves) in zip(plan.jobs, targets, strict=True):
        for j, (fc, curve) in enumerate(zip(curves, job.result.curves, strict=True)):
            if not keep_original:
                tx.on_rollback(keep_keys(fc))
            write_bezier(fc, curve.co, curve.handle_left, curve.handle_right, curve.handle_type)
            if np.any(curve.handle_type == "ALIGNED"):  # Blender turns ALIGNED handles a little
                summary.freed_keys += keep_fitted_handles(fc, curve.handle_left, curve.handle_right, job.frames,
                                                          job.fit_values[:, j], float(job.tolerance[j]))
        summary.action_names.append(job.id_data.animation_data.action.name)

    if armature_jobs:
        unit = cm_per_unit(scene)
        worst = 0.0
        for job in armature_jobs:
            frames, heads0 = before[job.id_data.name]
            heads1 = bone_heads_world(scene, job.id_data, frames)
            if heads0.size:
                worst = max(worst, float(np.linalg.norm(heads1 - heads0, axis=-1).max()) * unit)
        summary.joint_error_cm = worst
    return summary


