"""Motion database operators (Richert: k-NN + online lazy neighbourhood graph):
``anim_signals.import_live_link_csv``, ``anim_signals.build_motion_database``,
``anim_signals.reconstruct_motion`` and the live mode ``anim_signals.motion_db_live``.

The database stored on the scene (``scene.anim_signals.motion_db``) is only a list of action names,
their kind (shape-key or armature actions) and channel names: the actions are the truth. The core
``MotionDatabase`` (and its kd-trees) is rebuilt from them on demand and cached for the session, keyed
by a signature of the actions (names, key counts, frame ranges), so edits rebuild it.
"""

import json
import os
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..anim_signals import livelink
from ..anim_signals.motiondb import MotionDatabase, OLNGParams, Reconstructor
from . import bridge
from .common.menus import add_to_menus, remove_from_menus
from .common.modal import StepwiseModal

SHAPE_KEYS, ARMATURE = bridge.DB_SHAPE_KEYS, bridge.DB_ARMATURE
RECONSTRUCTED_SUFFIX = ".reconstructed"
LIVE_SUFFIX = ".live"
FACE_NAME = "ARKit Face"

KIND_ITEMS = [
    (SHAPE_KEYS, "Shape Keys", "Shape-key actions (facial blendshapes such as ARKit's 52)"),
    (ARMATURE, "Armature", "Armature actions (pose-bone rotations; BVH imports)"),
]
OUTPUT_ITEMS = [
    ("BEST_PATH", "Best Path", "The last frame of the best path through the database (exact database poses)"),
    ("SYNTHESIS", "Synthesis", "The weighted geometric median of the best paths' frames (smoother)"),
]


class MotionDBError(Exception):
    """Bad input: reported to the user, nothing changed."""


# ------------------------------------------------------------------------------------------
# Names
# ------------------------------------------------------------------------------------------


def parse_names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def match_names(wanted: Sequence[str], have: Sequence[str]) -> dict[str, str]:
    """``wanted`` name -> the name in ``have`` (exact, else case-insensitive: ARKit rigs often use
    'eyeBlinkLeft' where Live Link Face writes 'EyeBlinkLeft')."""
    exact = set(have)
    lower = {h.lower(): h for h in have}
    out = {}
    for w in wanted:
        if w in exact:
            out[w] = w
        elif w.lower() in lower:
            out[w] = lower[w.lower()]
    return out


def is_eye_channel(name: str) -> bool:
    return "eye" in name.lower()


def _short(items: Sequence[str], n: int = 5) -> str:
    items = list(items)
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


# ------------------------------------------------------------------------------------------
# Live Link Face import
# ------------------------------------------------------------------------------------------


def scene_fps(scene) -> float:
    return float(scene.render.fps) / float(scene.render.fps_base or 1.0)


def create_face(name: str = FACE_NAME, collection=None):
    face = livelink.generated_face()
    keys = [(n, face.shape_keys[n]) for n in livelink.ARKIT_BLENDSHAPES]
    return bridge.new_face_object(name, face.vertices, face.faces, keys, collection)


def arkit_target(ob) -> dict[str, str] | None:
    """ARKit name -> shape-key name on ``ob`` (None when ``ob`` is no mesh with ARKit-named keys)."""
    if ob is None or ob.type != "MESH":
        return None
    mapping = match_names(livelink.ARKIT_BLENDSHAPES, bridge.key_block_names(ob))
    return mapping or None


@dataclass
class ImportSummary:
    object_name: str
    action_name: str
    frames: int
    channels: int
    messages: list[str] = field(default_factory=list)


