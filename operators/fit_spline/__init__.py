"""Fit Spline: dense F-curves become a few exact Bezier keys (Mukai, "Latent Nonuniform Splines for
Animation Approximation"; core: ``anim_signals.splines``; panel: ``panels/fit_spline.py``).

- :mod:`.properties`: the settings (one definition for operator and sidebar) and the last result.
- :mod:`.fitting`: Blender data in and out: which curves, sampled how; writing the keys.
- :mod:`.object_space`: the "Joints" error space: tolerances from the rig, verification in world
  space at every frame, tightening (armatures).
- :mod:`.operators`: the operator ``anim_signals.fit_latent_spline`` and its menu entries.
- :mod:`.warm_up`: the compiled segment test made ready in the background at UI startup.
"""

from . import operators, properties, warm_up

PROPERTY_CLASSES = properties.classes
SCENE_PROPERTIES = properties.SCENE_PROPERTIES
WINDOW_PROPERTIES: dict = {}
OPERATOR_CLASSES = operators.classes


def register() -> None:
    """After the classes are registered: menu entries, and in the UI the kernel's warm-up."""
    operators.add_menus()
    warm_up.schedule()


def unregister() -> None:
    warm_up.unschedule()
    operators.remove_menus()
