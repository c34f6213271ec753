"""Progress generators: long work yields fractions in [0, 1] and returns its result.

- :func:`scaled`: one part of a longer run (its fractions mapped into [lo, hi]), so a tool chains
  several core generators under one progress bar and one Esc;
- :func:`run_blocking`: the whole run at once with the window manager's progress bar, where no
  modal operator can step it (a frame-change handler, a file-load handler).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

import bpy

__all__ = ["run_blocking", "scaled"]

_T = TypeVar("_T")


def scaled(steps: Generator[float, None, _T], lo: float, hi: float,
           seen: list | None = None) -> Generator[float, None, _T]:
    """Re-yield ``steps``' fractions (clamped to [0, 1]) mapped into [lo, hi]; return its value.

    Closing this generator (Esc, an error) closes ``steps`` at once, so the work stops and puts back
    what it changed. ``seen`` gets every fraction ``steps`` yielded (whether it yielded at all tells
    a caller that, say, an index was built rather than loaded)."""
    try:
        while True:
            try:
                frac = next(steps)
            except StopIteration as done:
                return done.value
            if seen is not None:
                seen.append(frac)
            yield lo + (hi - lo) * min(max(float(frac), 0.0), 1.0)
    finally:
        steps.close()


def run_blocking(steps: Generator[float, None, _T]) -> _T:
    """Run ``steps`` to the end with Blender's progress bar (no Esc: for handlers); return its value."""
    result: list = []

    def percent() -> Generator[float, None, None]:  # scaled's percentages; keeps the return value
        result.append((yield from scaled(steps, 0.0, 100.0)))

    wm = bpy.context.window_manager
    if wm is not None:
        wm.progress_begin(0, 100)
    try:
        for value in percent():
            if wm is not None:
                wm.progress_update(int(value))
    finally:
        if wm is not None:
            wm.progress_end()
    return result[0]
