"""Sidebar panels and the scene settings (``Scene.anim_signals``). Panels only draw and call operators.

Imported from the extension's ``register()`` only (submodules import bpy).
"""

from . import fit_panel, motion_db_panel, motion_panel, pose_space_panel, props


def register_properties() -> None:
    props.register()


def unregister_properties() -> None:
    props.unregister()


def register() -> None:
    fit_panel.register()
    motion_panel.register()
    pose_space_panel.register()
    motion_db_panel.register()


def unregister() -> None:
    motion_db_panel.unregister()
    pose_space_panel.unregister()
    motion_panel.unregister()
    fit_panel.unregister()
