"""tlc profile on the GPU (issue 14): the registers it reports are what cuobjdump
--dump-resource-usage says of the same cubin; the trace holds one event per launch; the
rates are positive and the copy ceiling is a plausible bandwidth; tlc.profile from Python
gives the same record."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tlc
from tlc import cli

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "codegen"))
from nvcc import cuobjdump  # noqa: E402  (tests/codegen/nvcc.py: cuobjdump beside nvcc or from the wheel)

pytestmark = pytest.mark.gpu

GEMM = str(Path(__file__).resolve().parents[2] / "examples" / "gemm.tl")
VECTOR_ADD = str(Path(__file__).resolve().parents[2] / "examples" / "vector_add.tl")


def cuobjdump_registers(binary: bytes, tmp_path, kernel: str) -> int:
    """The registers a cubin's kernel uses: the count the cubin records for the kernel's symbol
    (EIATTR_REGCOUNT in its .nv.info section; other functions of the cubin have their own), and
    where cuobjdump reads the cubin, its --dump-resource-usage too, the two equal.  (The
    toolkit's cuobjdump can be older than the NVRTC that CuPy loads: the H200's CUDA 13.0
    cuobjdump exits 255 on them.)"""
    recorded = [regs for name, regs in elf_register_counts(binary) if name == kernel]
    assert len(recorded) == 1, elf_register_counts(binary)
    path = tmp_path / "k.cubin"
    path.write_bytes(binary)
    res = subprocess.run([cuobjdump(), "--dump-resource-usage", str(path)], capture_output=True, text=True)
    if res.returncode == 0:
        assert int(re.search(r"REG:(\d+)", res.stdout).group(1)) == recorded[0]
    return recorded[0]


def elf_register_counts(cubin: bytes) -> list[tuple[str, int]]:
    """(function name, registers) of every EIATTR_REGCOUNT (0x2f) of the cubin's .nv.info
    sections: attributes of one format byte, one attribute byte and a payload (format 4: u16
    size and that many bytes, 3: u16, 2: u8, 1: none); REGCOUNT's payload is (symbol index,
    registers), two u32, the symbol's name read from .symtab (a symbol past it: "?")."""
    import struct

    assert cubin[:4] == b"\x7fELF", "not a cubin"
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * entsize) for i in range(count)]
    names = sections[names_index][4]

    def section_name(s) -> bytes:
        return cubin[names + s[0]:cubin.index(b"\0", names + s[0])]

    symtab = next(s for s in sections if section_name(s) == b".symtab")
    strtab = sections[symtab[6]][4]  # sh_link: the symbols' string table
    symbols = [struct.unpack_from("<I", cubin, symtab[4] + i * 24)[0] for i in range(symtab[5] // 24)]

    def symbol(index: int) -> str:
        if index >= len(symbols):
            return "?"
        at = strtab + symbols[index]
        return cubin[at:cubin.index(b"\0", at)].decode()

    counts = []
    for s in sections:
        if not section_name(s).startswith(b".nv.info"):
            continue
        at, end = s[4], s[4] + s[5]
        while at < end:
            form, attribute = cubin[at], cubin[at + 1]
            size = {4: 2 + struct.unpack_from("<H", cubin, at + 2)[0], 3: 2, 2: 1}.get(form, 0)
            if attribute == 0x2F:
                index, regs = struct.unpack_from("<II", cubin, at + 4)
                counts.append((symbol(index), regs))
            at += 2 + size
    return counts


def test_registers_equal_cuobjdumps(tmp_path):
    import cupy

    mod = tlc.load(GEMM, target="cuda")
    a = cupy.ones((512, 256), cupy.float16)
    b = cupy.ones((256, 1024), cupy.float16)
    c = cupy.empty((512, 1024), cupy.float16)
    p = tlc.profile(mod.matmul, a, b, c, trace=str(tmp_path / "t.json"), launches=5)
    g = p.grids[0]
    compiled = mod.matmul.compiled(p.constants, cupy.cuda.runtime.getDevice())  # the cubin it profiled
    assert g.resources.registers == cuobjdump_registers(compiled.binary, tmp_path, compiled.name)
    assert g.flops == 2.0 * 512 * 1024 * 256 and g.tflops > 0
    assert g.bytes_moved == a.nbytes + b.nbytes + c.nbytes and g.gbps > 0
    assert 1 <= g.blocks_per_sm <= 32 and 0 < g.occupancy <= 1
    assert 100 < p.copy_gbps < 20000 and p.peak_tflops > 0
    events = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 5 and all(e["dur"] > 0 for e in events)
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)


def test_the_command_reports_cuobjdumps_registers(tmp_path):
    r = CliRunner().invoke(cli.main, ["profile", VECTOR_ADD, "-k", "vector_add", "--shape", "N=1048576",
                                      "--in", "alpha=2", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    g = d["grids"][0]
    import cupy

    compiled = tlc.load(VECTOR_ADD, target="cuda").vector_add.compiled(d["constants"], cupy.cuda.runtime.getDevice())
    assert g["resources"]["registers"] == cuobjdump_registers(compiled.binary, tmp_path, compiled.name)
    assert g["flops"] is None and g["tflops"] is None  # no gemm, no hint
    assert g["bytes_moved"] == 3 * 1048576 * np.dtype(np.float32).itemsize


def test_ncu_counters_or_a_clear_message():
    from tlc.profiling.gpu import find_ncu

    r = CliRunner().invoke(cli.main, ["profile", VECTOR_ADD, "-k", "vector_add", "--shape", "N=65536",
                                      "--in", "alpha=2", "--ncu"])
    if find_ncu() is None:
        assert r.exit_code == 1 and "Nsight Compute (ncu) is not installed" in r.output
    else:
        assert r.exit_code == 0, r.output
        assert "launch__registers_per_thread" in r.output


def test_source_view_or_a_clear_message(tmp_path):
    """--ncu --source on examples/gemm.tl: the samples land on the lines of its statements
    (19, 20, 23, 24: the `#line`s of its code) and most of them on the loop or the gemm; the raw
    CSV is kept under tmp_path for a recorded sample (tests/profile/data)."""
    from tlc.profiling import gpu, source
    from tlc.profiling.gpu import find_ncu

    argv = ["profile", GEMM, "-k", "matmul", "--shape", "M=2048,N=2048,K=2048", "--ncu", "--source", "--json"]
    if find_ncu() is None:
        r = CliRunner().invoke(cli.main, argv)
        assert r.exit_code == 1 and "Nsight Compute (ncu) is not installed" in r.output
        return
    kept = gpu.ncu_source

    def keep(name, command):
        text = kept(name, command)
        (tmp_path / "ncu-source.csv").write_text(text)
        return text

    gpu.ncu_source = keep
    try:
        r = CliRunner().invoke(cli.main, argv)
    finally:
        gpu.ncu_source = kept
    assert r.exit_code == 0, r.output[-3000:]
    view = json.loads(r.output)["source"]
    lines = {ls["line"]: ls["own"] + ls["inlined"] for ls in view["lines"]}
    assert view["total"] > 0 and set(lines) <= {19, 20, 23, 24}, (view, tmp_path)
    assert lines.get(20, 0) + lines.get(23, 0) > 0.5 * view["total"], (view, tmp_path)
    assert source.parse_ncu_source((tmp_path / "ncu-source.csv").read_text())
