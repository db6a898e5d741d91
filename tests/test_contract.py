"""The contract files agree with the code that serves them."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from clients.grpc.codegen import GO_DIR, generate, generate_go
from contract import games_pb2 as pb
from contract.game import FIELDS, LANGUAGE_DETAIL_FIELDS, check_game
from lab import dataset
from lab.host.tools import go_install
from lab.registry import TOOLCHAIN_HINTS
from lab.settings import ROOT
from services.soap.python_spyne.wsdl import WSDL, wsdl

CONTRACT = ROOT / "contract"


def test_generated_grpc_code_is_current():
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
    for name, text in fresh.items():
        assert (CONTRACT / name).read_text() == text, f"run: python -m lab.codegen ({name} is stale)"


def test_wsdl_is_the_served_one(monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    assert WSDL.read_bytes() == wsdl(), "run: python -m services.soap.python_spyne.wsdl (contract/games.wsdl is stale)"
    # Printing it must not leave a database address behind for later labs of this process.
    assert "MONGODB_URI" not in os.environ


@pytest.mark.skipif(shutil.which("go") is None, reason=f"Go is not installed: {TOOLCHAIN_HINTS['go']}")
def test_generated_go_grpc_code_is_current():
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate_go(Path(tmp), go_install)
    for name, text in fresh.items():
        assert (GO_DIR / name).read_text() == text, f"run: python -m lab.codegen ({name} is stale)"


def test_proto_game_has_exactly_the_contract_fields():
    names = [f.name for f in pb.Game.DESCRIPTOR.fields]
    assert names == ["id", *FIELDS]
    assert [f.name for f in pb.LanguageDetail.DESCRIPTOR.fields] == list(LANGUAGE_DETAIL_FIELDS)


def test_schema_graphql_is_the_served_schema(monkeypatch):
    monkeypatch.setenv("MONGODB_URI", "mongodb://127.0.0.1:9/?directConnection=true")
    from services.graphql.python_graphene.schema import schema
    text = (CONTRACT / "schema.graphql").read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#")).strip()
    assert body == str(schema).strip()


def test_openapi_and_ws_schema_list_every_field():
    openapi = (CONTRACT / "openapi.yaml").read_text()
    required = re.search(r"GameFields:.*?required: \[([^\]]*)\]", openapi, re.S).group(1)
    assert [f.strip() for f in required.split(",")] == list(FIELDS)
    ws = json.loads((CONTRACT / "ws-protocol.schema.json").read_text())
    assert ws["$defs"]["GameFields"]["required"] == list(FIELDS)
    assert list(ws["$defs"]["LanguageDetail"]["properties"]) == list(LANGUAGE_DETAIL_FIELDS)


def test_every_dataset_game_passes_validation():
    games = dataset.games()
    assert len(games) == 3424
    for game in games:
        assert check_game(game) == {k: game[k] for k in FIELDS}


def test_the_round_trip_cover_holds_every_value_class_of_the_dataset():
    """Docker mode's round trip sends lab.dataset.covering(): together its games
    hold every value class the whole dataset holds (non-BMP characters, nulls,
    empty lists, ...) and the longest value of every field."""
    def classes(games):
        return set().union(*(dataset._value_classes(key, value) for game in games for key, value in game.items()))
    whole, cover = dataset.games(), dataset.covering()
    assert {"name:non-bmp", "is_kernel_ac=None", "developer:empty", "description:entity"} <= classes(whole)
    assert classes(cover) == classes(whole)
    assert len(cover) < len(whole) // 50
    for key in whole[0]:
        longest = max(len(json.dumps(game[key])) for game in whole)
        assert max(len(json.dumps(game[key])) for game in cover) == longest, key
