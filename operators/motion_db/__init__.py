"""Motion Database: rebuild or denoise motion frame by frame from a library of actions (Richert,
"Animation Database for real-time motion reconstruction": k-NN and an online lazy neighbourhood
graph; core: ``anim_signals.motiondb``; panel: ``panels/motion_db.py``).

- :mod:`.properties`: the reconstruction settings (one definition for operators and sidebar), the
  scene's database record and last result, the live mode's runtime state.
- :mod:`.livelink_import`: Live Link Face CSV takes as shape-key animation.
- :mod:`.database`: the core database built from actions, cached for the session.
- :mod:`.index`: its k-NN index, built once, saved beside the .blend (or in the cache folder),
  loaded on open or first use.
- :mod:`.reconstruct`: the query plan, the stepping, the written ``<action>.reconstructed``.
- :mod:`.live`: the live mode (a frame-change handler driving a duplicate ``<name>.live``).
- :mod:`.operators`: the five operators and the *File › Import* entry.
"""

from . import database, index, live, operators, properties

PROPERTY_CLASSES = properties.classes
SCENE_PROPERTIES = properties.SCENE_PROPERTIES
WINDOW_PROPERTIES = properties.WINDOW_PROPERTIES
OPERATOR_CLASSES = operators.classes


def register() -> None:
    """After the classes are registered: the file-load and save handlers and the import menu entry."""
    live.register_handlers()
    index.register_handlers()
    operators.add_menus()


def unregister() -> None:
    """Before the classes go: stop the live mode, drop the handlers, the menu entry and the caches."""
    live.unregister_handlers()
    index.unregister_handlers()
    operators.remove_menus()
    database.clear_cache()
