"""The one module that reads and writes Blender animation data as numpy arrays.

Works on Blender 4.2/4.3 (legacy ``Action.fcurves``, no slots) and on 4.4+/5.x (slotted actions:
layers, strips, channelbags; ``Action.fcurves`` is gone in 5.0).  Everything else in the extension
goes through these functions, so API differences between Blender versions live here only.

Hot paths use ``foreach_get`` / ``foreach_set``; no per-key Python loops.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np

# Channel kinds, in the units animators use.
LOCATION = "LOCATION"
EULER = "EULER"
QUATERNION = "QUATERNION"
SCALE = "SCALE"
SHAPE_KEY = "SHAPE_KEY"
OTHER = "OTHER"

_KIND_BY_PROPERTY = {
    "location": LOCATION,
    "delta_location": LOCATION,
    "rotation_euler": EULER,
    "delta_rotation_euler": EULER,
    "rotation_quaternion": QUATERNION,
    "delta_rotation_quaternion": QUATERNION,
    "scale": SCALE,
    "delta_scale": SCALE,
}

_SHAPE_KEY_VALUE = re.compile(r'^key_blocks\[".*"\]\.value$')


def has_slots() -> bool:
    """True on Blender 4.4+ (slotted actions)."""
    return "action_slot" in bpy.types.AnimData.bl_rna.properties


# --------------------------------------------------------------------------------------------
# Actions, slots, F-curves
# --------------------------------------------------------------------------------------------


def animated_ids(ob: bpy.types.Object, target: str = "AUTO") -> list[Any]:
    """The IDs of ``ob`` whose action the fit works on.

    target: 'OBJECT' (the object itself), 'SHAPE_KEYS' (its shape-key datablock), or 'AUTO'
    (every one of the two that has an action).
    """
    ids: list[Any] = []
    if target in {"OBJECT", "AUTO"}:
        ids.append(ob)
    if target in {"SHAPE_KEYS", "AUTO"}:
        data = getattr(ob, "data", None)
        keys = getattr(data, "shape_keys", None) if data is not None else None
        if keys is not None:
            ids.append(keys)
    if target == "AUTO":
        ids = [i for i in ids if get_action(i) is not None]
    return ids


def get_action(id_data: Any) -> bpy.types.Action | None:
    adt = getattr(id_data, "animation_data", None)
    if adt is None:
        return None
    return adt.action


def get_slot(id_data: bpy.types.ID):
    """The action slot an ID is animated by (None before Blender 4.4 or when unassigned)."""
    adt = getattr(id_data, "animation_data", None)
    if adt is None or not hasattr(adt, "action_slot"):
        return None
    return adt.action_slot


def _channelbag(action: bpy.types.Action, slot):
    try:
        from bpy_extras import anim_utils

        fn = getattr(anim_utils, "action_get_channelbag_for_slot", None)
    except ImportError:  # pragma: no cover - bpy_extras always exists in Blender
        fn = None
    if fn is not None:
        return fn(action, slot)
    for layer in action.layers:
        for strip in layer.strips:
            cb = strip.channelbag(slot)  # type: ignore[attr-defined]
            if cb:
                return cb
    return None


def action_fcurves(action: bpy.types.Action | None, slot=None) -> list[bpy.types.FCurve]:
    """The F-curves of ``action`` for ``slot`` (legacy actions: all of them)."""
    if action is None:
        return []
    if slot is not None and hasattr(action, "layers"):
        cb = _channelbag(action, slot)
        return list(cb.fcurves) if cb is not None else []
    legacy = getattr(action, "fcurves", None)
    if legacy is not None:
        return list(legacy)
    return []


def id_fcurves(id_data: bpy.types.ID) -> list[bpy.types.FCurve]:
    """The F-curves animating ``id_data`` through its assigned action (and slot)."""
    action = get_action(id_data)
    if action is None:
        return []
    slot = get_slot(id_data)
    if has_slots() and slot is None and hasattr(action, "layers"):
        return []
    return action_fcurves(action, slot)


def list_fcurves(id_data: bpy.types.ID, *, selected_only: bool = False) -> list[bpy.types.FCurve]:
    """F-curves of the ID's action, optionally only those selected in the Graph Editor."""
    fcs = id_fcurves(id_data)
    if selected_only:
        fcs = [fc for fc in fcs if fc.select]
    return fcs


def fcurve_locked(fc: bpy.types.FCurve) -> bool:
    """A curve the Graph Editor would refuse to edit: locked itself or through its group."""
    if fc.lock:
        return True
    group = fc.group
    return bool(group is not None and group.lock)


def id_read_only_reason(id_data: bpy.types.ID) -> str | None:
    """Why an ID (object, shape keys, action) may not be edited: linked from a library or a
    non-editable override. None when it may."""
    label = f'Action "{id_data.name}"' if isinstance(id_data, bpy.types.Action) else f'"{id_data.name}"'
    if id_data.library is not None:
        return f'{label} is linked from library "{id_data.library.filepath}" and is read-only'
    if not getattr(id_data, "is_editable", True):
        return f"{label} is not editable (library override or linked data)"
    return None


# --------------------------------------------------------------------------------------------
# Keys as arrays
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CurveKeys:
    """All of a curve's keyframes as arrays (float64 copies of Blender's float32 data)."""

    co: np.ndarray  # (k, 2) frame, value
    handle_left: np.ndarray  # (k, 2)
    handle_right: np.ndarray  # (k, 2)
    handle_left_type: np.ndarray  # (k,) int enum values
    handle_right_type: np.ndarray  # (k,) int enum values
    interpolation: np.ndarray  # (k,) int enum values

    def __len__(self) -> int:
        return int(self.co.shape[0])


def _get2(kps, name: str, n: int) -> np.ndarray:
    buf = np.empty(2 * n, dtype=np.float32)
    kps.foreach_get(name, buf)
    return buf.reshape(n, 2).astype(np.float64)


def _get_int(kps, name: str, n: int) -> np.ndarray:
    buf = np.empty(n, dtype=np.int32)
    kps.foreach_get(name, buf)
    return buf


def read_keys(fc: bpy.types.FCurve) -> CurveKeys:
    kps = fc.keyframe_points
    n = len(kps)
    return CurveKeys(
        co=_get2(kps, "co", n),
        handle_left=_get2(kps, "handle_left", n),
        handle_right=_get2(kps, "handle_right", n),
        handle_left_type=_get_int(kps, "handle_left_type", n),
        handle_right_type=_get_int(kps, "handle_right_type", n),
        interpolation=_get_int(kps, "interpolation", n),
    )


def read_key_frames(fc: bpy.types.FCurve) -> np.ndarray:
    kps = fc.keyframe_points
    n = len(kps)
    return _get2(kps, "co", n)[:, 0] if n else np.empty(0)


def count_keys(fcurves: Iterable[bpy.types.FCurve]) -> int:
    return int(sum(len(fc.keyframe_points) for fc in fcurves))