def import_live_link(context, filepath: str, *, frame_start: int = 1, set_frame_range: bool = True,
                     max_gap: float = 0.25, create: bool = True) -> ImportSummary:
    """Read the CSV, resample it to the scene's rate and write shape-key animation on the active
    ARKit mesh (or a generated face). Raises MotionDBError."""
    if not filepath or not os.path.isfile(bpy.path.abspath(filepath)):
        raise MotionDBError(f"No such file: {filepath!r}")
    try:
        rec = livelink.read_csv(bpy.path.abspath(filepath))
    except livelink.LiveLinkError as err:
        raise MotionDBError(str(err)) from err
    scene = context.scene
    ob = context.active_object
    mapping = arkit_target(ob)
    if mapping is None:
        if not create:
            raise MotionDBError("The active object is not a mesh with ARKit-named shape keys")
        ob = create_face(FACE_NAME)
        context.view_layer.objects.active = ob
        ob.select_set(True)
        mapping = arkit_target(ob)
        assert mapping is not None
    if (reason := bridge.id_read_only_reason(ob)) is not None:
        raise MotionDBError(reason)
    cols = [j for j, n in enumerate(rec.names) if n in mapping]
    if not cols:
        raise MotionDBError(f"{os.path.basename(filepath)} has no ARKit blendshape columns")
    fps = scene_fps(scene)
    try:
        res = livelink.resample(rec.times, rec.values[:, cols], fps, max_gap=max_gap, rate=rec.rate)
    except ValueError as err:
        raise MotionDBError(f"{os.path.basename(filepath)}: {err}") from err
    frames = frame_start + np.arange(res.times.size, dtype=np.float64)
    names = [mapping[rec.names[j]] for j in cols]
    key = ob.data.shape_keys
    stem = os.path.splitext(os.path.basename(filepath))[0]
    action = bridge.write_named_channels(key, stem, SHAPE_KEYS, frames, res.values, names)
    action["anim_signals_source"] = os.path.basename(filepath)
    if set_frame_range:
        scene.frame_start, scene.frame_end = int(frames[0]), int(frames[-1])
    msgs = [f"{stem}: {rec.summary()}; resampled to {fps:g} fps ({frames.size} frames)"]
    if rec.gaps or rec.nan_rows.size:
        msgs.append(f"{res.n_filled} frame(s) filled by linear interpolation"
                    + (f", {res.n_long_gap} of them in gaps longer than {max_gap:g} s" if res.n_long_gap else ""))
    msgs += rec.warnings
    return ImportSummary(ob.name, action.name, int(frames.size), len(names), msgs)


class ANIM_SIGNALS_OT_import_live_link_csv(bpy.types.Operator):
    """Import a Live Link Face CSV recording (ARKit blendshapes) as shape-key animation on the active mesh with ARKit-named shape keys, or on a generated face"""

    bl_idname = "anim_signals.import_live_link_csv"
    bl_label = "Import Live Link Face CSV"
    bl_options = {"REGISTER", "UNDO"}

    filepath: StringProperty(name="File", description="The Live Link Face CSV file", subtype="FILE_PATH", default="")  # type: ignore[valid-type]
    filter_glob: StringProperty(default="*.csv", options={"HIDDEN"})  # type: ignore[valid-type]
    frame_start: IntProperty(name="Start Frame", description="Scene frame of the recording's first frame", default=1)  # type: ignore[valid-type]
    set_frame_range: BoolProperty(name="Set Frame Range", description="Set the scene's frame range to the recording", default=True)  # type: ignore[valid-type]
    max_gap: FloatProperty(  # type: ignore[valid-type]
        name="Max Gap", description="Gaps (dropped frames, lost tracking) longer than this are reported (seconds); all gaps are filled linearly",
        default=0.25, min=0.0, unit="TIME_ABSOLUTE",
    )

    def execute(self, context):
        try:
            s = import_live_link(context, self.filepath, frame_start=self.frame_start,
                                 set_frame_range=self.set_frame_range, max_gap=self.max_gap)
        except MotionDBError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for m in s.messages[1:]:
            self.report({"WARNING"}, m)
        self.report({"INFO"}, f'{s.messages[0]} -> "{s.action_name}" on "{s.object_name}"')
        return {"FINISHED"}

    def invoke(self, context, event):
        if context.window is None or bpy.app.background:
            return self.execute(context)
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}


# ------------------------------------------------------------------------------------------
# The database on the scene, the core database cached per session
# ------------------------------------------------------------------------------------------

_CACHE: dict[str, tuple[tuple, MotionDatabase]] = {}


def db_settings(scene):
    root = getattr(scene, "anim_signals", None)
    return getattr(root, "motion_db", None)


