"""Fuzzing kit for tlc (issue 16): a type-directed generator of valid `.tl` programs (gen.py),
mutations of the examples and std sources (mutate.py), and the oracles every case is held to,
each run in a worker process with a time limit (oracles.py).  Not shipped: the tests import it
through pytest's rootdir (tests/ is on sys.path), and scripts/fuzz adds tests/ itself."""
