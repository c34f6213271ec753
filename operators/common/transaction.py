"""All or nothing: what an operator wrote is taken back when it fails part-way.

Blender's undo covers a finished operator, not one that raised half-way through: an action created
before a refusal stays behind, a model stored before a failing bake stays changed. A
:class:`Transaction` records which datablocks exist when it starts and what the operator said it
will touch; :meth:`Transaction.rollback` removes every datablock created since and puts the recorded
values back. :class:`~.modal.StepwiseOperator` runs ``prepare`` and ``finish`` inside one, and
:func:`transactional` does the same for a plain ``execute``::

    class MyOperator(SettingsOperator, bpy.types.Operator):
        @transactional
        def execute(self, context):
            tx = current_transaction()
            tx.keep(context.scene.anim_signals.tool, "stored_model")   # restored if we fail
            tx.keep_action(ob)                                          # action + slot restored
            ...

Errors are not swallowed: after the rollback the exception goes on to the operator's reporting
(:class:`~.modal.InputError` and the tool's failures become one message; anything else is a bug and
keeps its traceback).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import bpy

from ..blender_data.actions import assign_action, get_action, slot_identifier

__all__ = ["Transaction", "current_transaction", "transaction", "transactional"]

#: The ``bpy.data`` collections whose new members a rollback removes. Objects first: removing an
#: object frees its data for removal; shape-key datablocks go with their mesh. (Scenes: an evaluation
#: scene, :func:`..blender_data.frames.evaluation_scene`, should a failing run ever leave one.)
ID_COLLECTIONS = ("objects", "actions", "meshes", "armatures", "images", "texts", "cache_files",
                  "collections", "materials", "node_groups", "scenes")

_MISSING = object()
_active: list[Transaction] = []


def _pointers(collection: Any) -> set[int]:
    return {id_data.as_pointer() for id_data in collection}


class Transaction:
    """What to take back if an operator fails: new datablocks, and recorded values."""

    def __init__(self) -> None:
        self._before = {name: _pointers(getattr(bpy.data, name)) for name in ID_COLLECTIONS
                        if hasattr(bpy.data, name)}
        # keep_previous_action() gives the action it replaces a fake user: a failed run must not
        self._fake_users = {a.as_pointer(): a.use_fake_user for a in bpy.data.actions}
        self._undo: list[Callable[[], None]] = []
        self._on_commit: list[Callable[[], None]] = []

    # -- what the operator will touch --------------------------------------------------------

    def keep(self, owner: Any, *attributes: str) -> None:
        """Restore ``owner.<attribute>`` (RNA or Python attributes) on rollback."""
        for name in attributes:
            value = getattr(owner, name)
            if hasattr(value, "copy") and not isinstance(value, bpy.types.ID):
                value = value.copy()  # arrays, dicts, lists: a snapshot, not a live reference
            self._undo.append(functools.partial(setattr, owner, name, value))

    def keep_fields(self, owner: Any) -> None:
        """Restore every editable plain property of a PropertyGroup (``owner``: a tool's stored
        result or settings; pointers and collections not included) on rollback."""
        self.keep(owner, *[p.identifier for p in owner.bl_rna.properties
                           if not p.is_readonly and p.identifier != "rna_type"
                           and p.type not in {"POINTER", "COLLECTION"}])

    def keep_item(self, owner: Any, key: str) -> None:
        """Restore the custom property ``owner[key]`` on rollback (deleted again if it was absent)."""
        value = owner.get(key, _MISSING)
        if hasattr(value, "to_dict"):
            value = value.to_dict()
        elif hasattr(value, "to_list"):
            value = value.to_list()

        def restore() -> None:
            if value is _MISSING:
                if key in owner:
                    del owner[key]
            else:
                owner[key] = value

        self._undo.append(restore)

    def keep_action(self, id_data: Any) -> None:
        """Restore the action (and on 4.4+ its slot) assigned to ``id_data``; animation data the
        operator creates on an ID that had none is cleared again."""
        had_data = id_data.animation_data is not None
        action = get_action(id_data)
        slot = slot_identifier(id_data)

        def restore() -> None:
            if not had_data:
                if id_data.animation_data is not None:
                    id_data.animation_data_clear()
                return
            if get_action(id_data) is not action:
                assign_action(id_data, action, slot)

        self._undo.append(restore)

    def on_commit(self, done: Callable[[], None]) -> None:
        """Call ``done()`` once the operator has succeeded (:meth:`commit`): for what may only be
        thrown away when nothing can fail any more, e.g. the earlier file a new one replaced."""
        self._on_commit.append(done)

    def commit(self) -> None:
        """The operator succeeded: run the :meth:`on_commit` calls; nothing is rolled back after this."""
        done, self._on_commit = self._on_commit, []
        self._undo.clear()
        for call in done:
            try:
                call()
            except (OSError, ReferenceError, RuntimeError) as err:
                print(f"Anim Signals: clean-up after success failed: {err}")

    def keep_file(self, path: str, previous: str | None) -> None:
        """The file ``path`` was just written, its earlier version moved aside to ``previous`` (None
        when there was none, see ``blender_data.meshes.write_point_cache(keep_previous=True)``): on
        rollback the earlier file is put back (or the new one removed), on commit ``previous`` goes."""
        if previous is None:
            def remove_new() -> None:
                if os.path.exists(path):
                    os.remove(path)

            self.on_rollback(remove_new)
            return
        self.on_rollback(lambda: os.replace(previous, path))
        self.on_commit(lambda: os.remove(previous))

    def on_rollback(self, undo: Callable[[], None]) -> None:
        """Call ``undo()`` on rollback (after the values recorded before it, in reverse order)."""
        self._undo.append(undo)

    # -- taking it back ----------------------------------------------------------------------

    def new_ids(self) -> list[Any]:
        """The datablocks created since the transaction started (objects first)."""
        found = []
        for name, before in self._before.items():
            found += [id_data for id_data in getattr(bpy.data, name) if id_data.as_pointer() not in before]
        return found

    def rollback(self) -> list[str]:
        """Put the recorded values back and remove every new datablock. Returns what went wrong
        while doing so (empty when everything was restored); never raises."""
        problems: list[str] = []
        for undo in reversed(self._undo):
            try:
                undo()
            except (ReferenceError, RuntimeError, TypeError, ValueError, AttributeError, KeyError) as err:
                problems.append(str(err))
        self._undo.clear()
        self._on_commit.clear()
        for name in self._before:
            collection = getattr(bpy.data, name)
            for id_data in [i for i in collection if i.as_pointer() not in self._before[name]]:
                try:
                    collection.remove(id_data)
                except (ReferenceError, RuntimeError) as err:
                    problems.append(str(err))
        for action in bpy.data.actions:
            old = self._fake_users.get(action.as_pointer())
            if old is not None and action.use_fake_user != old and action.library is None:
                action.use_fake_user = old
        return problems


    @contextmanager
    def running(self) -> Iterator[Transaction]:
        """Make this the current transaction for a block; on any exception, roll back and let the
        exception go on. A transaction may run several blocks (a modal operator's ``prepare`` and,
        events later, its ``finish``)."""
        _active.append(self)
        try:
            yield self
        except BaseException:
            self.rollback_and_log()
            raise
        finally:
            _active.remove(self)

    def rollback_and_log(self) -> None:
        """:meth:`rollback`, printing (not raising) anything that could not be restored."""
        for problem in self.rollback():
            print(f"Anim Signals: could not fully roll back: {problem}")


def current_transaction() -> Transaction:
    """The innermost running transaction (a throwaway one outside any, so callers need no check)."""
    return _active[-1] if _active else Transaction()


@contextmanager
def transaction() -> Iterator[Transaction]:
    """Run a block as a new transaction: on any exception, roll back, then let the exception go on;
    committed when the block ends normally."""
    with Transaction().running() as tx:
        yield tx
    tx.commit()


def transactional(method: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for an operator's ``execute(self, context)`` (or any ``(self, context, ...)``
    method): run it as a :func:`transaction`; when it returns ``{'CANCELLED'}`` the transaction is
    rolled back too, so a refusal reported by the method itself leaves nothing behind either."""

    # (self, context) spelled out: Blender refuses to register an execute whose code object does
    # not take exactly two positional arguments
    @functools.wraps(method)
    def wrapper(self: Any, context: Any, *args: Any, **kwargs: Any) -> Any:
        with transaction() as tx:
            result = method(self, context, *args, **kwargs)
            if isinstance(result, set) and "CANCELLED" in result:
                tx.rollback_and_log()
        return result

    return wrapper
