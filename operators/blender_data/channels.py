"""Channels: what an F-curve animates, read from its data path.

Owns the :class:`ChannelSpec` of a curve (its kind: one of the core's kinds
:data:`anim_signals.channels.KINDS`, re-exported here), a clip's samples made continuous by their
specs (:func:`continuous_values`), and data-path parsing and building: the property a path ends
in, the bone or shape-key name quoted in it (escaped and unescaped with Blender's own
``bpy.utils.escape_identifier`` / ``unescape_identifier``). Nothing here reads or writes keys.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np

from ...anim_signals.channels import EULER, LOCATION, OTHER, QUATERNION, SCALE, SHAPE_KEY, make_continuous

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

# A quoted name: anything but a quote or a backslash, or a backslash escape.
_QUOTED = r'"((?:[^"\\]|\\.)*)"'
_BONE_PATH = re.compile(rf"^pose\.bones\[{_QUOTED}\]")
_SHAPE_KEY_VALUE = re.compile(rf"^key_blocks\[{_QUOTED}\]\.value$")


@dataclass(frozen=True)
class ChannelSpec:
    """One F-curve's channel.

    Attributes
    ----------
    data_path, array_index
        The curve's RNA path and component.
    kind
        LOCATION | EULER | QUATERNION | SCALE | SHAPE_KEY | OTHER.
    owner_path
        Data path of the struct owning the property ('' for the ID itself).
    rotation_mode
        Rotation mode of the owner (object or pose bone) for rotation channels, when known.
    """

    data_path: str
    array_index: int
    kind: str
    owner_path: str
    rotation_mode: str | None = None

    @property
    def label(self) -> str:
        return f"{self.data_path}[{self.array_index}]"


def escape_name(name: str) -> str:
    """A name as Blender quotes it inside a data path (``"`` and ``\\`` escaped)."""
    return bpy.utils.escape_identifier(name)


def unescape_name(quoted: str) -> str:
    """The inverse of :func:`escape_name`."""
    return bpy.utils.unescape_identifier(quoted)


def split_path(data_path: str) -> tuple[str, str]:
    """Split a data path at its last property: ``(owner path, property)``.

    ``'pose.bones["a.b"].location'`` -> ``('pose.bones["a.b"]', 'location')``; a path on the ID
    itself gives ``('', 'location')``. Dots inside brackets and quoted names do not split.
    """
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


def property_of_path(data_path: str) -> str:
    """The property a data path ends in: ``'pose.bones["Hips"].location'`` -> ``'location'``."""
    return split_path(data_path)[1]


def bone_name_of_path(data_path: str) -> str | None:
    """``'pose.bones["Hips"].location'`` -> ``'Hips'`` (None for paths not on a pose bone)."""
    m = _BONE_PATH.match(data_path)
    return unescape_name(m.group(1)) if m else None


def bone_path(name: str, prop: str) -> str:
    """The data path of a pose-bone property: ``bone_path("Hips", "location")``."""
    return f'pose.bones["{escape_name(name)}"].{prop}'


def is_shape_key_value_path(data_path: str) -> bool:
    """True for ``'key_blocks["<name>"].value'``."""
    return _SHAPE_KEY_VALUE.match(data_path) is not None


def shape_key_name_of_path(data_path: str) -> str | None:
    """``'key_blocks["JawOpen"].value'`` -> ``'JawOpen'`` (None for other paths)."""
    m = _SHAPE_KEY_VALUE.match(data_path)
    return unescape_name(m.group(1)) if m else None


def shape_key_value_path(name: str) -> str:
    """The data path of a shape key's value on its Key: ``'key_blocks["<name>"].value'``."""
    return f'key_blocks["{escape_name(name)}"].value'


def channel_kind(data_path: str, *, on_key: bool = True) -> str:
    """The kind of the channel a data path animates.

    ``on_key``: whether the path may be on a shape-key datablock (Key); when False, a
    ``key_blocks[...]`` path is not taken for a shape-key value.
    """
    if on_key and is_shape_key_value_path(data_path):
        return SHAPE_KEY
    return _KIND_BY_PROPERTY.get(property_of_path(data_path), OTHER)


def channel_spec(id_data: bpy.types.ID | None, fc: bpy.types.FCurve) -> ChannelSpec:
    """The spec of one curve of ``id_data`` (None: an action not assigned to anything; then the
    kind comes from the path alone and rotation modes stay unknown)."""
    path = fc.data_path
    owner_path, _ = split_path(path)
    kind = channel_kind(path, on_key=id_data is None or isinstance(id_data, bpy.types.Key))
    rotation_mode = None
    if id_data is not None and kind in {EULER, QUATERNION}:
        owner: Any = id_data
        if owner_path:
            try:
                owner = id_data.path_resolve(owner_path)
            except (ValueError, AttributeError):
                owner = None
        rotation_mode = getattr(owner, "rotation_mode", None) if owner is not None else None
    return ChannelSpec(path, int(fc.array_index), kind, owner_path, rotation_mode)


def channel_specs(id_data: bpy.types.ID | None, fcurves: Sequence[bpy.types.FCurve]) -> list[ChannelSpec]:
    """:func:`channel_spec` of every curve, in order."""
    return [channel_spec(id_data, fc) for fc in fcurves]


def continuous_values(values: np.ndarray, specs: Sequence[ChannelSpec], owners: Sequence[str] | None = None) -> np.ndarray:
    """Samples ``values`` (n_frames, len(specs)) of the curves of ``specs`` as one continuous curve
    (:func:`anim_signals.channels.make_continuous` with each spec's kind, rotation mode and index):
    Euler wraps and gimbal flips removed where the rotation order is known, quaternions
    sign-continuous. ``owners``: each channel's rotation owner (default: its ``owner_path``; pass
    prefixed owners to keep the channels of several IDs apart)."""
    return make_continuous(
        values,
        [s.kind for s in specs],
        [s.owner_path for s in specs] if owners is None else owners,
        [s.rotation_mode for s in specs],
        [s.array_index for s in specs],
    )
