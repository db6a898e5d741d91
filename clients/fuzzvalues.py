"""Values every protocol's fuzzer mixes in: text that has broken servers
before (operators, NULs, surrogates' neighbours, huge numbers as text), and
ids that exist as well as ids drawn from the contract's pattern. The ids that
exist are the fuzz runner's (fuzz/runner.py seeds the collection and passes
them to each descriptor's fuzzer): the clients know no dataset."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

NASTY = ["", " ", "\x00", "$ne", "{\"$ne\": null}", "$where", "a.b", "\ufeff", "\U0001f600", "\u202e",
         "730", "0", "-1", "1e309", "NaN", "null", "true", "{}", "[]", "'\"", "%00", "\\", "😀" * 50]


def hostile_text(max_size: int = 60) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(NASTY), st.text(max_size=max_size))


def ids(pattern: str, seeded: Sequence[str]) -> st.SearchStrategy[str]:
    """Ids the collection holds (so updates and deletes hit), ids of the
    contract's pattern, and text that is no id."""
    return st.one_of(st.sampled_from(seeded), st.from_regex(pattern, fullmatch=True), hostile_text(30))
