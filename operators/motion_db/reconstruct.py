"""Reconstruct an action from the motion database: the query plan, the stepping, the written action.

:func:`plan_query` reads the active object's action as the query (channels matched to the database
by name; raises :class:`~.database.MotionDBError`), :func:`iter_reconstruct` takes the k-NN
index for the query's channels (loaded, or built: :mod:`.index`) and runs the core's
reconstruction over its frames (nothing written), :func:`write_reconstruction` saves a newly built
index and writes the new action ``<action>.reconstructed`` and the numbers on the scene.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...anim_signals.motiondb import MotionDatabase, OLNGParams, is_eye_channel, match_names
from ...anim_signals.motiondb import iter_reconstruct as iter_batch
from ..blender_data.actions import action_frame_range, get_action, id_read_only_reason, tweak_mode_reason
from ..blender_data.fcurves import sample_curves
from ..blender_data.named_channels import named_channel_curves, write_named_channels
from ..common.progress import scaled
from ..common.text import parse_names, short_list
from ..common.transaction import current_transaction
from .database import RECONSTRUCTED_SUFFIX, VALUE_LIMIT, MotionDBError, stored_database
from .index import DatabaseIndex, database_columns, index_options, iter_index
from .properties import SHAPE_KEYS

__all__ = ["QueryPlan", "ReconstructResult", "iter_reconstruct", "plan_query", "query_id", "query_refusal",
           "write_reconstruction"]


def query_id(ob, kind: str):
    """The ID whose action is the query: ``ob``'s shape keys (SHAPE_KEYS) or the armature ``ob``."""
    if ob is None:
        raise MotionDBError("No active object: select the object whose action is the query")
    if kind == SHAPE_KEYS:
        key = getattr(getattr(ob, "data", None), "shape_keys", None)
        if key is None:
            raise MotionDBError(f'"{ob.name}" has no shape keys (the database holds shape-key actions)')
        return key
    if ob.type != "ARMATURE":
        raise MotionDBError(f'"{ob.name}" is not an armature (the database holds armature actions)')
    return ob


def query_refusal(ob, id_data) -> str | None:
    """Why a reconstruction cannot write a new action onto the query's ID (the armature ``ob`` or
    its mesh's shape keys): read-only data or NLA tweak mode (Blender then refuses to assign an
    action). None when it can."""
    reason = id_read_only_reason(ob, id_data)
    if reason is None and tweak_mode_reason(id_data):
        reason = (tweak_mode_reason(ob) if id_data == ob
                  else f'The shape keys of "{ob.name}" are in NLA tweak mode: exit tweak mode first')
    return reason


@dataclass
class ReconstructResult:
    """The reconstructed frames: poses (n, D) in database channel order, the best path's length
    (n,) per frame, and the seconds (n_valid,) each valid (non-NaN) query frame took."""

    poses: np.ndarray
    best_length: np.ndarray
    seconds: np.ndarray


@dataclass
class QueryPlan:
    """A checked query: the database, the query's ID, action and curves, and its sampled frames."""

    db: MotionDatabase
    kind: str
    id_data: Any
    action: Any
    curves: list  # query F-curves, in query-channel order
    query_channels: list[str]  # database names of the query columns
    output_names: list[str]  # names written (database channels, in the query's spelling when matched)
    frames: np.ndarray  # (n,) whole frames of the query action (empty when not sampled)
    values: np.ndarray  # (n, d_q) query samples
    params: OLNGParams
    index_options: Any = None  # the scene's k-NN index settings (knn.IndexOptions)
    warnings: list[str] = field(default_factory=list)
    index: DatabaseIndex | None = None  # set by iter_reconstruct (or the live mode)
    result: ReconstructResult | None = None  # set by iter_reconstruct


def _query_names(db: MotionDatabase, input_channels: str, drop_eyes: bool) -> list[str]:
    """The database channels the user asks to query with (all, a list, minus the eyes)."""
    wanted = list(db.channels)
    spec = input_channels.strip()
    if spec and spec.upper() != "ALL":
        names = parse_names(spec)
        found = match_names(names, db.channels)
        unknown = [n for n in names if n not in found]
        if unknown:
            raise MotionDBError(f"Input channel(s) not in the database: {short_list(unknown)}")
        wanted = [found[n] for n in names]
    if drop_eyes:
        wanted = [n for n in wanted if not is_eye_channel(n)]
    return wanted


