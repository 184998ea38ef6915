"""bench/checks.py is tlc.benchmarks.checks (the code `tlc bench` runs); this name stays for the
scripts and tests that import it from bench/."""
import sys

from tlc.benchmarks import checks

sys.modules[__name__] = checks
