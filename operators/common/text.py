"""Names as users type them into settings and as reports list them (pure Python, no bpy)."""

from __future__ import annotations

import csv
from collections.abc import Iterable

__all__ = ["parse_names", "quote_names", "short_list"]


def parse_names(text: str) -> list[str]:
    """The names of a comma-separated list, stripped, empty entries dropped. A name holding a comma
    goes in double quotes (a quote inside quotes is doubled), as in a spreadsheet's CSV.

    >>> parse_names(" take0, ,take2 ")
    ['take0', 'take2']
    >>> parse_names('"Walk, fast", Run')
    ['Walk, fast', 'Run']
    """
    fields = next(csv.reader([text], skipinitialspace=True), [])
    return [n.strip() for n in fields if n.strip()]


def quote_names(names: Iterable[str]) -> str:
    """The inverse of :func:`parse_names`: names joined by ", ", quoted where they hold a comma
    or a double quote.

    >>> quote_names(["Walk, fast", "Run"])
    '"Walk, fast", Run'
    """
    return ", ".join(f'"{n.replace(chr(34), chr(34) * 2)}"' if ("," in n or '"' in n) else n for n in names)


def short_list(items: Iterable[str], n: int = 5) -> str:
    """The first ``n`` names for a message, and how many more there are.

    >>> short_list(["a", "b", "c"], n=2)
    'a, b and 1 more'
    """
    items = list(items)
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")
