"""tlc: a compiler for TileLang text (.tl) to CUDA C."""
__version__ = "0.1.0"

from .api import Module, compile_source, load  # noqa: E402
from .diagnostics import DiagnosticError, TlcError  # noqa: E402

__all__ = ["load", "compile_source", "Module", "TlcError", "DiagnosticError", "profile", "__version__"]


def __getattr__(name: str):
    # `import tlc` brings the runtime, not the compiler: the parser, the type checker, the
    # scheduler, the code generator and the profiler (~100 ms of data classes and tables) are
    # imported when something first needs them, which a call served from the caches never does
    if name == "profile":
        from .profiling import profile

        globals()["profile"] = profile
        return profile
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
