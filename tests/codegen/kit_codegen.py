"""Generated CUDA for the examples, for compile and snapshot tests."""
from pathlib import Path

from tlc.codegen import generate
from tlc.driver import check_file, check_source
from tlc.schedule import schedule

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def example_kernels():
    """(example, kernel) for every @kernel of every example."""
    out = []
    for path in sorted(EXAMPLES.glob("*.tl")):
        r = check_file(str(path))
        assert r.ok, path
        out.extend((path.stem, k.name) for k in r.program.kernels())
    return out


def generated(example: str, kernel: str, arch: str = "sm_80", constants=None, line_directives=True):
    path = EXAMPLES / f"{example}.tl"
    r = check_file(str(path.relative_to(ROOT)) if path.is_relative_to(Path.cwd()) else str(path))
    k = schedule(r.program, kernel, constants or {}, target=arch)
    return generate(k, arch, sources=r.sources, line_directives=line_directives, source_name=f"examples/{example}.tl")


def scheduled_source(src: str, name: str = "k", arch: str = "sm_80", constants=None):
    """(the scheduled IR kernel, the sources) of kernel `name` of .tl text `src`."""
    r = check_source(src, "t.tl")
    assert r.ok, r.diagnostics
    return schedule(r.program, name, constants or {}, target=arch), r.sources


def generated_source(src: str, name: str = "k", arch: str = "sm_80", constants=None, line_directives=True):
    """The generated kernel `name` of .tl text `src`."""
    k, sources = scheduled_source(src, name, arch, constants)
    return generate(k, arch, sources=sources, line_directives=line_directives)


def kernel_part(source: str) -> str:
    """The generated file past the inlined primitives: what a snapshot pins."""
    return source[source.index("#endif  // TL_PRIMITIVES"):]
