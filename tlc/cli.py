"""The `tlc` command line: thin click commands over the driver (LANGUAGE.md section 7).

Owns parsing options, choosing stdout or stderr and the exit status: 0 clean, 1 the program
has errors, 2 a usage error (bad option, a file that cannot be read or written), 3 an internal
compiler error.  It decides nothing about compiling; every message it prints was rendered by
`tlc.diagnostics`.
"""
from __future__ import annotations

import traceback
from contextlib import contextmanager

import click

from . import __version__
from .diagnostics import DiagnosticError, TlcError, render_all, to_json_lines
from .driver import SourceError, check_file
from .files import FileError, write_all
from .inputs import InputError

EXIT_DIAGNOSTICS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # as a shell reports SIGINT


@contextmanager
def _reported_errors():
    """Turn every exception into a message and an exit status; only a bug shows a traceback."""
    try:
        yield
    except (SourceError, FileError, InputError) as e:
        _fail(EXIT_USAGE, f"error: {e}")
    except DiagnosticError as e:
        _fail(EXIT_DIAGNOSTICS, render_all(e.diagnostics, e.sources))
    except TlcError as e:
        _fail(EXIT_DIAGNOSTICS, f"error: {e}")
    except Exception:  # noqa: BLE001 - the last line of defence: a compiler bug, not a user error
        _fail(EXIT_INTERNAL, "internal compiler error, please report it with the file that caused it:\n"
              + traceback.format_exc().rstrip())


def _fail(code: int, message: str):
    click.echo(message, err=True)
    raise click.exceptions.Exit(code)


def _count(diagnostics) -> str:
    n = len(diagnostics)
    return f"{n} error{'s' if n != 1 else ''}"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="tlc")
def main() -> None:
    """tlc: compile TileLang text (.tl) to CUDA C."""


@main.command()
@click.argument("file")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per diagnostic on stdout.")
@click.option("-D", "defines", multiple=True, metavar="NAME=VALUE", help="Set a constant or dtype parameter.")
@click.option("--arch", default="sm_80", show_default=True, help="The target to schedule for, as tlc build's --arch.")
@click.option("--shape", "shapes", multiple=True, metavar="M=4096,...",
              help="Sizes of shape symbols, as tlc build's --shape.")
def check(file: str, as_json: bool, defines, arch: str, shapes) -> None:
    """Parse and type-check FILE and what it imports, then schedule every kernel and tile op
    for ARCH with its default (or -D) constants: every error tlc build would report."""
    with _reported_errors():
        result = check_file(file)
        if result.ok:
            from .inputs import parse_assignments, shape_size
            from .scheduled_check import schedule_all

            sizes = {s: shape_size(s, v) for s, v in parse_assignments(shapes, "--shape").items()}
            result.diagnostics = schedule_all(result.program, arch, parse_assignments(defines, "-D"), sizes)
            result.sources = {**result.sources, **result.program.sources}
    if result.ok:
        click.echo(f"{file}: ok", err=True)
        return
    if as_json:
        click.echo(to_json_lines(result.diagnostics))
    else:
        click.echo(render_all(result.diagnostics, result.sources) + "\n", err=True)
    _fail(EXIT_DIAGNOSTICS, f"error: {_count(result.diagnostics)} in {file}")


def _load_kernel(file: str, kernel: str, target: str):
    from .api import load

    mod = load(file, target=target)
    kernels = mod.kernels
    if kernel not in kernels:
        known = ", ".join(kernels) or "none"
        raise TlcError(f"{file} has no kernel '{kernel}'; its kernels are: {known}")
    return mod, kernels[kernel]


