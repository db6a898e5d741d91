"""Latency per operation of the workload table (lab/workload.py: insert,
fetch-one and fetch-100 by default; LAB_BENCH_OPERATIONS names others) for
every subject and the direct-pymongo baseline, with the database prepared as
the study did:

- insert: an empty collection without secondary indexes; the same game
  inserted by every subject. Every block of inserts starts from the empty
  collection: what a block created is deleted after it, untimed (so a timed
  insert meets at most block − 1 earlier documents of its own block);
- fetch: the fetch set's games with indexes on; the same game fetched by
  every subject.

A subject is an implementation in one variant, mode and network path
(lab/axes.py): `rest/python_flask+gthread`, `rest/go_nethttp@docker`,
`direct@rtt20ms`. The subjects of one operation are measured together,
interleaved (benchmarks/interleave.py: cycles of warm blocks in random order),
the first time one of the operation's tests runs, each site's subjects on its
own database; each test then hands its subject's rounds to pytest-benchmark,
so its JSON and tables hold one entry per subject and operation. One operation
per round, timed at the client from the request to the fully decoded response,
on a connection opened before timing starts.
"""

from __future__ import annotations

from benchmarks.suite import record


def test_latency(benchmark, operation, subject, interleaved):
    # Parametrized by benchmarks/conftest.py (pytest_generate_tests): the workload
    # table's operations × this run's subjects.
    record(benchmark, interleaved(operation), subject)
