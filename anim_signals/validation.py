"""Argument checks at the public boundary of the core: one place, one wording.

Every helper raises :class:`ValueError` with a message that starts with the argument's name,
so a caller (an operator, the CLI, a script) can show it as it is. Helpers return the value in
the form the core computes with (a float64 array, a float, an int), so a public function checks
and converts in one line::

    values = finite_array("values", values, ndim=(1, 2), min_length=4)
    tolerance = positive("tolerance", tolerance)

Inner functions trust what the public function checked and do not check again.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Collection, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "MAX_MAGNITUDE",
    "choice",
    "finite_array",
    "finite_result",
    "finite_scalar",
    "index_list",
    "non_negative",
    "positive",
    "positive_int",
]

# Largest magnitude the core accepts in data arrays that it squares: (1e150)^2 times a few
# million samples still fits a float64 (1.8e308). Larger values overflow sums of squares
# (least squares, RMS, Gram matrices) to inf.
MAX_MAGNITUDE = 1e150

_T = TypeVar("_T")


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def finite_array(
    name: str,
    value: Any,
    *,
    ndim: int | Sequence[int] | None = None,
    min_length: int | None = 1,
    max_abs: float | None = None,
) -> np.ndarray:
    """``value`` as a float64 array of finite numbers, or ValueError naming ``name``.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    value : array_like
        Numbers (a list, tuple or ndarray of ints or floats).
    ndim : int or sequence of int, optional
        Allowed numbers of dimensions.
    min_length : int or None
        Fewest entries along the first axis (default 1: empty arrays are refused; None allows
        them).
    max_abs : float, optional
        Largest magnitude allowed (e.g. :data:`MAX_MAGNITUDE` for data that gets squared).

    Returns
    -------
    ndarray of float64
        A new array when ``value`` needed converting, otherwise ``value`` itself.

    Raises
    ------
    ValueError
        On ragged nesting, non-numeric entries (strings, objects, complex), the wrong number of
        dimensions, too few entries, NaN or infinite entries, or entries beyond ``max_abs``.

    Examples
    --------
    >>> finite_array("values", [[1, 2], [3, 4]], ndim=2).dtype
    dtype('float64')
    >>> finite_array("values", [1.0, float("nan")])
    Traceback (most recent call last):
    ...
    ValueError: values has a NaN or infinite value (nan) at index 1
    """
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{name} must be an array of numbers (got {_describe(value)})") from err
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numbers, got {arr.dtype} values")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            wanted = " or ".join(str(d) for d in allowed)
            raise ValueError(f"{name} must have {wanted} dimension(s), got shape {arr.shape}")
    if min_length is not None:
        length = arr.shape[0] if arr.ndim else 1
        if length < min_length or arr.size == 0:
            raise ValueError(f"{name} needs at least {max(min_length, 1)} entries, got shape {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.unravel_index(int(np.argmax(bad)), arr.shape)
        index = where[0] if len(where) == 1 else tuple(int(i) for i in where)
        raise ValueError(f"{name} has a NaN or infinite value ({arr[where]}) at index {index}")
    if max_abs is not None and arr.size and float(np.abs(arr).max()) > max_abs:
        where = np.unravel_index(int(np.argmax(np.abs(arr))), arr.shape)
        raise ValueError(f"{name} has a value too large to compute with ({arr[where]:.3g}; the limit is {max_abs:.3g})")
    return arr


def finite_scalar(name: str, x: Any) -> float:
    """``x`` as a finite float, or ValueError naming ``name``.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    x : real number
        Booleans, strings and arrays are refused.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On anything but a finite real number.
    """
    if isinstance(x, bool | np.bool_) or not isinstance(x, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a number, got {_describe(x)}")
    value = float(x)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def positive(name: str, x: Any) -> float:
    """``x`` as a finite float > 0, or ValueError naming ``name``.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    x : real number

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On a non-number, NaN, an infinity, zero or a negative number.

    Examples
    --------
    >>> positive("tolerance", 0)
    Traceback (most recent call last):
    ...
    ValueError: tolerance must be positive, got 0.0
    """
    value = finite_scalar(name, x)
    if not value > 0.0:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


def non_negative(name: str, x: Any) -> float:
    """``x`` as a finite float >= 0, or ValueError naming ``name``.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    x : real number

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On a non-number, NaN, an infinity or a negative number.
    """
    value = finite_scalar(name, x)
    if value < 0.0:
        raise ValueError(f"{name} must be zero or positive, got {value}")
    return value


def positive_int(name: str, n: Any, minimum: int = 1) -> int:
    """``n`` as an int >= ``minimum``, or ValueError naming ``name``.

    Integral floats (``3.0``) are accepted; fractions, booleans, NaN and strings are not.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    n : int
    minimum : int
        Smallest allowed value (default 1; 0 for counts that may be zero).

    Returns
    -------
    int

    Raises
    ------
    ValueError
        On a non-integer or a value below ``minimum``.

    Examples
    --------
    >>> positive_int("population", 1, minimum=2)
    Traceback (most recent call last):
    ...
    ValueError: population must be an integer >= 2, got 1
    """
    if isinstance(n, bool | np.bool_):
        raise ValueError(f"{name} must be an integer, got {n!r}")
    try:
        value = operator.index(n)
    except TypeError:
        if isinstance(n, float | np.floating) and math.isfinite(n) and float(n).is_integer():
            value = int(n)
        else:
            raise ValueError(f"{name} must be an integer, got {_describe(n)}") from None
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def choice(name: str, value: _T, choices: Collection[_T]) -> _T:
    """``value`` when it is one of ``choices``, or ValueError naming ``name`` and the choices.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    value : object
    choices : collection
        The allowed values.

    Returns
    -------
    object
        ``value``.

    Raises
    ------
    ValueError
        When ``value`` is not one of ``choices``.
    """
    try:
        ok = value in choices
    except TypeError:  # an unhashable value asked of a set
        ok = False
    if not ok:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}, got {_describe(value)}")
    return value


def index_list(name: str, indices: Iterable[Any], size: int) -> list[int]:
    """Indices as ints, each within ``0 .. size - 1``, or ValueError naming ``name``.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    indices : iterable of int
    size : int
        Length of the axis the indices select from.

    Returns
    -------
    list of int

    Raises
    ------
    ValueError
        On a non-integer or an index out of range.
    """
    out = []
    for i in indices:
        value = positive_int(name, i, minimum=0)
        if value >= size:
            raise ValueError(f"{name} has index {value} out of range 0..{size - 1}")
        out.append(value)
    return out


def finite_result(name: str, value: Any) -> Any:
    """``value`` (an array or number) when every entry is finite, else ValueError naming ``name``.

    Checks what the core is about to return where an overflow deep inside (squares of huge
    values, a near-singular solve) could make it NaN or infinite: a clean refusal instead of
    silently wrong output.

    Parameters
    ----------
    name : str
        What the value is, for the message.
    value : array_like or float

    Returns
    -------
    The same ``value``.

    Raises
    ------
    ValueError
        When any entry is NaN or infinite.
    """
    if not np.all(np.isfinite(np.asarray(value, dtype=float))):
        raise ValueError(
            f"{name} came out non-finite: the input's magnitudes are beyond what float64 can compute with"
        )
    return value
