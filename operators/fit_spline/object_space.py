"""Fit Spline with object-space error bounds (error space "Joints"): every joint within X cm.

:func:`plan_joint_fit` plans as :func:`.fitting.plan_fit` does, then replaces the armature's
per-curve tolerances by the core's :func:`anim_signals.splines.joint_tolerances` (the rest rig from
the armature, X and the shell distance from cm into armature units with the scene's unit scale and
the object's scale). :func:`iter_joint_plan` fits, then verifies in world space through the
depsgraph at every original frame: the virtual vertices (each bone's head moved by the shell
distance both ways along its axes, and its tail) of the original action and of a temporary copy holding the
fitted keys. The fit starts from :data:`RELAX` times the bound's tolerances (the bound assumes every
error aligned at once; measured errors stay well below it). Where a bone's vertices miss X at any
frame, the tolerances of its chain (the bone, its ancestors, the object's own transform) shrink by
how far it missed and those curves are refitted, at most :data:`MAX_ROUNDS` times, then once more
with the bound's own tolerances on the chains still missing; the measured maximum (cm) is reported,
and a miss that remains is named. The measures in between run on the core's pose model
(:func:`anim_signals.splines.pose_vertices`, the whole clip at once) where it reproduces the
depsgraph's vertices of the original clip (a plain rig: no constraints, drivers or other bone
settings); the measure that ends the rounds is always the depsgraph's. On such a rig (no constraints
or drivers) the original clip is first read at :data:`TRUST_FRAMES` frames only, to decide on the
model, and at every frame in the final check's own pass, beside a hidden temporary copy of the
armature playing the fitted keys (one frame change evaluates both).

Armatures only: any other object is refused with a message (choose "Per Curve"). Curves that no
bound covers (custom properties, constraint influences, axis-angle rotations) keep the per-curve
max errors, as do the checks made while planning (a clip whose curves are all constant within the
per-curve max errors is refused as nothing to fit).

Numbers (CMU 131_03, 1102 frames x 96 curves, 31 bones, scaled to metres; every vertex measured at
every frame; docs/benchmark_fit_object_space.md): 1 cm -> 2279 keys, 0.87 cm measured (Per Curve
needs 0.15 deg / 0.003 for 0.83 cm: 3245 keys); 0.5 cm -> 2935 keys, 0.46 cm (Per Curve 0.1 deg /
0.002: 3771 keys, 0.53 cm). The bound's own tolerances (no relaxation) give 3966 keys at 0.24 cm
for 1 cm.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import Any

import bpy
import numpy as np

from ...anim_signals import iter_fit_channels
from ...anim_signals.channels import LOCATION
from ...anim_signals.splines.object_space import channel_roughness, joint_tolerances, tighten_chains
from ...anim_signals.splines.pose_kinematics import TRANSFORMS, PoseModel, largest_distances, shell_points
from ..blender_data.actions import action_fcurves, fcurves_of_action
from ..blender_data.armatures import (
    VIRTUAL_VERTICES,
    cm_per_unit,
    figure_height,
    has_constraints_or_drivers,
    object_scale,
    playing_copy,
    rest_pose_model,
    rest_rig,
    virtual_vertices,
    virtual_vertices_of,
)
from ..blender_data.channels import bone_name_of_path, bone_path, property_of_path
from ..blender_data.fcurves import write_bezier
from ..blender_data.frames import evaluation_scene
from ..common.progress import scaled
from .fitting import FitInputError, FitJob, FitPlan, iter_plan, plan_fit

__all__ = ["ERROR_SPACES", "JointCheck", "iter_joint_plan", "plan_joint_fit"]

ERROR_SPACES = ("PER_CURVE", "JOINTS")
MAX_ROUNDS = 3  # verification rounds that tighten and refit (then one falling back to the bound)
TIGHTEN = 0.8  # largest factor on a missing chain's tolerances per round
MARGIN = 0.9  # the factor is MARGIN x target / measured error (errors grow about linearly with tolerances)
MIN_FACTOR = 0.1
# The bound is a worst case (every curve's error at its limit, all aligned, at the same frame);
# measured errors on mocap stay about 4x below it (CMU 131_03 at 1 cm: 0.24 cm, 3966 keys), so the
# fit starts from RELAX x the bound's tolerances and the verification tightens the chains that miss
# (same clip: 0.91 cm, 2321 keys). A chain still missing after MAX_ROUNDS gets the bound's own.
RELAX = 4.0
# After the first fit: when every vertex stays below LOOSEN_BELOW x the target, every bounded
# tolerance grows by MARGIN x target / measured (at most LOOSEN_MAX) and the job is fitted again.
LOOSEN_BELOW = 0.6
LOOSEN_MAX = 4.0
CHUNK = 48  # frames evaluated per progress step
# The measure that decides on loosening looks at most this many frames (evenly spread): it sets a
# factor, not the guarantee; every later measure, the last one included, looks at every frame.
ESTIMATE_FRAMES = 500
# On a rig without constraints or drivers, the first depsgraph pass reads the original clip at this
# many frames (evenly spread), enough to decide whether to trust the pose model; when it is trusted,
# the original is read at every frame only in the final check, in the same pass as the fitted copy
# (one frame change evaluates both: about 1.3x one pass instead of 2x).
TRUST_FRAMES = 200
SLACK_CM = 1e-4  # float32 pose matrices
# The pose model (the core's pose_vertices) steers the rounds when it reproduces the depsgraph's
# vertices of the original clip within this share of X at every frame (the depsgraph's float32
# matrices alone differ by ~0.005 cm on a 17 m BVH rig in cm); the depsgraph still measures the
# fit that ends them.
MODEL_AGREEMENT = 0.05
# With keys shared by every curve, the search takes a segment where the pose model keeps the joints
# within this share of X (room for Blender's float32 keys and its own x(t) solve)
POSE_CHECK_SHARE = 0.99
# A rig outside these heights (cm, world space) gets a warning that says how tall it is: a BVH in
# cm or inches imported as is plays a giant in metres, on which "1 cm" asks for far more keys than
# meant (the iClone clips of ../shared/data: 132 m tall; 1 cm there is 39,952 keys on 1,500 frames,
# 12,969 on the skeleton scaled to 1.75 m).
PLAUSIBLE_HEIGHT_CM = (10.0, 1000.0)
_BONE_PROPERTIES = ("location", "rotation_euler", "rotation_quaternion", "scale")
_OBJECT_PROPERTIES = _BONE_PROPERTIES + tuple("delta_" + p for p in _BONE_PROPERTIES)


@dataclass
class JointCheck:
    """The armature's object-space setup and what the verification measured."""

    ob: Any
    scene: Any
    job: FitJob
    max_error_cm: float
    shell_cm: float
    names: list[str]
    parents: np.ndarray
    channel_bones: np.ndarray  # (M,) bone per curve of the job, -1: the object itself
    kinds: list[str]  # (M,) the core's kind when the curve is bounded, else "OTHER"
    cm_per_world: float  # cm per scene unit
    shell_local: float  # shell distance in armature units
    bound_tolerance: np.ndarray | None = None  # (M,) the first-order bound's own tolerances
    # world-space virtual vertices, (3, 7, B, F): coordinates first, frames last (the pose model's layout)
    original: np.ndarray | None = None
    original_rows: np.ndarray | None = None  # the frames ``original`` holds (its last axis); None: every frame
    loosened: float = 1.0  # the factor of the loosening refit (1: none)
    error_cm: float = -1.0  # measured max over every frame and vertex
    rounds: int = 0  # refits after the first fit
    refitted: int = 0  # curves refitted
    missed: list[str] = field(default_factory=list)  # bones still beyond X after the last round
    model: PoseModel | None = None  # the pose model of the rig and the job's curves; None: depsgraph only
    original_model: np.ndarray | None = None  # (3, 7, B, F) the pose model's vertices of the original
    model_measures: int = 0  # measures the pose model made (the depsgraph made the others)

    @property
    def met(self) -> bool:
        return not self.missed

    def message(self) -> str:
        text = f"joint bound {self.max_error_cm:g} cm (shell {self.shell_cm:g} cm) checked at every frame"
        if self.loosened != 1.0:
            text += f", tolerances loosened {self.loosened:.2g}x"
        if self.rounds:
            text += f", {self.rounds} tightening round(s), {self.refitted} curve(s) refitted"
        if self.missed:
            shown = ", ".join(self.missed[:5]) + (" ..." if len(self.missed) > 5 else "")
            text += f"; still beyond the bound: {shown}"
        return text


