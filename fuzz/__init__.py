"""Fuzzing every protocol from its contract file, bounded and seeded.

    tally = fuzz.run(lab, "rest/python_flask", cases=200, seed=1)

Cases come from each protocol's fuzz strategies (its descriptor's `fuzzer`,
clients/<protocol>/fuzz.py), built from the contract file that describes the
protocol (schemathesis on openapi.yaml with positive and negative data, a
schema's SDL, the proto's descriptors, ws-protocol.schema.json), plus bytes
that are not a message at all. Each case is sent to the running service; the run checks:

- no 5xx / INTERNAL / UNKNOWN answer, and the answer is the contract's;
- the stored data changed only by calls the service acknowledged, and as they
  said (a model of the collection, compared with the database);
- the service still serves at the end (a health call).

make test runs a few hundred cases per implementation, make fuzz 10,000
(FUZZ_CASES) and writes the counts to results/fuzz/latest.json.
"""

from __future__ import annotations

from fuzz.runner import PROTOCOLS, Tally, run

__all__ = ["PROTOCOLS", "Tally", "run"]
