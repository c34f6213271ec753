"""The compiled segment test made ready in the background when Blender's UI starts.

numba compiles the kernel once after an install or an update (about 30 s on a 2-core machine) and
loads it from its cache afterwards (about 0.5 s). :func:`schedule` (called at registration, in the
UI only) starts :func:`anim_signals.splines.key_reduction.warm_up` in a thread 2 s after startup, so
an animator's first fit does not wait for the compile; :func:`after_warm_up` lets a modal fit that
starts meanwhile wait for it on the timer (Esc stays live) instead of blocking the UI.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import bpy

__all__ = ["STATE", "after_warm_up", "schedule", "unschedule", "warming_up"]

# "" before it starts, "running", then where the test runs ("worker", "process", "numpy") or
# "failed: <why>" (a fit then reports the same failure).
STATE = {"state": ""}
WAIT_SECONDS = 0.02  # per step while a fit waits for the warm-up


def _warm_up() -> None:
    from ...anim_signals.splines import key_reduction

    try:
        STATE["state"] = key_reduction.warm_up()
    except Exception as exc:  # noqa: BLE001 - nothing to show at startup: the first fit reports it
        STATE["state"] = f"failed: {type(exc).__name__}: {exc}"


def start() -> None:
    """Compile the segment test in a background thread (the timer's callback; where the kernel runs
    in a worker process beside Mesa's LLVM the compile runs there, else in this process with the GIL
    shared)."""
    STATE["state"] = "running"
    threading.Thread(target=_warm_up, name="anim_signals_warm_up", daemon=True).start()


def schedule() -> None:
    """At registration: start the warm-up 2 s later, in the UI only (not in ``--background``: a
    pipeline's fits compile on first use; ``ANIM_SIGNALS_WARM_UP=0`` turns it off)."""
    if not bpy.app.background and os.environ.get("ANIM_SIGNALS_WARM_UP", "1") != "0" and not STATE["state"]:
        bpy.app.timers.register(start, first_interval=2.0)


def unschedule() -> None:
    if bpy.app.timers.is_registered(start):
        bpy.app.timers.unregister(start)


def warming_up() -> bool:
    """Whether the warm-up is compiling right now."""
    return STATE["state"] == "running"


def after_warm_up(work: Iterator[float]) -> Iterator[float]:
    """``work`` once the warm-up has finished: progress 0 meanwhile, a short sleep per step (the
    modal run stays responsive and Esc cancels; nothing has started)."""
    while warming_up():
        time.sleep(WAIT_SECONDS)
        yield 0.0
    yield from work