def frame_grid(fcurves: Sequence[bpy.types.FCurve], *, integer_frames: bool = True) -> np.ndarray:
    """Union of the curves' key frames, plus every whole frame in between when ``integer_frames``."""
    parts = [read_key_frames(fc) for fc in fcurves]
    parts = [p for p in parts if p.size]
    if not parts:
        return np.empty(0)
    frames = np.unique(np.concatenate(parts))
    if integer_frames and frames.size:
        lo, hi = np.ceil(frames[0]), np.floor(frames[-1])
        if hi >= lo:
            frames = np.union1d(frames, np.arange(lo, hi + 1.0))
    # Merge frames closer than float32 resolution (keys are stored as float32).
    if frames.size > 1:
        keep = np.concatenate(([True], np.diff(frames) > 1e-4))
        frames = frames[keep]
    return frames


def sample_curves(fcurves: Sequence[bpy.types.FCurve], frames: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sample curves on a common frame grid: returns ``(frames (N,), values (N, M))``.

    A curve with a key on every grid frame (dense baked / mocap data) contributes its key values
    directly; any other curve is evaluated with ``FCurve.evaluate`` (so interpolation, handles and
    modifiers are honoured).
    """
    if frames is None:
        frames = frame_grid(fcurves)
    frames = np.asarray(frames, dtype=np.float64)
    values = np.empty((frames.size, len(fcurves)), dtype=np.float64)
    for j, fc in enumerate(fcurves):
        kps = fc.keyframe_points
        n = len(kps)
        if n == frames.size and n and not len(fc.modifiers):
            co = _get2(kps, "co", n)
            if np.allclose(co[:, 0], frames, atol=1e-4, rtol=0):
                values[:, j] = co[:, 1]
                continue
        ev = fc.evaluate
        values[:, j] = [ev(f) for f in frames.tolist()]
    return frames, values


# --------------------------------------------------------------------------------------------
# Channel specs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChannelSpec:
    data_path: str
    array_index: int
    kind: str  # LOCATION | EULER | QUATERNION | SCALE | SHAPE_KEY | OTHER
    owner_path: str  # data path of the struct owning the property ('' for the ID itself)
    rotation_mode: str | None = None  # rotation mode of the owner (object / pose bone) if it has one

    @property
    def label(self) -> str:
        return f"{self.data_path}[{self.array_index}]"


def _split_path(data_path: str) -> tuple[str, str]:
    """'pose.bones["a.b"].location' -> ('pose.bones["a.b"]', 'location')."""
    # Property names never contain '"' or ']', so the last '.' outside brackets/quotes splits.
    depth = 0
    in_quote = False
    split = -1
    i = 0
    while i < len(data_path):
        ch = data_path[i]
        if ch == "\\" and in_quote:
            i += 2
            continue
        if ch == '"':
            in_quote = not in_quote
        elif not in_quote:
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
            elif ch == "." and depth == 0:
                split = i
        i += 1
    if split < 0:
        return "", data_path
    return data_path[:split], data_path[split + 1 :]


def channel_spec(id_data: bpy.types.ID, fc: bpy.types.FCurve) -> ChannelSpec:
    path = fc.data_path
    owner_path, prop = _split_path(path)
    kind = _KIND_BY_PROPERTY.get(prop, OTHER)
    if isinstance(id_data, bpy.types.Key) and _SHAPE_KEY_VALUE.match(path):
        kind = SHAPE_KEY
    rotation_mode = None
    if kind in {EULER, QUATERNION}:
        owner: Any = id_data
        if owner_path:
            try:
                owner = id_data.path_resolve(owner_path)
            except (ValueError, AttributeError):
                owner = None
        rotation_mode = getattr(owner, "rotation_mode", None) if owner is not None else None
    return ChannelSpec(path, int(fc.array_index), kind, owner_path, rotation_mode)


def channel_specs(id_data: bpy.types.ID, fcurves: Sequence[bpy.types.FCurve]) -> list[ChannelSpec]:
    return [channel_spec(id_data, fc) for fc in fcurves]


# --------------------------------------------------------------------------------------------
# Writing keys
# --------------------------------------------------------------------------------------------


def _enum_values(struct, prop: str) -> dict[str, int]:
    return {e.identifier: e.value for e in struct.bl_rna.properties[prop].enum_items}


def handle_type_values() -> dict[str, int]:
    return _enum_values(bpy.types.Keyframe, "handle_left_type")


def interpolation_values() -> dict[str, int]:
    return _enum_values(bpy.types.Keyframe, "interpolation")


def _as_type_ints(types, n: int, table: dict[str, int]) -> np.ndarray:
    arr = np.asarray(types)
    if arr.dtype.kind in "iu":
        out = arr.astype(np.int32)
    else:
        out = np.array([table[str(t)] for t in arr.tolist()], dtype=np.int32)
    if out.shape != (n,):
        raise ValueError(f"expected {n} handle types, got shape {out.shape}")
    return out


def write_bezier(
    fc: bpy.types.FCurve,
    co: np.ndarray,
    handle_left: np.ndarray,
    handle_right: np.ndarray,
    handle_left_type,
    handle_right_type=None,
) -> None:
    """Replace all keys of ``fc`` with the given Bezier keys (interpolation BEZIER).

    Handle types must be FREE or ALIGNED (VECTOR for straight segments) so that ``fc.update()``
    keeps the exact handle positions; AUTO types would be recomputed by Blender.
    """
    co = np.ascontiguousarray(co, dtype=np.float64).reshape(-1, 2)
    n = co.shape[0]
    hl = np.ascontiguousarray(handle_left, dtype=np.float64).reshape(n, 2)
    hr = np.ascontiguousarray(handle_right, dtype=np.float64).reshape(n, 2)
    table = handle_type_values()
    lt = _as_type_ints(handle_left_type, n, table)
    rt = lt if handle_right_type is None else _as_type_ints(handle_right_type, n, table)
    kps = fc.keyframe_points
    kps.clear()
    if n == 0:
        fc.update()
        return
    kps.add(n)
    kps.foreach_set("co", co.astype(np.float32).ravel())
    kps.foreach_set("handle_left", hl.astype(np.float32).ravel())
    kps.foreach_set("handle_right", hr.astype(np.float32).ravel())
    kps.foreach_set("handle_left_type", lt)
    kps.foreach_set("handle_right_type", rt)
    kps.foreach_set("interpolation", np.full(n, interpolation_values()["BEZIER"], dtype=np.int32))
    kps.foreach_set("type", np.zeros(n, dtype=np.int32))  # KEYFRAME
    fc.update()


def write_constant(fc: bpy.types.FCurve, frame: float, value: float) -> None:
    """Replace all keys of ``fc`` with one key (a constant curve)."""
    co = np.array([[frame, value]])
    write_bezier(fc, co, co - [1.0, 0.0], co + [1.0, 0.0], ["FREE"])


def restore_keys(fc: bpy.types.FCurve, keys: CurveKeys) -> None:
    """Write back keys read with :func:`read_keys` (exactly, including handle types)."""
    kps = fc.keyframe_points
    kps.clear()
    n = len(keys)
    if n:
        kps.add(n)
        kps.foreach_set("co", keys.co.astype(np.float32).ravel())
        kps.foreach_set("handle_left", keys.handle_left.astype(np.float32).ravel())
        kps.foreach_set("handle_right", keys.handle_right.astype(np.float32).ravel())
        kps.foreach_set("handle_left_type", keys.handle_left_type)
        kps.foreach_set("handle_right_type", keys.handle_right_type)
        kps.foreach_set("interpolation", keys.interpolation)
    fc.update()


def find_fcurve(action: bpy.types.Action, slot, data_path: str, array_index: int) -> bpy.types.FCurve | None:
    for fc in action_fcurves(action, slot):
        if fc.data_path == data_path and fc.array_index == array_index:
            return fc
    return None


# --------------------------------------------------------------------------------------------
# Copying actions
# --------------------------------------------------------------------------------------------


def copy_action(action: bpy.types.Action, name: str | None = None) -> bpy.types.Action:
    """A full copy of ``action`` (all slots), named ``name`` (default "<name>.fit").

    The original gets a fake user so it survives saving once nothing uses it any more.
    """
    new: Any = action.copy()
    new.name = name if name is not None else f"{action.name}.fit"
    action.use_fake_user = True
    return new


def assign_action(id_data: Any, action: bpy.types.Action, slot_identifier: str | None = None) -> None:
    """Assign ``action`` to ``id_data``; on 4.4+ also the slot with ``slot_identifier``."""
    adt = id_data.animation_data
    if adt is None:
        adt = id_data.animation_data_create()
    adt.action = action
    if slot_identifier is not None and hasattr(adt, "action_slot"):
        slot = action.slots.get(slot_identifier)
        if slot is not None:
            adt.action_slot = slot


def slot_identifier(id_data: bpy.types.ID) -> str | None:
    slot = get_slot(id_data)
    return None if slot is None else slot.identifier


# --------------------------------------------------------------------------------------------
# Armature joints in world space
# --------------------------------------------------------------------------------------------


def bone_heads_world(scene: bpy.types.Scene, ob: bpy.types.Object, frames: Sequence[float]) -> np.ndarray:
    """World-space head positions of every pose bone at ``frames``: (len(frames), n_bones, 3).

    Sets the scene frame for each sample (fractional frames as subframes) and restores the current
    frame afterwards.
    """
    if ob.type != "ARMATURE" or ob.pose is None:
        return np.empty((len(frames), 0, 3))
    frame0, sub0 = scene.frame_current, scene.frame_subframe
    n_bones = len(ob.pose.bones)
    out = np.empty((len(frames), n_bones, 3), dtype=np.float64)
    heads = np.empty(3 * n_bones, dtype=np.float32)
    try:
        for i, f in enumerate(frames):
            whole = math.floor(f)
            scene.frame_set(int(whole), subframe=float(f) - whole)
            depsgraph = bpy.context.evaluated_depsgraph_get()
            ob_eval: Any = ob.evaluated_get(depsgraph)
            ob_eval.pose.bones.foreach_get("head", heads)
            mw = np.array(ob_eval.matrix_world, dtype=np.float64)
            h = heads.reshape(n_bones, 3).astype(np.float64)
            out[i] = h @ mw[:3, :3].T + mw[:3, 3]
    finally:
        scene.frame_set(frame0, subframe=sub0)
    return out


# --------------------------------------------------------------------------------------------
# Actions that are not (necessarily) assigned: loop / blend / compare
# --------------------------------------------------------------------------------------------


def action_slot_for(action: bpy.types.Action, id_data: Any = None):
    """The slot of ``action`` to read: the one ``id_data`` is animated by when it uses this action,
    else the first slot that has F-curves (else the first slot). None on legacy actions (4.2/4.3)."""
    if not has_slots() or not hasattr(action, "slots"):
        return None
    if id_data is not None and get_action(id_data) == action:
        slot = get_slot(id_data)
        if slot is not None:
            return slot
    first = None
    for slot in action.slots:
        if first is None:
            first = slot
        cb = _channelbag(action, slot)
        if cb is not None and len(cb.fcurves):
            return slot
    return first


def fcurves_of_action(action: bpy.types.Action | None, id_data: Any = None) -> list[bpy.types.FCurve]:
    """An action's F-curves without assigning it (legacy: all; slotted: see :func:`action_slot_for`)."""
    if action is None:
        return []
    if has_slots() and hasattr(action, "slots") and not getattr(action, "is_action_legacy", False):
        slot = action_slot_for(action, id_data)
        return action_fcurves(action, slot) if slot is not None else []
    return action_fcurves(action, None)


def action_slot_identifier(action: bpy.types.Action, id_data: Any = None) -> str | None:
    slot = action_slot_for(action, id_data)
    return None if slot is None else slot.identifier


def objects_using_action(action: bpy.types.Action) -> list[bpy.types.Object]:
    """Objects whose own animation data (not NLA) uses ``action``."""
    return [ob for ob in bpy.data.objects if get_action(ob) == action]


def action_frame_range(action: bpy.types.Action, fcurves: Sequence[bpy.types.FCurve] | None = None) -> tuple[int, int]:
    """The action's frame range (manual range when set) rounded to whole frames. With ``fcurves``
    and no manual range: the key range of those curves."""
    if fcurves and not action.use_frame_range:
        frames = [read_key_frames(fc) for fc in fcurves]
        frames = [f for f in frames if f.size]
        if frames:
            lo = min(float(f.min()) for f in frames)
            hi = max(float(f.max()) for f in frames)
            return int(round(lo)), int(round(hi))
    rng: Any = action.frame_range
    return int(round(rng[0])), int(round(rng[1]))


def set_action_frame_range(action: bpy.types.Action, start: float, end: float, *, cyclic: bool) -> None:
    """Give ``action`` a manual frame range (used by the NLA and the Action editor) and the cyclic flag."""
    action.use_frame_range = True
    # frame_end is clamped to >= frame_start: set in an order that never inverts the range.
    if start > action.frame_end:
        action.frame_end = end
        action.frame_start = start
    else:
        action.frame_start = start
        action.frame_end = end
    action.use_cyclic = cyclic


def duplicate_action(action: bpy.types.Action, name: str) -> bpy.types.Action:
    """A copy of ``action`` named ``name`` (unlike :func:`copy_action`, the original is left alone)."""
    new: Any = action.copy()
    new.name = name
    return new


def remove_fcurve(action: bpy.types.Action, slot, fc: bpy.types.FCurve) -> None:
    """Delete ``fc`` from ``action`` (from the slot's channelbag on 4.4+)."""
    if slot is not None and hasattr(action, "layers"):
        cb = _channelbag(action, slot)
        if cb is not None:
            cb.fcurves.remove(fc)
            return
    legacy = getattr(action, "fcurves", None)
    if legacy is not None:
        legacy.remove(fc)


def has_cycles(fc: bpy.types.FCurve) -> bool:
    return any(m.type == "CYCLES" for m in fc.modifiers)


def modifier_types(fc: bpy.types.FCurve) -> set[str]:
    return {m.type for m in fc.modifiers}


def clear_modifiers(fc: bpy.types.FCurve) -> None:
    for m in list(fc.modifiers):
        fc.modifiers.remove(m)


def add_cycles(fc: bpy.types.FCurve, mode: str = "REPEAT_OFFSET") -> None:
    """One Cycles modifier (before and after the keys) replacing any existing one. REPEAT_OFFSET
    adds the curve's last-minus-first value per cycle (locomotion keeps moving), and equals REPEAT on
    curves whose last key has the first key's value."""
    for m in list(fc.modifiers):
        if m.type == "CYCLES":
            fc.modifiers.remove(m)
    mod: Any = fc.modifiers.new("CYCLES")
    mod.mode_before = mode
    mod.mode_after = mode
    fc.update()


def write_dense(fc: bpy.types.FCurve, frames: np.ndarray, values: np.ndarray, *, linear: bool = False) -> None:
    """Replace the keys of ``fc`` with one key per frame: the curve passes through every value.

    Bezier keys with auto-clamped handles by default (Blender computes them cycle-aware when the
    curve has a Cycles modifier); ``linear`` writes LINEAR keys (a bake: the curve stays between
    neighbouring values).
    """
    frames = np.asarray(frames, dtype=np.float64).ravel()
    values = np.asarray(values, dtype=np.float64).ravel()
    if frames.shape != values.shape:
        raise ValueError(f"{frames.size} frames but {values.size} values")
    n = frames.size
    kps = fc.keyframe_points
    kps.clear()
    if n:
        co = np.column_stack([frames, values]).astype(np.float32).ravel()
        kps.add(n)
        kps.foreach_set("co", co)
        kps.foreach_set("handle_left", co)
        kps.foreach_set("handle_right", co)
        handle = handle_type_values()["VECTOR" if linear else "AUTO_CLAMPED"]
        kps.foreach_set("handle_left_type", np.full(n, handle, dtype=np.int32))
        kps.foreach_set("handle_right_type", np.full(n, handle, dtype=np.int32))
        interp = interpolation_values()["LINEAR" if linear else "BEZIER"]
        kps.foreach_set("interpolation", np.full(n, interp, dtype=np.int32))
        kps.foreach_set("type", np.zeros(n, dtype=np.int32))  # KEYFRAME
    fc.update()  # sorts and computes the auto handles


def channel_specs_of_action(fcurves: Sequence[bpy.types.FCurve], id_data: Any = None) -> list[ChannelSpec]:
    """Channel specs of an action's curves; without an ID to resolve owners the kind comes from the
    property name alone (rotation modes unknown)."""
    if id_data is not None:
        return channel_specs(id_data, fcurves)
    out = []
    for fc in fcurves:
        owner_path, prop = _split_path(fc.data_path)
        kind = SHAPE_KEY if _SHAPE_KEY_VALUE.match(fc.data_path) else _KIND_BY_PROPERTY.get(prop, OTHER)
        out.append(ChannelSpec(fc.data_path, int(fc.array_index), kind, owner_path, None))
    return out


def id_has_paths(id_data: Any, data_paths: Iterable[str]) -> bool:
    """True when every data path resolves on ``id_data`` (an action with those curves can drive it)."""
    for path in set(data_paths):
        try:
            id_data.path_resolve(path)
        except (ValueError, AttributeError, TypeError):
            return False
    return True


_BONE_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]')