def candidate_actions(kind: str, names: Sequence[str] | None = None) -> list[Any]:
    """Actions of ``kind`` (named ones, in that order, or every one in the file except results)."""
    if names:
        out: list[Any] = []
        for n in names:
            act = bpy.data.actions.get(n)
            if act is None:
                raise MotionDBError(f'No action named "{n}"')
            if bridge.action_kind(act) != kind:
                raise MotionDBError(f'Action "{n}" is not a {kind.lower().replace("_", "-")} action')
            out.append(act)
        return out
    return [a for a in bpy.data.actions
            if bridge.action_kind(a) == kind and not a.name.endswith((RECONSTRUCTED_SUFFIX, LIVE_SUFFIX))]


def _signature(actions) -> tuple:
    sig = []
    for a in actions:
        fcs = bridge.fcurves_of_action(a)
        sig.append((a.name, len(fcs), bridge.count_keys(fcs), tuple(a.frame_range)))
    return tuple(sig)


def build_database(actions, kind: str, channels: Sequence[str] | None = None) -> tuple[MotionDatabase, list[str]]:
    """The core database from ``actions``: channels common to all of them (or ``channels``).
    Returns it and warnings (channels left out)."""
    if not actions:
        raise MotionDBError("The motion database is empty: no action given (or none of this kind in the file)")
    warnings: list[str] = []
    per_action = [bridge.named_channel_curves(a, kind) for a in actions]
    if channels is None:
        common = [n for n in per_action[0] if all(n in p for p in per_action[1:])]
        union = {n for p in per_action for n in p}
        left_out = sorted(union - set(common))
        if left_out:
            warnings.append(f"{len(left_out)} channel(s) not in every action left out: {_short(left_out)}")
        channels = common
    if not channels:
        raise MotionDBError("The actions have no channel in common")
    clips = []
    for a in actions:
        _, values, names = bridge.read_named_channels(a, kind, channels)
        if len(names) != len(channels):
            missing = [n for n in channels if n not in names]
            raise MotionDBError(f'Action "{a.name}" lacks database channel(s): {_short(missing)}')
        clips.append(values)
    try:
        db = MotionDatabase.from_clips(clips, list(channels), [a.name for a in actions])
    except ValueError as err:
        raise MotionDBError(str(err)) from err
    return db, warnings


def stored_database(scene) -> MotionDatabase:
    """The scene's database as a core MotionDatabase (cached while its actions are unchanged)."""
    s = db_settings(scene)
    if s is None or not len(s.actions):
        raise MotionDBError("No motion database in this scene: build one first")
    actions: list[Any] = []
    for item in s.actions:
        act = bpy.data.actions.get(item.name)
        if act is None:
            raise MotionDBError(f'Action "{item.name}" of the motion database is gone: rebuild the database')
        actions.append(act)
    channels = json.loads(s.channels_json or "[]")
    sig = (s.kind, tuple(channels), _signature(actions))
    hit = _CACHE.get(scene.name)
    if hit is not None and hit[0] == sig:
        return hit[1]
    db, _ = build_database(actions, s.kind, channels)
    _CACHE[scene.name] = (sig, db)
    return db


def store_database(scene, db: MotionDatabase, kind: str, object_name: str = "") -> None:
    s = db_settings(scene)
    s.actions.clear()
    for name in db.clip_names:
        item = s.actions.add()
        item.name = name
        act = bpy.data.actions.get(name)
        if act is not None:
            act.use_fake_user = True  # the source actions are the database: keep them when saving
    s.kind = kind
    s.channels_json = json.dumps(list(db.channels))
    s.n_channels = len(db.channels)
    s.n_frames = db.n_frames
    s.object_name = object_name


class ANIM_SIGNALS_OT_build_motion_database(bpy.types.Operator):
    """Build the scene's motion database from actions (shape-key or armature actions): the actions stay the truth, the search index is rebuilt on demand"""

    bl_idname = "anim_signals.build_motion_database"
    bl_label = "Build Motion Database"
    bl_options = {"REGISTER", "UNDO"}

    kind: EnumProperty(name="Kind", description="Which actions make the database", items=KIND_ITEMS, default=SHAPE_KEYS)  # type: ignore[valid-type]
    actions: StringProperty(  # type: ignore[valid-type]
        name="Actions",
        description='Comma-separated action names (empty: every action of this kind in the file, except "*.reconstructed" results)',
        default="",
    )

    def execute(self, context):
        t0 = time.perf_counter()
        try:
            actions = candidate_actions(self.kind, parse_names(self.actions))
            db, warnings = build_database(actions, self.kind)
        except MotionDBError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        ob = context.active_object
        store_database(context.scene, db, self.kind, ob.name if ob is not None else "")
        _CACHE[context.scene.name] = ((self.kind, tuple(db.channels), _signature(actions)), db)
        for w in warnings:
            self.report({"WARNING"}, w)
        self.report({"INFO"}, f"Motion database: {db.n_clips} clip(s), {db.n_frames} frames, {len(db.channels)} channels "
                              f"({time.perf_counter() - t0:.2f} s)")
        return {"FINISHED"}


