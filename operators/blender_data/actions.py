"""Actions, their slots and F-curves, across Blender versions.

Blender 4.2/4.3 keep an action's F-curves in ``Action.fcurves`` (no slots). 4.4+ has slotted
actions: an ID is animated by one slot of its action, whose curves live in a channelbag of a
keyframe strip of a layer; ``Action.fcurves`` is gone in 5.0. This module is the only place that
knows the difference. It owns: which action and slot an ID uses and which objects play an action,
the curves of an action (assigned or not), finding / creating / removing a curve, new and copied
actions and assigning them (for good or for a while, keeping the previous one), the curves a tool
writes into (:func:`writable_curves`), frame ranges, ID properties on actions and a signature of
their content, and the checks before writing (linked data, NLA tweak mode, locked curves).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import bpy

from .fcurves import KeyframeError, check_keys_finite, read_key_frames


def has_slots() -> bool:
    """True on Blender 4.4+ (slotted actions)."""
    return "action_slot" in bpy.types.AnimData.bl_rna.properties


def _is_slotted(action: Any) -> bool:
    """The action keeps its curves in slots' channelbags (4.4+, not a legacy action)."""
    return has_slots() and hasattr(action, "slots") and not getattr(action, "is_action_legacy", False)


def get_action(id_data: Any) -> bpy.types.Action | None:
    """The action assigned to ``id_data`` (None without animation data or action)."""
    adt = getattr(id_data, "animation_data", None)
    return None if adt is None else adt.action


def get_slot(id_data: Any) -> Any:
    """The action slot ``id_data`` is animated by (None before Blender 4.4 or when unassigned)."""
    adt = getattr(id_data, "animation_data", None)
    if adt is None or not hasattr(adt, "action_slot"):
        return None
    return adt.action_slot


def slot_identifier(id_data: Any) -> str | None:
    """The identifier of :func:`get_slot` (None without one)."""
    slot = get_slot(id_data)
    return None if slot is None else slot.identifier


def _channelbag(action: Any, slot: Any, *, ensure: bool = False) -> Any:
    """The channelbag holding ``slot``'s curves in ``action`` (first layer and strip that has one).

    ``ensure``: create it (and a layer and keyframe strip when the action has none) when missing.
    """
    for layer in action.layers:
        for strip in layer.strips:
            cb = strip.channelbag(slot)
            if cb:
                return cb
    if not ensure:
        return None
    layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
    return strip.channelbag(slot, ensure=True)


def action_fcurves(action: bpy.types.Action | None, slot: Any = None) -> list[bpy.types.FCurve]:
    """The F-curves of ``action`` for ``slot`` (legacy actions, or no slot given: ``Action.fcurves``
    where it exists)."""
    if action is None:
        return []
    if slot is not None and hasattr(action, "layers"):
        cb = _channelbag(action, slot)
        return list(cb.fcurves) if cb is not None else []
    legacy = getattr(action, "fcurves", None)
    return list(legacy) if legacy is not None else []


def list_fcurves(id_data: Any, *, selected_only: bool = False) -> list[bpy.types.FCurve]:
    """The F-curves animating ``id_data`` through its assigned action and slot (none when a slotted
    action is assigned without a slot); optionally only those selected in the Graph Editor."""
    action = get_action(id_data)
    if action is None:
        return []
    slot = get_slot(id_data)
    if has_slots() and slot is None and hasattr(action, "layers"):
        return []
    fcs = action_fcurves(action, slot)
    return [fc for fc in fcs if fc.select] if selected_only else fcs


