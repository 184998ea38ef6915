"""A value given for a scalar parameter, checked against the parameter's dtype: one definition
for the interpreter (`interp/args.py`), the GPU launcher (`runtime/args.py`) and `tlc run --in`
(`inputs.py`), so that all three accept the same values and word a refusal the same way.

Accepted: Python and NumPy numbers of the dtype's kind (a bool for any number, as Python
counts it); an integer or a whole float for an integer dtype when the dtype holds it; for a
bool only True, False, 0 and 1; for a float dtype a number the dtype holds without turning it
infinite (NaN and the infinities themselves pass).  Anything else (strings, complex numbers,
dates, None, NumPy scalars of those kinds) is refused, never converted by NumPy.
"""
from __future__ import annotations

import math

import numpy as np

from .dtypes import DType, from_numpy


class ScalarError(ValueError):
    """Why a value does not fit: the caller adds which parameter (`scalar 'a' (i32) ...`)."""


def number_kind(value) -> str | None:
    """"bool", "int" or "float" for a Python or NumPy real number (or a 0-d array of one);
    None for anything else."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, np.generic):  # ml_dtypes' bf16 and f8 scalars are not np.floating
        dt = from_numpy(value.dtype)
        return "float" if dt is not None and dt.is_float else None
    return None


def scalar_value(dt: DType, value):
    """`value` as the Python bool, int or float that a scalar of dtype `dt` holds; raises
    `ScalarError` with the end of the message (`cannot hold 2.5`, `must be a number; got str`)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    kind = number_kind(value)
    if kind is None:
        raise ScalarError(f"must be a number; got {type(value).__name__}")
    if dt.is_bool:
        if kind == "bool" or kind == "int" and value in (0, 1):
            return bool(value)
        raise ScalarError(f"cannot hold {_shown(value)}")
    if dt.is_int:
        if kind == "float":
            f = float(value)
            if not f.is_integer():  # NaN and the infinities are not whole either
                raise ScalarError(f"cannot hold {_shown(value)}")
        number = int(value)
        info = np.iinfo(dt.numpy())
        if not int(info.min) <= number <= int(info.max):
            raise ScalarError(f"cannot hold {_shown(value)}")
        return number
    try:
        number = float(value)
    except OverflowError:  # an int beyond any float
        raise ScalarError(f"cannot hold {_shown(value)}") from None
    if math.isfinite(number) and abs(number) > float_limit(dt):
        with np.errstate(over="ignore"):  # the cast says whether it rounds down to the limit
            if not math.isfinite(float(dt.numpy().type(number))):
                raise ScalarError(f"cannot hold {_shown(value)}")
    return number


def _shown(value) -> str:
    """`value` for a refusal; an integer of more than 4300 digits, which repr refuses to write
    (ValueError), by its count of digits."""
    try:
        return repr(value)
    except ValueError:
        return f"an integer of {digit_count(int(value))} digits"


def digit_count(value: int) -> int:
    """The decimal digits of `value`, also past the 4300 that str() refuses to write."""
    try:
        return len(str(abs(value)))
    except ValueError:  # Python's limit on int-to-str conversion: log10 is within one there
        return math.floor(math.log10(abs(value))) + 1


def float_limit(dt: DType) -> float:
    """The largest magnitude a float dtype holds: values within it never overflow (the fast
    launch path compares with it and leaves the rest to `scalar_value`)."""
    return dt.largest_finite()