def _channel_bone(spec, index: dict[str, int]) -> tuple[int, str] | None:
    """(bone index or -1 for the object, kind) of a bounded curve; None for any other curve."""
    prop = property_of_path(spec.data_path)
    if spec.owner_path == "":
        return (-1, spec.kind) if prop in _OBJECT_PROPERTIES else None
    name = bone_name_of_path(spec.data_path)
    if name is None or name not in index or prop not in _BONE_PROPERTIES or spec.data_path != bone_path(name, prop):
        return None
    return index[name], spec.kind


def plan_joint_fit(ob, scene, *, max_joint_error: float, shell_distance: float, **plan_options) -> FitPlan:
    """:func:`.fitting.plan_fit` with the armature's tolerances from the object-space bound.

    ``max_joint_error`` and ``shell_distance`` are in cm (world space; the scene's unit scale and
    the object's scale are honoured). Raises FitInputError for objects other than armatures,
    armatures without bones or without their own fitted curves, and non-positive distances.
    """
    if ob is None:
        raise FitInputError("No active object: select an animated armature")
    if ob.type != "ARMATURE":
        raise FitInputError(
            f'Max joint error needs an armature: "{ob.name}" is a {ob.type.lower()}; '
            'set the error space to "Per Curve" to fit it')
    if not (math.isfinite(max_joint_error) and max_joint_error > 0.0):
        raise FitInputError("The max joint error must be positive")
    if not (math.isfinite(shell_distance) and shell_distance >= 0.0):
        raise FitInputError("The shell distance must be zero or more")
    names, parents, heads, tails = rest_rig(ob)
    if not names:
        raise FitInputError(f'"{ob.name}" has no bones: nothing to measure joints on')
    plan = plan_fit(ob, **plan_options)
    job = next((j for j in plan.jobs if j.id_data == ob), None)
    if job is None:
        raise FitInputError(f'"{ob.name}": no curves of the armature itself to fit within a joint error')
    index = {n: i for i, n in enumerate(names)}
    bones = np.full(len(job.specs), -1, dtype=np.int64)
    kinds = ["OTHER"] * len(job.specs)
    for c, spec in enumerate(job.specs):
        found = _channel_bone(spec, index)
        if found is not None:
            bones[c], kinds[c] = found
    # each bone's largest animated location (its children can be that much farther away)
    max_translation = np.zeros(len(names))
    for b in np.unique(bones[bones >= 0]):
        cols = [c for c in range(len(kinds)) if bones[c] == b and kinds[c] == LOCATION]
        if cols:
            max_translation[b] = float(np.linalg.norm(job.values[:, cols], axis=1).max())
    cm_world = cm_per_unit(scene)
    scale = object_scale(ob)
    cm_local = cm_world * scale  # cm per armature unit
    tol = joint_tolerances(parents, heads, tails, bones, kinds, max_joint_error / cm_local,
                           shell_distance / cm_local, max_translation=max_translation,
                           other_tolerance=job.tolerance, roughness=channel_roughness(job.fit_values))
    object_location = (bones < 0) & (np.array(kinds) == LOCATION)
    tol[object_location] *= scale  # the object's own location is in scene units
    check_base = tol.copy()
    tol[np.array([k != "OTHER" for k in kinds])] *= RELAX
    job.tolerance = tol
    height_cm = figure_height(ob) * cm_local
    if height_cm > 0.0 and not PLAUSIBLE_HEIGHT_CM[0] <= height_cm <= PLAUSIBLE_HEIGHT_CM[1]:
        plan.warnings.append(
            f'"{ob.name}" is {height_cm / 100.0:.3g} m tall in scene units, so the joint bound is '
            f"{max_joint_error:g} cm on a figure that size; if the rig is in cm or inches (BVH files often "
            "are), set Scene > Units > Unit Scale (0.01 for cm) or scale the armature")
    plan.joints = JointCheck(
        ob=ob, scene=scene, job=job, max_error_cm=float(max_joint_error), shell_cm=float(shell_distance),
        names=names, parents=parents, channel_bones=bones, kinds=kinds, cm_per_world=cm_world,
        shell_local=shell_distance / cm_local, bound_tolerance=check_base,
    )
    return plan


