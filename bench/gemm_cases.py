"""bench/gemm_cases.py is tlc.benchmarks.gemm_cases (the code `tlc bench` runs); this name stays for the
scripts and tests that import it from bench/."""
import sys

from tlc.benchmarks import gemm_cases

sys.modules[__name__] = gemm_cases
