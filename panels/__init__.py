"""Sidebar panels and menus, one module per tool. Panels only draw settings and results (owned by
``operators``) and call operators.

Imported from the extension's ``register()`` only (submodules import bpy).
"""

from . import deformation_transfer, fit_spline, loop_blend_compare, motion_db, pose_space, spatial_keyframes

_modules = (fit_spline, loop_blend_compare, pose_space, motion_db, deformation_transfer, spatial_keyframes)


def register() -> None:
    for mod in _modules:
        mod.register()


def unregister() -> None:
    for mod in reversed(_modules):
        mod.unregister()
