"""The database state a load run starts from, as benchmarks/ prepares it:
insert into an empty collection without secondary indexes; fetch-one,
fetch-100 and health against the dataset's first 100 games with indexes."""

from __future__ import annotations

from lab import dataset
from lab.stack import Lab


def prepare(lab: Lab, operation: str) -> None:
    store = lab.store()
    try:
        if operation == "insert":
            dataset.reset(store.games, [], indexes=False)
        else:
            dataset.reset(store.games, dataset.fetch_games(), indexes=True)
    finally:
        store.close()
