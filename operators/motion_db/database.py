"""The motion database from Blender actions, and its cache for the session.

The database stored on the scene (``scene.anim_signals.motion_db``) is only a list of action names,
their kind (shape-key or armature actions) and channel names: the actions are the truth. The core
``MotionDatabase`` (and its kd-trees) is built from them on demand and cached for the session, keyed
by a digest of the channels' keys (:func:`~..blender_data.named_channels.channels_signature`), so
any edit of a key rebuilds it, not only one that changes a key count or frame range.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import bpy
import numpy as np

from ...anim_signals.motiondb import MotionDatabase
from ..blender_data.named_channels import (
    action_kind,
    channels_signature,
    named_channel_curves,
    read_named_channels,
)
from ..common import InputError
from ..common.text import short_list

__all__ = [
    "LIVE_SUFFIX",
    "RECONSTRUCTED_SUFFIX",
    "VALUE_LIMIT",
    "MotionDBError",
    "build_database",
    "candidate_actions",
    "clear_cache",
    "database_actions",
    "store_database",
    "stored_database",
]

RECONSTRUCTED_SUFFIX = ".reconstructed"
LIVE_SUFFIX = ".live"

# Scene name -> (signature of the database's actions and channels, the core database built from them).
_CACHE: dict[str, tuple[tuple, MotionDatabase]] = {}
VALUE_LIMIT = 1e6
"""Largest magnitude of a database value (radians or shape-key weights): Blender stores an infinite
key as 3.4e38, finite but no pose, and it would overflow every distance of the search."""
MAX_FRAMES = 2_000_000
"""Database frames (whole frames of every action): a stray key far from the rest would otherwise
have every frame in between sampled."""


class MotionDBError(InputError):
    """Bad input for the motion database: reported to the user, nothing changed."""


def candidate_actions(kind: str, names: Sequence[str] | None = None) -> list[Any]:
    """Actions of ``kind`` (the named ones, in that order, or every one in the file except results)."""
    if names:
        out: list[Any] = []
        for n in names:
            act = bpy.data.actions.get(n)
            if act is None:
                raise MotionDBError(f'No action named "{n}"')
            if action_kind(act) != kind:
                raise MotionDBError(f'Action "{n}" is not a {kind.lower().replace("_", "-")} action')
            out.append(act)
        return out
    return [a for a in bpy.data.actions
            if action_kind(a) == kind and not a.name.endswith((RECONSTRUCTED_SUFFIX, LIVE_SUFFIX))]


def build_database(actions, kind: str, channels: Sequence[str] | None = None) -> tuple[MotionDatabase, list[str]]:
    """The core database from ``actions``: the channels common to all of them (or ``channels``).

    Returns the database and warnings (channels left out). Raises :class:`MotionDBError`.
    """
    if not actions:
        raise MotionDBError("The motion database is empty: no action given (or none of this kind in the file)")
    warnings: list[str] = []
    per_action = [named_channel_curves(a, kind) for a in actions]
    if channels is None:
        common = [n for n in per_action[0] if all(n in p for p in per_action[1:])]
        union = {n for p in per_action for n in p}
        left_out = sorted(union - set(common))
        if left_out:
            warnings.append(f"{len(left_out)} channel(s) not in every action left out: {short_list(left_out)}")
        channels = common
    if not channels:
        raise MotionDBError("The actions have no channel in common")
    total = 0
    for a, curves in zip(actions, per_action, strict=True):
        ends = [float(fc.keyframe_points[i].co[0]) for fc in curves.values() for i in (0, -1)]
        total += int(max(ends) - min(ends)) + 1 if ends else 0
        if total > MAX_FRAMES:
            raise MotionDBError(f'The actions up to "{a.name}" span {total} frames; a motion database holds at most '
                                f"{MAX_FRAMES} (a stray key far from the rest?)")
    clips = []
    for a in actions:
        frames, values, names = read_named_channels(a, kind, channels)
        if len(names) != len(channels):
            missing = [n for n in channels if n not in names]
            raise MotionDBError(f'Action "{a.name}" lacks database channel(s): {short_list(missing)}')
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(values) | (np.abs(values) > VALUE_LIMIT)
        if bad.any():
            row, col = (int(i) for i in np.argwhere(bad)[0])
            raise MotionDBError(f'Action "{a.name}" has a non-finite or extreme value ({values[row, col]:g}, beyond '
                                f'+-{VALUE_LIMIT:g}) in channel "{names[col]}" at frame {frames[row]:g}: fix or leave '
                                "out that action")
        clips.append(values)
    try:
        db = MotionDatabase.from_clips(clips, list(channels), [a.name for a in actions])
    except ValueError as err:
        raise MotionDBError(str(err)) from err
    return db, warnings


def _signature(kind: str, channels, actions) -> tuple:
    return (kind, tuple(channels), channels_signature(actions, kind))


def _remember(scene, kind: str, db: MotionDatabase, actions) -> None:
    _CACHE[scene.name] = (_signature(kind, db.channels, actions), db)


def database_actions(scene) -> set[str]:
    """The names of the actions the scene's database is built from (empty without one)."""
    return {item.name for item in scene.anim_signals.motion_db.actions}


def stored_database(scene) -> MotionDatabase:
    """The scene's database as a core ``MotionDatabase`` (cached while its actions are unchanged)."""
    record = scene.anim_signals.motion_db
    if not len(record.actions):
        raise MotionDBError("No motion database in this scene: build one first")
    actions: list[Any] = []
    for item in record.actions:
        act = bpy.data.actions.get(item.name)
        if act is None:
            raise MotionDBError(f'Action "{item.name}" of the motion database is gone: rebuild the database')
        actions.append(act)
    channels = record.channel_names()
    hit = _CACHE.get(scene.name)
    if hit is not None and hit[0] == _signature(record.kind, channels, actions):
        return hit[1]
    db, _ = build_database(actions, record.kind, channels)
    _remember(scene, record.kind, db, actions)
    return db


def store_database(scene, db: MotionDatabase, kind: str, actions, object_name: str = "") -> None:
    """Record ``db`` (built from ``actions``) on the scene and cache it; the source actions get a fake
    user (they are the database: kept when saving)."""
    scene.anim_signals.motion_db.store(db, kind, object_name)
    for name in db.clip_names:
        act = bpy.data.actions.get(name)
        if act is not None and act.library is None:  # a linked action is kept by its library
            act.use_fake_user = True
    _remember(scene, kind, db, actions)


def clear_cache() -> None:
    """Forget every cached core database (they are rebuilt from the actions on demand)."""
    _CACHE.clear()
