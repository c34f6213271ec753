"""Compare Actions in Blender: actions read as comparable curves, their distances on the motion
manifold, clusters, a dendrogram.

:func:`plan_compare` picks and checks the actions (raises :class:`MotionInputError` with a message
for the user): rotation channels by name (one skeleton) are sampled at once; body features (any
rigs) are only checked. :func:`iter_compare` plays each action on its armature for body features,
then computes the distance matrix with the core (``anim_signals.manifolds.elastic``), yielding progress.
:func:`finish_compare` clusters, labels every action with its cluster and draws the dendrogram.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from ...anim_signals.channels import moving_channels
from ...anim_signals.imaging import raster
from ...anim_signals.manifolds import elastic, harmonise, skeleton
from ..blender_data.actions import fcurves_of_action, get_action, object_playing, store_on_actions
from ..blender_data.armatures import (
    animated_bones,
    armature_with_bones,
    armatures_using,
    bone_heads_with_action,
    bone_hierarchy,
)
from ..blender_data.channels import bone_name_of_path, channel_specs, continuous_values
from ..blender_data.images import write_image
from ..common.text import parse_names, short_list
from ..common.transaction import current_transaction
from .clips import (
    MIN_FRAMES,
    ROTATION_KINDS,
    MotionInputError,
    check_finite,
    find_action,
    sample_action,
)

__all__ = [
    "BodyJob",
    "ComparePlan",
    "CompareSummary",
    "body_curve",
    "clip_body_curve",
    "finish_compare",
    "iter_compare",
    "keep_compare_results",
    "plan_compare",
    "resolve_image_path",
    "rotation_curve",
]

CLUSTER_PROPERTY = "anim_signals_cluster"
DENDROGRAM_IMAGE = "Anim Signals Dendrogram"
DENDROGRAM_FILE = "anim_signals_dendrogram.png"


@dataclass
class BodyJob:
    """One action to play on an armature for body features (sampled while comparing)."""

    action: Any
    armature: Any
    frames: np.ndarray  # evenly spaced (possibly fractional) frames over the action's range


@dataclass
class ComparePlan:
    """The actions to compare, their curves (filled while comparing for body features), the result."""

    actions: list  # bpy Actions, in the order compared
    curves: list[np.ndarray]  # one (N_i, n) curve per action, same channels
    features: str
    reference: int | None  # index of the active object's action
    image_path: str
    warnings: list[str] = field(default_factory=list)
    distances: np.ndarray | None = None
    scene: Any = None
    body_jobs: list[BodyJob] = field(default_factory=list)  # BODY: actions still to evaluate into curves


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
    return {b for p, _ in keys if (b := bone_name_of_path(p))}


def _mismatch(ref_keys, keys) -> str:
    """What differs between two sets of channels: whole bones first, then single channels."""
    ref_set, key_set = set(ref_keys), set(keys)
    missing = [k for k in ref_keys if k not in key_set]
    extra = [k for k in keys if k not in ref_set]
    miss_b = sorted(_bones_of(missing) - _bones_of(keys))
    extra_b = sorted(_bones_of(extra) - _bones_of(ref_keys))
    # Channels not explained by a whole missing / extra bone.
    miss_c = [f"{p}[{i}]" for p, i in missing if bone_name_of_path(p) not in miss_b]
    extra_c = [f"{p}[{i}]" for p, i in extra if bone_name_of_path(p) not in extra_b]
    parts = []
    if miss_b:
        parts.append("missing bones " + short_list(miss_b))
    if extra_b:
        parts.append("extra bones " + short_list(extra_b))
    if miss_c:
        parts.append("missing channels " + short_list(miss_c))
    if extra_c:
        parts.append("extra channels " + short_list(extra_c))
    return "; ".join(parts)


def _rotation_channels(action, ob) -> dict:
    """(data path, index) -> (F-curve, spec) of the action's rotation channels; MotionInputError if none."""
    user = object_playing(action, ob)
    fcs = fcurves_of_action(action, user)
    specs = channel_specs(user, fcs)
    rot = [(fc, sp) for fc, sp in zip(fcs, specs, strict=True) if sp.kind in ROTATION_KINDS]
    if not rot:
        raise MotionInputError(f'Action "{action.name}" has no rotation channels to compare (try Body features)')
    return {(sp.data_path, sp.array_index): (fc, sp) for fc, sp in rot}


def rotation_curve(action, ob) -> tuple[np.ndarray, list[tuple[str, int]], list[str], list[str]]:
    """One action's rotation channels as Compare Actions reads them (CHANNELS features): the continuous
    curve (frames x channels), its channel keys (data path, index), kinds and owners. For comparing
    clips one at a time elsewhere (a library run); Compare Actions itself harmonises them to the first
    action's turns and quaternion signs (:func:`anim_signals.manifolds.harmonise`). Raises
    MotionInputError."""
    by_key = _rotation_channels(action, ob)
    keys = list(by_key)
    specs = [by_key[k][1] for k in keys]
    owners = [sp.owner_path for sp in specs]
    _, values = sample_action(action, [by_key[k][0] for k in keys], "Action")
    return continuous_values(values, specs, owners), keys, [sp.kind for sp in specs], owners


def clip_body_curve(action, ob, scene, n_samples: int) -> np.ndarray:
    """One action's body features as Compare Actions reads them (BODY features), played on its
    armature (``ob`` when it has the bones). Raises MotionInputError."""
    return body_curve(_body_jobs([action], ob, n_samples)[0], scene)