# ------------------------------------------------------------------------------------------
# Fit, verify, tighten
# ------------------------------------------------------------------------------------------


def _fitted_copy(check: JointCheck) -> bpy.types.Action:
    """A temporary copy of the job's action holding the fitted keys (the caller removes it)."""
    job = check.job
    tmp: Any = job.action.copy()
    tmp.name = job.action.name + ".verify"
    tmp.use_fake_user = False
    slots = getattr(tmp, "slots", None)
    slot = next((s for s in slots if s.identifier == job.slot_identifier), None) if slots and job.slot_identifier else None
    curves = action_fcurves(tmp, slot) if slot is not None else fcurves_of_action(tmp, check.ob)
    by_key = {(fc.data_path, fc.array_index): fc for fc in curves}
    for spec, curve in zip(job.specs, job.result.curves, strict=True):
        fc = by_key[(spec.data_path, spec.array_index)]
        write_bezier(fc, curve.co, curve.handle_left, curve.handle_right, curve.handle_type)
    return tmp


def _vertices(check: JointCheck, action, lo: float, hi: float,
              rows: np.ndarray | None = None) -> Generator[float, None, np.ndarray]:
    """World-space virtual vertices at every original frame (those of ``rows`` only, when given), a
    chunk of frames per step; (3, 7, B, F), coordinates first and frames last."""
    frames = check.job.frames if rows is None else check.job.frames[rows]
    parts = []
    with evaluation_scene(check.scene, [check.ob]) as where:  # one for every chunk
        for start in range(0, frames.size, CHUNK):
            chunk = frames[start:start + CHUNK]
            parts.append(virtual_vertices(where, check.ob, chunk, check.shell_local, action,
                                          check.job.slot_identifier))
            yield lo + (hi - lo) * min(1.0, (start + chunk.size) / frames.size)
    return np.concatenate(parts, axis=-1) if parts else np.empty((3, VIRTUAL_VERTICES, len(check.names), 0))