# ------------------------------------------------------------------------------------------
# Reconstruction
# ------------------------------------------------------------------------------------------


def query_id(ob, kind: str):
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


@dataclass
class QueryPlan:
    db: MotionDatabase
    kind: str
    id_data: Any
    action: Any
    curves: list  # query F-curves, in query-channel order
    query_channels: list[str]  # database names of the query columns
    output_names: list[str]  # names written (database channels, in the query's spelling when matched)
    frames: np.ndarray
    values: np.ndarray  # (n, d_q)
    params: OLNGParams
    messages: list[str] = field(default_factory=list)


def plan_query(context, *, input_channels: str = "ALL", drop_eyes: bool = False, k: int = 256, window: int = 32,
               paths: int = 50, a: int = 1, b: int = 2, stay: float = 0.0, sample: bool = True) -> QueryPlan:
    scene = context.scene
    db = stored_database(scene)
    kind = db_settings(scene).kind
    id_data = query_id(context.active_object, kind)
    action = bridge.get_action(id_data)
    if action is None:
        raise MotionDBError(f'"{id_data.name}" has no action to use as the query')
    curves = bridge.named_channel_curves(action, kind, id_data)
    matched = match_names(db.channels, list(curves))  # db name -> query name
    messages = []
    wanted = list(db.channels)
    spec = input_channels.strip()
    if spec and spec.upper() != "ALL":
        names = parse_names(spec)
        found = match_names(names, db.channels)
        unknown = [n for n in names if n not in found]
        if unknown:
            raise MotionDBError(f"Input channel(s) not in the database: {_short(unknown)}")
        wanted = [found[n] for n in names]
    if drop_eyes:
        wanted = [n for n in wanted if not is_eye_channel(n)]
    q_names = [n for n in wanted if n in matched]
    absent = [n for n in wanted if n not in matched]
    if absent:
        messages.append(f"{len(absent)} database channel(s) missing from the query (rebuilt from the others): {_short(absent)}")
    extra = [n for n in curves if n not in set(matched.values())]
    if extra:
        messages.append(f"{len(extra)} query channel(s) not in the database ignored: {_short(extra)}")
    if not q_names:
        raise MotionDBError("The query has no channel in common with the motion database")
    if k > db.n_frames:
        messages.append(f"k lowered from {k} to the database's {db.n_frames} frames")
        k = db.n_frames
    params = OLNGParams(k=k, window=window, paths=paths, a=a, b=b, stay=stay)
    try:
        params.checked(db.n_frames)
    except ValueError as err:
        raise MotionDBError(str(err)) from err
    q_curves = [curves[matched[n]] for n in q_names]
    frames = np.empty(0)
    values = np.empty((0, len(q_names)))
    if sample:
        lo, hi = bridge.action_frame_range(action, q_curves)
        frames = np.arange(lo, hi + 1, dtype=np.float64)
        _, values = bridge.sample_curves(q_curves, frames)
    out_names = [matched.get(n, n) for n in db.channels]
    return QueryPlan(db, kind, id_data, action, q_curves, q_names, out_names, frames, values, params, messages)


@dataclass
class ReconstructResult:
    poses: np.ndarray
    best_length: np.ndarray
    seconds: np.ndarray  # per valid frame


