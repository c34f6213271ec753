"""Operators ``anim_signals.transfer_deformation``, ``anim_signals.transfer_add_marker_pair`` and
``anim_signals.transfer_example_pairs``.

Thin: :mod:`.planning` checks the input (raising :class:`~.sources.TransferInputError`, nothing
changed), :mod:`.solving` reads the source's frames and transfers them, and only then does
:mod:`.writing` write. The transfer is modal in the UI (progress bar, Esc / right-click cancels
while frames are read and solved); every operator also runs synchronously through ``execute()``.
"""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty

from ..common import SettingsOperator, StepwiseOperator, as_keywords, current_transaction, transactional
from ..common.menus import add_to_menus, remove_from_menus
from ..common.settings import draw_frame_range
from .markers import add_marker_pair
from .planning import TransferPlan, plan_transfer
from .properties import MARKER_SETTINGS, TRANSFER_SETTINGS, MarkerSettings, TransferSettings
from .solving import iter_transfer
from .sources import TransferInputError, example_pairs, transfer_objects
from .writing import write_transfer

__all__ = [
    "ANIM_SIGNALS_OT_transfer_add_marker_pair",
    "ANIM_SIGNALS_OT_transfer_deformation",
    "ANIM_SIGNALS_OT_transfer_example_pairs",
]

# The settings passed to plan_transfer as they are (the example pairs are passed as name pairs).
PLAN_SETTINGS = tuple(name for name in TRANSFER_SETTINGS if name != "pairs")


class ANIM_SIGNALS_OT_transfer_deformation(TransferSettings, StepwiseOperator, bpy.types.Operator):
    """Transfer the source's deformation (shape keys, mesh cache, armature, modifiers) frame by frame onto another mesh with other vertices, by example poses or marker vertices; the result plays on a new object "<target>.transfer\""""

    bl_idname = "anim_signals.transfer_deformation"
    bl_label = "Transfer Deformation"
    bl_options = {"REGISTER", "UNDO"}

    SETTINGS = TRANSFER_SETTINGS
    STATUS_TEXT = "Transferring deformation... Esc / right-click to cancel"
    CANCELLED_TEXT = "Transfer cancelled: nothing changed"
    REMOVED_TEXT = "The source or target was removed while transferring: nothing written"
    FAILED_PREFIX = "Transfer failed, nothing changed: "
    INPUT_ERRORS = (TransferInputError,)
    FAILURES = (TransferInputError, ValueError)

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.transfer

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "source")
        layout.prop(self, "target")
        layout.prop(self, "method")
        if self.method == "EXAMPLES":
            layout.prop(self, "space")
        else:
            layout.prop(self, "marker_source")
            layout.prop(self, "markers_file" if self.marker_source == "FILE" else "marker_prefix")
            layout.prop(self, "translation")
        draw_frame_range(layout, self)
        layout.prop(self, "output")
        layout.prop(self, "write_to")

    def prepare(self, context) -> TransferPlan:
        pairs = [(p.name, p.target_key) for p in self.pairs]
        return plan_transfer(context, pairs=pairs, **as_keywords(self, PLAN_SETTINGS))

    def steps(self, plan: TransferPlan):
        return iter_transfer(plan)

    def finish(self, context, plan: TransferPlan) -> set[str]:
        try:
            ob, summary = write_transfer(plan)
        except OSError as err:
            self.report({"ERROR"}, f"Cannot write the point cache ({err}): nothing changed")
            return {"CANCELLED"}
        summary.seconds = self.elapsed()
        current_transaction().keep_fields(context.scene.anim_signals.last_transfer)
        context.scene.anim_signals.last_transfer.store(summary)
        for message in summary.warnings[len(plan.warnings):]:
            self.report({"WARNING"}, message)
        self.report({"INFO"}, summary.message())
        return {"FINISHED"}


