"""Generated curves for the key-reduction searches' tests and examples: no file needed.

A few wavy channels with a random walk on top, the base the tests of :mod:`.segment_kernel` and
:mod:`.search_kernel` put their steps, kinks and noise on.
"""

from __future__ import annotations

import numpy as np

__all__ = ["wavy_walk"]


def wavy_walk(seed: int | np.random.Generator, n: int, m: int, *, frequency_max: float = 4.0, amplitude_min: float = 0.2,
              walk: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """``m`` channels of ``n`` frames: a sine per channel (0.5 to ``frequency_max`` cycles over the clip,
    random phase, amplitude ``amplitude_min`` to 3) plus a random walk of step ``walk``.

    Parameters
    ----------
    seed : int or numpy.random.Generator
        Seed of the random draws (the same seed, the same curves), or a generator to draw from (it
        goes on from where these draws end).
    n, m : int
        Frames and channels.
    frequency_max, amplitude_min, walk : float
        As above.

    Returns
    -------
    frames : ndarray, shape (n,)
        0, 1, ..., n - 1.
    values : ndarray, shape (n, m)

    Examples
    --------
    >>> frames, values = wavy_walk(0, 100, 3)
    >>> values.shape, frames[-1]
    ((100, 3), 99.0)
    """
    rng = np.random.default_rng(seed)
    frames = np.arange(n, dtype=float)
    t = frames[:, None] / n
    values = (np.sin(2 * np.pi * t * rng.uniform(0.5, frequency_max, m) + rng.uniform(0, 6, m))
              * rng.uniform(amplitude_min, 3, m) + walk * np.cumsum(rng.normal(size=(n, m)), axis=0))
    return frames, values
