"""Running the core's generator forms (``iter_fit_channels``, ``iter_fewest_keys``,
``iter_reconstruct``, ...): each yields its progress in [0, 1] and returns its result."""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

__all__ = ["run_steps"]

_T = TypeVar("_T")


def run_steps(steps: Generator[float, None, _T]) -> tuple[list[float], _T]:
    """Run a generator of progress steps to its end.

    Parameters
    ----------
    steps : generator
        Yields progress values (floats), returns a result.

    Returns
    -------
    progress : list of float
        Every value it yielded, in order.
    result
        What it returned.

    Examples
    --------
    >>> def work():
    ...     yield 0.5
    ...     yield 1.0
    ...     return "done"
    >>> run_steps(work())
    ([0.5, 1.0], 'done')
    """
    progress: list[float] = []
    while True:
        try:
            progress.append(next(steps))
        except StopIteration as stop:
            return progress, stop.value
