"""tlc.primitives: each generator's primitive files, held where the runtime's NVRTC warm-up thread
reads them (runtime/pch.py) without importing the code generator, which the main thread may be
importing meanwhile (two threads importing one package's modules can deadlock)."""
import subprocess
import sys

import pytest

import tlc
from tlc import primitives, targets


def test_importing_them_imports_no_compiler():
    code = ("import sys, tlc.primitives, tlc.runtime.pch\n"
            "print(sorted(m for m in sys.modules if m.startswith(('tlc.codegen', 'tlc.schedule', 'tlc.parser', 'jinja2'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_90a"])
def test_each_own_targets_generator_inlines_the_files_listed_for_it(arch):
    target = targets.get(arch)
    assert primitives.BY_GENERATOR[target.generator] == target.code_generator().primitive_files


@pytest.mark.parametrize("arch, files", [("sm_80", primitives.SM80), ("sm_90a", primitives.SM90)])
def test_a_generated_kernel_holds_them_as_guarded_says(arch, files):
    source = tlc.load("std.gemm", target="cpu").matmul.generated({}, arch).source
    assert source.count(primitives.GUARD_START) == 1
    assert primitives.guarded(files) in source
