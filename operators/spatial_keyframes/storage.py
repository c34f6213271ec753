"""The spatial-keyframe model stored on the armature object, so it survives saving and reloading.

``ob["anim_signals_spatial_keyframes"]`` (:data:`PROP`) is an ID-property group of plain values:

=========================  ================================================================
``version``                1
``token``                  random hex, new on every save (the key of the loaded-model cache)
``action``                 the action the model was built from
``frame_start frame_end``  its frames (one row of the trajectory per whole frame)
``bones parents modes``    the model's joints: pose-bone names (in ``ob.pose.bones`` order at
                           build time), parent indices (-1: root), rotation modes
``projection selection``   the settings used (core names, e.g. ``"mds"``, ``"uniform"``)
``optimised``              Algorithm 1 was applied
``error``                  error per frame per joint of the reconstruction (weighted radians)
``keys key_rotations``     :meth:`SpatialKeyframeClip.to_dict`: marker frames (indices into
``n_joints trajectory``    the frames), key poses as quaternions (M x J x 4, flat), the 2D
``blend markers``          point of every frame (N x 2, flat), the rotation blend, the
                           markers (M x 2, flat; key -1: a marker added from a pose)
``edited``                 markers were moved, added or removed on the canvas
=========================  ================================================================

:func:`load_model` rebuilds the :class:`SpatialKeyframeClip`, fits its RBF once and binds a
:class:`~..blender_data.bone_rotations.BoneRotationWriter` to the bones, cached per stored version
and bone structure (renamed bones or changed rotation modes rebind).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...anim_signals.spatialkeys import RotationRBF, SpatialKeyframeCanvas, SpatialKeyframeClip, canvas_model
from ..blender_data.actions import id_read_only_reason
from ..blender_data.bone_rotations import BoneRotationWriter
from ..common.model_cache import ModelCache
from ..common.transaction import current_transaction

__all__ = ["PROP", "LoadedModel", "ModelDataError", "load_model", "model_info", "shown_model", "store_edited",
           "store_model"]

PROP = "anim_signals_spatial_keyframes"
_CLIP_FIELDS = ("keys", "key_rotations", "n_joints", "trajectory", "blend", "markers", "version", "token")
VERSION = 1
_CACHE: ModelCache[LoadedModel] = ModelCache()


class ModelDataError(ValueError):
    """A stored model that cannot be used (damaged, or bones missing): rebuild it."""


@dataclass
class LoadedModel:
    """A stored model ready for posing: the clip, its RBF and the writer bound to the bones."""

    clip: SpatialKeyframeClip
    rbf: RotationRBF
    writer: BoneRotationWriter
    bones: list[str]
    parents: list[int]
    shown: SpatialKeyframeCanvas
    """What the canvas draws (made once per stored version, so the canvas's geometry cache holds)."""


def store_model(ob: Any, clip: SpatialKeyframeClip, extra: Mapping[str, Any]) -> None:
    """Write ``clip`` and ``extra`` (action, frames, bones, settings, error) into ``ob[PROP]``,
    replacing what was there; recorded on the running transaction, so a failing operator puts
    the previous model (or none) back."""
    current_transaction().keep_item(ob, PROP)
    group: dict[str, Any] = dict(extra)
    group.update(clip.to_dict())
    group.update({"version": VERSION, "token": uuid.uuid4().hex})
    ob[PROP] = group


def store_edited(ob: Any, clip: SpatialKeyframeClip) -> None:
    """Replace the stored clip of ``ob`` by an edited one (markers moved, added or removed),
    keeping what it was built from; ``edited`` is set, ``error`` stays the build's. Recorded on
    the running transaction. Raises ValueError without a model or on linked data."""
    if ob is None or PROP not in ob.keys():
        raise ValueError(f'"{getattr(ob, "name", ob)}" has no spatial keyframes: build them first')
    reason = id_read_only_reason(ob)
    if reason:
        raise ValueError(reason)
    g = ob[PROP]
    extra = {name: _plain(g[name]) for name in g.keys() if name not in _CLIP_FIELDS}
    extra["edited"] = True
    store_model(ob, clip, extra)


def model_info(ob: Any) -> dict[str, Any] | None:
    """Small facts about the model stored on ``ob`` (for panels and reports): action, frames,
    markers, joints, error, projection, selection, optimised; None without one."""
    if ob is None or PROP not in ob.keys():
        return None
    g = ob[PROP]
    return {
        "action": str(g.get("action", "")),
        "frame_start": int(g.get("frame_start", 0)), "frame_end": int(g.get("frame_end", 0)),
        "frames": len(g.get("trajectory", [])) // 2, "markers": len(g.get("keys", [])),
        "joints": int(g.get("n_joints", 0)), "error": float(g.get("error", 0.0)),
        "projection": str(g.get("projection", "")), "selection": str(g.get("selection", "")),
        "optimised": bool(g.get("optimised", False)), "edited": bool(g.get("edited", False)),
    }


def _plain(value: Any) -> Any:
    return value.to_list() if hasattr(value, "to_list") else value


def _load_uncached(ob: Any) -> LoadedModel:
    g = ob[PROP]
    if int(g.get("version", 0)) != VERSION:
        raise ModelDataError(f'"{ob.name}": unknown spatial-keyframe model version {g.get("version")}: rebuild it')
    try:
        data = {name: _plain(g[name]) for name in ("keys", "key_rotations", "n_joints", "trajectory")}
        data["blend"] = str(g.get("blend", "log"))
        data["markers"] = _plain(g.get("markers", []))
        clip = SpatialKeyframeClip.from_dict(data)
        bones = [str(b) for b in g["bones"]]
        parents = [int(p) for p in g["parents"]]
    except (KeyError, ValueError, TypeError) as err:
        raise ModelDataError(f'"{ob.name}": the stored spatial keyframes cannot be read ({err}): rebuild them') from err
    if len(bones) != clip.key_rotations.shape[1]:
        raise ModelDataError(f'"{ob.name}": {len(bones)} bones for {clip.key_rotations.shape[1]} joints: rebuild it')
    try:
        writer = BoneRotationWriter(ob, bones)
        rbf = clip.rbf()
    except ValueError as err:
        raise ModelDataError(f'"{ob.name}": {err}: rebuild the spatial keyframes') from err
    shown = canvas_model(clip, float(g.get("frame_start", 0)))
    return LoadedModel(clip, rbf, writer, bones, parents, shown)


def _structure(ob: Any) -> tuple:
    """What the writer is bound to besides the stored group: bone names and rotation modes."""
    return tuple((pb.name, pb.rotation_mode) for pb in ob.pose.bones) if ob.pose is not None else ()


def load_model(ob: Any) -> LoadedModel | None:
    """The model stored on ``ob`` (None without one), loaded once per stored version and bone
    structure. Raises :class:`ModelDataError` when it no longer fits the armature."""
    if ob is None or PROP not in ob.keys():
        return None
    if ob.type != "ARMATURE":
        raise ModelDataError(f'"{ob.name}" is not an armature: its spatial keyframes cannot pose it')
    key = (ob.as_pointer(), str(ob[PROP].get("token", "")), _structure(ob))
    return _CACHE.get(key, lambda: _load_uncached(ob))


def shown_model(ob: Any) -> tuple[Any, SpatialKeyframeCanvas] | None:
    """(``ob``, what the canvas draws of its model), or None when ``ob`` has none (the canvas's
    source ``find``); raises :class:`ModelDataError` for a model that no longer fits."""
    if ob is None or ob.type != "ARMATURE":
        return None
    model = load_model(ob)
    return None if model is None else (ob, model.shown)


def marker_points(ob: Any) -> np.ndarray:
    """The stored markers' 2D positions, (M, 2) (empty without a model)."""
    model = load_model(ob)
    return np.empty((0, 2)) if model is None else model.clip.markers