def _original_and_fitted(check: JointCheck, lo: float, hi: float) -> Generator[float, None, tuple[np.ndarray, np.ndarray]]:
    """The virtual vertices of the original clip and of the fitted keys at every original frame, in
    one depsgraph pass: the armature plays its action, a temporary copy of it the fitted keys;
    (3, 7, B, F) each."""
    frames = check.job.frames
    tmp = _fitted_copy(check)
    parts = []
    try:
        with evaluation_scene(check.scene, [check.ob]) as where, \
                playing_copy(where, check.ob, tmp, check.job.slot_identifier) as copy:
            for start in range(0, frames.size, CHUNK):
                chunk = frames[start:start + CHUNK]
                parts.append(virtual_vertices_of(where, [check.ob, copy], chunk, check.shell_local))
                yield lo + (hi - lo) * min(1.0, (start + chunk.size) / frames.size)
    finally:
        bpy.data.actions.remove(tmp)
    if not parts:
        empty = np.empty((3, VIRTUAL_VERTICES, len(check.names), 0))
        return empty, empty
    return np.concatenate([p[0] for p in parts], axis=-1), np.concatenate([p[1] for p in parts], axis=-1)


def _pose_model(check: JointCheck) -> None:
    """Set up the pose model for the job's curves: every bounded curve a bone's location, rotation
    or scale (a curve of the object's own transform, or one no bound covers that moves a bone,
    leaves the depsgraph alone to measure)."""
    columns = []
    for c, spec in enumerate(check.job.specs):
        bone = int(check.channel_bones[c])
        prop = property_of_path(spec.data_path)
        if bone < 0 or prop not in TRANSFORMS:
            if check.kinds[c] != "OTHER" or prop in TRANSFORMS:
                return
            columns.append((-1, "", 0))  # a curve that moves no bone (a custom property, say)
            continue
        columns.append((bone, prop, int(spec.array_index)))
    rig = rest_pose_model(check.ob)
    check.model = PoseModel(check.parents, rig["rest"], shell_points(rig["lengths"], check.shell_local),
                            tuple(rig["modes"]), rig["connected"], {p: rig[p] for p in TRANSFORMS},
                            tuple(columns), rig["matrix_world"])


def _trust_pose_model(check: JointCheck) -> None:
    """Keep the pose model when it reproduces the depsgraph's vertices of the original clip (at the
    frames read so far)."""
    if check.model is None:
        return
    assert check.original is not None
    check.original_model = check.model.vertex_rows(check.job.values)
    model = check.original_model if check.original_rows is None else check.original_model[..., check.original_rows]
    gap = np.abs(model - check.original).max(initial=0.0) * check.cm_per_world
    if not gap <= MODEL_AGREEMENT * check.max_error_cm:
        check.model = None


def _pose_check(check: JointCheck):
    """The search's test for keys shared by every curve (:data:`anim_signals.splines.key_reduction.PoseCheck`):
    a segment passes where the pose model keeps every virtual vertex at the samples in between
    within ``POSE_CHECK_SHARE`` of the bound."""
    model = check.model
    original = check.original_model
    assert model is not None and original is not None
    reach = POSE_CHECK_SHARE * check.max_error_cm / check.cm_per_world  # world units

    def passes(start: int, length: int, fitted: np.ndarray) -> bool:
        if length <= 1:
            return True
        return bool(largest_distances(model.vertex_rows(fitted), original[..., start + 1:start + length]).max()
                    <= reach)

    return passes


