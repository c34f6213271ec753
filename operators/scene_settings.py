"""The extension's settings roots: ``Scene.anim_signals`` and ``WindowManager.anim_signals``.

Each tool package declares its fields (``SCENE_PROPERTIES``: settings and last results, saved in
the .blend; ``WINDOW_PROPERTIES``: runtime-only state such as a running live mode, never saved);
this module gathers them into one PropertyGroup per root, so a new tool adds its fields without
touching anything here. Panels and operators reach them by attribute, e.g.
``context.scene.anim_signals.fit`` or ``context.window_manager.anim_signals.motion_db_live``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import bpy

__all__ = ["register", "unregister"]

_ROOTS = (
    (bpy.types.Scene, "AnimSignalsSceneSettings", "SCENE_PROPERTIES", "Anim Signals settings and results of the scene"),
    (bpy.types.WindowManager, "AnimSignalsWindowState", "WINDOW_PROPERTIES", "Anim Signals runtime state (not saved)"),
)
_registered: list[tuple[Any, type]] = []


def _root_group(name: str, doc: str, fields: dict) -> type:
    return type(name, (bpy.types.PropertyGroup,), {"__annotations__": fields, "__doc__": doc})


def register(tools: Sequence[Any]) -> None:
    """Register one root group per owner from the tools' fields (tool classes already registered)."""
    for owner, name, attr, doc in _ROOTS:
        fields: dict = {}
        for tool in tools:
            for field, prop in getattr(tool, attr, {}).items():
                if field in fields:
                    raise RuntimeError(f"{owner.__name__}.anim_signals.{field} is declared by two tools")
                fields[field] = prop
        group = _root_group(name, doc, fields)
        bpy.utils.register_class(group)
        owner.anim_signals = bpy.props.PointerProperty(type=group)  # type: ignore[union-attr]
        _registered.append((owner, group))


def unregister() -> None:
    while _registered:
        owner, group = _registered.pop()
        if hasattr(owner, "anim_signals"):
            del owner.anim_signals  # type: ignore[attr-defined]
        bpy.utils.unregister_class(group)
