"""bench/first_cold_steps.py's breakdown of a first call with empty caches (issue #15): each step
clocked without the clocked steps it calls (imports and the collector's passes among them),
the clocks put on a module as it is imported; CuPy, the driver and NVRTC stood in for."""
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import first_cold_steps  # noqa: E402


def test_every_clocked_step_names_a_function_of_tlc():
    for module, paths in first_cold_steps.STEPS.items():
        for path in paths:
            owner = importlib.import_module(module)
            for part in path.split("."):
                owner = getattr(owner, part)
            assert callable(owner), f"{module}:{path}"


def test_the_steps_fit_in_the_call(capsys):
    runs = first_cold_steps.main(["--runs", "1", "--nvrtc-ms", "100"])[str(ROOT)]
    run, = runs
    assert run["ok"]
    own = {k: v for k, v in run["phases"].items() if not k.endswith("[compile thread]")}
    assert 0 < sum(own.values()) <= run["load_ms"] + run["call_ms"]
    # the compiler's modules imported inside the clock, the pipeline's stages each run once
    assert run["counts"]["import"] > 50
    # the import step by module: the same own times, each module once
    assert 50 < len(run["imports"]) <= run["counts"]["import"] and "tlc.parser" in run["imports"]
    assert abs(sum(run["imports"].values()) - run["phases"]["import"]) < 1e-6 * run["phases"]["import"] + 1e-6
    for step in ("tlc.parser:parse", "tlc.typecheck:check_program", "tlc.schedule:schedule", "tlc.codegen:generate",
                 "tlc.runtime.checked_cache:store"):
        assert run["counts"][step] >= 1, step
    # the stood-in compile (100 ms without the GIL) on the call's thread, after the checked module's store
    assert run["phases"]["tlc.runtime.compile:nvrtc_compile"] >= 100
    assert not any(k.endswith("[compile thread]") for k in run["phases"])
    out = capsys.readouterr().out
    assert "host side (CuPy and the driver stood in for, NVRTC by a 100 ms wait)" in out
    assert "the rest (outside every clocked step)" in out
    assert f"the imports' own time by module, median ms, the 15 largest of {len(run['imports'])}:" in out
    assert "  by package (median ms): " in out and " tlc.parser " in out


def test_the_counted_call_runs_without_clocks(tmp_path):
    """--instructions counts the call that `functools.reduce` makes, with no clocks installed (no
    steps, no import hook, no collector callback): run here without valgrind."""
    import os

    env = {**os.environ, "TLC_CACHE_DIR": str(tmp_path / "cache"), "TLC_BENCH_COLD_STEPS": "{}",
           "TLC_BENCH_COLD_INSTRUCTIONS": "1"}
    result = first_cold_steps.run(first_cold_steps.STAND_IN + first_cold_steps.COLD_BODY, env, ROOT)
    assert result["ok"] and result["phases"] == {} and result["counts"] == {}
    assert "functools.reduce(lambda acc, _: call(), [0], None)" in first_cold_steps.COLD_BODY
    assert result["load_ms"] > 0 and result["call_ms"] > 0
