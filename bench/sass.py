"""bench/sass.py is tlc.benchmarks.sass (the code `tlc bench` runs); this name stays for the
scripts and tests that import it from bench/."""
import sys

from tlc.benchmarks import sass

sys.modules[__name__] = sass
