"""Live reconstruction: a frame-change handler rebuilds one frame per frame change onto a duplicate.

:func:`start_live` plans the query (as a reconstruction does, without sampling it), makes the
duplicate ``<name>.live`` and installs the ``frame_change_post`` handler; :func:`live_step`
evaluates the query curves at the scene's frame, steps the core ``Reconstructor`` (a jump that is
not +1 frame restarts the graph: streaming, no look-ahead) and sets the pose on the duplicate.
The state lives in this module for the session; ``window_manager.anim_signals.motion_db_live``
shows it (runtime only). Opening a file drops the handler and the state. An edit of a database
action (seen by a ``depsgraph_update_post`` handler, so playing costs no check per frame) makes the
next frame take the database again (rebuilt when its keys changed: its content digest); a
database rebuilt with other channels stops the live mode. The k-NN index is the database's
(:mod:`.index`: loaded from its file, or built when the live mode starts, blocking with the
window's progress bar, and saved).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import bpy
import numpy as np

from ...anim_signals.motiondb import Reconstructor
from ..blender_data.fcurves import evaluate_curves
from ..blender_data.meshes import live_duplicate
from ..blender_data.named_channels import NamedPoseWriter
from ..blender_data.shape_keys import key_block_names
from ..common.handlers import install_handlers, remove_handlers
from ..common.text import short_list
from .database import LIVE_SUFFIX, MotionDBError, database_actions, stored_database
from .index import database_columns, ensure_index
from .properties import SHAPE_KEYS
from .reconstruct import QueryPlan, plan_query

__all__ = ["LiveState", "live_state", "live_step", "register_handlers", "start_live", "stop_live", "unregister_handlers"]


@dataclass
class LiveState:
    """One scene's running live reconstruction."""

    scene_name: str
    source_name: str
    duplicate_name: str
    plan: QueryPlan
    reconstructor: Reconstructor
    output: str
    writer: NamedPoseWriter
    last_frame: int | None = None
    frames_done: int = 0
    stale: bool = False  # a database action was edited: take the database again before the next frame


# Scene name -> its running live reconstruction.
_LIVE: dict[str, LiveState] = {}


def _status():
    """The live mode's numbers shown in the sidebar (runtime only); None without a window manager
    (Blender quitting)."""
    wm = bpy.context.window_manager
    return None if wm is None else wm.anim_signals.motion_db_live


def live_state(scene) -> LiveState | None:
    """The scene's running live reconstruction, or None."""
    return _LIVE.get(scene.name)


def live_step(scene) -> float | None:
    """Reconstruct the scene's current frame onto the live duplicate; returns the milliseconds
    (None when the scene is not live or the query has NaN values at this frame)."""
    state = _LIVE.get(scene.name)
    if state is None:
        return None
    if state.stale:
        _refresh_database(scene, state)
    frame = int(scene.frame_current)
    if state.last_frame is None or frame != state.last_frame + 1:
        state.reconstructor.reset()  # a jump: the graph restarts (streaming, no look-ahead)
    state.last_frame = frame
    q = evaluate_curves(state.plan.curves, float(frame))
    if not np.all(np.isfinite(q)):
        return None
    t0 = time.perf_counter()
    s = state.reconstructor.step(q)
    pose = s.best if state.output == "BEST_PATH" else s.pose
    ms = 1000.0 * (time.perf_counter() - t0)
    dup = bpy.data.objects.get(state.duplicate_name)
    if dup is None:
        raise ReferenceError("the live duplicate was removed")
    state.writer.write(dup, pose)
    state.frames_done += 1
    _status().store_frame(ms, s.best_length)
    return ms


def _refresh_database(scene, state: LiveState) -> None:
    """Take the scene's database again (cached while its actions' keys are unchanged); a changed one
    restarts the graph. Raises MotionDBError when it no longer fits the live query."""
    state.stale = False
    db = stored_database(scene)
    if db is state.plan.db:
        return
    if list(db.channels) != list(state.plan.db.channels):
        raise MotionDBError("the motion database was rebuilt with other channels: start the live mode again")
    state.plan.db = db
    state.reconstructor = _reconstructor(scene, state.plan)
    state.last_frame = None


def _reconstructor(scene, plan: QueryPlan) -> Reconstructor:
    """A streaming reconstructor over the plan's database with its k-NN index (loaded or built now);
    the index's messages join ``plan.warnings``."""
    plan.index, messages = ensure_index(scene, plan.db, database_columns(plan.db, plan.query_channels))
    plan.warnings += messages
    return Reconstructor(plan.db, plan.params, plan.query_channels, index=plan.index.index)


def _on_frame_change(scene, depsgraph=None) -> None:
    if scene.name not in _LIVE:
        return
    try:
        live_step(scene)
    except (ReferenceError, ValueError, MotionDBError) as err:  # data removed or changed under the live mode
        stop_live(scene)
        print(f"Anim Signals: live reconstruction stopped: {err}")


def _on_depsgraph_update(scene, depsgraph=None) -> None:
    state = _LIVE.get(getattr(scene, "name", ""))
    if state is None or depsgraph is None or state.stale:
        return
    names = database_actions(scene)
    for update in depsgraph.updates:
        if isinstance(update.id, bpy.types.Action) and update.id.name in names:
            state.stale = True
            return


_HANDLERS = ((bpy.app.handlers.frame_change_post, _on_frame_change),
             (bpy.app.handlers.depsgraph_update_post, _on_depsgraph_update))


def _ensure_handler() -> None:
    install_handlers(_HANDLERS)


def _remove_handler() -> None:
    remove_handlers(_HANDLERS)


def start_live(context, output: str, **query_settings) -> LiveState:
    """Start the live mode on the active object (``query_settings``: those of ``plan_query``).

    Raises :class:`~.database.MotionDBError` (or ValueError) for a bad query; the plan's warnings
    are for the user.
    """
    plan = plan_query(context, sample=False, **query_settings)
    ob = context.active_object
    dup = live_duplicate(ob, f"{ob.name}{LIVE_SUFFIX}")
    if plan.kind == SHAPE_KEYS:
        missing = [n for n in plan.output_names if n not in set(key_block_names(dup))]
        if missing:
            plan.warnings.append(f"{len(missing)} database channel(s) have no shape key on the duplicate: {short_list(missing)}")
    state = LiveState(context.scene.name, ob.name, dup.name, plan, _reconstructor(context.scene, plan),
                      output, NamedPoseWriter(plan.kind, plan.output_names))
    _LIVE[context.scene.name] = state
    _ensure_handler()
    _status().start(dup.name)
    try:
        live_step(context.scene)
    except BaseException:
        stop_live(context.scene)  # the caller's transaction removes the duplicate
        raise
    return state


def stop_live(scene=None) -> None:
    """Stop the scene's live mode (every scene's when ``scene`` is None)."""
    if scene is None:
        _LIVE.clear()
    else:
        _LIVE.pop(scene.name, None)
    if not _LIVE:
        _remove_handler()
        if (status := _status()) is not None:
            status.stop()


@bpy.app.handlers.persistent
def _on_load_pre(*_args) -> None:
    """Opening a file drops the (non-persistent) frame handler: forget the live state with it."""
    stop_live(None)


def register_handlers() -> None:
    if _on_load_pre not in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.append(_on_load_pre)


def unregister_handlers() -> None:
    stop_live(None)
    while _on_load_pre in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.remove(_on_load_pre)
