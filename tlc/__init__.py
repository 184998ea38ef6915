"""tlc: a compiler for TileLang text (.tl) to CUDA C."""
__version__ = "0.1.0"

from .api import Module, compile_source, load  # noqa: E402
from .diagnostics import DiagnosticError, TlcError  # noqa: E402
from .profiling import profile  # noqa: E402

__all__ = ["load", "compile_source", "Module", "TlcError", "DiagnosticError", "profile", "__version__"]