def bone_name_of_path(data_path: str) -> str | None:
    """'pose.bones["Hips"].location' -> 'Hips' (None for non-bone paths)."""
    m = _BONE_PATH.match(data_path)
    return m.group(1).replace('\\"', '"').replace("\\\\", "\\") if m else None


def travel_channels(id_data: Any, specs: Sequence[ChannelSpec], *, max_vertical: float = 0.5) -> list[int]:
    """Indices (into ``specs``) of the root's horizontal location channels, which a loop keeps as
    velocity (the character travels on from cycle to cycle).

    Objects: ``location`` channels whose axis (in the space location applies in: parent and parent
    inverse) is mostly horizontal in world space. Armatures: also the ``location`` channels of
    root bones (no parent), axes from ``bone.matrix_local`` and ``ob.matrix_world``. "Mostly
    horizontal": the world axis' vertical component is below ``max_vertical`` (30 degrees).
    """
    if not isinstance(id_data, bpy.types.Object):
        return []
    out: list[int] = []
    mw = np.array(id_data.matrix_world, dtype=np.float64)[:3, :3]
    try:
        basis_inv = np.linalg.inv(np.array(id_data.matrix_basis, dtype=np.float64))
        space = (np.array(id_data.matrix_world, dtype=np.float64) @ basis_inv)[:3, :3]
    except np.linalg.LinAlgError:
        space = np.eye(3)
    bones = getattr(getattr(id_data, "data", None), "bones", None) if id_data.type == "ARMATURE" else None
    for j, spec in enumerate(specs):
        if spec.kind != LOCATION or not spec.data_path.endswith("location") or spec.data_path.endswith("delta_location"):
            continue
        if not (0 <= spec.array_index < 3):
            continue
        if spec.owner_path == "":
            axis = space[:, spec.array_index]
        else:
            name = bone_name_of_path(spec.data_path)
            if name is None or bones is None:
                continue
            bone = bones.get(name)
            if bone is None or bone.parent is not None:
                continue
            ml = np.array(bone.matrix_local, dtype=np.float64)[:3, :3]
            axis = mw @ ml[:, spec.array_index]
        norm = float(np.linalg.norm(axis))
        if norm > 0.0 and abs(axis[2]) / norm < max_vertical:
            out.append(j)
    return out


