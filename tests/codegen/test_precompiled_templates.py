"""The templates compiled ahead of time (tlc/codegen/precompiled, scripts/precompile-templates):
each module is the code Jinja compiles from the template now, the code generator's environment
takes it, and a template that differs from what a module was made from is compiled by Jinja."""
from pathlib import Path

import jinja2
import pytest

import tlc.codegen.precompiled
from tlc import package_data
from tlc.codegen import environment
from tlc.codegen.precompiled import KEYS
from tlc.codegen.precompiled_loader import TEMPLATES, PrecompiledLoader, compiled_source, module_name

# the package's folder where tlc is imported from: the source tree, or the installed copy (CI)
FOLDER = Path(tlc.codegen.precompiled.__file__).resolve().parent


@pytest.mark.parametrize("name", TEMPLATES)
def test_each_module_is_jinjas_code_of_the_template_now(name):
    code, key = compiled_source(environment(), name)
    stale = "stale: run scripts/precompile-templates"
    assert KEYS[name] == key, stale
    assert (FOLDER / f"{module_name(name)}.py").read_text(encoding="utf-8") == code + "\n", stale


def test_the_code_generators_templates_run_the_precompiled_code():
    template = environment().get_template("kernel.cu.j2")
    assert template.root_render_func.__code__.co_filename == str(FOLDER / "kernel_cu.py")
    assert template.filename == str(package_data.templates() / "kernel.cu.j2")


def _render(loader, options, name="header.h.j2"):
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, **options)
    return env.get_template(name), env.get_template(name).render(version="9.9", source="x.tl", kernels=[],
                                                                  cu_name="x.cu")


def test_an_edited_template_is_compiled_by_jinja(tmp_path):
    text = (package_data.templates() / "header.h.j2").read_text(encoding="utf-8")
    (tmp_path / "header.h.j2").write_text("// edited\n" + text, encoding="utf-8")
    options = dict(keep_trailing_newline=True, trim_blocks=False, lstrip_blocks=False)
    template, out = _render(PrecompiledLoader(str(tmp_path)), options)
    assert out.startswith("// edited\n")
    assert template.root_render_func.__code__.co_filename == str(tmp_path / "header.h.j2")


def test_other_settings_compile_the_template_as_jinja_does():
    # trim_blocks changes the code Jinja makes: the key differs, so the module is not used
    options = dict(keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=False)
    folder = str(package_data.templates())
    template, out = _render(PrecompiledLoader(folder), options)
    assert template.root_render_func.__code__.co_filename != str(FOLDER / "header_h.py")
    assert out == _render(jinja2.FileSystemLoader(folder), options)[1]
