"""Long core work that reports progress through a callback, as a generator for the stepwise operators.

A :class:`~.modal.StepwiseOperator` runs a generator of progress fractions, a little per timer event.
Some core work cannot be cut into steps from the outside (an index build inside a compiled library
reports progress through a callback): :func:`iter_in_thread` runs it in a worker thread and yields
its latest progress until it ends, so Blender's window stays responsive and Esc works. Closing the
generator (Esc, an error) asks the work to stop: the next progress callback raises
:class:`Cancelled` inside the worker. The worker never touches Blender data: everything it makes is
handed back as the generator's return value, and the caller writes (saves) it only at the end, so a
cancelled run leaves nothing behind.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from typing import Any, TypeVar

__all__ = ["Cancelled", "iter_in_thread"]

_T = TypeVar("_T")

POLL_SECONDS = 0.02  # how long one step waits for the worker: short, so a timer event returns in time
STOP_WAIT_SECONDS = 0.5  # how long a cancel waits for the worker to notice (then it ends on its own, unseen)


class Cancelled(Exception):
    """Raised inside the worker by its progress callback once the run was cancelled."""


def iter_in_thread(work: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Generator[float, None, _T]:
    """Run ``work(*args, progress=callback, **kwargs)`` in a worker thread, yielding its progress.

    ``callback(fraction, *message)`` (a float in [0, 1], anything after it ignored) is what ``work``
    calls now and then; the generator
    yields the latest fraction every :data:`POLL_SECONDS` or so and returns ``work``'s result
    (``result = yield from iter_in_thread(...)``). An exception of ``work`` is raised here. Closing
    the generator before the end makes the next callback raise :class:`Cancelled` in the worker;
    the generator waits up to :data:`STOP_WAIT_SECONDS` for it, then leaves the worker (a daemon
    thread) to end on its own and drops its result.
    """
    stop = threading.Event()
    state: dict[str, Any] = {"fraction": 0.0}

    def progress(fraction: float, *_message: Any) -> None:
        if stop.is_set():
            raise Cancelled("cancelled")
        state["fraction"] = min(max(float(fraction), 0.0), 1.0)

    def run() -> None:
        try:
            state["result"] = work(*args, progress=progress, **kwargs)
        except BaseException as err:  # handed to the generator (Cancelled included)
            state["error"] = err

    worker = threading.Thread(target=run, name="anim_signals_worker", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(POLL_SECONDS)
            yield float(state["fraction"])
    finally:
        if worker.is_alive():  # closed before the end
            stop.set()
            worker.join(STOP_WAIT_SECONDS)
    if "error" in state:
        raise state["error"]
    return state["result"]