def figure_height(ob: bpy.types.Object) -> float:
    """An armature's size in its own units: the largest extent of its rest-pose bones (0 if none).

    Pose-bone locations are in these units (BVH imports keep the file's: cm or inches), so the
    tools scale root location by it to weigh travel against rotations in radians.
    """
    bones = getattr(getattr(ob, "data", None), "bones", None) if ob.type == "ARMATURE" else None
    if not bones:
        return 0.0
    n = len(bones)
    heads = np.empty(3 * n, dtype=np.float32)
    tails = np.empty(3 * n, dtype=np.float32)
    bones.foreach_get("head_local", heads)
    bones.foreach_get("tail_local", tails)
    pts = np.concatenate([heads.reshape(n, 3), tails.reshape(n, 3)]).astype(np.float64)
    return float(np.ptp(pts, axis=0).max())


def bone_hierarchy(ob: bpy.types.Object) -> tuple[list[str], list[int]]:
    """Pose bone names (in ``ob.pose.bones`` order, the order of :func:`bone_heads_world`) and the
    index of each bone's parent (-1 for roots)."""
    if ob.type != "ARMATURE" or ob.pose is None:
        return [], []
    names = [pb.name for pb in ob.pose.bones]
    index = {n: i for i, n in enumerate(names)}
    parents = [index[pb.parent.name] if pb.parent is not None else -1 for pb in ob.pose.bones]
    return names, parents


