"""Blender data access of Make Cyclic, Blend and Compare beyond ``bridge``: which object plays an
action, copies of actions to write into, ID properties on actions. Built on ``bridge`` only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import bpy

from ..blender_data.actions import (
    action_fcurves,
    assign_action,
    copy_action,
    fcurves_of_action,
    find_fcurve,
    get_action,
    get_slot,
    id_has_paths,
    id_read_only_reason,
    objects_using_action,
    remove_fcurve,
)
from ..blender_data.channels import bone_name_of_path

__all__ = [
    "animated_bones",
    "armature_with_bones",
    "armatures_using",
    "assign_keeping_previous",
    "cm_per_unit",
    "copy_with_channels",
    "id_playing_paths",
    "object_playing",
    "store_on_actions",
    "writable_curves",
]


def object_playing(action, ob):
    """An object animated by ``action``: ``ob`` when it uses it, else any user, else ``None``."""
    if ob is not None and get_action(ob) == action:
        return ob
    users = objects_using_action(action)
    return users[0] if users else None


def armatures_using(action) -> list:
    """The armature objects animated by ``action``."""
    return [o for o in objects_using_action(action) if o.type == "ARMATURE"]


def animated_bones(action) -> set[str]:
    """Names of the bones ``action`` has F-curves for."""
    return {b for fc in fcurves_of_action(action) if (b := bone_name_of_path(fc.data_path))}


def armature_with_bones(bones: set[str], preferred=None):
    """An armature object having every bone in ``bones``: ``preferred`` first, then any; else ``None``."""
    others = [o for o in bpy.data.objects if o.type == "ARMATURE" and o != preferred]
    for arm in ([preferred] if preferred is not None else []) + others:
        if bones <= set(arm.pose.bones.keys()):
            return arm
    return None


def id_playing_paths(ob, data_paths: Iterable[str]):
    """The ID of ``ob`` (the object, then its shape keys) that has every data path and may be
    written to; ``None`` when neither can play them."""
    if ob is None:
        return None
    paths = list(data_paths)
    candidates = [ob]
    data = getattr(ob, "data", None)
    shape_keys = getattr(data, "shape_keys", None) if data is not None else None
    if shape_keys is not None:
        candidates.append(shape_keys)
    for id_data in candidates:
        if id_read_only_reason(id_data) is None and id_has_paths(id_data, paths):
            return id_data
    return None


def writable_curves(jobs: Sequence[Any], *, keep_original: bool, suffix: str) -> list[tuple[Any, list]]:
    """Per job, the action and the F-curves to write the job's channels into.

    Parameters
    ----------
    jobs : sequence
        Each with ``id_data``, ``action``, ``slot_identifier``, ``specs`` (its channels) and
        ``fcurves`` (their curves in the action, in the same order).
    keep_original : bool
        Copy every distinct action once as ``"<action><suffix>"`` (the original keeps a fake user)
        and assign the copy to each job's ID, same slot; else the jobs' own curves.
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


def copy_with_channels(action, name: str, slot_identifier: str | None, keys: Sequence[tuple[str, int]]):
    """A copy of ``action`` named ``name`` holding only the channels ``keys`` (data path, index).

    The original is left alone. Returns the copy and its curves for ``keys``, in that order (read
    from the slot ``slot_identifier`` on Blender 4.4+).
    """
    copy = copy_action(action, name)
    slot = None
    if slot_identifier is not None and hasattr(copy, "slots"):
        slot = copy.slots.get(slot_identifier)
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


def assign_keeping_previous(id_data, action, slot_identifier: str | None) -> bool:
    """Assign ``action`` to ``id_data``; its previous local action gets a fake user if this was its
    last user. Returns whether the assignment was made (Blender refuses a slot of another ID type)."""
    old = get_action(id_data)
    if old is not None and old.library is None and old.users <= 1:
        old.use_fake_user = True
    try:
        assign_action(id_data, action, slot_identifier)
    except (RuntimeError, TypeError, ValueError):  # pragma: no cover - a slot of another ID type
        return False
    return True


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


def cm_per_unit(scene) -> float:
    """Centimetres per Blender unit of ``scene`` (its unit scale)."""
    return 100.0 * float(scene.unit_settings.scale_length or 1.0)