def plan_query(context, *, input_channels: str = "ALL", drop_eyes: bool = False, k: int = 256, window: int = 32,
               paths: int = 50, a: int = 1, b: int = 2, stay: float = 0.0, sample: bool = True) -> QueryPlan:
    """Check the query (the active object's action) against the scene's database.

    The keywords are the :data:`~.properties.QUERY_SETTINGS`; ``sample`` reads every whole frame of
    the query action (the live mode evaluates one frame at a time instead). Database channels the
    query lacks and query channels the database lacks become warnings; ``k`` is lowered to the
    database's size. Raises :class:`~.database.MotionDBError`.
    """
    scene = context.scene
    db = stored_database(scene)
    kind = scene.anim_signals.motion_db.kind
    id_data = query_id(context.active_object, kind)
    action = get_action(id_data)
    if action is None:
        raise MotionDBError(f'"{id_data.name}" has no action to use as the query')
    curves = named_channel_curves(action, kind, id_data)
    matched = match_names(db.channels, list(curves))  # db name -> query name
    warnings = []
    wanted = _query_names(db, input_channels, drop_eyes)
    q_names = [n for n in wanted if n in matched]
    absent = [n for n in wanted if n not in matched]
    if absent:
        warnings.append(f"{len(absent)} database channel(s) missing from the query (rebuilt from the others): {short_list(absent)}")
    extra = [n for n in curves if n not in set(matched.values())]
    if extra:
        warnings.append(f"{len(extra)} query channel(s) not in the database ignored: {short_list(extra)}")
    if not q_names:
        raise MotionDBError("The query has no channel in common with the motion database")
    if k > db.n_frames:
        warnings.append(f"k lowered from {k} to the database's {db.n_frames} frames")
        k = db.n_frames
    record = scene.anim_signals.motion_db
    params = OLNGParams(k=k, window=window, paths=paths, a=a, b=b, stay=stay, backend=record.backend,
                        recall_target=record.recall_target)
    try:
        params.checked(db.n_frames)
    except ValueError as err:
        raise MotionDBError(str(err)) from err
    q_curves = [curves[matched[n]] for n in q_names]
    frames = np.empty(0)
    values = np.empty((0, len(q_names)))
    if sample:
        lo, hi = action_frame_range(action, q_curves)
        if hi - lo + 1 > MAX_QUERY_FRAMES:
            raise MotionDBError(f'The query action "{action.name}" spans frames {lo}-{hi} ({hi - lo + 1} frames); a '
                                f"reconstruction reads at most {MAX_QUERY_FRAMES} (a stray key far away?)")
        frames = np.arange(lo, hi + 1, dtype=np.float64)
        _, values = sample_curves(q_curves, frames)
        with np.errstate(invalid="ignore"):
            bad = np.isinf(values) | (np.abs(values) > VALUE_LIMIT)
        if bad.any():  # NaN is a missing query value already; an infinite or extreme one is no value either
            hit = [q_names[j] for j in np.flatnonzero(bad.any(axis=0))]
            warnings.append(f"{int(bad.sum())} infinite or extreme query value(s) (beyond +-{VALUE_LIMIT:g}) treated "
                            f"as missing: {short_list(hit)}")
            values[bad] = np.nan
    out_names = [matched.get(n, n) for n in db.channels]
    return QueryPlan(db, kind, id_data, action, q_curves, q_names, out_names, frames, values, params,
                     index_options(scene.anim_signals.motion_db, db.n_frames), warnings)


MAX_QUERY_FRAMES = 1_000_000
"""Whole frames a query action may span (sampled and written once each): 11.5 hours at 24 fps."""


def _core_steps(plan: QueryPlan, index: Any) -> Generator[float, None, Any]:
    """The core's ``iter_reconstruct`` over the plan's queries, searching with ``index``."""
    return iter_batch(plan.db, plan.values, plan.params, plan.query_channels, index=index)


def iter_reconstruct(plan: QueryPlan, output: str) -> Generator[float, None, None]:
    """Take the k-NN index of the query's channels (from memory or its file, else built: the first
    half of the progress) into ``plan.index``, then run the core's reconstruction
    (``anim_signals.motiondb.iter_reconstruct``) over the query frames, yielding progress in
    [0, 1]; the result lands in ``plan.result``. ``output`` BEST_PATH keeps the best path's frame,
    SYNTHESIS the synthesis. NaN query frames hold the previous output (the graph is not updated);
    frames before the first valid one take its output. Raises ValueError when every query frame
    has NaN values."""
    cols = database_columns(plan.db, plan.query_channels)
    built: list[float] = []  # iter_index yields only while it builds: then it takes the first half of the progress
    plan.index = yield from scaled(iter_index(plan.db, cols, plan.index_options), 0.0, 0.5, seen=built)
    start = 0.5 if built else 0.0
    batch = yield from scaled(_core_steps(plan, plan.index.index), start, 1.0)
    stepped = batch.best_index >= 0
    if not stepped.any():
        raise ValueError("every query frame has NaN values")
    poses = batch.best if output == "BEST_PATH" else batch.poses
    if not np.all(np.isfinite(poses)):
        raise ValueError("the database gave non-finite poses (are its actions' values finite?): nothing written")
    plan.result = ReconstructResult(poses, batch.best_length, batch.seconds[stepped].sum(axis=1))


def write_reconstruction(scene, plan: QueryPlan, output: str) -> str:
    """Write ``plan.result`` as a new action ``<query action>.reconstructed`` on the query's ID (all
    database channels), keep the numbers on ``scene.anim_signals.motion_db``; returns the action's name."""
    result = plan.result
    assert result is not None, "iter_reconstruct has not finished"
    name = f"{plan.action.name}{RECONSTRUCTED_SUFFIX}"
    current_transaction().keep_action(plan.id_data)
    action = write_named_channels(plan.id_data, name, plan.kind, plan.frames, result.poses, plan.output_names)
    action["anim_signals_output"] = output
    scene.anim_signals.motion_db.store_result(
        action.name,
        frames=int(plan.frames.size),
        ms_per_frame=float(1000.0 * result.seconds.mean()) if result.seconds.size else 0.0,
        best_length=float(result.best_length.mean()) if result.best_length.size else 0.0,
        query_channels=len(plan.query_channels),
    )
    return action.name
