"""print()'s format string: its conversions, what each takes, and the C `printf` format the
code generator writes for them.

Why: the device's printf reads its arguments by the format, so `%s` on a number reads the
number as a pointer and faults, `%n` writes through one, `%f` given an int and `%d` given an
i64 read the wrong number of bytes.  The type checker refuses every conversion that does not
fit its argument's dtype (`conversions`, `mismatch`), and the generator writes each
conversion with the length its argument is passed with (`c_format`, `c_cast`): floats as
double, i64 and u32 as long long (`%d` becomes `%lld`), u64 as unsigned long long (`%llu`),
smaller integers and bools as int, so the GPU prints the value the interpreter prints.  A
program writes `%d` and `%f` whatever the widths, and never a length modifier.
"""
from __future__ import annotations

import re

from .dtypes import DType
from .frozen import frozen

INTEGER_LETTERS = "diuoxX"
FLOAT_LETTERS = "fFeEgG"
MAX_WIDTH = 999  # a larger width or precision would only print padding (and slow the interpreter)
MAX_VALUES = 32  # CUDA's printf takes at most 32 arguments after the format and ignores the rest
VALID = "integers and bools take %d %i %u %o %x %X, floats %f %F %e %E %g %G; %% prints a percent sign"

_NOT_NUMBERS = {"s": "read its argument as the address of a string", "S": "read its argument as the address of a string",
                "p": "print its argument as an address", "n": "write through its argument as an address",
                "c": "print its argument as a character", "C": "print its argument as a character"}
_CONVERSION = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d*)(?:\.(?P<precision>\*|\d*))?"
                         r"(?P<length>hh|h|ll|l|L|j|z|t)?(?P<letter>.?)", re.S)


@frozen
class Conversion:
    text: str  # as written: "%-8.3f"
    start: int  # where it starts in the format
    letter: str
    length: str

    @property
    def spec(self) -> str:
        """The conversion without its letter and length: "%-8.3"."""
        return self.text[: len(self.text) - len(self.letter) - len(self.length)]


class FormatError(ValueError):
    """A format print() cannot take: `code`, `message`, `hint` of its diagnostic."""

    def __init__(self, code: str, message: str, hint: str | None = None):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


def conversions(fmt: str) -> tuple[Conversion, ...]:
    """The conversions of `fmt` in order (`%%` is text); raises `FormatError` for the first
    one print() cannot take."""
    if "\0" in fmt:  # C's printf ends the format there; the interpreter printed the rest
        raise FormatError("E170", "the format holds a NUL character ('\\x00'), where the device's printf stops")
    found, i = [], 0
    while (i := fmt.find("%", i)) >= 0:
        if fmt.startswith("%%", i):
            i += 2
            continue
        m = _CONVERSION.match(fmt, i)
        text, letter, length = _shown(m.group(0)), m.group("letter"), m.group("length") or ""
        if not letter:
            raise FormatError("E170", f"the format ends in an unfinished conversion '{text}'",
                              "write %% for a percent sign")
        for part in ("width", "precision"):
            value = m.group(part)
            if value == "*":
                raise FormatError("E171", f"'{text}' takes its {part} from an argument, which print() does not do",
                                  f"write the {part} into the format, e.g. %8.3f")
            digits = (value or "").lstrip("0")  # counted before int(), which refuses 4301 digits
            if len(digits) > len(str(MAX_WIDTH)) or digits and int(digits) > MAX_WIDTH:
                shown = digits if len(digits) <= 20 else f"{len(digits)} digits"
                raise FormatError("E171", f"'{text}' has a {part} of {shown}; print() takes at most {MAX_WIDTH}")
        if letter in _NOT_NUMBERS:
            raise FormatError("E172", f"'{text}' would {_NOT_NUMBERS[letter]}; print() prints numbers", VALID)
        if letter not in INTEGER_LETTERS + FLOAT_LETTERS:
            raise FormatError("E173", f"'{text}' is not a conversion print() knows", VALID)
        if length:
            plain = text[: len(text) - len(letter) - len(length)] + letter
            raise FormatError("E174", f"'{text}' has a length modifier; print() passes each value at the "
                              f"length of its dtype", f"write '{plain}'")
        found.append(Conversion(m.group(0), i, letter, length))
        i = m.end()
    return tuple(found)


def _shown(text: str) -> str:
    """`text` for a one-line message: a newline or another control character escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def mismatch(conv: Conversion, dt: DType) -> str | None:
    """Why `conv` cannot print a value of `dt`, or None when it can."""
    if dt.is_float and conv.letter not in FLOAT_LETTERS:
        return f"'{conv.text}' prints an integer but the value is {dt}"
    if not dt.is_float and conv.letter not in INTEGER_LETTERS:
        return f"'{conv.text}' prints a float but the value is {dt}"
    return None


def c_cast(dt: DType) -> str:
    """The C type a value of `dt` is passed to printf as: one that holds every value of `dt`,
    so that `%d` prints the value the interpreter prints."""
    if dt.is_float:
        return "double"
    if dt.bits < 32 or dt.bits == 32 and dt.kind == "int":
        return "int"
    return "unsigned long long" if dt.bits == 64 and dt.kind == "uint" else "long long"


def c_format(fmt: str, dtypes: tuple[DType, ...]) -> str:
    """`fmt` (checked) with each conversion written for the C type `c_cast` passes its value
    as: `ll` before the letter of a value passed as a long long, `%llu` for a u64's `%d`."""
    out, at = [], 0
    for conv, dt in zip(conversions(fmt), dtypes):
        out.append(fmt[at:conv.start])
        letter, cast = conv.letter, c_cast(dt)
        if cast == "unsigned long long" and letter in "di":
            letter = "u"
        out.append(conv.spec + ("ll" if cast.endswith("long long") else "") + letter)
        at = conv.start + len(conv.text)
    out.append(fmt[at:])
    return "".join(out)


def as_line(fmt: str) -> str:
    """What one print() writes: its format, ended by a newline when it lacks one (on the GPU
    and on the interpreter alike)."""
    return fmt if fmt.endswith("\n") else fmt + "\n"
