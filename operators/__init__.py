"""Blender side of every tool: read Blender data -> call the core -> write Blender data.

One package per tool (``fit_spline/``, ...), each with ``properties.py`` (its settings and
results), its operators, and Blender data access through the shared data layer; shared machinery
once: ``common/`` (settings fill, operator bases, menus) and ``blender_data/`` (Blender data by kind).
A tool package exposes ``PROPERTY_CLASSES``, ``SCENE_PROPERTIES``, ``WINDOW_PROPERTIES``,
``OPERATOR_CLASSES`` and ``register()`` / ``unregister()`` for what comes after its classes
(menus, keymaps). Submodules import bpy: imported from the extension's ``register()`` only.
"""

from __future__ import annotations

import bpy

from . import (
    deformation_transfer,
    fit_spline,
    loop_blend_compare,
    motion_db,
    pose_space,
    scene_settings,
    spatial_keyframes,
)

# Registration order; a new tool package is added here.
TOOLS = (fit_spline, loop_blend_compare, pose_space, motion_db, deformation_transfer, spatial_keyframes)


def register() -> None:
    for tool in TOOLS:
        for cls in tool.PROPERTY_CLASSES:
            bpy.utils.register_class(cls)
    scene_settings.register(TOOLS)
    for tool in TOOLS:
        for cls in tool.OPERATOR_CLASSES:
            bpy.utils.register_class(cls)
        tool.register()


def unregister() -> None:
    for tool in reversed(TOOLS):
        tool.unregister()
        for cls in reversed(tool.OPERATOR_CLASSES):
            bpy.utils.unregister_class(cls)
    scene_settings.unregister()
    for tool in reversed(TOOLS):
        for cls in reversed(tool.PROPERTY_CLASSES):
            bpy.utils.unregister_class(cls)
