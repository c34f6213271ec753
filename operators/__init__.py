"""Blender side of every tool: read Blender data -> call the core -> write Blender data.

One package per tool (``fit_spline/``, ...), each with ``properties.py`` (its settings and
results), its operators, and Blender data access through the shared data layer; shared machinery
once: ``common/`` (settings fill, modal progress, menus) and ``bridge`` (Blender data by kind).
A tool package exposes ``PROPERTY_CLASSES``, ``SCENE_PROPERTIES``, ``WINDOW_PROPERTIES``,
``OPERATOR_CLASSES`` and ``register()`` / ``unregister()`` for what comes after its classes
(menus, keymaps). Submodules import bpy: imported from the extension's ``register()`` only.
"""

from __future__ import annotations

import types

from . import bridge, fit_spline, motion_db_ops, motion_ops, pose_space, pose_space_canvas, pose_space_ops, scene_settings


def _legacy_tool() -> types.SimpleNamespace:
    """Tools whose settings still live in panels/props.py (moving into their own packages)."""
    from ..panels import props

    modules = (motion_ops, pose_space_ops, pose_space_canvas, motion_db_ops)

    def register() -> None:
        for mod in modules:
            mod.register()

    def unregister() -> None:
        for mod in reversed(modules):
            mod.unregister()

    return types.SimpleNamespace(
        PROPERTY_CLASSES=props.PROPERTY_CLASSES,
        SCENE_PROPERTIES=props.SCENE_PROPERTIES,
        WINDOW_PROPERTIES={},
        OPERATOR_CLASSES=(),
        register=register,
        unregister=unregister,
    )


def _tools() -> tuple:
    return (fit_spline, _legacy_tool())


_active: tuple = ()


def register() -> None:
    import bpy

    global _active
    _active = _tools()
    for tool in _active:
        for cls in tool.PROPERTY_CLASSES:
            bpy.utils.register_class(cls)
    scene_settings.register(_active)
    for tool in _active:
        for cls in tool.OPERATOR_CLASSES:
            bpy.utils.register_class(cls)
        tool.register()


def unregister() -> None:
    import bpy

    global _active
    for tool in reversed(_active):
        tool.unregister()
        for cls in reversed(tool.OPERATOR_CLASSES):
            bpy.utils.unregister_class(cls)
    scene_settings.unregister()
    for tool in reversed(_active):
        for cls in reversed(tool.PROPERTY_CLASSES):
            bpy.utils.unregister_class(cls)
    _active = ()
