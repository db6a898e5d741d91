"""Fuzzing every implementation from its protocol's contract file (fuzz/):
no 5xx or internal error, the contract's answers only, stored data changed
only by acknowledged writes, the service still serving afterwards.

make test: FUZZ_CASES (default 150) cases per implementation, seed FUZZ_SEED
(default 1); make fuzz: 10,000, counts in results/fuzz/latest.json."""

from __future__ import annotations

import datetime
import os
import time

import pytest

import fuzz
from lab import results, settings
from lab.context import run_context
from lab.pytest_plugin.fixtures import implementations

CASES = int(os.environ.get("FUZZ_CASES", "150"))
SEED = int(os.environ.get("FUZZ_SEED", "1"))
RUNS: list = []  # (lab, tally summary)


# Every implementation here whose protocol has a fuzzer (every descriptor names one today), once per
# service process: a fuzzer sends its own requests, so a subject varied only on the client's side
# (lab/registry.py, served_by) would fuzz its base's process again.
@pytest.mark.parametrize("impl", implementations(where=lambda impl: impl.protocol in fuzz.PROTOCOLS
                                                 and impl.served_by == impl.name))
def test_fuzz_from_the_contract(impl, lab):
    began = time.monotonic()
    tally = fuzz.run(lab, impl, CASES, SEED)
    RUNS.append((lab, {**tally.summary(), "seconds": round(time.monotonic() - began, 1),
                       "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}))
    save()   # after each implementation: an interrupted make fuzz keeps the tallies it made
    assert tally.cases > 0
    assert tally.server_errors == 0, tally.failures[:10]
    assert tally.failures == [], "\n".join(tally.failures[:10])


def test_the_cases_drawn_with_one_seed_are_the_same_each_time():
    """fuzz.runner draws a protocol's cases once and gives them to each of its
    implementations, on the ground that what a seed draws does not depend on
    anything else. Drawn twice here (REST, the contract's OpenAPI document): the
    same requests; with another seed, others."""
    from clients.rest import fuzz as rest_fuzz
    from fuzz.runner import draw

    def requests(seed: int) -> list[str]:
        strategy, _, close = rest_fuzz.fuzzer("http://127.0.0.1:9", [])  # nothing is sent
        close()
        return [case.as_curl_command(base_url="http://127.0.0.1:9") for case in draw(strategy, 40, seed)]
    first = requests(SEED)
    assert len(first) == 40 and len(set(first)) > 20
    assert requests(SEED) == first
    assert requests(SEED + 1) != first


def save() -> None:
    lab = RUNS[0][0]
    out = settings.RESULTS / "fuzz"
    context = run_context(lab.mode, lab.database, lab.implementations)
    name = "latest" if CASES >= 10_000 else "latest-test"
    tallies = [{**t, "commit": context["commit"]} for _, t in RUNS]
    # A run of some implementations (make fuzz PYTEST_ARGS='-k soap') keeps the
    # others' tallies of an earlier run of the same size and seed, each with its date
    # (an earlier file not in the results format, or unreadable, is replaced).
    try:
        earlier = results.read(out / f"{name}.json", "fuzz")
    except (OSError, results.ResultError):
        earlier = {}
    if (earlier.get("cases_per_implementation"), earlier.get("seed")) == (CASES, SEED):
        ran = {t["implementation"] for t in tallies}
        tallies = [t for t in earlier.get("tallies", []) if t["implementation"] not in ran] + tallies
    results.write("fuzz", name, context, {"cases_per_implementation": CASES, "seed": SEED, "tallies": tallies},
                  out, stamped=False)
