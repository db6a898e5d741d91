"""The fuzzing loop shared by every protocol: a seeded Hypothesis run of a
fixed number of cases, a model of the stored games, and the tally."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, given
from hypothesis import seed as hypothesis_seed
from hypothesis import settings as hypothesis_settings
from hypothesis.strategies import SearchStrategy

from clients import check_health
from clients.fuzzing import Tally
from clients.protocols import PROTOCOLS as DESCRIPTORS
from contract.game import check_game
from lab import dataset
from lab.environment import client_options
from lab.stack import Lab
from services.common.store import Store

SEEDED = 20  # games in the collection when a run starts

FULL_COMPARE_EVERY = 100  # cases between two whole-collection comparisons


TALLIES: list[Tally] = []  # every run of this process, for the test session's summary


class Model:
    """What the collection must hold: the seeded games, changed only by the
    writes the service acknowledged."""

    def __init__(self, store: Store, tally: Tally):
        self.store, self.tally = store, tally
        games = dataset.games(SEEDED)
        dataset.reset(store.games, games, indexes=False)
        self.games = {d.pop("_id"): d for d in dataset.documents(games)}
        self.touched: set[str] = set()

    def stored(self, game_id: str) -> dict[str, Any] | None:
        doc = self.store.games.find_one({"_id": game_id})
        if doc is not None:
            doc.pop("_id")
        return doc

    def acknowledged(self, case: object, op: str, game_id: str, sent: Any = None) -> None:
        """The service said it created/updated/deleted game_id; `sent` is the game
        it was given (None when the protocol does not let us say)."""
        self.tally.acknowledged_writes += 1
        self.touched.add(game_id)
        doc = self.stored(game_id)
        if op == "delete":
            if doc is not None:
                self.tally.fail(case, f"delete of {game_id} acknowledged, the game is still stored")
            self.games.pop(game_id, None)
            return
        if doc is None:
            self.tally.fail(case, f"{op} of {game_id} acknowledged, nothing stored")
            return
        try:
            check_game(doc)
        except Exception as exc:  # stored data the contract refuses: it came from an invalid call
            self.tally.fail(case, f"{op} stored a game the contract refuses: {exc}")
        if sent is not None and doc != sent:
            self.tally.fail(case, f"{op} of {game_id} stored something else than was sent")
        if op == "update" and game_id not in self.games:
            self.tally.fail(case, f"update of {game_id} acknowledged, but no such game existed")
        self.games[game_id] = doc

    def check(self, case: object, ids: tuple[str, ...] = ()) -> None:
        """After each case: the ids it named hold what the model says, and the
        count is the model's; every FULL_COMPARE_EVERY cases, everything."""
        count = self.store.games.count_documents({})
        if count != len(self.games):
            self.tally.fail(case, f"{count} games stored, the model has {len(self.games)}")
            self.resync()
            return
        for game_id in ids:
            if type(game_id) is str and self.stored(game_id) != self.games.get(game_id):
                self.tally.fail(case, f"game {game_id!r} changed without an acknowledged write")
                self.resync()
        if self.tally.cases % FULL_COMPARE_EVERY == 0:
            self.compare_all(case)

    def compare_all(self, case: object) -> None:
        stored = {d.pop("_id"): d for d in self.store.games.find({})}
        if stored != self.games:
            differ = sorted(set(stored) ^ set(self.games)) or [k for k in stored if stored[k] != self.games[k]]
            self.tally.fail(case, f"collection differs from the model at {differ[:5]}")
            self.resync()

    def resync(self) -> None:
        """After a reported difference: take the database as it is, so one fault is reported once."""
        self.games = {d.pop("_id"): d for d in self.store.games.find({})}


Execute = Callable[[Any, Tally, Model], None]


def draw(strategy: SearchStrategy, cases: int, seed: int) -> list[Any]:
    """The `cases` cases a seeded Hypothesis run draws from `strategy`; no
    shrinking: every failure is counted, not hunted down. What is drawn does not
    depend on what the cases do (no case fails the Hypothesis test), so every
    implementation of a protocol gets the same cases, drawn once per process:
    drawing was most of a fuzz run's time (REST 1.4 s of 2.1-3.4 s), and the
    tallies of 11 implementations, drawing each or reusing, were identical."""
    drawn: list[Any] = []

    @hypothesis_settings(max_examples=cases, database=None, deadline=None, phases=[Phase.generate],
                         suppress_health_check=list(HealthCheck), derandomize=False)
    @hypothesis_seed(seed)
    @given(strategy)
    def each(case: Any) -> None:
        drawn.append(case)
    each()
    return drawn


_DRAWN: dict[tuple[str, int, int], list[Any]] = {}  # (protocol, cases, seed) -> the cases


def drive(drawn: list[Any], execute: Execute, tally: Tally, model: Model) -> None:
    for case in drawn:
        tally.cases += 1
        try:
            execute(case, tally, model)
        except Exception as exc:  # a client-side surprise is a failure of the case, not of the run
            tally.fail(case, f"{type(exc).__name__}: {exc}")


def run(lab: Lab, name: str, cases: int, seed: int = 0) -> Tally:
    impl = lab.implementation(name)
    tally = Tally(name)
    store = lab.store()
    try:
        model = Model(store, tally)
        # The ids the collection holds, in the dataset's order, for the fuzzer to draw
        # on (its updates and deletes hit): the clients know no dataset.
        seeded_ids = list(model.games)
        # A variant's client options (lab/axes.py: its HTTP version, its CA) when it has any.
        strategy, execute, close = DESCRIPTORS[impl.protocol].fuzzer_function()(
            lab.endpoints[name], seeded_ids, **client_options(impl))
        key = (impl.protocol, cases, seed)
        if key not in _DRAWN:
            _DRAWN[key] = draw(strategy, cases, seed)
        try:
            drive(_DRAWN[key], execute, tally, model)
        finally:
            close()
        model.compare_all("end of run")
        try:
            check_health(impl.protocol, lab.endpoints[name], **client_options(impl))
        except Exception as exc:
            tally.fail("health after the run", f"the service no longer serves: {exc!r}")
    finally:
        store.close()
    TALLIES.append(tally)
    return tally


# A descriptor's fuzzer: (endpoint, seeded ids) -> (strategy, execute, close).
Fuzzer = Callable[[str, list[str]], tuple[SearchStrategy, Execute, Callable[[], None]]]


PROTOCOLS = tuple(name for name, p in DESCRIPTORS.items() if p.fuzzer)  # those with a fuzzer
