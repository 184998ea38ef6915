"""bench/first_cached_host.py's breakdown of a cached first call (issue #15): `--exclusive` times
each step without the clocked steps it calls, so the steps fit inside the call (the inclusive
`--phases` count a nested step twice); `--gpu` runs the same call on CuPy and PyTorch
themselves (bench/queue/cached_call.sh), here only assembled.  CuPy stood in for, as the
script does."""
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import first_cached_host  # noqa: E402


def test_every_clocked_step_names_a_function_of_tlc():
    # a step renamed away would be clocked nowhere and read as "not run by this call"
    for name in first_cached_host.EXCLUSIVE:
        module, _, path = name.partition(":")
        owner = importlib.import_module(module)
        for part in path.split("."):
            owner = getattr(owner, part)
        assert callable(owner), name
    assert set(first_cached_host.PHASES) <= set(first_cached_host.EXCLUSIVE)


def test_the_exclusive_steps_fit_in_the_call_and_the_call_is_served_from_the_caches(capsys):
    found = first_cached_host.main(["--runs", "1", "--exclusive"])["exclusive"]
    steps, rest, total = found["steps"], found["rest_ms"], found["total_ms"]
    # the nested steps (checked_cache.load_record within _cached_module, KernelCache.load within
    # cached_program_kernel, ...) each counted once: their sum and the rest are the call
    assert 0 <= sum(ms for ms, _ in steps.values()) <= total and 0 <= rest <= total
    ran = {name for name, (_, count) in steps.items() if count}
    assert {"tlc.runtime.checked_cache:load_record", "tlc.runtime.checked_cache:LaunchMemo.lookup",
            "tlc.runtime.cache:KernelCache.load", "tlc.runtime:read_program_entry",
            "tlc.runtime.launch:CompiledKernel.launch"} <= ran
    # a cached call neither builds the kernel, decodes its signature nor reads the checked entry
    # (the module record vouches for the texts it was checked from)
    assert not ran & {"tlc.runtime:compile_program_kernel", "tlc.runtime.checked_cache:Signatures.__getitem__",
                      "tlc.runtime.checked_cache:load"}
    out = capsys.readouterr().out
    assert "each step's own wall time, median ms of 1 more processes" in out
    assert "not run by this call: " in out and "tlc.runtime:compile_program_kernel" in out.split("not run by this call: ")[1]


def test_the_gpu_run_checks_each_result_and_waits_for_it_in_the_clock():
    code = first_cached_host.GPU + first_cached_host.TIMED_BODY
    compile(code, "<gpu>", "exec")
    compile(first_cached_host.FILL_GPU, "<gpu fill>", "exec")
    assert "STOOD_IN = False" in code and "_LibCuda" not in first_cached_host.GPU
    clock = code[code.index("def call():"):code.index("gc.collect()")]
    assert clock.index("mod.matmul(A, A, C)") < clock.index("synchronize()") < clock.index("t2, c2 =")
    assert 'assert launched_right(), "the cached call launched wrongly"' in code
    assert "assert launched_right()" in first_cached_host.FILL_GPU


def test_the_gpu_run_cannot_be_counted_by_valgrind(capsys):
    with pytest.raises(SystemExit) as stopped:
        first_cached_host.main(["--gpu", "--instructions"])
    assert stopped.value.code == 2
    assert "--instructions counts the stood-in call; the GPU's driver under valgrind is not that call" in \
        capsys.readouterr().err
