"""Memory-bound kernels of std.nn against PyTorch on the GPU (one process, about a minute).

The benchmark is tlc.benchmarks.nn (`tlc bench nn` runs it too; its docstring says what is
measured and how); this script writes bench/results/rowwise-<gpu>.json and its chart (and
--json).  bench/plain.py takes its copy bandwidth and the GPU's name from here.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tlc.benchmarks.ceilings import gpu_slug as short_name  # noqa: E402,F401  (bench/plain.py's)
from tlc.benchmarks.nn import main, record_copy as copy_bandwidth  # noqa: E402,F401


def gpu_name() -> str:
    import torch

    return torch.cuda.get_device_properties(0).name


if __name__ == "__main__":
    main(sys.argv[1:], results_dir=ROOT / "bench" / "results", name="rowwise")