def _input_options(command):
    """--in, --shape, -D and --seed: a kernel's inputs, as tlc run and tlc profile take them."""
    options = (click.option("--in", "ins", multiple=True, metavar="NAME=FILE.npy|NUMBER", help="An input array or scalar."),
               click.option("--shape", "shapes", multiple=True, metavar="M=4096,...",
                            help="Sizes of shape symbols for random inputs."),
               click.option("-D", "defines", multiple=True, metavar="NAME=VALUE", help="Set a constant or dtype parameter."),
               click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs."))
    for option in reversed(options):
        command = option(command)
    return command


@main.command()
@click.argument("file")
@click.option("-k", "--kernel", required=True, help="The kernel to run.")
@_input_options
@click.option("--out", "outs", multiple=True, metavar="NAME=FILE.npy", help="Write an array after the run.")
@click.option("--target", type=click.Choice(["auto", "cuda", "cpu", "interp"]), default="auto", show_default=True,
              help="cuda: the GPU; cpu: the cpu target (C++ with OpenMP, by the system's C++ compiler; the interpreter "
                   "where there is none); interp: the CPU reference interpreter; auto: the GPU, else the interpreter.")
@click.option("--check", is_flag=True, help="Run on the GPU (or, with --target cpu, the cpu target's C++) and on the "
                                            "interpreter; report the largest error.")
@click.option("--bench", is_flag=True, help="Time the kernel on the GPU (median of CUDA events, L2 flushed).")
@click.option("--dump", metavar="DIR", envvar="TLC_DUMP", help="Write every stage of the compile under DIR (or $TLC_DUMP).")
def run(file, kernel, ins, shapes, defines, seed, outs, target, check, bench, dump) -> None:
    """Run KERNEL of FILE on the GPU, or on the CPU reference interpreter."""
    from . import runner

    with _reported_errors():
        if bench or target == "cuda" or (check and target != "cpu"):
            _require_gpu("--bench" if bench else "--check" if check else "--target cuda", target)
        # the API's names: "cpp" is the cpu target, "cpu" the interpreter (tlc/api.py)
        executor = {"cpu": "cpp", "interp": "cpu"}.get(target, "cuda" if check or bench else target)
        mod, k = _load_kernel(file, kernel, executor)
        report = runner.run(k, ins=ins, shapes=shapes, outs=outs, defines=defines, check=check, bench=bench, seed=seed,
                            dump=dump)
        for line in report.lines:
            click.echo(line)
        if report.failed:
            _fail(EXIT_DIAGNOSTICS, report.failed)


@main.command()
@click.argument("file")
@click.option("-k", "--kernel", required=True, help="The kernel to profile.")
@_input_options
@click.option("--flops", metavar="EXPR", help="FLOPs of one launch, a number or over the shape symbols: 2*M*N*K "
                                             "(default: the gemms' count, else none).")
@click.option("--trace", metavar="OUT.json", help="Write a Chrome-trace / Perfetto JSON of a sequence of launches.")
@click.option("--launches", type=click.IntRange(min=1), default=10, show_default=True, help="Launches in the trace.")
@click.option("--ncu", is_flag=True, help="Also Nsight Compute's key counters for one launch (needs ncu).")
@click.option("--source", is_flag=True, help="With --ncu: Nsight Compute's warp stall samples per .tl line.")
@click.option("--grid", type=int, default=0, show_default=True,
              help="With --ncu: the grid (of a kernel of several) whose counters and samples to take.")
@click.option("--json", "as_json", is_flag=True, help="The profile as JSON on stdout.")
def profile(file, kernel, ins, shapes, defines, seed, flops, trace, launches, ncu, source, grid, as_json) -> None:
    """Profile KERNEL of FILE on the GPU: time a launch, bandwidth and FLOP rate against the
    measured ceilings, registers, spills, shared memory and occupancy of its cubin."""
    import sys

    from .profiling import format_report, profile_file, to_json

    if source and not ncu:
        raise click.UsageError("--source shows Nsight Compute's samples per .tl line: add --ncu")
    if grid and not ncu:
        raise click.UsageError("--grid picks the grid whose Nsight Compute counters --ncu takes: add --ncu")
    with _reported_errors():
        from .runtime.compile import cuda_unavailable_reason

        reason = cuda_unavailable_reason()
        if reason is not None:
            raise TlcError(f"tlc profile measures on a CUDA GPU and there is none ({reason})")
        ncu_command = None
        if ncu:  # this profile again, one launch and no trace, under Nsight Compute
            from .profiling.gpu import require_ncu

            require_ncu()
            argv = [file, "-k", kernel, "--seed", str(seed), "--launches", "1",
                    *(x for opt, given in (("--shape", shapes), ("--in", ins), ("-D", defines)) for v in given
                      for x in (opt, v)), *(("--flops", flops) if flops else ())]
            ncu_command = [sys.executable, "-c", "from tlc.cli import main; main()", "profile", *argv]
        result = profile_file(file, kernel, ins=ins, shapes=shapes, defines=defines, seed=seed, flops=flops,
                              trace=trace, launches=launches, ncu_command=ncu_command, source=source, grid=grid)
    click.echo(to_json(result) if as_json else format_report(result))


@main.command()
@click.argument("suites", nargs=-1)
@click.option("--out", "out_dir", default=".", show_default=True, metavar="DIR", help="Where the JSON and PNG go.")
@click.option("--quick", is_flag=True, help="A few shapes, 100 ms a contender.")
@click.option("--precisions", metavar="f16,bf16,...", help="gemm: only these precisions.")
@click.option("--no-sweep", is_flag=True, help="gemm: only the recorded configurations at the decode shapes.")
@click.option("--only", metavar="silu,add,...", help="ops: only these operators.")
@click.option("--no-chart", is_flag=True, help="Write no PNG chart (it needs matplotlib).")
def bench(suites, out_dir, quick, precisions, no_sweep, only, no_chart) -> None:
    """Run the benchmark SUITES (default: all of them: gemm, nn, ops) on the GPU against the
    vendor libraries (PyTorch: cuBLAS, its own kernels), in one process: a table of times,
    TFLOP/s, GB/s, fractions of the measured ceilings and ratios to the vendor, written as JSON
    and a PNG chart (ratio bars and a roofline) per suite."""
    from .benchmarks import SUITES, run_suites

    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        raise click.UsageError(f"no benchmark suite {unknown[0]!r}; the suites are: {', '.join(SUITES)}")
    with _reported_errors():
        from .runtime.compile import cuda_unavailable_reason

        reason = cuda_unavailable_reason()
        if reason is not None:
            raise TlcError(f"tlc bench measures on a CUDA GPU and there is none ({reason})")
        try:
            import torch  # noqa: F401
        except ImportError:
            raise TlcError("tlc bench compares against the vendor libraries through PyTorch: pip install torch") from None
        failed = run_suites(list(suites or SUITES), out_dir, quick=quick, no_chart=no_chart, precisions=precisions,
                            no_sweep=no_sweep, only=only)
        if failed:
            names = ", ".join(line.split(":")[0] for line in failed)
            raise TlcError(f"tlc bench: {len(failed)} of {len(suites or SUITES)} suites failed ({names}; said above)")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Every operator as JSON on stdout.")
@click.option("-m", "--module", "modules", multiple=True, metavar="std.NAME", help="Only these modules.")
def ops(as_json, modules) -> None:
    """List the standard library's operators: module, signature, dtypes, backward (NAME_bwd),
    what each computes; the count is of operators with a passing test (stdlib/tested.json)."""
    from .ops import all_ops, format_table, to_json

    with _reported_errors():
        listed = [op for op in all_ops() if not modules or op.module in modules]
        if modules and not listed:
            raise TlcError(f"no std module {', '.join(modules)}")
    click.echo(to_json(listed) if as_json else format_table(listed))


def _require_gpu(option: str, target: str) -> None:
    """`--check`, `--bench` and `--target cuda` run on the GPU: say so before loading anything,
    in the CLI's words (not the Python API's target='cpu')."""
    if target in ("cpu", "interp"):
        raise TlcError(f"{option} needs the GPU; drop --target {target}")
    from .runtime.compile import cuda_unavailable_reason

    reason = cuda_unavailable_reason()
    if reason is not None:
        instead = "--target interp" if option == "--target cuda" else f"without {option}, tlc run"
        raise TlcError(f"{option} needs a CUDA GPU and there is none ({reason}); {instead} runs the kernel "
                       f"on the CPU reference interpreter")


@main.command()
@click.argument("file")
@click.option("-k", "--kernel", "kernels", multiple=True,
              help="Only these kernels or tile ops (default: every one).")
@click.option("-D", "defines", multiple=True, metavar="NAME=VALUE", help="Set a constant or dtype parameter.")
@click.option("--arch", default="sm_80", show_default=True,
              help="The target: sm_80 (Ampere and later), sm_89 (Ada and later: the f8 mma), sm_90a "
                   "(Hopper), or one a plugin registers.")
@click.option("--emit", type=click.Choice(["cu", "ptx", "cubin", "ir"]), default="cu", show_default=True)
@click.option("--shape", "shapes", multiple=True, metavar="M=4096,...",
              help="Sizes of a tile op's shape symbols, to choose its tiles for.")
@click.option("-o", "--output", help="Write here instead of to stdout.")
@click.option("--header", help="Also write the C header of the launchers here.")
@click.option("--no-line-directives", is_flag=True, help="Leave out the #line directives that point at the .tl file.")
@click.option("--dump", metavar="DIR", envvar="TLC_DUMP",
              help="Also write every stage of each kernel's compile under DIR (or $TLC_DUMP).")
def build(file, kernels, defines, arch, emit, shapes, output, header, no_line_directives, dump) -> None:
    """Compile FILE to CUDA C (or PTX, a cubin, or the tile IR)."""
    from . import runner

    with _reported_errors():
        if emit == "cubin" and not output:
            raise TlcError("a cubin is binary: give -o FILE.cubin")
        result, head = runner.build(file, kernels=kernels, defines=defines, arch=arch, emit=emit,
                                    header=output or bool(header), line_directives=not no_line_directives,
                                    shapes=shapes, dump=dump)
        if header and head is None and emit != "ir":  # a host target's file has no CUDA launchers
            raise TlcError(f"--arch {arch} emits one C++ file, with no C header; --header is for the GPU targets")
        written = [(path, text) for path, text in ((output, result), (header, head)) if path]
        write_all(written)  # both or neither
        if not output:
            click.echo(result, nl=False)
        for path, _ in written:
            click.echo(f"wrote {path}", err=True)


@main.command()
@click.argument("file")
@click.option("-k", "--kernel", required=True, help="The kernel to tune.")
@click.option("--shape", "shapes", multiple=True, required=True, metavar="M=4096,N=4096,...",
              help="The sizes of one shape bucket to tune for (repeat for several buckets).")
@click.option("--space", "space", multiple=True, metavar="NAME=V1,V2",
              help="Values of a constant to try, instead of the kernel's @autotune (repeatable).")
@click.option("-D", "defines", multiple=True, metavar="NAME=VALUE", help="Set a dtype or a constant outside the space.")
@click.option("--target", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Measure on the GPU, or on the CPU reference interpreter (checks and prunes alike; its times "
                   "are the interpreter's).")
@click.option("--arch", help="With --target cpu: the target to prune for (default sm_80); the GPU's otherwise.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Compile workers (default: the cores, at most 16).")
@click.option("--resume", is_flag=True, help="Skip the configurations an interrupted run already measured.")
@click.option("--min-ms", type=click.FloatRange(min=0, min_open=True), default=100.0, show_default=True, help="GPU time spent timing each configuration.")
@click.option("--no-write", is_flag=True, help="Measure and report only; leave config.json as it is.")
@click.option("--user-config", is_flag=True, help="Record in your own config.json (for a read-only folder).")
@click.option("--json", "as_json", is_flag=True, help="The report as JSON on stdout.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--timer", type=click.Choice(["auto", "fake", "wall"]), default="auto", hidden=True)
def tune(file, kernel, shapes, space, defines, target, arch, jobs, resume, min_ms, no_write, user_config, as_json,
         seed, timer) -> None:
    """Search KERNEL's @autotune space for the fastest right configuration per shape bucket and
    record it in the config.json beside FILE."""
    from .inputs import parse_assignments
    from .tune import Progress, summary, to_json, tune as run_tune

    try:
        with _reported_errors():
            if target == "cuda":
                _require_gpu("--target cuda", target)
            buckets = [parse_assignments([s], "--shape") for s in shapes]
            reports = run_tune(file, kernel, buckets, space=space, target=target, arch=arch,
                               timer=None if timer == "auto" else timer, jobs=jobs, resume=resume,
                               defines=parse_assignments(defines, "-D"), seed=seed, min_ms=min_ms,
                               write=not no_write, user_config=user_config, progress=Progress())
    except KeyboardInterrupt:
        _fail(EXIT_INTERRUPTED, "\ninterrupted: what was measured is kept; the same command with --resume "
                                "continues from there")
    if as_json:
        click.echo(to_json(reports))
    else:
        click.echo("\n\n".join(summary(r) for r in reports))
    if any(r.winner is None for r in reports):
        _fail(EXIT_DIAGNOSTICS, "error: no configuration gave the right output for "
              + ", ".join(" ".join(f"{k}={v}" for k, v in r.shapes.items()) for r in reports if r.winner is None))


@main.command()
@click.option("--arch", default="sm_80", show_default=True, help="The target tlc check schedules for.")
def lsp(arch: str) -> None:
    """Run the language server on stdin/stdout (for an editor: diagnostics as you type, hover,
    go to definition, completion); needs pygls: pip install 'tlc[lsp]'."""
    try:
        from .lsp.server import serve
    except ImportError as e:
        _fail(EXIT_USAGE, f"error: tlc lsp needs pygls ({e.name} is not installed): pip install 'tlc[lsp]'")
    serve(arch)


if __name__ == "__main__":  # pragma: no cover
    main()
