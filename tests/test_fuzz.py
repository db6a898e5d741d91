"""Fuzzing every implementation from its protocol's contract file (fuzz/):
no 5xx or internal error, the contract's answers only, stored data changed
only by acknowledged writes, the service still serving afterwards.

make test: FUZZ_CASES (default 150) cases per implementation, seed FUZZ_SEED
(default 1); make fuzz: 10,000, counts in results/fuzz/latest.json. FUZZ_RESUME=1
skips an implementation that file already tallies at the same size and seed (a
run of hours goes on where an interrupted one stopped; make reference sets it)."""

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
RESUME = bool(os.environ.get("FUZZ_RESUME"))


def _name() -> str:
    return "latest" if CASES >= 10_000 else "latest-test"


def _earlier() -> dict:
    """The tallies results/fuzz/ holds of this size and seed ({} if none or another run's)."""
    try:
        found = results.read(settings.RESULTS / "fuzz" / f"{_name()}.json", "fuzz")
    except (OSError, results.ResultError):
        return {}
    return found if (found.get("cases_per_implementation"), found.get("seed")) == (CASES, SEED) else {}


# Every implementation here whose protocol has a fuzzer (every descriptor names one today), once per
# service process: a fuzzer sends its own requests, so a subject varied only on the client's side
# (lab/registry.py, served_by) would fuzz its base's process again.
@pytest.mark.parametrize("impl", implementations(where=lambda impl: impl.protocol in fuzz.PROTOCOLS
                                                 and impl.served_by == impl.name))
def test_fuzz_from_the_contract(impl, lab):
    done = {t["implementation"]: t for t in _earlier().get("tallies", [])} if RESUME else {}
    if impl in done:
        pytest.skip(f"FUZZ_RESUME: tallied at {done[impl].get('date', '?')}: {done[impl]['cases']:,} cases, "
                    f"{done[impl]['failures']} failures, {done[impl]['server_errors']} server errors")
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
    import fcntl

    lab = RUNS[0][0]
    out = settings.RESULTS / "fuzz"
    out.mkdir(parents=True, exist_ok=True)
    context = run_context(lab.mode, lab.database, lab.implementations)
    name = _name()
    tallies = [{**t, "commit": context["commit"]} for _, t in RUNS]
    # A run of some implementations (make fuzz PYTEST_ARGS='-k soap', or FUZZ_RESUME) keeps
    # the others' tallies of an earlier run of the same size and seed, each with its date
    # (an earlier file not in the results format, or unreadable, is replaced). Read and
    # written under a lock: the implementations are fuzzed on several pytest-xdist workers
    # (make test's, make fuzz PYTEST_ARGS=-n2), each saving its own beside the others'.
    with open(out / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ran = {t["implementation"] for t in tallies}
        tallies = [t for t in _earlier().get("tallies", []) if t["implementation"] not in ran] + tallies
        results.write("fuzz", name, context, {"cases_per_implementation": CASES, "seed": SEED, "tallies": tallies},
                      out, stamped=False)


def test_fuzz_resume_goes_on_with_the_implementations_not_yet_tallied(tmp_path):
    """FUZZ_RESUME=1 after a run that tallied one implementation: that one is skipped, saying when
    and what it tallied, the other is fuzzed, and the file keeps both tallies."""
    import subprocess
    import sys

    first, second = "rest/go_nethttp", "ws/go_gorilla"
    env = {**os.environ, "LAB_RESULTS": str(tmp_path), "FUZZ_CASES": "5", "FUZZ_SEED": "1",
           "PYTHONPATH": str(settings.ROOT)}
    env.pop("FUZZ_RESUME", None)

    def run(only: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
                               "--benchmark-disable", str(settings.ROOT / "tests" / "test_fuzz.py"),
                               "-k", "test_fuzz_from_the_contract"], cwd=settings.ROOT,
                              env={**env, "LAB_ONLY": only, **extra}, capture_output=True, text=True, timeout=300)

    done = run(first)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    again = run(f"{first},{second}", FUZZ_RESUME="1")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "1 passed, 1 skipped" in again.stdout and "FUZZ_RESUME: tallied at" in again.stdout
    tallies = results.read(tmp_path / "fuzz" / "latest-test.json", "fuzz")["tallies"]
    assert sorted(t["implementation"] for t in tallies) == [first, second]


def test_fuzz_on_two_workers_keeps_every_workers_tallies(tmp_path):
    """make fuzz runs on FUZZ_WORKERS pytest-xdist workers, each saving after each implementation into
    the one results file: the file ends with every implementation's tally, not the last saver's."""
    import subprocess
    import sys

    subjects = ["rest/go_nethttp", "ws/go_gorilla", "grpc/go_grpc"]
    env = {**os.environ, "LAB_RESULTS": str(tmp_path), "FUZZ_CASES": "5", "FUZZ_SEED": "2",
           "PYTHONPATH": str(settings.ROOT), "LAB_ONLY": ",".join(subjects)}
    env.pop("FUZZ_RESUME", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2",
                           "--benchmark-disable", str(settings.ROOT / "tests" / "test_fuzz.py"),
                           "-k", "test_fuzz_from_the_contract"], cwd=settings.ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "3 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    tallies = results.read(tmp_path / "fuzz" / "latest-test.json", "fuzz")["tallies"]
    assert sorted(t["implementation"] for t in tallies) == sorted(subjects)


def test_the_sse_fuzzers_refused_resumes_are_refused_as_sent():
    """A Last-Event-ID the fuzzer calls invalid is invalid as it goes on the wire: hostile text such as
    " 0" or "5\\x00" is sent as 0 or 5 (printable, stripped), a resume within count 5 that every SSE
    service rightly streams (found at 10,000 cases: 5 false failures over the three SSE services)."""
    from hypothesis import given
    from hypothesis import settings as hypothesis_settings

    from clients.sse.fuzz import _invalid, header_value

    assert header_value(" 0") == "0" and header_value("5\x00") == "5" and header_value("\x00") == "x"

    @given(_invalid())
    @hypothesis_settings(max_examples=2000, database=None, deadline=None)
    def refused(case):
        if case.last_event_id is not None and ("count", "5") in case.query:
            sent = header_value(case.last_event_id)
            assert not (sent.isascii() and sent.isdigit() and int(sent) <= 5), case

    refused()
