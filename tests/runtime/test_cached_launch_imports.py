"""A launch from the program cache in a new process imports no code generator and no scheduling
pass (issue #15, time to first result): decoding an entry imports only the modules of the IR's
data classes, and the launch's modules (tensor maps included) import none of the compiler.
On the H200 these imports were 230 of the 274 ms of a cached first call."""
import json
import subprocess
import sys

import tlc
from tlc.runtime import ir_codec

# what the compiler is made of, which a launch from the cache must not import
COMPILER = ("tlc.codegen", "tlc.schedule.lower", "tlc.schedule.tileops", "tlc.schedule.blocks_per_sm",
            "tlc.schedule.warpspec", "jinja2")

CHILD = r"""
import json, sys
import tlc
from tlc.runtime import ir_codec, launch, tensormap
kernel, generated, binary, arch = ir_codec.loads(open(sys.argv[1], "rb").read())
assert generated.tensor_maps and kernel.warp_spec is not None
print(json.dumps(sorted(m for m in sys.modules if m.startswith(tuple(sys.argv[2:])))))
"""


def test_a_cached_sm90a_gemm_decodes_and_launches_without_the_compiler(tmp_path):
    gemm = tlc.load("std.gemm", target="cpu").matmul
    entry = tmp_path / "entry"
    entry.write_bytes(ir_codec.dumps((gemm.scheduled({}, "sm_90a"), gemm.generated({}, "sm_90a"), b"cubin", "sm_90a")))
    done = subprocess.run([sys.executable, "-c", CHILD, str(entry), *COMPILER], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
