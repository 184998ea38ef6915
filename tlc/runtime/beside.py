"""Python work that waits for the next NVRTC compile and runs beside it (#15, time to first
result).  A first call with empty caches writes entries for the next process to read (the
checked module's and its module record at `tlc.load`, the program entry's JSON after the
compile): ~20 ms of a 2-core machine's ~230 ms of Python, in the call's path though nothing in
the call reads them.  NVRTC runs without the GIL, so such work done on the calling thread while
a worker thread compiles (`compile.nvrtc_compile`) costs the call nothing where the compile
outlasts it, as a first call's does (~250 ms).

What is put here runs, in the order it came, at the first of: the next NVRTC compile, a read
of the caches it writes (`api.load` asks `run_now` before it looks), the end of the call that
would have compiled (the kernel found in the program cache: `compile_program_kernel`), and the
end of the process (atexit).  Its errors are raised where it runs, as they were where it was
put."""
from __future__ import annotations

import atexit
import threading

_waiting: list = []
_lock = threading.Lock()
_exit_hook = False


def later(work) -> None:
    """Run `work()` beside the next compile, or at the first of the other points above."""
    global _exit_hook
    with _lock:
        _waiting.append(work)
        if not _exit_hook:
            atexit.register(run_now)
            _exit_hook = True


def waiting() -> bool:
    return bool(_waiting)


def run_now() -> None:
    """Run every waiting work now, on this thread, in order."""
    while True:
        with _lock:
            if not _waiting:
                return
            work = _waiting.pop(0)
        work()


def beside(compile_fn):
    """`compile_fn()` on a worker thread while the waiting work runs on this one; its result,
    or its exception, once both are done (the compile's first where both raise)."""
    if not _waiting:
        return compile_fn()
    outcome = {}

    def run():
        try:
            outcome["value"] = compile_fn()
        except BaseException as e:  # noqa: BLE001 - raised again on the caller's thread
            outcome["error"] = e

    worker = threading.Thread(target=run, name="tlc-nvrtc-compile")
    worker.start()
    try:
        run_now()
    finally:
        worker.join()
        if "error" in outcome:
            raise outcome["error"]
    return outcome["value"]
