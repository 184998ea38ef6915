"""Helpers for scheduler tests: check a source and schedule one kernel."""
from tlc.diagnostics import DiagnosticError, render_all
from tlc.driver import check_source
from tlc.schedule import schedule


def program(src: str):
    r = check_source(src, "s.tl")
    assert r.ok, render_all(r.diagnostics, r.sources)
    return r.program


def scheduled(src: str, name: str, constants=None, **kw):
    return schedule(program(src), name, constants, **kw)


def schedule_error(src: str, name: str, constants=None, **kw) -> str:
    prog = program(src)
    try:
        schedule(prog, name, constants, **kw)
    except DiagnosticError as e:
        return render_all(e.diagnostics, {**prog.sources, **e.sources})
    raise AssertionError("no error")


GEMM = """
@kernel
def matmul(A: T[M, K], B: T[K, N], C: T[M, N],
           T: dtype = f16, BM: const = 128, BN: const = 128, BK: const = 32, stages: const = 3):
    with grid(cdiv(N, BN), cdiv(M, BM), threads=128) as (bx, by):
        As = shared(T[BM, BK])
        Bs = shared(T[BK, BN])
        acc = fragment(f32[BM, BN])
        clear(acc)
        for k in pipelined(cdiv(K, BK), stages=stages):
            copy(A[by * BM, k * BK], As)
            copy(B[k * BK, bx * BN], Bs)
            gemm(As, Bs, acc)
        copy(acc, C[by * BM, bx * BN])
"""
