"""A small cache of models loaded from objects' custom properties (pose spaces, spatial keyframes).

Decoding a stored model (numpy arrays from ID properties, fitted interpolants, bone bindings) costs
milliseconds; a drag on the canvas asks for it on every mouse move. Entries are keyed by what makes
a stored model valid: the object, the token written with each save, and the structure of the data
it drives, so a stale entry is never returned; the oldest entry goes when the cache is full.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["ModelCache"]

_T = TypeVar("_T")


class ModelCache(Generic[_T]):
    """Loaded models by key, at most ``size`` of them (first in, first out)."""

    def __init__(self, size: int = 8):
        self.size = size
        self.entries: dict[tuple, _T] = {}

    def get(self, key: tuple, load: Callable[[], _T]) -> _T:
        """The model for ``key``, loaded by ``load()`` the first time (its exceptions pass through,
        and nothing is cached then)."""
        hit = self.entries.get(key)
        if hit is None:
            hit = load()
            if len(self.entries) >= self.size:
                self.entries.pop(next(iter(self.entries)))
            self.entries[key] = hit
        return hit

    def forget(self, first: Hashable) -> None:
        """Drop every entry whose key starts with ``first`` (an object's pointer)."""
        for key in [k for k in self.entries if k[0] == first]:
            del self.entries[key]
