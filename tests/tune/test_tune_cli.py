"""`tlc tune` on the interpreter (--target cpu) with the stand-in timer (--timer fake: each
configuration's time a fixed function of its label, tlc.tune.measure.fake_ms): pruning,
checking, the winner recorded in config.json, the summary, the progress bar, --json and the
errors of a kernel with nothing to tune."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlc import cli
from tlc.tune.measure import fake_ms


def tune(path, *args):
    return CliRunner().invoke(cli.main, ["tune", str(path), "-k", "scale", "--target", "cpu", "--timer", "fake", *args])


def label(block, rows, scale_):
    return f"BLOCK={block} ROWS={rows} SCALE={scale_}"


RIGHT = [label(b, r, 1) for b, r in ((32, 1), (32, 1024), (64, 1))]  # BLOCK=64 ROWS=1024: 272 KB, pruned


def test_prunes_checks_and_records_the_fastest_right_configuration(scale):
    result = tune(scale, "--shape", "N=200", "--json")
    assert result.exit_code == 0, result.output
    bucket, = json.loads(result.stdout)["buckets"]
    status = {c["label"]: c["status"] for c in bucket["candidates"]}
    assert status == {**{l: "ok" for l in RIGHT}, label(64, 1024, 1): "pruned", label(64, 1024, 2): "pruned",
                      **{label(b, r, 2): "wrong" for b, r in ((32, 1), (32, 1024), (64, 1))}}
    assert bucket["pruned"] == {"E070": 2}
    assert bucket["shipped"]["label"] == label(64, 1, 1)  # the defaults: no config.json yet
    best = min(RIGHT, key=fake_ms)
    assert bucket["winner"]["label"] == best
    rules = json.loads((scale.parent / "config.json").read_text())["kernels"]["scale.tl"]["scale"]
    assert len(rules) == 1
    assert rules[0]["arch"] == ["sm_80"] and rules[0]["when"] == {"N": [129, 256]}
    assert {k: str(v) for k, v in rules[0]["constants"].items()} == dict(kv.split("=") for kv in best.split())


def test_summary_table_and_progress(scale):
    result = tune(scale, "--shape", "N=200")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"scale of {scale} on sm_80 (interpreter), bucket N in [129, 256], shapes N=200"
    assert lines[1] == "8 configurations: 3 right, 3 wrong, 0 failed, 2 pruned (2 E070 shared memory)"
    ranked = sorted(RIGHT, key=fake_ms)
    width = len(label(32, 1024, 1))
    assert lines[2] == f"  {'#':>3}  {'configuration':<{width}}  {'time':>10}  {'vs shipped':>10}"
    shipped = fake_ms(label(64, 1, 1))
    for i, name in enumerate(ranked, 1):
        row = lines[2 + i]
        assert lines[2 + i].startswith(f"  {i:>3}  {name:<{width}}  ")
        assert f"{fake_ms(name) * 1e3:.1f} us" in lines[2 + i] and f"{shipped / fake_ms(name):.3f}x" in lines[2 + i]
        assert lines[2 + i].endswith("<- winner") == (i == 1), row
    assert "(shipped)" in lines[2 + ranked.index(label(64, 1, 1)) + 1]
    assert sum(l.startswith("    WRONG ") for l in lines) == 3
    assert f"   PRUNED {label(64, 1024, 1)}: E070 kernel 'scale' needs 272 KB of shared memory, more than the 163 KB " \
           "the target allows: tile (272 KB)" in lines
    assert lines[-2] == f"recorded {ranked[0]} in {scale.parent / 'config.json'}"
    assert lines[-1].startswith("tuned in ")
    # the progress bar, on stderr: the phase, the count and the best so far
    assert "measuring" in result.stderr and "6/6" in result.stderr
    assert f"best {ranked[0]} " in result.stderr


def test_several_buckets_each_get_a_rule(scale):
    result = tune(scale, "--shape", "N=200", "--shape", "N=5000", "--json")
    assert result.exit_code == 0, result.output
    rules = json.loads((scale.parent / "config.json").read_text())["kernels"]["scale.tl"]["scale"]
    assert sorted(r["when"]["N"] for r in rules) == [[129, 256], [4097, 8192]]


def test_space_on_the_command_line_replaces_autotune(scale):
    result = tune(scale, "--shape", "N=64", "--space", "BLOCK=32,64", "--json", "--no-write")
    assert result.exit_code == 0, result.output
    bucket, = json.loads(result.stdout)["buckets"]
    assert [c["label"] for c in bucket["candidates"]] == ["BLOCK=32", "BLOCK=64"]
    assert not (scale.parent / "config.json").exists()


def test_space_must_name_a_constant(scale):
    result = tune(scale, "--shape", "N=64", "--space", "Q=1,2")
    assert result.exit_code == 1
    assert result.stderr == ("error[E341]: --space Q: 'Q' is not a 'const' parameter of 'scale'\n"
                             "  = hint: its constants are: BLOCK, ROWS, SCALE\n")


def test_a_kernel_without_a_space(scale):
    result = CliRunner().invoke(cli.main, ["tune", str(scale), "-k", "untuned", "--target", "cpu", "--shape", "N=64"])
    assert result.exit_code == 1
    line = next(i for i, l in enumerate(scale.read_text().splitlines(), 1) if l.startswith("def untuned"))
    assert result.stderr == (
        f"{scale}:{line}:5: error[E340]: kernel 'untuned' has no @autotune(...) space to search\n"
        f"   |\n"
        f"{line} | def untuned(x: f32[N], y: f32[N], BLOCK: const = 64):\n"
        f"   |     ^^^^^^^\n"
        f"  = hint: list the values to try above the kernel, @autotune(BM=[64, 128], stages=[2, 3]), or give them "
        f"to tlc tune: --space BM=64,128 --space stages=2,3\n")


@pytest.mark.parametrize("option, value, message", [
    ("-j", "0", "Invalid value for '-j' / '--jobs': 0 is not in the range x>=1."),
    ("--jobs", "-3", "Invalid value for '-j' / '--jobs': -3 is not in the range x>=1."),
    ("--min-ms", "-1", "Invalid value for '--min-ms': -1.0 is not in the range x>0."),
    ("--min-ms", "0", "Invalid value for '--min-ms': 0.0 is not in the range x>0."),
])
def test_workers_and_timing_out_of_range_are_usage_errors(scale, option, value, message):
    """-j 0 ran with the default workers and -j -3, --min-ms -1 were taken as given; a usage
    error now, exit 2, as any other option's bad value (found by hand, session 27)."""
    result = tune(scale, "--shape", "N=64", option, value)
    assert (result.exit_code, result.stderr.splitlines()[-1]) == (2, f"Error: {message}")


