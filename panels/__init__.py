"""Sidebar panels and menus, one module per tool. Panels only draw settings and results (owned by
``operators``) and call operators.

Imported from the extension's ``register()`` only (submodules import bpy).
"""

from . import fit_spline, motion_db_panel, motion_panel, pose_space_panel

_modules = (fit_spline, motion_panel, pose_space_panel, motion_db_panel)


def register() -> None:
    for mod in _modules:
        mod.register()


def unregister() -> None:
    for mod in reversed(_modules):
        mod.unregister()