def iter_reconstruct(plan: QueryPlan, output: str, out: dict) -> Generator[float, None, None]:
    """Step the streaming reconstructor over the query frames; the result lands in ``out['result']``.
    NaN query frames hold the previous output (the graph is not updated)."""
    rec = Reconstructor(plan.db, plan.params, plan.query_channels)
    n, d = plan.values.shape[0], len(plan.db.channels)
    poses = np.full((n, d), np.nan)
    lengths = np.zeros(n, dtype=np.int64)
    secs = []
    for i in range(n):
        q = plan.values[i]
        if np.all(np.isfinite(q)):
            t0 = time.perf_counter()
            s = rec.step(q)
            secs.append(time.perf_counter() - t0)
            poses[i] = s.best if output == "BEST_PATH" else s.pose
            lengths[i] = s.best_length
        elif i > 0:
            poses[i] = poses[i - 1]
        yield (i + 1) / max(n, 1)
    ok = np.flatnonzero(np.isfinite(poses[:, 0])) if n and d else np.empty(0, dtype=int)
    if not ok.size:
        raise ValueError("every query frame has NaN values")
    poses[: ok[0]] = poses[ok[0]]
    out["result"] = ReconstructResult(poses, lengths, np.array(secs))


def write_reconstruction(scene, plan: QueryPlan, result: ReconstructResult, output: str) -> str:
    name = f"{plan.action.name}{RECONSTRUCTED_SUFFIX}"
    action = bridge.write_named_channels(plan.id_data, name, plan.kind, plan.frames, result.poses, plan.output_names)
    action["anim_signals_output"] = output
    r = db_settings(scene)
    r.last_action = action.name
    r.last_frames = int(plan.frames.size)
    r.last_ms = float(1000.0 * result.seconds.mean()) if result.seconds.size else 0.0
    r.last_best_length = float(result.best_length.mean()) if result.best_length.size else 0.0
    r.last_query_channels = len(plan.query_channels)
    return action.name


RECONSTRUCT_SETTINGS = ("input_channels", "drop_eyes", "output", "k", "window", "paths", "a", "b", "stay")


class _ParamsMixin:
    input_channels: StringProperty(  # type: ignore[valid-type]
        name="Input Channels",
        description='"ALL", or comma-separated channel names used as the query (the others are rebuilt)',
        default="ALL",
    )
    drop_eyes: BoolProperty(  # type: ignore[valid-type]
        name="Drop Eyes", description="Leave the eye channels out of the query (rebuilt from the rest of the face)", default=False,
    )
    output: EnumProperty(name="Output", description="What each frame becomes", items=OUTPUT_ITEMS, default="SYNTHESIS")  # type: ignore[valid-type]
    k: IntProperty(name="Neighbours (K)", description="Nearest database frames per query frame", default=256, min=1, soft_max=1024)  # type: ignore[valid-type]
    window: IntProperty(name="Window (T)", description="Query frames a path can span", default=32, min=1, soft_max=128)  # type: ignore[valid-type]
    paths: IntProperty(name="Paths (I)", description="Best paths the synthesis blends", default=50, min=1, soft_max=256)  # type: ignore[valid-type]
    a: IntProperty(name="Min Step (a)", description="A path's next database frame is at least a frames on (1: strictly forward)", default=1, min=0, soft_max=4)  # type: ignore[valid-type]
    b: IntProperty(name="Max Step (b)", description="... and at most b frames on (2: the database may play up to twice as fast)", default=2, min=0, soft_max=8)  # type: ignore[valid-type]
    stay: FloatProperty(name="Stay", description="Cost discount for continuing the previous best path (0: none)", default=0.0, min=0.0, max=0.99)  # type: ignore[valid-type]

    def _param_kwargs(self) -> dict:
        return {n: getattr(self, n) for n in ("input_channels", "drop_eyes", "k", "window", "paths", "a", "b", "stay")}


def _fill_from_settings(op, context) -> None:
    s = db_settings(context.scene)
    if s is None:
        return
    for name in RECONSTRUCT_SETTINGS:
        if not op.properties.is_property_set(name) and hasattr(s, name):
            setattr(op, name, getattr(s, name))


