"""Anim Signals: data-driven animation tools for Blender.

register()/unregister() only. Nothing here imports bpy at module level, so the algorithm core
(``anim_signals/``) can be imported and tested without Blender.
"""


def register() -> None:
    from . import operators, panels

    operators.register()
    panels.register()


def unregister() -> None:
    from . import operators, panels

    panels.unregister()
    operators.unregister()