def bone_heads_with_action(
    scene: bpy.types.Scene, ob: bpy.types.Object, action: bpy.types.Action, frames: Sequence[float]
) -> np.ndarray:
    """:func:`bone_heads_world` with ``action`` temporarily assigned to ``ob`` (action, slot and
    animation data restored afterwards)."""
    had_adt = ob.animation_data is not None
    old_action = get_action(ob)
    old_slot = slot_identifier(ob) if had_adt else None
    try:
        assign_action(ob, action, action_slot_identifier(action, ob if old_action == action else None))
        adt: Any = ob.animation_data
        if has_slots() and adt.action_slot is None:
            # Slot of another ID type or no slot assignable: take the first one.
            slot = action_slot_for(action)
            if slot is not None:
                adt.action_slot = slot
        return bone_heads_world(scene, ob, frames)
    finally:
        adt = ob.animation_data
        if not had_adt:
            ob.animation_data_clear()
        elif adt is not None:
            adt.action = old_action
            if old_action is not None and old_slot is not None and has_slots():
                slot = old_action.slots.get(old_slot)
                if slot is not None:
                    adt.action_slot = slot


# --------------------------------------------------------------------------------------------
# Images
# --------------------------------------------------------------------------------------------


def write_image(name: str, rgba: np.ndarray) -> bpy.types.Image:
    """An Image datablock ``name`` holding ``rgba`` ((H, W, 4) floats, row 0 = top), reused (and
    resized) when a local one exists, packed so it is saved with the .blend."""
    rgba = np.asarray(rgba, dtype=np.float32)
    if rgba.ndim != 3 or rgba.shape[2] != 4:
        raise ValueError(f"expected an (H, W, 4) image, got {rgba.shape}")
    h, w = int(rgba.shape[0]), int(rgba.shape[1])
    img = bpy.data.images.get(name)
    if img is not None and img.library is not None:
        img = None
    if img is None:
        img = bpy.data.images.new(name, w, h, alpha=True)
    elif tuple(img.size) != (w, h):
        img.scale(w, h)
    pixels: Any = img.pixels
    pixels.foreach_set(np.ascontiguousarray(rgba[::-1]).ravel())  # Blender's row 0 is the bottom
    img.update()
    try:
        img.pack()
    except RuntimeError:  # pragma: no cover - packing is a convenience (survives saving)
        pass
    return img


# --------------------------------------------------------------------------------------------
# Pose space (issue 4): frame sequences as matrices Z (frames, values), shape keys, pose bones
# --------------------------------------------------------------------------------------------

# Pose-bone properties a pose vector is made of (one channel per array component).
POSE_PROPERTIES = ("location", "rotation_euler", "rotation_quaternion", "scale")
_POSE_PROPERTY_SIZE = {"location": 3, "rotation_euler": 3, "rotation_quaternion": 4, "scale": 3}
CACHE_MODIFIERS = ("MESH_CACHE", "MESH_SEQUENCE_CACHE")


class TopologyChangeError(ValueError):
    """The evaluated mesh has another vertex (or face) count at ``frame`` than at ``first_frame``."""

    def __init__(self, frame: float, count: int, first_frame: float, first_count: int, what: str = "vertices"):
        self.frame, self.count, self.first_frame, self.first_count = frame, count, first_frame, first_count
        super().__init__(
            f"the mesh topology changes over time: frame {frame:g} has {count} {what}, "
            f"frame {first_frame:g} has {first_count}"
        )


def pose_bone_fcurves(ob: bpy.types.Object) -> tuple[list[bpy.types.FCurve], list[ChannelSpec], int]:
    """The armature's animated pose-bone channels (location, Euler / quaternion rotation, scale of
    bones that exist), in the action's order: ``(fcurves, specs, skipped)``; ``skipped`` counts the
    other curves of the action (object transforms, axis-angle, custom properties, missing bones),
    which a pose vector leaves out."""
    fcurves = id_fcurves(ob)
    bones = ob.pose.bones if ob.type == "ARMATURE" and ob.pose is not None else None
    used, skipped = [], 0
    for fc in fcurves:
        name = bone_name_of_path(fc.data_path)
        _, prop = _split_path(fc.data_path)
        size = _POSE_PROPERTY_SIZE.get(prop)
        if bones is None or name is None or bones.get(name) is None or size is None or not 0 <= fc.array_index < size:
            skipped += 1
            continue
        if fc.data_path != f'pose.bones["{_escape(name)}"].{prop}':  # e.g. a nested path on a constraint
            skipped += 1
            continue
        used.append(fc)
    return used, channel_specs(ob, used), skipped