class ANIM_SIGNALS_OT_reconstruct_motion(_ParamsMixin, StepwiseModal, bpy.types.Operator):
    """Rebuild the active object's action from the motion database (denoise, or fill in missing channels): a new action "<action>.reconstructed"""

    bl_idname = "anim_signals.reconstruct_motion"
    bl_label = "Reconstruct Motion"
    bl_options = {"REGISTER", "UNDO"}

    STATUS_TEXT = "Reconstructing... Esc / right-click to cancel"
    CANCELLED_TEXT = "Reconstruction cancelled: nothing changed"
    FAILED_PREFIX = "Reconstruction failed: "
    FAILURES = (ValueError, MotionDBError)
    _out: dict | None = None

    @classmethod
    def poll(cls, context):
        if context.active_object is None:
            cls.poll_message_set("No active object")
            return False
        return True

    def _plan(self, context) -> QueryPlan | None:
        try:
            plan = plan_query(context, **self._param_kwargs())
        except MotionDBError as err:
            self.report({"ERROR"}, str(err))
            return None
        if not plan.frames.size:
            self.report({"ERROR"}, "The query action has no frames")
            return None
        if (reason := bridge.id_read_only_reason(plan.id_data)) is not None:
            self.report({"ERROR"}, reason)
            return None
        for m in plan.messages:
            self.report({"WARNING"}, m)
        return plan

    def _finish(self, context, plan: QueryPlan) -> set[str]:
        assert self._out is not None
        result = self._out["result"]
        name = write_reconstruction(context.scene, plan, result, self.output)
        ms = db_settings(context.scene).last_ms
        self.report({"INFO"}, f'"{name}": {plan.frames.size} frames from {len(plan.query_channels)} of '
                              f"{len(plan.db.channels)} channels, {ms:.2f} ms per frame")
        return {"FINISHED"}

    def execute(self, context):
        plan = self._plan(context)
        if plan is None:
            return {"CANCELLED"}
        self._out = {}
        wm = context.window_manager
        wm.progress_begin(0, 100)
        try:
            for frac in iter_reconstruct(plan, self.output, self._out):
                wm.progress_update(int(100 * frac))
        except (ValueError, MotionDBError) as err:
            self.report({"ERROR"}, f"Reconstruction failed: {err}")
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        return self._finish(context, plan)

    def invoke(self, context, event):
        _fill_from_settings(self, context)
        if context.window is None or bpy.app.background:
            return self.execute(context)
        plan = self._plan(context)
        if plan is None:
            return {"CANCELLED"}
        self._out = {}
        return self.start_stepping(context, plan, iter_reconstruct(plan, self.output, self._out))


# ------------------------------------------------------------------------------------------
# Live mode: a frame-change handler reconstructing one frame per frame change
# ------------------------------------------------------------------------------------------


@dataclass
class LiveState:
    scene_name: str
    source_name: str
    duplicate_name: str
    plan: QueryPlan
    reconstructor: Reconstructor
    output: str
    writer: Any = None
    last_frame: int | None = None
    frames_done: int = 0


_LIVE: dict[str, LiveState] = {}


def live_state(scene) -> LiveState | None:
    return _LIVE.get(scene.name)


def _write_live(state: LiveState, pose: np.ndarray) -> None:
    dup = bpy.data.objects.get(state.duplicate_name)
    if dup is None:
        raise ReferenceError("the live duplicate was removed")
    if state.plan.kind == SHAPE_KEYS:
        bridge.set_key_values_by_name(dup, state.plan.output_names, pose)
    else:
        if state.writer is None:
            parsed = [bridge.parse_pose_channel(n) for n in state.plan.output_names]
            state.writer = bridge.PoseWriter(dup, [p for p, _ in parsed], [i for _, i in parsed])
        state.writer.write(dup, pose)


def live_step(scene) -> float | None:
    """Reconstruct the scene's current frame onto the live duplicate; returns the milliseconds."""
    state = _LIVE.get(scene.name)
    if state is None:
        return None
    frame = int(scene.frame_current)
    if state.last_frame is None or frame != state.last_frame + 1:
        state.reconstructor.reset()  # a jump: the graph restarts (streaming, no look-ahead)
    state.last_frame = frame
    q = bridge.evaluate_named_channels(state.plan.curves, float(frame))
    if not np.all(np.isfinite(q)):
        return None
    t0 = time.perf_counter()
    s = state.reconstructor.step(q)
    pose = s.best if state.output == "BEST_PATH" else s.pose
    ms = 1000.0 * (time.perf_counter() - t0)
    _write_live(state, pose)
    state.frames_done += 1
    settings = db_settings(scene)
    if settings is not None:
        settings.live_ms = ms
        settings.live_best_length = s.best_length
    return ms