def animated_ids(ob: bpy.types.Object, target: str = "AUTO") -> list[Any]:
    """The IDs of ``ob`` whose action a tool works on.

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


def action_slot_for(action: bpy.types.Action, id_data: Any = None) -> Any:
    """The slot of ``action`` to read when it is not (necessarily) assigned.

    The slot ``id_data`` is animated by when it uses this action, else the first slot that has
    F-curves, else the first slot. None on legacy actions (4.2/4.3).
    """
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


def action_slot_identifier(action: bpy.types.Action, id_data: Any = None) -> str | None:
    """The identifier of :func:`action_slot_for` (None on legacy actions)."""
    slot = action_slot_for(action, id_data)
    return None if slot is None else slot.identifier


def fcurves_of_action(action: bpy.types.Action | None, id_data: Any = None) -> list[bpy.types.FCurve]:
    """An action's F-curves without assigning it (legacy: all; slotted: those of
    :func:`action_slot_for`)."""
    if action is None:
        return []
    if _is_slotted(action):
        slot = action_slot_for(action, id_data)
        return action_fcurves(action, slot) if slot is not None else []
    return action_fcurves(action, None)


def find_fcurve(action: bpy.types.Action, slot: Any, data_path: str, array_index: int) -> bpy.types.FCurve | None:
    """The curve of ``action`` (``slot``'s on 4.4+) for ``data_path[array_index]``, or None."""
    for fc in action_fcurves(action, slot):
        if fc.data_path == data_path and fc.array_index == array_index:
            return fc
    return None


def new_fcurve(id_data: Any, action: bpy.types.Action, data_path: str, index: int = 0,
               group: str | None = None) -> bpy.types.FCurve:
    """A new F-curve in ``action`` for the slot ``id_data`` is animated by (legacy: in the action),
    in the channel group ``group`` when given."""
    slot = get_slot(id_data)
    if slot is not None and hasattr(action, "layers"):
        cb = _channelbag(action, slot, ensure=True)
        fc = cb.fcurves.new(data_path, index=index)
        if group:
            fc.group = cb.groups.get(group) or cb.groups.new(group)
        return fc
    legacy: Any = action.fcurves  # type: ignore[attr-defined]
    return legacy.new(data_path, index=index, action_group=group or "")


def remove_fcurve(action: bpy.types.Action, slot: Any, fc: bpy.types.FCurve) -> None:
    """Delete ``fc`` from ``action`` (from the slot's channelbag on 4.4+)."""
    if slot is not None and hasattr(action, "layers"):
        cb = _channelbag(action, slot)
        if cb is not None:
            cb.fcurves.remove(fc)
            return
    legacy = getattr(action, "fcurves", None)
    if legacy is not None:
        legacy.remove(fc)


def fcurve_locked(fc: bpy.types.FCurve) -> bool:
    """A curve the Graph Editor would refuse to edit: locked itself or through its group."""
    if fc.lock:
        return True
    group = fc.group
    return bool(group is not None and group.lock)


def id_read_only_reason(*ids: Any) -> str | None:
    """Why an ID (object, its data, shape keys, action) may not be edited: linked from a library or
    a non-editable override. With several IDs the first one's reason (``None`` entries are skipped,
    e.g. the data of an empty). None when all may be edited."""
    for id_data in ids:
        if id_data is None:
            continue
        label = f'Action "{id_data.name}"' if isinstance(id_data, bpy.types.Action) else f'"{id_data.name}"'
        if id_data.library is not None:
            return f'{label} is linked from library "{id_data.library.filepath}" and is read-only'
        if not getattr(id_data, "is_editable", True):
            return f"{label} is not editable (library override or linked data)"
    return None


def tweak_mode_reason(id_data: Any) -> str | None:
    """Why the action of ``id_data`` may not be edited now: its NLA is in tweak mode (None when not)."""
    if getattr(getattr(id_data, "animation_data", None), "use_tweak_mode", False):
        return f'"{id_data.name}" is in NLA tweak mode: exit tweak mode first'
    return None


def action_edit_reason(id_data: Any, action: bpy.types.Action) -> str | None:
    """Why a tool may not rewrite the curves of ``action`` assigned to ``id_data``: NLA tweak mode,
    or the ID or the action read-only (:func:`tweak_mode_reason`, :func:`id_read_only_reason`).
    None when it may."""
    return tweak_mode_reason(id_data) or id_read_only_reason(id_data, action)


def id_has_paths(id_data: Any, data_paths: Iterable[str]) -> bool:
    """True when every data path resolves on ``id_data`` (an action with those curves can drive it)."""
    for path in set(data_paths):
        try:
            id_data.path_resolve(path)
        except (ValueError, AttributeError, TypeError):
            return False
    return True


def objects_using_action(action: bpy.types.Action) -> list[bpy.types.Object]:
    """Objects whose own animation data (not the NLA) uses ``action``."""
    return [ob for ob in bpy.data.objects if get_action(ob) == action]


def object_playing(action: bpy.types.Action, ob: Any = None) -> bpy.types.Object | None:
    """An object animated by ``action``: ``ob`` when it uses it, else any user, else ``None``."""
    if ob is not None and get_action(ob) == action:
        return ob
    users = objects_using_action(action)
    return users[0] if users else None


def id_playing_paths(ob: Any, data_paths: Iterable[str]) -> Any:
    """The ID of ``ob`` (the object, then its shape keys) that has every data path and may be
    written to; ``None`` when neither can play them."""
    if ob is None:
        return None
    paths = list(data_paths)
    for id_data in animated_ids(ob, "OBJECT") + animated_ids(ob, "SHAPE_KEYS"):
        if id_read_only_reason(id_data) is None and id_has_paths(id_data, paths):
            return id_data
    return None


def new_action(id_data: Any, name: str, *, keep_previous: bool = True) -> bpy.types.Action:
    """A new, empty action named ``name`` assigned to ``id_data``; on 4.4+ with a new slot for it,
    one layer and one keyframe strip.

    With ``keep_previous`` the action assigned before is kept (see :func:`keep_previous_action`).
    """
    if keep_previous:
        keep_previous_action(id_data)
    action: Any = bpy.data.actions.new(name)
    adt = id_data.animation_data or id_data.animation_data_create()
    adt.action = action
    if has_slots() and hasattr(action, "slots"):
        id_type = "KEY" if isinstance(id_data, bpy.types.Key) else "OBJECT"
        slot = action.slots.new(id_type=id_type, name=id_data.name)
        _channelbag(action, slot, ensure=True)
        adt.action_slot = slot
    return action


def keep_previous_action(id_data: Any) -> None:
    """Before another action is assigned to ``id_data``: give its current local action a fake user
    when ``id_data`` is its last user, so it survives saving."""
    old = get_action(id_data)
    if old is not None and old.library is None and old.users <= 1:
        old.use_fake_user = True


def copy_action(action: bpy.types.Action, name: str) -> bpy.types.Action:
    """A full copy of ``action`` (every slot and curve) named ``name``.

    The original gets a fake user, so it survives saving when nothing uses it any more (the copy
    usually replaces it).
    """
    new: Any = action.copy()
    new.name = name
    action.use_fake_user = True
    return new


def copy_with_channels(action: bpy.types.Action, name: str, slot_identifier: str | None,
                       keys: Sequence[tuple[str, int]]) -> tuple[bpy.types.Action, list[bpy.types.FCurve]]:
    """A copy of ``action`` named ``name`` holding only the channels ``keys`` (data path, index) of
    the slot ``slot_identifier`` (other slots are not copied).

    The original is left alone (but for the fake user of :func:`copy_action`). Returns the copy and
    its curves for ``keys``, in that order (read from the slot ``slot_identifier`` on Blender 4.4+).
    """
    copy: Any = copy_action(action, name)
    slot = None
    if slot_identifier is not None and hasattr(copy, "slots"):
        slot = copy.slots.get(slot_identifier)
        for other in [s for s in copy.slots if s.identifier != slot_identifier]:
            copy.slots.remove(other)  # the other IDs' curves are not the channels asked for
    wanted = set(keys)
    for fc in action_fcurves(copy, slot):
        if (fc.data_path, fc.array_index) not in wanted:
            remove_fcurve(copy, slot, fc)
    curves = []
    for path, index in keys:
        curve = find_fcurve(copy, slot, path, index)
        if curve is None:  # pragma: no cover - the copy has every curve of the original
            raise RuntimeError(f"{path}[{index}] missing in the copied action {copy.name}")
        curves.append(curve)
    return copy, curves


def assign_action(id_data: Any, action: bpy.types.Action | None, slot_identifier: str | None = None, *,
                  keep_previous: bool = False) -> None:
    """Assign ``action`` to ``id_data`` (creating its animation data); on 4.4+ also the slot with
    ``slot_identifier`` when the action has it.

    With ``keep_previous`` the action assigned before is kept (see :func:`keep_previous_action`).
    When Blender refuses the slot (one for another ID type) the action and slot assigned before are
    put back and its RuntimeError, TypeError or ValueError raised.
    """
    if keep_previous:
        keep_previous_action(id_data)
    adt = id_data.animation_data or id_data.animation_data_create()
    old_action, old_slot = adt.action, getattr(adt, "action_slot", None)
    adt.action = action
    if action is not None and slot_identifier is not None and hasattr(adt, "action_slot"):
        slot = action.slots.get(slot_identifier)
        if slot is not None:
            try:
                adt.action_slot = slot
            except (RuntimeError, TypeError, ValueError):
                adt.action = old_action
                if old_slot is not None:
                    adt.action_slot = old_slot
                raise


def writable_curves(jobs: Sequence[Any], *, keep_original: bool, suffix: str) -> list[tuple[Any, list]]:
    """Per job, the action and the F-curves to write the job's channels into.

    Parameters
    ----------
    jobs : sequence
        Each with ``id_data``, ``action``, ``slot_identifier``, ``specs`` (its channels) and
        ``fcurves`` (their curves in the action, in the same order).
    keep_original : bool
        Copy every distinct action once as ``"<action><suffix>"`` (the original keeps a fake user,
        see :func:`copy_action`) and assign the copy to each job's ID, same slot; else the jobs'
        own curves.
    suffix : str
        The copies' name suffix, e.g. ``".loop"``.

    Returns
    -------
    list of (Action, list of FCurve)
        One per job, the curves in the order of its ``specs``.
    """
    copies: dict[str, Any] = {}
    out = []
    for job in jobs:
        if not keep_original:
            out.append((job.action, list(job.fcurves)))
            continue
        key = job.action.name
        if key not in copies:
            copies[key] = copy_action(job.action, f"{key}{suffix}")
        action = copies[key]
        assign_action(job.id_data, action, job.slot_identifier)
        slot = get_slot(job.id_data)
        curves = []
        for spec in job.specs:
            fc = find_fcurve(action, slot, spec.data_path, spec.array_index)
            if fc is None:  # pragma: no cover - the copy has every curve of the original
                raise RuntimeError(f"{spec.label} missing in the copied action {action.name}")
            curves.append(fc)
        out.append((action, curves))
    return out


@contextmanager
def assigned_action(id_data: Any, action: bpy.types.Action) -> Iterator[None]:
    """Play ``action`` on ``id_data`` for the duration of the ``with`` block.

    The slot is the one :func:`action_slot_for` picks (on 4.4+, when it is not assignable to this
    ID, the first slot); afterwards the action and slot assigned before are back, and animation
    data created for the block is removed again.
    """
    had_adt = id_data.animation_data is not None
    old_action = get_action(id_data)
    old_slot = slot_identifier(id_data) if had_adt else None
    try:
        assign_action(id_data, action, action_slot_identifier(action, id_data if old_action == action else None))
        adt: Any = id_data.animation_data
        if has_slots() and adt.action_slot is None:
            slot = action_slot_for(action)
            if slot is not None:
                adt.action_slot = slot
        yield
    finally:
        if not had_adt:
            id_data.animation_data_clear()
        elif id_data.animation_data is not None:
            assign_action(id_data, old_action, old_slot if has_slots() else None)


def action_frame_range(action: bpy.types.Action, fcurves: Sequence[bpy.types.FCurve] | None = None) -> tuple[int, int]:
    """The action's frame range (its manual range when set) rounded to whole frames. With ``fcurves``
    and no manual range: the key range of those curves.

    Raises :class:`~.fcurves.KeyframeError` naming the curve with a key at a NaN or infinite frame.
    """
    if fcurves and not action.use_frame_range:
        for fc in fcurves:
            check_keys_finite(fc)
        frames = [f for f in (read_key_frames(fc) for fc in fcurves) if f.size]
        if frames:
            lo = min(float(f.min()) for f in frames)
            hi = max(float(f.max()) for f in frames)
            return int(round(lo)), int(round(hi))
    rng: Any = action.frame_range
    if not all(map(math.isfinite, rng)):  # pragma: no cover - Blender clamps the range it stores
        raise KeyframeError(f'Action "{action.name}" has the frame range {tuple(rng)}: not finite')
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


def keep_frame_range(action: bpy.types.Action) -> Callable[[], None]:
    """Snapshot the action's manual frame range and cyclic flag (what :func:`set_action_frame_range`
    changes); returns the function that puts them back (for a transaction's rollback)."""
    manual, start, end, cyclic = action.use_frame_range, action.frame_start, action.frame_end, action.use_cyclic

    def restore() -> None:
        set_action_frame_range(action, start, end, cyclic=cyclic)
        action.use_frame_range = manual

    return restore


def store_on_actions(actions: Sequence[Any], prop: str, values: Sequence[int]) -> list[tuple[Any, int]]:
    """Set the ID property ``prop`` of each action to its value; returns the read-only actions
    (linked or overridden) left unchanged, with the value they did not get."""
    skipped = []
    for action, value in zip(actions, values, strict=True):
        if id_read_only_reason(action) is None:
            action[prop] = int(value)
        else:
            skipped.append((action, int(value)))
    return skipped


def find_action(name: str) -> bpy.types.Action | None:
    """The action named ``name`` in the file, or None."""
    return bpy.data.actions.get(name)


def remove_if_unused(action: bpy.types.Action) -> bool:
    """Delete ``action`` when nothing uses it (no users, no fake user) and it is local; True if
    deleted. A transaction cannot bring it back: call it last, once nothing can fail."""
    if action.users == 0 and not action.use_fake_user and action.library is None:
        bpy.data.actions.remove(action)
        return True
    return False
