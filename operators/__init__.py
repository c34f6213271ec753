"""Blender operators: read Blender data -> call the core -> write Blender data.

``bridge`` is the one module that touches F-curves. Submodules import bpy, so this package is
only imported from the extension's ``register()``.
"""

from . import bridge, fit, motion_db_ops, motion_ops, pose_space, pose_space_canvas, pose_space_ops

_modules = (fit, motion_ops, pose_space_ops, pose_space_canvas, motion_db_ops)


def register() -> None:
    for mod in _modules:
        mod.register()


def unregister() -> None:
    for mod in reversed(_modules):
        mod.unregister()