def _on_frame_change(scene, depsgraph=None) -> None:
    if scene.name not in _LIVE:
        return
    try:
        live_step(scene)
    except (ReferenceError, ValueError) as err:  # data removed or changed under the live mode
        stop_live(scene)
        print(f"Anim Signals: live reconstruction stopped: {err}")


def _ensure_handler() -> None:
    if _on_frame_change not in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.append(_on_frame_change)


def _remove_handler() -> None:
    while _on_frame_change in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.remove(_on_frame_change)


def start_live(context, output: str, **kwargs) -> LiveState:
    plan = plan_query(context, sample=False, **kwargs)
    ob = context.active_object
    dup = bridge.live_duplicate(ob, f"{ob.name}{LIVE_SUFFIX}")
    if plan.kind == SHAPE_KEYS:
        missing = [n for n in plan.output_names if n not in set(bridge.key_block_names(dup))]
        if missing:
            plan.messages.append(f"{len(missing)} database channel(s) have no shape key on the duplicate: {_short(missing)}")
    state = LiveState(context.scene.name, ob.name, dup.name, plan, Reconstructor(plan.db, plan.params, plan.query_channels), output)
    _LIVE[context.scene.name] = state
    _ensure_handler()
    s = db_settings(context.scene)
    s.live = True
    s.live_object = dup.name
    live_step(context.scene)
    return state


def stop_live(scene=None) -> None:
    if scene is None:
        _LIVE.clear()
    else:
        _LIVE.pop(scene.name, None)
        s = db_settings(scene)
        if s is not None:
            s.live = False
    if not _LIVE:
        _remove_handler()


class ANIM_SIGNALS_OT_motion_db_live(_ParamsMixin, bpy.types.Operator):
    """Toggle live reconstruction: while the timeline plays, every frame of the active object's action is rebuilt from the motion database onto a duplicate "<name>.live\""""

    bl_idname = "anim_signals.motion_db_live"
    bl_label = "Live Reconstruction"
    bl_options = {"REGISTER"}

    action: EnumProperty(  # type: ignore[valid-type]
        name="Action", items=[("TOGGLE", "Toggle", ""), ("START", "Start", ""), ("STOP", "Stop", "")], default="TOGGLE",
    )
    output: EnumProperty(name="Output", description="What each frame becomes", items=OUTPUT_ITEMS, default="BEST_PATH")  # type: ignore[valid-type]

    def execute(self, context):
        running = live_state(context.scene) is not None
        if self.action == "STOP" or (self.action == "TOGGLE" and running):
            stop_live(context.scene)
            self.report({"INFO"}, "Live reconstruction off")
            return {"FINISHED"}
        if running:
            stop_live(context.scene)
        try:
            state = start_live(context, self.output, **self._param_kwargs())
        except (MotionDBError, ValueError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        for m in state.plan.messages:
            self.report({"WARNING"}, m)
        self.report({"INFO"}, f'Live reconstruction on: "{state.duplicate_name}" follows the timeline')
        return {"FINISHED"}

    def invoke(self, context, event):
        _fill_from_settings(self, context)
        return self.execute(context)


classes = (
    ANIM_SIGNALS_OT_import_live_link_csv,
    ANIM_SIGNALS_OT_build_motion_database,
    ANIM_SIGNALS_OT_reconstruct_motion,
    ANIM_SIGNALS_OT_motion_db_live,
)
_register, _unregister = bpy.utils.register_classes_factory(classes)


def menu_import(self, context):
    self.layout.operator(ANIM_SIGNALS_OT_import_live_link_csv.bl_idname, text="Live Link Face CSV (.csv) (Anim Signals)")


@bpy.app.handlers.persistent
def _on_load_pre(*_args) -> None:
    """Opening a file drops the (non-persistent) frame handler: forget the live state with it."""
    stop_live(None)


def register() -> None:
    _register()
    if _on_load_pre not in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.append(_on_load_pre)
    add_to_menus(("TOPBAR_MT_file_import",), menu_import)


def unregister() -> None:
    stop_live(None)
    while _on_load_pre in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.remove(_on_load_pre)
    remove_from_menus(("TOPBAR_MT_file_import",), menu_import)
    _CACHE.clear()
    _unregister()
