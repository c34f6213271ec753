"""Fit Spline: dense F-curves become a few exact Bezier keys (Mukai, "Latent Nonuniform Splines for
Animation Approximation"; core: ``anim_signals.splines``; panel: ``panels/fit_spline.py``).

- :mod:`.properties`: the settings (one definition for operator and sidebar) and the last result.
- :mod:`.fitting`: Blender data in and out: which curves, sampled how; writing the keys.
- :mod:`.object_space`: the "Joints" error space: tolerances from the rig, verification in world
  space at every frame, tightening (armatures).
- :mod:`.operators`: the operator ``anim_signals.fit_latent_spline`` and its menu entries.
"""

import os
import threading

from . import operators, properties

PROPERTY_CLASSES = properties.classes
SCENE_PROPERTIES = properties.SCENE_PROPERTIES
WINDOW_PROPERTIES: dict = {}
OPERATOR_CLASSES = operators.classes


# The startup warm-up of the compiled segment test: "" before it starts, "running", then where the
# test runs ("worker", "process", "numpy") or "failed: <why>" (a fit then reports the same failure).
WARM_UP = {"state": ""}


def _warm_up() -> None:
    from ...anim_signals.splines import key_reduction

    try:
        WARM_UP["state"] = key_reduction.warm_up()
    except Exception as exc:  # noqa: BLE001 - nothing to show at startup: the first fit reports it
        WARM_UP["state"] = f"failed: {type(exc).__name__}: {exc}"


def _start_warm_up() -> None:
    """Timer callback: compile the segment test in a background thread, so an animator's first fit
    after an install or an update does not wait for it (about 20 s, once; the compile runs in the
    worker process beside Mesa's LLVM, or in this process with the GIL shared)."""
    WARM_UP["state"] = "running"
    threading.Thread(target=_warm_up, name="anim_signals_warm_up", daemon=True).start()


def register() -> None:
    """After the classes are registered: menu entries, and in the UI the kernel's warm-up
    (not in ``--background``: a pipeline's fits compile on first use; ``ANIM_SIGNALS_WARM_UP=0``
    turns it off)."""
    import bpy

    operators.add_menus()
    if not bpy.app.background and os.environ.get("ANIM_SIGNALS_WARM_UP", "1") != "0" and not WARM_UP["state"]:
        bpy.app.timers.register(_start_warm_up, first_interval=2.0)


def unregister() -> None:
    import bpy

    if bpy.app.timers.is_registered(_start_warm_up):
        bpy.app.timers.unregister(_start_warm_up)
    operators.remove_menus()