def _fitted_values(check: JointCheck, rows: np.ndarray | None) -> np.ndarray:
    """The job's fitted curves at every original frame (``rows`` only, when given), (F, M): as the
    fit measured them where it kept them (refits update the columns they refit)."""
    job = check.job
    fitted = job.result.fitted_values
    if fitted is None:
        return job.result.evaluate(job.frames if rows is None else job.frames[rows])
    return fitted if rows is None else fitted[rows]


def _measure(check: JointCheck, lo: float, hi: float, rows: np.ndarray | None = None, *, blender: bool = False
             ) -> Generator[float, None, np.ndarray]:
    """The fitted action's largest vertex error per bone (cm) over every frame (``rows`` only, when
    given): the pose model's where it is trusted, else (or with ``blender``) the depsgraph's."""
    if check.model is not None and not blender:
        assert check.original_model is not None
        fitted = check.model.vertex_rows(_fitted_values(check, rows))
        original = check.original_model if rows is None else check.original_model[..., rows]
        check.model_measures += 1
        yield hi
        return largest_distances(fitted, original) * check.cm_per_world
    if check.original_rows is not None:  # the original at every frame too, in the same pass
        assert rows is None
        check.original, fitted = yield from _original_and_fitted(check, lo, hi)
        check.original_rows = None
        return largest_distances(fitted, check.original) * check.cm_per_world
    tmp = _fitted_copy(check)
    try:
        fitted = yield from _vertices(check, tmp, lo, hi, rows)
    finally:
        bpy.data.actions.remove(tmp)
    assert check.original is not None
    original = check.original if rows is None else check.original[..., rows]
    return largest_distances(fitted, original) * check.cm_per_world


def _refit(job: FitJob, changed: np.ndarray, fit_options: dict, lo: float, hi: float) -> Generator[float, None, int]:
    """Refit the job's curves whose tolerance changed (all of them in the shared-key modes)."""
    per_curve = fit_options.get("mode") in ("FEWEST", "EDITABLE", "PER_CHANNEL")
    cols = np.flatnonzero(changed) if per_curve else np.arange(len(job.specs))
    if cols.size == 0:
        return 0
    sub = yield from scaled(
        iter_fit_channels(job.fit_values[:, cols], job.frames, job.tolerance[cols], **fit_options), lo, hi)
    fit = job.result
    curves = list(fit.curves)
    max_err = np.array(fit.max_abs_error, dtype=float)
    rms = np.array(fit.rms_error, dtype=float)
    counts = np.array(fit.knot_counts) if np.size(fit.knot_counts) == len(curves) else np.array([c.n_keys for c in curves])
    fitted = None
    if fit.fitted_values is not None and sub.fitted_values is not None:
        fitted = fit.fitted_values.copy()
        fitted[:, cols] = sub.fitted_values
    for i, c in enumerate(cols):
        curves[c] = sub.curves[i]
        max_err[c] = sub.max_abs_error[i]
        rms[c] = sub.rms_error[i]
        if np.size(sub.knot_counts) == cols.size:
            counts[c] = sub.knot_counts[i]
    job.result = replace(fit, curves=curves, max_abs_error=max_err, rms_error=rms, knot_counts=counts, fitted_values=fitted,
                         distortion=max(float(fit.distortion), float(sub.distortion)),
                         within_tolerance=bool(np.all(max_err <= job.tolerance * (1 + 1e-6))))
    return int(cols.size)