def _channel_curves(actions, ob) -> list[np.ndarray]:
    """Rotation channels by name: every action must have the same ones."""
    ref_keys: list[tuple[str, int]] | None = None
    ref_name = ""
    kinds: list[str] = []
    owners: list[str] = []
    curves: list[np.ndarray] = []
    for action in actions:
        by_key = _rotation_channels(action, ob)
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
        _, values = sample_action(action, ordered, "Action")
        c = continuous_values(values, [by_key[k][1] for k in ref_keys], owners)
        if curves:
            c = harmonise(c, curves[0], kinds, owners)
        if not moving_channels(c).any():
            raise MotionInputError(f'Nothing moves in "{action.name}" (all rotation channels are constant): nothing to compare')
        curves.append(c)
    return curves


def _armature_for(action, active_arm):
    """The armature to play ``action`` on: one that uses it, else the active armature, else any
    armature, as long as it has every bone the action animates."""
    users = armatures_using(action)
    if users:
        return users[0]
    bones = animated_bones(action)
    if not bones:
        raise MotionInputError(
            f'No armature to evaluate "{action.name}" on: it animates no bones (Body features need an armature action)'
        )
    arm = armature_with_bones(bones, active_arm)
    if arm is None:
        raise MotionInputError(
            f'No armature to evaluate "{action.name}" on: no armature has its bones ({short_list(sorted(bones))}); '
            "assign the action to its armature"
        )
    return arm


def _body_jobs(actions, ob, n_samples: int) -> list[BodyJob]:
    """Check every action can be played on an armature with the canonical joints (cheap: no evaluation)."""
    active_arm = ob if ob is not None and ob.type == "ARMATURE" else None
    jobs = []
    for action in actions:
        arm = _armature_for(action, active_arm)
        fcs = fcurves_of_action(action, arm if get_action(arm) == action else None)
        if not fcs:
            raise MotionInputError(f'Action "{action.name}" has no F-curves')
        whole, _ = sample_action(action, fcs, "Action")  # length and finite checks
        names, parents = bone_hierarchy(arm)
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
    heads = bone_heads_with_action(scene, job.armature, job.action, job.frames.tolist())
    names, parents = bone_hierarchy(job.armature)
    try:
        feats = np.asarray(skeleton.body_features(heads, names, parents), dtype=float)
    except ValueError as err:
        raise MotionInputError(f'"{job.action.name}" on armature "{job.armature.name}": {err}') from err
    check_finite(feats, [f'"{job.action.name}" body feature {k}' for k in range(feats.shape[1])], "compare")
    if not moving_channels(feats).any():
        raise MotionInputError(f'Nothing moves in "{job.action.name}" on "{job.armature.name}": nothing to compare')
    return feats


def _chosen_actions(names: list[str], features: str) -> list:
    """The named actions (each once), or every action with F-curves (animating bones for BODY)."""
    if names:
        chosen: list = []
        for name in names:
            act = find_action(name)
            if act not in chosen:
                chosen.append(act)
        return chosen
    chosen = [a for a in bpy.data.actions if fcurves_of_action(a)]
    if features == "BODY":
        chosen = [a for a in chosen if animated_bones(a)]
    return chosen


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
    names = parse_names(actions)
    chosen = _chosen_actions(names, features)
    if len(chosen) < 2:
        where = "listed" if names else "with F-curves in the file"
        raise MotionInputError(f"Need at least 2 actions to compare, got {len(chosen)} {where}")
    if n_samples < MIN_FRAMES:
        raise MotionInputError(f"Samples must be at least {MIN_FRAMES}")
    plan = ComparePlan(chosen, [], features, None, resolve_image_path(image_path), [], scene=scene)
    if features == "BODY":
        plan.body_jobs = _body_jobs(chosen, ob, n_samples)  # evaluated step by step in iter_compare
    else:
        plan.curves = _channel_curves(chosen, ob)
    ref_action = get_action(ob) if ob is not None else None
    plan.reference = chosen.index(ref_action) if ref_action in chosen else None
    return plan


def iter_compare(plan: ComparePlan, *, metric: str = "ELASTIC", cyclic: bool = True, n_samples: int = 100) -> Generator[float, None, None]:
    """Distance matrix of the plan's curves, step by step: yields progress in [0, 1]; sets plan.distances."""
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
    """The result of a finished comparison (stored by ``AnimSignalsCompareResult.store``)."""

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
    tx = current_transaction()
    for action in plan.actions:
        tx.keep_item(action, CLUSTER_PROPERTY)
    for action, label in store_on_actions(plan.actions, CLUSTER_PROPERTY, s.labels):
        s.warnings.append(f'"{action.name}" is read-only: cluster {label} not stored on it')
    s.image_name = write_image(DENDROGRAM_IMAGE, rgba).name
    return s


def keep_compare_results(root) -> None:
    """Record the scene's stored comparison (``last_compare``, the rows of ``compare_results`` and
    ``compare_index``) with the running transaction, so a failure while storing puts it back."""
    tx = current_transaction()
    tx.keep_fields(root.last_compare)
    tx.keep(root, "compare_index")
    rows = root.compare_results
    saved = [{name: getattr(row, name) for name in ("action_name", "cluster", "distance", "is_reference")}
             for row in rows]

    def restore() -> None:
        rows.clear()
        for values in saved:
            row = rows.add()
            for name, value in values.items():
                setattr(row, name, value)

    tx.on_rollback(restore)