def _escape(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', '\\"')


def read_action_matrix(
    ob: bpy.types.Object, frames: Sequence[float] | np.ndarray, fcurves: Sequence[bpy.types.FCurve] | None = None
) -> tuple[np.ndarray, list[ChannelSpec]]:
    """An armature action as a frame matrix: the pose vector of all bones per frame.

    Every animated pose-bone channel (:func:`pose_bone_fcurves`, or ``fcurves``) is sampled at
    ``frames`` with ``FCurve.evaluate`` (keys on every frame are read directly), then made
    continuous the way the other tools do (``motion.to_motion_curve``): Euler triples lose 2 pi
    wraps and gimbal flips (rotation order known), quaternion tracks are sign-continuous.
    Returns ``Z (len(frames), channels)`` (one value per row: row size 1) and the channel specs.
    """
    from ..anim_signals import motion

    if fcurves is None:
        fcurves, specs, _ = pose_bone_fcurves(ob)
    else:
        specs = channel_specs(ob, fcurves)
    _, values = sample_curves(list(fcurves), np.asarray(frames, dtype=np.float64))
    z = motion.to_motion_curve(
        values, [s.kind for s in specs], [s.owner_path for s in specs], [s.rotation_mode for s in specs],
        [s.array_index for s in specs],
    )
    return z, specs


class PoseWriter:
    """Writes pose vectors (channel values in the order of ``specs``) into an armature's pose bones
    with one ``foreach_get`` / ``foreach_set`` per bone property (location, rotation_euler,
    rotation_quaternion, scale): no per-bone Python loop, so it keeps up with dragging."""

    def __init__(self, ob: Any, data_paths: Sequence[str], indices: Sequence[int]):
        names = [pb.name for pb in ob.pose.bones]
        bone_index = {n: i for i, n in enumerate(names)}
        self.n_bones = len(names)
        groups: dict[str, tuple[list[int], list[int]]] = {}
        for col, (path, index) in enumerate(zip(data_paths, indices, strict=True)):
            name = bone_name_of_path(path)
            _, prop = _split_path(path)
            size = _POSE_PROPERTY_SIZE.get(prop)
            if name is None or name not in bone_index or size is None:
                raise ValueError(f"{path}[{index}] is not a pose-bone channel of {ob.name!r}")
            flat, cols = groups.setdefault(prop, ([], []))
            flat.append(bone_index[name] * size + int(index))
            cols.append(col)
        self.groups = {p: (np.array(f, dtype=np.int64), np.array(c, dtype=np.int64)) for p, (f, c) in groups.items()}
        self.buffers = {p: np.empty(self.n_bones * _POSE_PROPERTY_SIZE[p], dtype=np.float32) for p in groups}

    def write(self, ob: Any, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        bones = ob.pose.bones
        for prop, (flat, cols) in self.groups.items():
            buf = self.buffers[prop]
            bones.foreach_get(prop, buf)
            buf[flat] = values[cols]
            bones.foreach_set(prop, buf)
        ob.update_tag()


def shape_key_fcurves(key: bpy.types.Key) -> dict[str, bpy.types.FCurve]:
    """Shape-key name -> the F-curve animating its value (through the Key's action)."""
    out: dict[str, bpy.types.FCurve] = {}
    for fc in id_fcurves(key):
        if _SHAPE_KEY_VALUE.match(fc.data_path):
            name = fc.data_path[len('key_blocks["'): -len('"].value')].replace('\\"', '"').replace("\\\\", "\\")
            out[name] = fc
    return out


def shape_keys_animated(ob: bpy.types.Object) -> bool:
    """The object's mesh has shape keys whose values are animated (action curves or drivers)."""
    key = getattr(getattr(ob, "data", None), "shape_keys", None)
    if key is None or len(key.key_blocks) < 2:
        return False
    if shape_key_fcurves(key):
        return True
    adt = key.animation_data
    return bool(adt is not None and any(_SHAPE_KEY_VALUE.match(d.data_path) for d in adt.drivers))


def _vertex_group_weights(ob: bpy.types.Object, name: str, n_vertices: int) -> np.ndarray:
    weights = np.zeros(n_vertices)
    vg = ob.vertex_groups.get(name)
    if vg is None:
        return np.ones(n_vertices)  # Blender ignores a missing group
    gi = vg.index
    for v in ob.data.vertices:  # one pass, only when a key uses a vertex group
        for g in v.groups:
            if g.group == gi:
                weights[v.index] = g.weight
    return weights


def read_key_block_coords(key: bpy.types.Key, names: Sequence[str] | None = None) -> np.ndarray:
    """Coordinates of shape keys (all, or the named ones in that order): (keys, vertices, 3) float64."""
    blocks = key.key_blocks
    chosen = list(blocks) if names is None else [blocks[n] for n in names]
    if not chosen:
        return np.empty((0, 0, 3))
    n_vert = len(chosen[0].data)
    buf = np.empty(3 * n_vert, dtype=np.float32)
    out = np.empty((len(chosen), n_vert, 3))
    for i, kb in enumerate(chosen):
        kb.data.foreach_get("co", buf)
        out[i] = buf.reshape(n_vert, 3)
    return out


def read_shape_key_matrix(
    scene: bpy.types.Scene, ob: bpy.types.Object, frames: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Shape-key animation as a frame matrix: the vertex positions blended from the key blocks per
    frame, before modifiers: Z (frames, 3 V) with rows x0 y0 z0 x1 ... (row size 3).

    Relative keys as Blender blends them: reference + sum of value x (key - its relative key), values
    clamped to each key's slider range, muted keys skipped, vertex-group weights applied. Values
    come from the Key's F-curves; when any value is driven (or the Key has NLA tracks) they are the
    depsgraph's evaluated values, frame by frame. Absolute keys raise ValueError.
    """
    key = getattr(ob.data, "shape_keys", None)
    if key is None or len(key.key_blocks) < 2:
        raise ValueError(f'"{ob.name}" has no shape keys to blend')
    if not key.use_relative:
        raise ValueError(f'"{ob.name}" uses absolute shape keys (evaluation time): use the Mesh source instead')
    blocks = list(key.key_blocks)
    names = [kb.name for kb in blocks]
    coords = read_key_block_coords(key)  # (K, V, 3)
    n_vert = coords.shape[1]
    frames_arr = np.asarray(frames, dtype=np.float64)
    values = _key_values(scene, ob, key, frames_arr)  # (n, K)
    ref = key.reference_key.name
    base = coords[names.index(ref)]
    z = np.repeat(base.reshape(1, -1), frames_arr.size, axis=0)
    for j, kb in enumerate(blocks):
        if kb.name == ref or kb.mute:
            continue
        rel = kb.relative_key.name if kb.relative_key is not None else ref
        delta = coords[j] - coords[names.index(rel)]
        if kb.vertex_group:
            delta = delta * _vertex_group_weights(ob, kb.vertex_group, n_vert)[:, None]
        w = np.clip(values[:, j], kb.slider_min, kb.slider_max)
        if np.any(w != 0.0):
            z += w[:, None] * delta.reshape(1, -1)
    return z


def _key_values(scene: bpy.types.Scene, ob: bpy.types.Object, key: bpy.types.Key, frames: np.ndarray) -> np.ndarray:
    blocks = list(key.key_blocks)
    adt = key.animation_data
    driven = adt is not None and (
        any(_SHAPE_KEY_VALUE.match(d.data_path) for d in adt.drivers) or len(adt.nla_tracks) > 0
    )
    out = np.empty((frames.size, len(blocks)))
    if not driven:
        curves = shape_key_fcurves(key)
        for j, kb in enumerate(blocks):
            fc = curves.get(kb.name)
            if fc is None:
                out[:, j] = kb.value
            else:
                out[:, j] = sample_curves([fc], frames)[1][:, 0]
        return out
    frame0, sub0 = scene.frame_current, scene.frame_subframe
    buf = np.empty(len(blocks), dtype=np.float32)
    try:
        for i, f in enumerate(frames.tolist()):
            whole = math.floor(f)
            scene.frame_set(int(whole), subframe=float(f) - whole)
            depsgraph = bpy.context.evaluated_depsgraph_get()
            key_eval: Any = key.evaluated_get(depsgraph)
            key_eval.key_blocks.foreach_get("value", buf)
            out[i] = buf
    finally:
        scene.frame_set(frame0, subframe=sub0)
    return out


def mesh_sequence_rows(scene: bpy.types.Scene, ob: bpy.types.Object, frames: Sequence[float] | np.ndarray):
    """The evaluated mesh's vertex positions (object space, after every modifier) frame by frame:
    a generator yielding one row (3 V,) float64 per frame, so a modal operator can step it.

    Sets the scene frame for each sample (fractional frames as subframes) in increasing order (so
    simulations such as cloth advance) and restores the current frame when done or closed. Raises
    :class:`TopologyChangeError` naming the first frame whose vertex or face count differs.
    """
    frame0, sub0 = scene.frame_current, scene.frame_subframe
    first: tuple[float, int, int] | None = None
    buf: np.ndarray | None = None
    try:
        for f in [float(x) for x in frames]:
            whole = math.floor(f)
            scene.frame_set(int(whole), subframe=f - whole)
            depsgraph = bpy.context.evaluated_depsgraph_get()
            ob_eval: Any = ob.evaluated_get(depsgraph)
            me: Any = ob_eval.to_mesh() if ob_eval.type != "MESH" else ob_eval.data
            try:
                n_vert, n_face = len(me.vertices), len(me.polygons)
                if first is None:
                    first = (f, n_vert, n_face)
                    buf = np.empty(3 * n_vert, dtype=np.float32)
                elif n_vert != first[1]:
                    raise TopologyChangeError(f, n_vert, first[0], first[1])
                elif n_face != first[2]:
                    raise TopologyChangeError(f, n_face, first[0], first[2], "faces")
                assert buf is not None
                me.vertices.foreach_get("co", buf)
            finally:
                if ob_eval.type != "MESH":
                    ob_eval.to_mesh_clear()
            yield buf.astype(np.float64)
    finally:
        scene.frame_set(frame0, subframe=sub0)


def read_mesh_sequence(scene: bpy.types.Scene, ob: bpy.types.Object, frames: Sequence[float] | np.ndarray) -> np.ndarray:
    """Any mesh whose evaluated geometry changes per frame (Mesh Cache PC2 / MDD, Mesh Sequence
    Cache / Alembic, cloth, soft body, modifiers) as a frame matrix Z (frames, 3 V), row size 3.
    See :func:`mesh_sequence_rows`."""
    return np.array(list(mesh_sequence_rows(scene, ob, frames)))


def _cache_file_samples(path: str, fmt: str) -> int | None:
    """Number of samples in a PC2 or MDD point-cache file (None when unreadable)."""
    import struct

    try:
        with open(bpy.path.abspath(path), "rb") as fh:
            head = fh.read(32)
    except OSError:
        return None
    try:
        if fmt == "PC2" and head[:11] == b"POINTCACHE2":
            # signature[12], version, points, start frame (f32), sample rate (f32), samples
            samples = int(struct.unpack("<i", head[28:32])[0])
        elif fmt == "MDD":
            samples = int(struct.unpack(">i", head[0:4])[0])  # frames, points (big-endian)
        else:
            return None
    except struct.error:
        return None
    return samples if 0 < samples < 10_000_000 else None


def mesh_cache_frame_range(ob: bpy.types.Object) -> tuple[int, int] | None:
    """Scene frames covered by the object's first Mesh Cache modifier (PC2 / MDD read from the file
    header; time mode Frame, play mode Scene), or None (no such modifier, or another timing)."""
    for mod in getattr(ob, "modifiers", []):
        if mod.type != "MESH_CACHE" or not mod.show_viewport:
            continue
        if mod.time_mode != "FRAME" or mod.play_mode != "SCENE":
            return None
        samples = _cache_file_samples(mod.filepath, mod.cache_format)
        if not samples or mod.frame_scale <= 0.0:
            return None
        lo = math.ceil(mod.frame_start - 1e-6)
        hi = math.floor(mod.frame_start + (samples - 1) / mod.frame_scale + 1e-6)
        return (int(lo), int(hi)) if hi >= lo else None
    return None


def evaluated_mesh_copy(scene: bpy.types.Scene, ob: bpy.types.Object, frame: float, name: str) -> bpy.types.Mesh:
    """A new mesh datablock holding the object's evaluated geometry (every modifier applied) at
    ``frame``; the scene frame is restored."""
    frame0, sub0 = scene.frame_current, scene.frame_subframe
    try:
        whole = math.floor(frame)
        scene.frame_set(int(whole), subframe=float(frame) - whole)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        ob_eval: Any = ob.evaluated_get(depsgraph)
        mesh: Any = bpy.data.meshes.new_from_object(ob_eval, preserve_all_data_layers=True, depsgraph=depsgraph)
    finally:
        scene.frame_set(frame0, subframe=sub0)
    mesh.name = name
    if mesh.shape_keys is not None:  # pragma: no cover - new_from_object drops keys
        pass
    return mesh


def write_shape_key_basis(ob: bpy.types.Object, basis: np.ndarray, keys: Sequence[tuple[str, np.ndarray]], *,
                          slider_min: float = -10.0, slider_max: float = 10.0) -> None:
    """Replace the mesh's shape keys: vertex positions and a "Basis" key = ``basis`` (V, 3), then one
    relative key per ``(name, coords (V, 3))`` with value 0 and the given slider range."""
    mesh: Any = ob.data
    n_vert = len(mesh.vertices)
    basis = np.ascontiguousarray(basis, dtype=np.float64).reshape(n_vert, 3)
    if mesh.shape_keys is not None:
        ob.shape_key_clear()
    mesh.vertices.foreach_set("co", basis.astype(np.float32).ravel())
    mesh.update()
    ob.shape_key_add(name="Basis", from_mix=False)
    for name, coords in keys:
        kb = ob.shape_key_add(name=name, from_mix=False)
        kb.data.foreach_set("co", np.ascontiguousarray(coords, dtype=np.float32).reshape(-1))
        kb.slider_min = slider_min
        kb.slider_max = slider_max
        kb.value = 0.0
    key = mesh.shape_keys
    key.use_relative = True
    mesh.update()


def set_key_values(key: bpy.types.Key, indices: np.ndarray, values: np.ndarray, buffer: np.ndarray | None = None) -> None:
    """Set the values of the key blocks at ``indices`` (others unchanged) with one foreach_get /
    foreach_set, and tag the Key for re-evaluation. ``buffer``: a float32 array of len(key_blocks)
    to reuse."""
    blocks = key.key_blocks
    buf = buffer if buffer is not None else np.empty(len(blocks), dtype=np.float32)
    blocks.foreach_get("value", buf)
    buf[indices] = values
    blocks.foreach_set("value", buf)
    key.update_tag()


def new_action(id_data: Any, name: str, *, keep_previous: bool = True) -> bpy.types.Action:
    """A new, empty action named ``name`` assigned to ``id_data`` (on 4.4+ with a new slot for it,
    one layer and one keyframe strip). With ``keep_previous`` the action previously assigned gets a
    fake user when this takes its last user, so it survives saving."""
    old = get_action(id_data)
    if keep_previous and old is not None and old.library is None and old.users <= 1:
        old.use_fake_user = True
    action: Any = bpy.data.actions.new(name)
    adt = id_data.animation_data or id_data.animation_data_create()
    adt.action = action
    if has_slots() and hasattr(action, "slots"):
        id_type = "KEY" if isinstance(id_data, bpy.types.Key) else "OBJECT"
        slot = action.slots.new(id_type=id_type, name=id_data.name)
        layer = action.layers.new("Layer")
        strip = layer.strips.new(type="KEYFRAME")
        strip.channelbag(slot, ensure=True)
        adt.action_slot = slot
    return action


def new_fcurve(id_data: Any, action: bpy.types.Action, data_path: str, index: int = 0,
               group: str | None = None) -> bpy.types.FCurve:
    """A new F-curve in ``action`` for the slot ``id_data`` is animated by (legacy: the action)."""
    slot = get_slot(id_data)
    if slot is not None and hasattr(action, "layers"):
        cb: Any = _channelbag(action, slot)
        if cb is None:
            cb = action.layers[0].strips[0].channelbag(slot, ensure=True)  # type: ignore[attr-defined]
        fc = cb.fcurves.new(data_path, index=index)
        if group:
            grp = cb.groups.get(group) or cb.groups.new(group)
            fc.group = grp
        return fc
    legacy: Any = action.fcurves  # type: ignore[attr-defined]
    return legacy.new(data_path, index=index, action_group=group or "")


def write_dense_linear(fc: bpy.types.FCurve, frames: np.ndarray, values: np.ndarray) -> None:
    """:func:`write_dense` with LINEAR keys (bakes)."""
    write_dense(fc, frames, values, linear=True)


# --------------------------------------------------------------------------------------------
# Motion database (issue 5): named channels of actions, shape-key faces, live duplicates
# --------------------------------------------------------------------------------------------

DB_SHAPE_KEYS = "SHAPE_KEYS"
DB_ARMATURE = "ARMATURE"


def shape_key_name_of_path(data_path: str) -> str | None:
    """'key_blocks["JawOpen"].value' -> 'JawOpen' (None for other paths)."""
    if not _SHAPE_KEY_VALUE.match(data_path):
        return None
    return data_path[len('key_blocks["'): -len('"].value')].replace('\\"', '"').replace("\\\\", "\\")


def shape_key_value_path(name: str) -> str:
    return f'key_blocks["{_escape(name)}"].value'


def pose_channel_name(data_path: str, index: int) -> str:
    return f"{data_path}[{int(index)}]"


_POSE_CHANNEL = re.compile(r"^(.*)\[(\d+)\]$")


def parse_pose_channel(name: str) -> tuple[str, int]:
    """'pose.bones["Hips"].rotation_euler[2]' -> ('pose.bones["Hips"].rotation_euler', 2)."""
    m = _POSE_CHANNEL.match(name)
    if m is None:
        raise ValueError(f"not a pose channel name: {name!r}")
    return m.group(1), int(m.group(2))


def action_kind(action: bpy.types.Action) -> str | None:
    """DB_SHAPE_KEYS when the action animates shape-key values, DB_ARMATURE when it animates
    pose-bone rotations (else None). Slotted actions: by the curves of the slot read."""
    fcs = fcurves_of_action(action)
    if any(_SHAPE_KEY_VALUE.match(fc.data_path) for fc in fcs):
        return DB_SHAPE_KEYS
    if any(bone_name_of_path(fc.data_path) is not None and _split_path(fc.data_path)[1] in ("rotation_euler", "rotation_quaternion")
           for fc in fcs):
        return DB_ARMATURE
    return None


def named_channel_curves(action: bpy.types.Action, kind: str, id_data: Any = None) -> dict[str, bpy.types.FCurve]:
    """Channel name -> F-curve of ``action``: shape-key names (DB_SHAPE_KEYS) or pose-bone rotation
    channels 'pose.bones["B"].rotation_euler[0]' (DB_ARMATURE; locations and scales are left out:
    other units). Curves with no keys are skipped."""
    out: dict[str, bpy.types.FCurve] = {}
    for fc in fcurves_of_action(action, id_data):
        if not len(fc.keyframe_points):
            continue
        if kind == DB_SHAPE_KEYS:
            name = shape_key_name_of_path(fc.data_path)
            if name is not None:
                out[name] = fc
        else:
            if bone_name_of_path(fc.data_path) is None:
                continue
            if _split_path(fc.data_path)[1] in ("rotation_euler", "rotation_quaternion"):
                out[pose_channel_name(fc.data_path, fc.array_index)] = fc
    return out


def read_named_channels(action: bpy.types.Action, kind: str, names: Sequence[str] | None = None,
                        id_data: Any = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The action's channels sampled on every whole frame of its range:
    ``(frames (n,), values (n, d), names)``; ``names`` picks and orders them (those the action lacks
    are left out of the returned names)."""
    curves = named_channel_curves(action, kind, id_data)
    chosen = list(curves) if names is None else [n for n in names if n in curves]
    if not chosen:
        return np.empty(0), np.empty((0, 0)), []
    fcs = [curves[n] for n in chosen]
    lo, hi = action_frame_range(action, fcs)
    frames = np.arange(lo, hi + 1, dtype=np.float64)
    _, values = sample_curves(fcs, frames)
    return frames, values, chosen


def evaluate_named_channels(curves: Sequence[bpy.types.FCurve], frame: float) -> np.ndarray:
    """One frame of the given curves (``FCurve.evaluate``): (len(curves),)."""
    return np.array([fc.evaluate(frame) for fc in curves], dtype=np.float64)


def write_named_channels(id_data: Any, action_name: str, kind: str, frames: np.ndarray, values: np.ndarray,
                         names: Sequence[str]) -> bpy.types.Action:
    """A new action ``action_name`` assigned to ``id_data`` (the Key for DB_SHAPE_KEYS, the armature
    object for DB_ARMATURE) with one LINEAR key per frame and channel. The action assigned before
    keeps a fake user."""
    values = np.asarray(values, dtype=np.float64).reshape(len(frames), len(names))
    action = new_action(id_data, action_name, keep_previous=True)
    for j, name in enumerate(names):
        if kind == DB_SHAPE_KEYS:
            fc = new_fcurve(id_data, action, shape_key_value_path(name), 0)
        else:
            path, index = parse_pose_channel(name)
            fc = new_fcurve(id_data, action, path, index, group=bone_name_of_path(path))
        write_dense_linear(fc, frames, values[:, j])
    return action


def new_face_object(name: str, vertices: np.ndarray, faces: Sequence[Sequence[int]],
                    shape_keys: Sequence[tuple[str, np.ndarray]], collection: Any = None) -> bpy.types.Object:
    """A mesh object (linked to ``collection`` or the scene's) with a Basis and the given relative
    shape keys (slider range 0..1)."""
    mesh: Any = bpy.data.meshes.new(name)
    mesh.from_pydata(np.asarray(vertices, dtype=np.float64).tolist(), [], [tuple(f) for f in faces])
    mesh.update()
    ob: Any = bpy.data.objects.new(name, mesh)
    scene: Any = bpy.context.scene
    (collection or scene.collection).objects.link(ob)
    write_shape_key_basis(ob, vertices, shape_keys, slider_min=0.0, slider_max=1.0)
    return ob


def key_block_names(ob: Any) -> list[str]:
    key = getattr(getattr(ob, "data", None), "shape_keys", None)
    return [kb.name for kb in key.key_blocks] if key is not None else []


def live_duplicate(ob: Any, name: str) -> bpy.types.Object:
    """A copy of ``ob`` named ``name`` for showing a live result: its own mesh (and shape keys) for
    meshes, the same armature data for armatures; no animation (values set directly), linked to
    ``ob``'s collections. An existing object of that name is reused when it has ``ob``'s type."""
    dup: Any = bpy.data.objects.get(name)
    if dup is not None and (dup.type != ob.type or dup.library is not None):
        dup = None
    if dup is None:
        dup = ob.copy()
        dup.name = name
        if ob.type == "MESH":
            dup.data = ob.data.copy()
        scene: Any = bpy.context.scene
        for coll in ob.users_collection or [scene.collection]:
            coll.objects.link(dup)
    dup.animation_data_clear()
    key = getattr(getattr(dup, "data", None), "shape_keys", None)
    if key is not None and key.animation_data is not None:
        key.animation_data_clear()
    return dup


def set_key_values_by_name(ob: Any, names: Sequence[str], values: np.ndarray) -> None:
    """Set the named shape-key values of ``ob`` (names it lacks are ignored) in one foreach_set."""
    key = ob.data.shape_keys
    index = {kb.name: i for i, kb in enumerate(key.key_blocks)}
    cols = [j for j, n in enumerate(names) if n in index]
    idx = np.array([index[names[j]] for j in cols], dtype=np.int64)
    set_key_values(key, idx, np.asarray(values, dtype=np.float64)[cols].astype(np.float32))
    ob.data.update_tag()
