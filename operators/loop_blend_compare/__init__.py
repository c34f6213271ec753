"""Loop, blend and compare clips on the motion manifold (Eslitzbichler, "Modelling character
motions on infinite-dimensional manifolds"; core: ``anim_signals.manifolds``;
panels: ``panels/loop_blend_compare.py``).

- :mod:`.properties`: the settings of the three operators (one definition each for operator and
  sidebar) and the last results.
- :mod:`.clips`: what the three share: the input error, actions read as clips.
- :mod:`.loop`, :mod:`.blend`, :mod:`.compare`: each operation's Blender data in and out.
- :mod:`.operators`: ``anim_signals.make_cyclic``, ``anim_signals.blend_actions``,
  ``anim_signals.compare_actions`` and their menu entries.
"""

from . import operators, properties

PROPERTY_CLASSES = properties.classes
SCENE_PROPERTIES = properties.SCENE_PROPERTIES
WINDOW_PROPERTIES: dict = {}
OPERATOR_CLASSES = operators.classes


def register() -> None:
    """After the classes are registered: menu entries."""
    operators.add_menus()


def unregister() -> None:
    operators.remove_menus()
