"""What every protocol's fuzzer (clients/<p>/fuzz.py) draws on and reports to.

Values it mixes in: text that has broken servers before (operators, NULs,
surrogates' neighbours, huge numbers as text), and ids that exist as well as
ids drawn from the contract's pattern. The ids that exist are the fuzz
runner's (fuzz/runner.py seeds the collection and passes them to each
descriptor's fuzzer): the clients know no dataset.

What it reports to: the run's Tally, and the runner's Model of the collection
as a fuzzer sees it. Both here, below the runner, so that the fuzzers import
nothing above the clients."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hypothesis import strategies as st

NASTY = ["", " ", "\x00", "$ne", "{\"$ne\": null}", "$where", "a.b", "\ufeff", "\U0001f600", "\u202e",
         "730", "0", "-1", "1e309", "NaN", "null", "true", "{}", "[]", "'\"", "%00", "\\", "😀" * 50]


def hostile_text(max_size: int = 60) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(NASTY), st.text(max_size=max_size))


def ids(pattern: str, seeded: Sequence[str]) -> st.SearchStrategy[str]:
    """Ids the collection holds (so updates and deletes hit), ids of the
    contract's pattern, and text that is no id."""
    return st.one_of(st.sampled_from(seeded), st.from_regex(pattern, fullmatch=True), hostile_text(30))


@dataclass
class Tally:
    implementation: str
    cases: int = 0
    server_errors: int = 0  # 5xx, INTERNAL, UNKNOWN: never allowed
    acknowledged_writes: int = 0
    failures: list[str] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)  # answer -> how many

    def fail(self, case: object, why: str) -> None:
        if len(self.failures) < 50:
            self.failures.append(f"{why} -- case: {str(case)[:300]}")
        else:
            self.failures.append(why[:100])

    def saw(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def summary(self) -> dict[str, Any]:
        return {"implementation": self.implementation, "cases": self.cases,
                "failures": len(self.failures), "server_errors": self.server_errors,
                "acknowledged_writes": self.acknowledged_writes, "outcomes": dict(sorted(self.outcomes.items())),
                "first_failures": self.failures[:10]}


class Model(Protocol):
    """fuzz.runner.Model as a fuzzer reports to it: after each case, what the
    service acknowledged and which ids the case named."""

    def acknowledged(self, case: object, op: str, game_id: str, sent: Any = None) -> None: ...

    def check(self, case: object, ids: tuple[str, ...] = ()) -> None: ...
