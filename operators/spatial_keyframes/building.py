"""Building spatial keyframes from a plan (the core's compaction, one stage per step so a modal run
can show progress and stop between stages), and writing the result: the model on the object, and
for a compaction the action rewritten as key poses + 2D trajectory played back.

The stages are exactly those of :func:`anim_signals.spatialkeys.compact_clip` (same functions,
arguments and defaults: seed 0, the log blend, RBFP's MDS first step), so the stored model is the
core's; the comparison is :func:`anim_signals.spatialkeys.compare_schemes` at the same keys. Each
core call runs on a worker thread while the stepping keeps yielding, so Esc works during it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...anim_signals.spatialkeys import (
    TEMPORAL_SCHEMES,
    SpatialKeyframeClip,
    as_matrices,
    as_quaternions,
    compare_schemes,
    distance_matrix,
    error_per_frame_per_joint,
    joint_weights,
    optimise_projection,
    pose_vectors,
    project,
    select_keyframes,
    uncompressed_size,
)
from ..blender_data.actions import (
    action_slot_identifier,
    assign_action,
    copy_action,
    get_action,
    remove_if_unused,
)
from ..blender_data.bone_rotations import BoneRotations, write_rotation_curves
from ..common.transaction import current_transaction
from .sources import COMPACT_MARK, BuildPlan, distinct_poses
from .storage import store_model

__all__ = ["COMPACT_SUFFIX", "BuildSummary", "iter_build", "write_build", "write_compacted"]

COMPACT_SUFFIX = ".skc"
"""Name suffix of the action Compact Action writes: ``"<action>.skc"``."""
BLEND = "log"
SEED = 0


@dataclass
class BuildSummary:
    """What a build or compaction made, for the report and the scene's result."""

    compacted: bool
    object_name: str
    action_name: str
    frames: int
    markers: int
    joints: int
    error: float
    size: float
    size_ratio: float
    written_action: str = ""
    best_temporal: str = ""
    best_temporal_error: float = 0.0
    seconds: float = 0.0
    rows: list[dict] = field(default_factory=list)

    def message(self) -> str:
        text = (f'Spatial keyframes of "{self.action_name}" on "{self.object_name}": {self.markers} markers, '
                f"{self.frames} frames, {self.joints} joints, error {self.error:.4g} per frame per joint")
        if not self.compacted:
            return text
        text += (f'; wrote "{self.written_action}": size {self.size:.0f} numbers ({100 * self.size_ratio:.1f} % of '
                 "the clip)")
        temporal = [r for r in self.rows if r["kind"] == "temporal"]
        if temporal:
            text += "; temporal at the same keys: " + ", ".join(f"{r['scheme']} {r['error']:.4g}" for r in temporal)
        return text


POLL_SECONDS = 0.02
"""How long the stepping waits for a core call on the worker thread before yielding again."""
_T = TypeVar("_T")


