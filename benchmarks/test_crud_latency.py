"""Latency of insert, fetch-one and fetch-100 for every implementation and
the direct-pymongo baseline, with the database prepared as the study did:

- insert: an empty collection without secondary indexes; the same game
  inserted by every subject. Every block of inserts starts from the empty
  collection: what a block created is deleted after it, untimed (so a timed
  insert meets at most block − 1 earlier documents of its own block);
- fetch: 100 games of the dataset with indexes on; the same game fetched by
  every subject.

The subjects of one operation are measured together, interleaved
(benchmarks/interleave.py: cycles of warm blocks in random order), the first
time one of the operation's tests runs; each test then hands its subject's
rounds to pytest-benchmark, so its JSON and tables hold one entry per
implementation and operation as before. One operation per round, timed at
the client from the request to the fully decoded response, on a connection
opened before timing starts.
"""

from __future__ import annotations

import pytest

from benchmarks.suite import SUBJECTS, record


@pytest.mark.parametrize("subject", SUBJECTS)
def test_insert(benchmark, subject, interleaved):
    record(benchmark, interleaved("insert"), subject)


@pytest.mark.parametrize("subject", SUBJECTS)
def test_fetch_one(benchmark, subject, interleaved):
    record(benchmark, interleaved("fetch-one"), subject)


@pytest.mark.parametrize("subject", SUBJECTS)
def test_fetch_100(benchmark, subject, interleaved):
    record(benchmark, interleaved("fetch-100"), subject)
