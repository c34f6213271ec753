"""Deformation Transfer: a mesh animation moved onto another mesh with other vertices and
connectivity, by example poses (Cashman and Hormann, "A continuous, editable representation for
deforming mesh sequences with separate signals for time, pose and shape", §4.3) or by marker
correspondence (Sumner and Popović, "Deformation Transfer for Triangle Meshes"); core:
``anim_signals.transfer``; panel: ``panels/deformation_transfer.py``.

- :mod:`.properties`: the settings (one definition for the operators and the sidebar), the
  example pairs and the last transfer's numbers.
- :mod:`.sources`: the source and target objects, their rest meshes, the example shape keys.
- :mod:`.markers`: marker pairs from vertex groups or a markers file; adding a pair.
- :mod:`.planning`: every input check, before anything is read frame by frame.
- :mod:`.solving`: the source's frames read and transferred, step by step (writes nothing).
- :mod:`.writing`: the result as a PC2 cache with a Mesh Cache modifier, or as shape keys.
- :mod:`.operators`: ``anim_signals.transfer_deformation``, ``.transfer_add_marker_pair``,
  ``.transfer_example_pairs``.

For scripts::

    from bl_ext.user_default.anim_signals.operators import deformation_transfer as dt
    plan = dt.plan_transfer(bpy.context, source="Cat", target="Lion", method="CORRESPONDENCE",
                            marker_source="FILE", markers_file="//markers-cat-lion.yml")
    for _ in dt.iter_transfer(plan):
        pass
    ob, summary = dt.write_transfer(plan)
"""

from . import operators, properties
from .planning import TransferPlan, plan_transfer
from .solving import iter_transfer
from .sources import TransferInputError
from .writing import TransferSummary, write_transfer

__all__ = [
    "TransferInputError",
    "TransferPlan",
    "TransferSummary",
    "iter_transfer",
    "plan_transfer",
    "write_transfer",
]

PROPERTY_CLASSES = properties.classes
SCENE_PROPERTIES = properties.SCENE_PROPERTIES
WINDOW_PROPERTIES: dict = {}
OPERATOR_CLASSES = operators.classes


def register() -> None:
    """After the classes are registered: the menu entry (3D Viewport › Object › Animation)."""
    operators.add_menus()


def unregister() -> None:
    operators.remove_menus()