def _aside(work: Callable[[], _T], fraction: float) -> Generator[float, None, _T]:
    """Run ``work()`` on a worker thread and yield ``fraction`` until it is done (use with
    ``yield from``), so a modal run answers Esc within a fraction of a second even during one long
    core call (t-SNE on a thousand frames takes half a minute). The work gets arrays and returns
    arrays: it never touches Blender data. A run cancelled meanwhile abandons the thread; its
    result is dropped (daemon thread: it never keeps Blender from quitting)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as err:  # noqa: BLE001 - handed to the main thread as it is
            box["error"] = err

    worker = threading.Thread(target=target, name="Anim Signals spatial keyframes", daemon=True)
    worker.start()
    while True:
        worker.join(POLL_SECONDS)
        if not worker.is_alive():
            break
        yield fraction
    if "error" in box:
        raise box["error"]
    return box["result"]


def iter_build(plan: BuildPlan) -> Iterator[float]:
    """Run the build's stages, yielding the fraction done after each (and while a stage runs on
    the worker thread, see :func:`_aside`); fills ``plan.clip``, ``plan.error`` (and for a
    compaction ``plan.rows`` and ``plan.reconstructed``). Writes nothing."""
    rot = plan.rotations
    mats = as_matrices(rot.quaternions)
    weights = joint_weights(rot.parents)
    yield 0.05
    distances = yield from _aside(lambda: distance_matrix(mats, weights), 0.05)
    yield 0.3
    keys = yield from _aside(lambda: select_keyframes(plan.selection, mats, count=plan.count, weights=weights,
                                                      distances=distances), 0.3)
    if distinct_poses(rot.quaternions[keys]) < len(keys):
        plan.late_warnings.append("Some key poses repeat the same pose (e.g. a loop's first and last frame): their "
                                  "markers sit almost on one point")
    yield 0.4
    vectors = pose_vectors(mats, weights) if plan.projection in ("pca", "lle") else None
    points = yield from _aside(lambda: project(plan.projection, distances=distances, vectors=vectors, seed=SEED,
                                               keys=keys, first="mds"), 0.4)
    yield 0.6
    if plan.optimise:
        start = points
        points = yield from _aside(lambda: optimise_projection(start, keys, mats, weights, blend=BLEND)[0], 0.6)
        yield 0.85
    clip = SpatialKeyframeClip(keys, mats[keys], points, BLEND)
    reconstructed = yield from _aside(clip.reconstruct, 0.85)
    plan.clip = clip
    plan.error = error_per_frame_per_joint(mats, reconstructed, weights)
    yield 0.9
    if plan.compact:
        plan.reconstructed = as_quaternions(reconstructed)
        plan.rows = yield from _aside(
            lambda: compare_schemes(rot.quaternions, rot.parents, count=plan.count, selections=(plan.selection,),
                                    projections=(), temporal=TEMPORAL_SCHEMES, seed=SEED), 0.9)
    yield 1.0


def _summary(plan: BuildPlan) -> BuildSummary:
    clip = plan.clip
    n, j = clip.trajectory.shape[0], clip.key_rotations.shape[1]
    size = clip.size()
    s = BuildSummary(compacted=plan.compact, object_name=plan.object_name, action_name=plan.action_name, frames=n,
                     markers=len(clip.keys), joints=j, error=plan.error, size=size,
                     size_ratio=size / uncompressed_size(n, j))
    if plan.compact:
        spatial = {"kind": "spatial", "scheme": plan.projection, "selection": plan.selection,
                   "optimised": plan.optimise, "keys": len(clip.keys), "size": size, "size_ratio": s.size_ratio,
                   "error": plan.error}
        s.rows = [*plan.rows, spatial]
        best = min(plan.rows, key=lambda r: r["error"])
        s.best_temporal, s.best_temporal_error = best["scheme"], float(best["error"])
    return s


def write_build(plan: BuildPlan) -> BuildSummary:
    """Store the model on the armature; for a compaction also copy its action as
    ``"<action>.skc"`` with every animated rotation curve replaced by the played-back clip (one
    LINEAR key per frame; root location, constant channels and object transforms copied as they
    are) and assign it (the original keeps a fake user; an earlier compaction it replaces is
    removed when nothing else uses it). Part of the running transaction."""
    ob = plan.ob
    rot = plan.rotations
    clip = plan.clip
    store_model(ob, clip, {
        "action": plan.action_name,
        "frame_start": int(rot.frames[0]), "frame_end": int(rot.frames[-1]),
        "bones": list(rot.names), "parents": [int(p) for p in rot.parents], "modes": list(rot.modes),
        "projection": plan.projection, "selection": plan.selection, "optimised": plan.optimise,
        "error": float(plan.error),
    })
    summary = _summary(plan)
    if plan.compact:
        assert plan.reconstructed is not None
        summary.written_action = write_compacted(ob, plan.action, rot, plan.reconstructed, plan.replaced).name
    return summary


def write_compacted(ob: Any, original: Any, rotations: BoneRotations, quaternions: Any, replaced: Any) -> Any:
    """Copy ``original`` as ``"<original>.skc"`` with every animated rotation curve of
    ``rotations`` replaced by ``quaternions`` ((N, J, 4) on ``rotations.frames``, one LINEAR key
    per frame; other curves copied as they are) and assign it to ``ob`` (the original keeps a fake
    user, and so does another action assigned before unless it is ``replaced``); ``replaced``, an
    earlier compaction, is removed once nothing uses it and the copy takes its name. Part of the
    running transaction. Returns the written action."""
    current_transaction().keep_action(ob)
    slot = action_slot_identifier(original, ob)
    wanted = original.name + COMPACT_SUFFIX
    before = get_action(ob)
    written: Any = copy_action(original, wanted)
    written[COMPACT_MARK] = original.name
    assign_action(ob, written, slot, keep_previous=before is not None and before != replaced)
    write_rotation_curves(ob, written, rotations, quaternions)
    # last, as a rollback cannot bring a removed action back: the earlier compaction this one
    # replaces, once nothing uses it, so the new one takes its name
    if replaced is not None and remove_if_unused(replaced):
        written.name = wanted
    return written