class ANIM_SIGNALS_OT_transfer_add_marker_pair(MarkerSettings, SettingsOperator, bpy.types.Operator):
    """Mark the one vertex selected on the source and on the target as a matching pair (a vertex group "<prefix>.NNN" on both meshes) for the correspondence method; works in Edit Mode with both meshes"""

    bl_idname = "anim_signals.transfer_add_marker_pair"
    bl_label = "Add Marker Pair"
    bl_options = {"REGISTER", "UNDO"}

    SETTINGS = MARKER_SETTINGS

    @classmethod
    def stored_settings(cls, context):
        return context.scene.anim_signals.transfer

    @transactional  # a second vertex group refused after the first was added takes the first back
    def execute(self, context):
        try:
            source, target = transfer_objects(context, self.source, self.target)
            name, vs, vt = add_marker_pair(source, target, self.marker_prefix)
        except TransferInputError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, f'Marker "{name}": vertex {vs} of "{source.name}" matches vertex {vt} of "{target.name}"')
        return {"FINISHED"}


PAIR_ACTIONS = [
    ("MATCH", "Match Names", "List every shape key named alike on the source and the target (besides their Basis)"),
    ("ADD", "Add", "Add an empty pair to fill in"),
    ("REMOVE", "Remove", "Remove the selected pair"),
    ("CLEAR", "Clear", "Empty the list: the transfer then pairs the shape keys named alike"),
]


class ANIM_SIGNALS_OT_transfer_example_pairs(bpy.types.Operator):
    """Edit the example pairs of the examples method (a source shape key and the target's key for the same pose)"""

    bl_idname = "anim_signals.transfer_example_pairs"
    bl_label = "Example Pairs"
    bl_options = {"REGISTER", "UNDO"}

    action: EnumProperty(name="Action", description="What to do with the list", items=PAIR_ACTIONS, default="MATCH")  # type: ignore[valid-type]

    @transactional
    def execute(self, context):
        s = context.scene.anim_signals.transfer
        keep_pairs(s)
        if self.action == "MATCH":
            try:
                source, target = transfer_objects(context, s.source, s.target)
                source_keys, target_keys, _ = example_pairs(source, target, [])
            except TransferInputError as err:
                self.report({"ERROR"}, str(err))
                return {"CANCELLED"}
            s.pairs.clear()
            for a, b in zip(source_keys[1:], target_keys[1:]):
                item = s.pairs.add()
                item.name, item.target_key = a, b
            s.pair_index = 0
            self.report({"INFO"}, f'{len(s.pairs)} example pair(s) of "{source.name}" and "{target.name}"')
        elif self.action == "ADD":
            s.pairs.add()
            s.pair_index = len(s.pairs) - 1
        elif self.action == "REMOVE":
            if 0 <= s.pair_index < len(s.pairs):
                s.pairs.remove(s.pair_index)
                s.pair_index = max(0, min(s.pair_index, len(s.pairs) - 1))
        else:
            s.pairs.clear()
            s.pair_index = 0
        return {"FINISHED"}


def keep_pairs(settings) -> None:
    """Record the example pairs and the active pair with the running transaction."""
    tx = current_transaction()
    tx.keep(settings, "pair_index")
    saved = [(p.name, p.target_key) for p in settings.pairs]

    def restore() -> None:
        settings.pairs.clear()
        for name, target_key in saved:
            item = settings.pairs.add()
            item.name, item.target_key = name, target_key

    tx.on_rollback(restore)


def menu_func(self, context):
    self.layout.separator()
    self.layout.operator(ANIM_SIGNALS_OT_transfer_deformation.bl_idname, text="Transfer Deformation (Anim Signals)")


MENUS = ("VIEW3D_MT_object_animation",)
classes = (
    ANIM_SIGNALS_OT_transfer_deformation,
    ANIM_SIGNALS_OT_transfer_add_marker_pair,
    ANIM_SIGNALS_OT_transfer_example_pairs,
)


def add_menus() -> None:
    add_to_menus(MENUS, menu_func)


def remove_menus() -> None:
    remove_from_menus(MENUS, menu_func)
