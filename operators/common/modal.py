"""Operator base classes: settings fill, input checks, and long work stepped on a timer.

An operator built on these says only *what* to compute and *how* to write it:

- :class:`SettingsOperator`: ``invoke`` fills the properties the caller did not set from the
  sidebar's settings (``stored_settings``), then runs ``execute``.
- :class:`StepwiseOperator`: long work as a generator of progress fractions. The operator defines
  ``prepare(context) -> plan`` (check the input; raise :class:`InputError`), ``steps(plan)`` (the
  generator; nothing is written to Blender data while it runs) and ``finish(context, plan)`` (write
  the result, report). ``execute`` (headless runs, scripts, the redo panel) runs the steps to the
  end with a progress bar; ``invoke`` in a window runs them on a timer: each timer event runs the
  generator for up to ``STEP_SECONDS`` so Esc stays responsive, the progress bar and status text
  follow, Esc or right-click closes the generator and reports that nothing changed.

A :class:`StepwiseOperator` run is one :class:`~.transaction.Transaction` from ``prepare`` to
``finish``: when the input is refused, the run is cancelled, the steps fail or ``finish`` raises or
returns ``{'CANCELLED'}``, every datablock created since ``prepare`` began is removed and every value
recorded with ``current_transaction().keep(...)`` is put back.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import bpy

from .settings import fill_unset
from .transaction import Transaction

__all__ = ["InputError", "SettingsOperator", "StepwiseOperator"]


class InputError(Exception):
    """Bad input: reported to the user as an error; nothing was changed."""


def _report_warnings(op: Any, plan: Any) -> None:
    for message in getattr(plan, "warnings", ()):
        op.report({"WARNING"}, message)


class SettingsOperator:
    """Operator mixin: properties not set by the caller take the sidebar's values.

    ``SETTINGS`` names the properties shared with the sidebar (see ``common.settings``);
    ``stored_settings(context)`` returns the tool's PropertyGroup on the scene.
    """

    SETTINGS: tuple[str, ...] = ()

    @classmethod
    def stored_settings(cls, context) -> Any:  # pragma: no cover - tools with settings define it
        return None

    def fill_settings(self, context) -> None:
        fill_unset(self, self.stored_settings(context), self.SETTINGS)

    def invoke(self, context, event):
        self.fill_settings(context)
        return self.execute(context)  # type: ignore[attr-defined]


def _redraw_window(context) -> None:
    """Tag every area of the window for a redraw, so the sidebars show the run's end (results, or
    the state before a cancelled run) at once: the scene properties a modal run writes send no
    notifier, and the sidebar kept showing the state from before the run until something else
    redrew it (issue 16, found in the real window with Compare). The redraw happens after the
    modal handler returns, so after ``finish`` has written the results."""
    window = getattr(context, "window", None)
    screen = window.screen if window is not None else None
    for area in screen.areas if screen is not None else ():
        area.tag_redraw()


class StepwiseOperator(SettingsOperator):
    """Operator mixin for long work: a generator of progress fractions, modal with Esc in a window."""

    STEP_SECONDS = 0.08  # work per timer event, so Esc stays responsive
    STATUS_TEXT = "Working... Esc / right-click to cancel"
    CANCELLED_TEXT = "Cancelled: nothing changed"
    REMOVED_TEXT = "The data was removed while working: nothing written"
    FAILED_PREFIX = ""  # e.g. "Fit failed: "
    INPUT_ERRORS: tuple[type[BaseException], ...] = (InputError,)  # from prepare(): reported, nothing changed
    FAILURES: tuple[type[BaseException], ...] = (ValueError,)  # from the steps: reported, nothing written

    _timer: Any = None
    _gen: Iterator[float] | None = None
    _plan: Any = None
    _t0 = 0.0
    _tx: Transaction | None = None
    # True while execute() runs the whole job at once (scripts, --background, Redo): nothing else can
    # touch the data between prepare() and finish(), so checks for edits made meanwhile can be skipped
    blocking = False

    # -- what an operator defines ------------------------------------------------------------

    def prepare(self, context) -> Any:  # pragma: no cover - each operator defines it
        raise NotImplementedError

    def steps(self, plan) -> Iterator[float]:  # pragma: no cover - each operator defines it
        raise NotImplementedError

    def finish(self, context, plan) -> set[str]:  # pragma: no cover - each operator defines it
        raise NotImplementedError

    # -- shared ------------------------------------------------------------------------------

    def elapsed(self) -> float:
        """Seconds since the operator started (input checks, work and writing)."""
        return time.perf_counter() - self._t0

    def prepare_or_report(self, context) -> Any:
        """``prepare`` with its input errors reported; ``None`` when the input was refused."""
        self._t0 = time.perf_counter()
        self._tx = Transaction()
        try:
            with self._tx.running():
                plan = self.prepare(context)
        except self.INPUT_ERRORS as err:
            self._tx = None  # already rolled back
            self.report({"ERROR"}, str(err))  # type: ignore[attr-defined]
            return None
        _report_warnings(self, plan)
        return plan

    def _abandon(self) -> None:
        """Take back what ``prepare`` wrote (the run was cancelled or failed before ``finish``)."""
        tx, self._tx = self._tx, None
        if tx is not None:
            tx.rollback_and_log()

    def _finish_or_report(self, context, plan) -> set[str]:
        tx = self._tx or Transaction()
        self._tx = None
        try:
            with tx.running():
                result = self.finish(context, plan)
        except ReferenceError:
            self.report({"ERROR"}, self.REMOVED_TEXT)  # type: ignore[attr-defined]
            return {"CANCELLED"}
        except self.INPUT_ERRORS + self.FAILURES as err:
            self.report({"ERROR"}, f"{self.FAILED_PREFIX}{err}")  # type: ignore[attr-defined]
            return {"CANCELLED"}
        if "CANCELLED" in result:
            tx.rollback_and_log()
        else:
            tx.commit()
        return result

    def execute(self, context):
        self.blocking = True
        plan = self.prepare_or_report(context)
        if plan is None:
            return {"CANCELLED"}
        wm = context.window_manager
        wm.progress_begin(0, 100)
        try:
            for frac in self.steps(plan):
                wm.progress_update(int(100 * frac))
        except ReferenceError:
            self._abandon()
            self.report({"ERROR"}, self.REMOVED_TEXT)  # type: ignore[attr-defined]
            return {"CANCELLED"}
        except self.FAILURES as err:
            self._abandon()
            self.report({"ERROR"}, f"{self.FAILED_PREFIX}{err}")  # type: ignore[attr-defined]
            return {"CANCELLED"}
        except BaseException:
            self._abandon()
            raise
        finally:
            wm.progress_end()
        return self._finish_or_report(context, plan)

    def invoke(self, context, event):
        self.fill_settings(context)
        if context.window is None or bpy.app.background:
            return self.execute(context)  # no event loop: a modal operator would never finish
        plan = self.prepare_or_report(context)
        if plan is None:
            return {"CANCELLED"}
        return self.start_stepping(context, plan, self.steps(plan))

    # -- the modal run -----------------------------------------------------------------------

    def start_stepping(self, context, plan, steps: Iterator[float]) -> set[str]:
        """Begin the modal run of ``steps`` for ``plan``."""
        self._plan = plan
        self._gen = steps
        wm = context.window_manager
        wm.progress_begin(0, 100)
        self._timer = wm.event_timer_add(0.02, window=context.window)
        wm.modal_handler_add(self)
        if context.workspace is not None:
            context.workspace.status_text_set(self.STATUS_TEXT)
        return {"RUNNING_MODAL"}

    def _cleanup(self, context) -> None:
        _redraw_window(context)
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        gen = self._gen
        self._gen = None
        if gen is not None and hasattr(gen, "close"):
            gen.close()  # generators restore what they changed meanwhile (the scene frame, ...)
        if gen is not None:
            self._abandon()  # stopped before the end: nothing prepare wrote may stay

    def cancel(self, context) -> None:
        """Blender ends the operator (file load, window closed): stop without writing."""
        self._cleanup(context)

    def modal(self, context, event):
        if event.type in {"ESC", "RIGHTMOUSE"} and event.value == "PRESS":
            self._cleanup(context)
            self.report({"WARNING"}, self.CANCELLED_TEXT)  # type: ignore[attr-defined]
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}  # block other input while working (Esc cancels)
        assert self._gen is not None and self._plan is not None
        deadline = time.perf_counter() + self.STEP_SECONDS
        try:
            while True:  # at least one step per timer event, then until the time slice is used
                frac = next(self._gen)
                context.window_manager.progress_update(int(100 * frac))
                if time.perf_counter() >= deadline:
                    break
        except StopIteration:
            plan = self._plan
            self._gen = None
            self._cleanup(context)
            return self._finish_or_report(context, plan)
        except (ReferenceError, *self.FAILURES) as err:
            # data read by the steps was removed meanwhile (ReferenceError), or the work failed
            self._gen = None
            self._cleanup(context)
            self._abandon()
            text = self.REMOVED_TEXT if isinstance(err, ReferenceError) else f"{self.FAILED_PREFIX}{err}"
            self.report({"ERROR"}, text)  # type: ignore[attr-defined]
            return {"CANCELLED"}
        except BaseException:
            self._gen = None
            self._cleanup(context)
            self._abandon()
            raise
        return {"RUNNING_MODAL"}

