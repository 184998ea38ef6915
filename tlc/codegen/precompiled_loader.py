"""The code generator's templates compiled to Python ahead of time, and the loader that uses them.

Jinja compiles a template at its first use in a process: its lexer, parser and code generator,
then Python's `compile` (kernel.cu.j2 ~12 ms, wgmma_mma.cuh.j2 ~7 ms on this 2-core machine),
most of a new process's first `generate` after imports (issue #15, time to first result).
scripts/precompile-templates writes, for each template of `TEMPLATES`, the Python module that
Jinja's own `Environment.compile(source, name, filename, raw=True)` makes of it into
tlc/codegen/precompiled/ (the code byte for byte: the same template object, rendering the same
text), and `KEYS` there: a digest of the template's text, its name, Jinja's version and the
environment's settings that shape the code.  `PrecompiledLoader` takes a template from there
when that key matches the template read now, and compiles it as Jinja would otherwise (a
template edited since, another Jinja): stale modules cost the time, never the output.  The
module's code object comes from Python's own byte-code cache (`__pycache__`, written at install
or at first use) and runs in a fresh namespace, as Jinja runs the code it compiles.
tests/codegen/test_precompiled_templates.py fails while a module is stale.
"""
from __future__ import annotations

import hashlib
import importlib.util

import jinja2

# the templates `tlc.codegen.environment` renders (templates/flash_tile_op.tl.j2 has its own
# environment, in tlc/schedule/tileops/attention.py)
TEMPLATES = ("kernel.cu.j2", "wgmma_mma.cuh.j2", "grids.cu.j2", "header.h.j2", "cpp/kernel.cpp.j2")
PACKAGE = "tlc.codegen.precompiled"


def module_name(template: str) -> str:
    """The module of `template` in `PACKAGE`: `kernel.cu.j2` -> `kernel_cu`."""
    return template.removesuffix(".j2").replace("/", "_").replace(".", "_")


def key(environment: jinja2.Environment, name: str, source: str) -> str:
    """What the code Jinja compiles from `source` depends on: the text, the name, Jinja's
    version and the settings of `environment` that its lexer and code generator read."""
    e = environment
    settings = (jinja2.__version__, name, e.block_start_string, e.block_end_string, e.variable_start_string,
                e.variable_end_string, e.comment_start_string, e.comment_end_string, e.line_statement_prefix,
                e.line_comment_prefix, e.trim_blocks, e.lstrip_blocks, e.newline_sequence, e.keep_trailing_newline,
                e.optimized, e.is_async, repr(e.autoescape), e.finalize is not None, repr(e.undefined),
                sorted(e.extensions))
    return hashlib.sha256(repr(settings).encode() + b"\0" + source.encode()).hexdigest()


def compiled_source(environment: jinja2.Environment, name: str) -> tuple[str, str]:
    """(the Python source Jinja makes of the template `name`, its key), for the script and the test."""
    source, filename, _ = environment.loader.get_source(environment, name)
    return environment.compile(source, name, filename, raw=True), key(environment, name, source)


class PrecompiledLoader(jinja2.FileSystemLoader):
    """A `FileSystemLoader` that takes a template's code from `PACKAGE` where it is current."""

    def load(self, environment, name, globals=None):
        source, filename, uptodate = self.get_source(environment, name)
        code = _precompiled_code(name, key(environment, name, source)) if name in TEMPLATES else None
        if code is None:
            return super().load(environment, name, globals)
        template = environment.template_class.from_code(environment, code, {} if globals is None else globals,
                                                        uptodate)
        template.filename = filename  # the template's file, as Jinja's own compile names it
        return template


def _precompiled_code(name: str, wanted: str):
    from .precompiled import KEYS

    if KEYS.get(name) != wanted:
        return None
    spec = importlib.util.find_spec(f"{PACKAGE}.{module_name(name)}")
    if spec is None or spec.loader is None:
        return None
    try:
        return spec.loader.get_code(spec.name)
    except (ImportError, OSError, SyntaxError):
        return None
