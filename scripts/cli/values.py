"""Argparse types for every numeric option of the command line: one shared set, so a negative, zero,
non-finite or out-of-range value is refused by argparse (exit code 2, the option named) instead of being
clamped silently by a Blender property.

``type=positive_float`` etc. are ready-made; ``float_range`` / ``int_range`` make the others (e.g. the
operator's own minimum, so 1e-5 degrees is refused rather than clamped to 1e-4).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

# Blender's IntProperty is a signed 32-bit int: larger values raise deep inside bpy.ops
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _number_text(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _bounds_text(minimum, maximum, min_exclusive: bool) -> str:
    if minimum is not None and maximum is not None:
        return f"between {_number_text(minimum)} and {_number_text(maximum)}"
    if minimum is not None:
        if min_exclusive:
            return "greater than 0" if minimum == 0 else f"greater than {_number_text(minimum)}"
        return f"at least {_number_text(minimum)}"
    if maximum is not None:
        return f"at most {_number_text(maximum)}"
    return "a number"


def float_range(minimum: float | None = None, maximum: float | None = None, *, min_exclusive: bool = False,
                name: str = "") -> Callable[[str], float]:
    """An argparse type: a finite float within [minimum, maximum] (``min_exclusive``: above minimum)."""
    need = _bounds_text(minimum, maximum, min_exclusive)

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number ({need}), got {text!r}")
        too_low = minimum is not None and (value <= minimum if min_exclusive else value < minimum)
        if too_low or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"must be {need}, got {text!r}")
        return value

    parse.__name__ = name or "float_range"
    return parse


def int_range(minimum: int | None = None, maximum: int | None = None, *, name: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number within [minimum, maximum] (and Blender's 32-bit int range)."""
    lo = INT32_MIN if minimum is None else max(minimum, INT32_MIN)
    hi = INT32_MAX if maximum is None else min(maximum, INT32_MAX)
    need = _bounds_text(minimum, maximum, False) if (minimum is not None or maximum is not None) else ""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < lo or value > hi:
            if minimum is not None and value < minimum or maximum is not None and value > maximum:
                raise argparse.ArgumentTypeError(f"must be {need}, got {text!r}")
            raise argparse.ArgumentTypeError(f"must be between {INT32_MIN} and {INT32_MAX} (Blender's integer "
                                             f"range), got {text!r}")
        return value

    parse.__name__ = name or "int_range"
    return parse


finite_float = float_range(name="finite_float")
positive_float = float_range(0.0, min_exclusive=True, name="positive_float")
non_negative_float = float_range(0.0, name="non_negative_float")
unit_interval = float_range(0.0, 1.0, name="unit_interval")
positive_int = int_range(1, name="positive_int")
non_negative_int = int_range(0, name="non_negative_int")
frame_number = int_range(name="frame_number")  # any frame Blender can hold, negative ones included
