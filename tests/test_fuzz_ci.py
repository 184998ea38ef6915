"""CI's fuzz step (issue 16): fixed seeds, about a minute on 2 cores, in the slow run that
.ci/run makes after the README's (which must stay under 5 minutes).  Generated valid programs
(tests/fuzz/gen.py) must check and build for sm_80 and sm_90a, a few must run on the
interpreter, and mutations of the examples and std sources (tests/fuzz/mutate.py) must get
diagnostics or success from check: never an exception, never more than 10 s.  Longer runs:
scripts/fuzz (tests/fuzz/RESULTS.md)."""
from __future__ import annotations

import pytest

from fuzz import gen, mutate
from fuzz.oracles import Worker

GENERATED = range(0, 150)  # check + build
INTERPRETED = range(1000, 1025)  # check + build + the interpreter
MUTATED = range(0, 800)  # check

# Failures already found and listed in tests/fuzz/FINDINGS.md, owned by another part of issue
# 16 and not fixed yet when this was written: tolerated (and named) so that the step finds new
# ones.  Remove an entry once its fix lands; the test then holds the fix.
KNOWN = {
    "Exceeds the limit (4300 digits)": "bounds: integer literals of any length",
}


def _known(outcome) -> str | None:
    return next((owner for text, owner in KNOWN.items() if text in outcome.detail), None)


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.close()


def _failures(worker, cases, **kw) -> list[str]:
    bad = []
    for seed, text, extra in cases:
        o = worker.run_confirmed(text, 10.0, **kw, **extra)
        if o.status in ("internal", "timeout") and _known(o):
            continue
        if o.status != "ok" and (o.failed or kw.get("build", True)):
            bad.append(f"seed {seed}: {o.status} at {o.stage} {o.codes}\n{o.detail[-1500:]}\n--- program:\n{text}")
    return bad


@pytest.mark.slow
def test_generated_programs_check_and_build(worker):
    cases = [(s, gen.generate(s).source, {}) for s in GENERATED]
    bad = _failures(worker, cases)
    assert not bad, f"{len(bad)} of {len(cases)} generated programs failed; the first:\n{bad[0]}"


@pytest.mark.slow
def test_generated_programs_run_on_the_interpreter(worker):
    programs = [gen.generate(s) for s in INTERPRETED]
    cases = [(p.seed, p.source, {"interp_cases_": p.kernels}) for p in programs]
    bad = _failures(worker, cases)
    assert not bad, f"{len(bad)} of {len(cases)} generated programs failed; the first:\n{bad[0]}"


@pytest.mark.slow
def test_mutated_examples_and_std_sources_check(worker):
    cases = []
    for s in MUTATED:
        name, text = mutate.mutate(s)
        cases.append((s, text, {"name": name.split("/")[-1]}))
    bad = _failures(worker, cases, build=False)
    assert not bad, f"{len(bad)} of {len(cases)} mutants failed; the first:\n{bad[0]}"


def test_a_seed_names_one_program_and_one_mutant():
    assert gen.generate(7).source == gen.generate(7).source != gen.generate(8).source
    assert mutate.mutate(7) == mutate.mutate(7)


def test_a_case_over_its_cpu_time_is_a_timeout(worker):
    out = worker.run(gen.generate(7).source, timeout=1e-6, wall=120)
    assert out.status == "timeout" and "of CPU" in out.detail