def test_no_such_kernel(scale):
    result = CliRunner().invoke(cli.main, ["tune", str(scale), "-k", "nope", "--target", "cpu", "--shape", "N=64"])
    assert result.exit_code == 1
    assert result.stderr == (f"error[E344]: {scale} has no kernel 'nope' to tune\n"
                             "  = hint: its kernels are: scale, untuned\n")


def test_arch_is_the_gpus_own_on_the_gpu_and_known_on_the_cpu(scale):
    result = tune(scale, "--shape", "N=64", "--arch", "sm_12345")
    assert result.exit_code == 1 and "E071" in result.stderr


def test_an_interruption_says_how_to_resume(scale, monkeypatch):
    import tlc.tune.tuner

    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(tlc.tune.tuner, "_measure", interrupt)
    result = tune(scale, "--shape", "N=64")
    assert result.exit_code == 130
    assert result.stderr.endswith("\ninterrupted: what was measured is kept; the same command with --resume "
                                  "continues from there\n")


def test_no_configuration_runs(scale, monkeypatch):
    import tlc.tune.measure

    def cannot_run(self, constants):
        raise RuntimeError("no")

    monkeypatch.setattr(tlc.tune.measure.Executor, "outputs_of", cannot_run)
    result = tune(scale, "--shape", "N=64")
    assert result.exit_code == 1
    assert result.stderr == (
        f"{scale}:8:5: error[E342]: no configuration of 'scale' runs, so there is no reference output to check "
        "candidates against\n"
        "  |\n"
        "8 | def scale(x: f32[N], y: f32[N], BLOCK: const = 64, ROWS: const = 1, SCALE: const = 1):\n"
        "  |     ^^^^^\n"
        "  = hint: run the kernel once with tlc run to see why\n")


def test_std_modules_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(cli.main, ["tune", "std.gemm", "-k", "matmul", "--target", "cpu", "--timer", "fake",
                                           "--space", "BK=32,64", "--shape", "M=64,N=64,K=64", "--no-write", "--json"])
    assert result.exit_code == 0, result.output
    bucket, = json.loads(result.stdout)["buckets"]
    assert bucket["file"].endswith("stdlib/gemm.tl") and bucket["config"] is None
    assert bucket["bucket"] == {"M": [33, 64], "N": [33, 64], "K": [33, 64], "T": "f16"}
    assert [(c["label"], c["status"]) for c in bucket["candidates"]] == [("BK=32", "ok"), ("BK=64", "ok")]


def test_a_constant_set_with_D_is_recorded_as_a_number(scale):
    result = tune(scale, "--shape", "N=100", "--space", "BLOCK=32,64", "-D", "ROWS=2")
    assert result.exit_code == 0, result.output
    rule, = json.loads((scale.parent / "config.json").read_text())["kernels"]["scale.tl"]["scale"]
    assert rule["constants"] == {"BLOCK": min((32, 64), key=lambda b: fake_ms(f"BLOCK={b}")), "ROWS": 2, "SCALE": 1}


def test_registers_and_threads_over_the_limits_are_pruned(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    held = Path(__file__).resolve().parent / "held.tl"
    result = CliRunner().invoke(cli.main, ["tune", str(held), "-k", "held", "--target", "cpu", "--timer", "fake",
                                           "--shape", "N=300", "--no-write"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1] == "4 configurations: 1 right, 0 wrong, 0 failed, 3 pruned (2 E050 threads, 1 E153 registers)"
    assert lines[-4:-1] == [
        "   PRUNED PER=4 THREADS=2048: E050 with PER=4, THREADS=2048: threads must be an integer from 1 to 1024, "
        "found 2048",
        "   PRUNED PER=4096 THREADS=128: E153 kernel 'held' needs 16.5 KiB a thread for its fragments and local "
        "buffers, more than the 8 KiB a thread can hold: acc (16 KiB), row (512 B)",
        "   PRUNED PER=4096 THREADS=2048: E050 with PER=4096, THREADS=2048: threads must be an integer from 1 to "
        "1024, found 2048"]


def test_without_tqdm_there_is_no_bar_and_the_same_result(scale, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    result = tune(scale, "--shape", "N=200")
    assert result.exit_code == 0, result.output
    assert "measuring" not in result.stderr
    assert result.stdout.splitlines()[-2] == f"recorded {min(RIGHT, key=fake_ms)} in {scale.parent / 'config.json'}"
