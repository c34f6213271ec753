"""Names as users type them into settings and as reports list them (pure Python, no bpy)."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["parse_names", "short_list"]


def parse_names(text: str) -> list[str]:
    """The names of a comma-separated list, stripped, empty entries dropped.

    >>> parse_names(" take0, ,take2 ")
    ['take0', 'take2']
    """
    return [n.strip() for n in text.split(",") if n.strip()]


def short_list(items: Iterable[str], n: int = 5) -> str:
    """The first ``n`` names for a message, and how many more there are.

    >>> short_list(["a", "b", "c"], n=2)
    'a, b and 1 more'
    """
    items = list(items)
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")