def iter_joint_plan(plan: FitPlan, share_keys: str = "CURVE", **fit_options) -> Generator[float, None, None]:
    """Fit the plan (:func:`.fitting.iter_plan`), then verify the armature in object space and
    tighten and refit where a frame misses; yields progress in [0, 1]. The outcome is in
    ``plan.joints`` (:class:`JointCheck`). ``share_keys`` other than ``"CURVE"`` (curves sharing
    key frames) is passed to ``iter_plan``, and a refit then refits the whole job."""
    check: JointCheck = plan.joints
    job = check.job
    plan_options = dict(fit_options, share_keys=share_keys) if share_keys != "CURVE" else fit_options
    _pose_model(check)
    n_frames = check.job.frames.size
    if check.model is not None and n_frames > TRUST_FRAMES and not has_constraints_or_drivers(check.ob):
        check.original_rows = np.unique(np.linspace(0, n_frames - 1, TRUST_FRAMES).round().astype(int))
        check.original = yield from _vertices(check, None, 0.0, 0.02, check.original_rows)
        _trust_pose_model(check)
    if check.model is None or check.original_rows is None:
        check.original_rows = None
        check.original = yield from _vertices(check, None, 0.02, 0.1)
        _trust_pose_model(check)
    if share_keys == "ALL" and fit_options.get("mode") == "FEWEST" and check.model is not None:
        job.pose_check = _pose_check(check)
    yield from scaled(iter_plan(plan, **plan_options), 0.1, 0.5)
    limit = check.max_error_cm + SLACK_CM
    # Well inside the bound (shared key frames especially: every curve keyed where any needs it):
    # loosen every bounded tolerance once by the slack left, refit, and let the rounds below
    # tighten the chains that then miss.
    # (the pose model measures every frame at once; the depsgraph first estimates on fewer)
    every = n_frames <= ESTIMATE_FRAMES or check.model is not None
    rows = None if every else np.unique(np.linspace(0, n_frames - 1, ESTIMATE_FRAMES).round().astype(int))
    per_bone = yield from _measure(check, 0.5, 0.52, rows)
    measured = float(per_bone.max()) if per_bone.size else 0.0
    # the current fit's measure at every frame, while the fit holds
    measured_fit: np.ndarray | None = per_bone if every else None
    if 0.0 < measured < LOOSEN_BELOW * check.max_error_cm:
        bounded = np.array([k != "OTHER" for k in check.kinds])
        factor = min(LOOSEN_MAX, MARGIN * check.max_error_cm / measured)
        job.tolerance = np.where(bounded, job.tolerance * factor, job.tolerance)
        yield from scaled(iter_plan(FitPlan(jobs=[job]), **plan_options), 0.52, 0.55)
        check.loosened = factor
        measured_fit = None
    n_measures = MAX_ROUNDS + 2
    step = 0.5 / n_measures
    for r in range(n_measures):
        lo = 0.5 + r * step
        if measured_fit is not None:  # not refitted since it was measured: every frame is known
            per_bone, measured_fit = measured_fit, None
        else:
            per_bone = yield from _measure(check, lo, lo + step / 2)
        if check.model is not None and (r == n_measures - 1 or not np.any(per_bone > limit)):
            # the pose model says the fit holds (or the rounds are over): the depsgraph decides
            per_bone = yield from _measure(check, lo, lo + step / 2, blender=True)
            if np.any(per_bone > limit):
                # it missed what Blender sees: the depsgraph measures from here, and the curves keep
                # their own tolerances (which the rounds tighten)
                check.model = None
                job.pose_check = None
            by_model = False
        else:
            by_model = check.model is not None
        check.error_cm = float(per_bone.max()) if per_bone.size else 0.0
        missed = np.flatnonzero(per_bone > limit)
        check.missed = [check.names[b] for b in missed]
        if not missed.size or r == n_measures - 1:
            break
        if r < MAX_ROUNDS:  # tighten by how far each bone missed
            factors = np.clip(MARGIN * check.max_error_cm / per_bone[missed], MIN_FACTOR, TIGHTEN)
            tol, changed = tighten_chains(job.tolerance, check.parents, check.channel_bones, missed,
                                          factor=factors, channel_kinds=check.kinds)
        else:  # the last round: the missing chains fall back to the bound's own tolerances
            _, chain = tighten_chains(job.tolerance, check.parents, check.channel_bones, missed,
                                      channel_kinds=check.kinds)
            assert check.bound_tolerance is not None
            tol = np.where(chain, np.minimum(job.tolerance, check.bound_tolerance), job.tolerance)
            changed = tol < job.tolerance
        if not changed.any():  # only unbounded curves move those bones: tightening cannot help
            if by_model:  # what is reported is Blender's measure
                per_bone = yield from _measure(check, lo, lo + step / 2, blender=True)
                check.error_cm = float(per_bone.max()) if per_bone.size else 0.0
                check.missed = [check.names[b] for b in np.flatnonzero(per_bone > limit)]
            break
        job.tolerance = tol
        if share_keys != "CURVE":  # curves sharing key frames: the whole job again
            yield from scaled(iter_plan(FitPlan(jobs=[job]), **plan_options), lo + step / 2, lo + step)
            check.refitted += len(job.specs)
        else:
            check.refitted += yield from _refit(job, changed, fit_options, lo + step / 2, lo + step)
        check.rounds += 1
    yield 1.0
