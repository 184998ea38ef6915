"""What `tlc tune` tries: the configurations of a kernel's `@autotune` space (or `--space`),
labelled, and the shape bucket a tuned configuration is recorded for.

A bucket is, for each shape symbol given, the power-of-two range its size falls in
((2^(k-1), 2^k]: 4096 -> [2049, 4096], 1000 -> [513, 1024]), and each dtype parameter's
dtype: a configuration measured at one size is used for sizes like it, and a call of another
size tunes its own bucket.
"""
from __future__ import annotations

import itertools

from ..diagnostics import Diagnostic, DiagnosticError
from ..frozen import frozen
from ..schedule.bind import parse_value


@frozen
class Candidate:
    """One configuration: the constants it sets, in the space's order."""

    constants: tuple[tuple[str, object], ...]

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.constants)

    def as_dict(self) -> dict:
        return dict(self.constants)


def parse_space(items, fn) -> dict:
    """`--space BM=64,128 --space stages=2,3` as {name: [values]}; every name a `const`
    parameter of the kernel `fn` (E341 otherwise)."""
    space: dict = {}
    consts = [p.name for p in fn.params if p.role == "const"]
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip()
        parts = [v for v in values.split(",") if v.strip()]
        if not sep or not parts:
            raise DiagnosticError([Diagnostic("E341", f"--space takes NAME=V1,V2,..., not '{item}'", None,
                                              "e.g. --space BM=64,128 --space stages=2,3")])
        if name not in consts:
            raise DiagnosticError([Diagnostic(
                "E341", f"--space {name}: '{name}' is not a 'const' parameter of '{fn.name}'", None,
                f"its constants are: {', '.join(consts)}" if consts else f"'{fn.name}' has no 'const' parameter")])
        space[name] = [parse_value(v) for v in parts]
    return space


def space_of(fn, cli_space: dict) -> dict:
    """The space to search: `--space` when given, else the kernel's `@autotune` (E340 when it
    has none)."""
    if cli_space:
        return cli_space
    if fn.autotune:
        return {k: list(v) for k, v in fn.autotune.items()}
    raise DiagnosticError([Diagnostic(
        "E340", f"kernel '{fn.name}' has no @autotune(...) space to search", fn.node.name_span,
        "list the values to try above the kernel, @autotune(BM=[64, 128], stages=[2, 3]), or give them to "
        "tlc tune: --space BM=64,128 --space stages=2,3")])


def candidates(space: dict) -> list[Candidate]:
    """Every configuration of `space`, in the order the lists give (the first value first)."""
    names = list(space)
    return [Candidate(tuple(zip(names, values))) for values in itertools.product(*(space[k] for k in names))]


def bucket_range(size: int) -> list[int]:
    """The power-of-two bucket [low, high] of a size: (2^(k-1), 2^k]."""
    high = 1
    while high < size:
        high *= 2
    return [high // 2 + 1 if high > 1 else 1, high]


def bucket_when(sizes: dict, dtypes: dict) -> dict:
    """A config.json rule's "when" for a call of these shape symbols' sizes and dtypes."""
    return {**{s: bucket_range(v) for s, v in sizes.items()}, **{k: str(v) for k, v in dtypes.items()}}


def bucket_text(when: dict) -> str:
    return ", ".join(f"{k} in [{v[0]}, {v[1]}]" if isinstance(v, list) else f"{k}={v}" for k, v in when.items())
