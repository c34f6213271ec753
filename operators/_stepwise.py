"""Long work as a modal operator: a generator of progress fractions stepped on a timer.

Shared by Fit Spline, Compare Actions and Build Pose Space.  Each timer event runs the generator for
up to ``STEP_SECONDS`` (so Esc stays responsive), the progress bar and the status bar follow, Esc or
right-click closes the generator and reports that nothing changed (the operators write nothing
before the generator has finished), and the operator's ``_finish(context, plan)`` writes the result.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any


class StepwiseModal:
    STEP_SECONDS = 0.08  # work per timer event
    STATUS_TEXT = "Working... Esc / right-click to cancel"
    CANCELLED_TEXT = "Cancelled: nothing changed"
    REMOVED_TEXT = "The data was removed while working: nothing written"
    FAILED_PREFIX = ""  # e.g. "Fit failed: "
    FAILURES: tuple[type[BaseException], ...] = (ValueError,)  # reported as errors, nothing written

    _timer: Any = None
    _gen: Iterator[float] | None = None
    _plan: Any = None

    def _finish(self, context, plan) -> set[str]:  # pragma: no cover - each operator defines it
        raise NotImplementedError

    def start_stepping(self, context, plan, steps: Iterator[float]) -> set[str]:
        """Begin the modal run of ``steps`` for ``plan`` (call from invoke)."""
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
            try:
                return self._finish(context, plan)
            except ReferenceError:
                self.report({"ERROR"}, self.REMOVED_TEXT)  # type: ignore[attr-defined]
                return {"CANCELLED"}
        except self.FAILURES as err:
            self._gen = None
            self._cleanup(context)
            self.report({"ERROR"}, f"{self.FAILED_PREFIX}{err}")  # type: ignore[attr-defined]
            return {"CANCELLED"}
        return {"RUNNING_MODAL"}
