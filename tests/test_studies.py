"""studies/: each study in one folder (its figures as data, its section, its
scenario); a sixth study is a sixth folder; the report and the load
instrument name none of them; the scenarios' default implementations follow
the manifests' fields."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

import studies
from lab import settings
from report import inputs as report_inputs
from report.build import build
from report.page import to_markdown

PUSH_QUICK = Path(__file__).parent / "data" / "push-quick.json"


def test_every_study_folder_has_a_descriptor_its_figures_with_units_and_a_section():
    folders = sorted(p.parent.name for p in (settings.ROOT / "studies").glob("*/__init__.py"))
    assert sorted(s.name for s in studies.STUDIES) == folders and len(folders) >= 5
    for study in studies.STUDIES:
        assert study.citation and study.measured
        published = study.published()
        assert published["citation"]["text"] and published["tables"], study.name
        for name, table in published["tables"].items():
            units = [table.get("unit")] if "unit" in table else [c["unit"] for c in table["columns"].values()]
            assert units and all(units), f"{study.name} table {name}: no unit"
            assert table["rows"], f"{study.name} table {name}: no rows"
        assert callable(study.report().section)


def test_the_push_studies_embed_the_figures_the_push_results_held():
    """The figures moved out of load/push.py into published.json: the push
    results' "studies" member comes out as a real run (tests/data) wrote it."""
    embedded = json.loads(PUSH_QUICK.read_text())["studies"]
    now = json.loads(json.dumps({name: studies.get(name).scenario().figures() for name in embedded}))
    # every figure the run embedded is still the study's; a table transcribed since is added beside them
    assert {name: {k: now[name][k] for k in figures} for name, figures in embedded.items()} == embedded
    assert set(now["pathan"]) - set(embedded["pathan"]) == {"memory_mb"}   # its Table 6 (issue 53)


def _sixth(root: Path) -> Path:
    """A study package outside studies/, with the three files a study has."""
    package = root / "more_studies"
    (package / "sixth").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sixth" / "__init__.py").write_text(textwrap.dedent('''
        from studies import Study

        STUDY = Study(name="sixth", citation="Sixth et al., A sixth study, 2026",
                      measured="one figure, to show a sixth study is a folder", order=99)
    '''))
    (package / "sixth" / "published.json").write_text(json.dumps({
        "citation": {"text": "Sixth et al., A sixth study, 2026"},
        "tables": {"1": {"title": "Table 1", "unit": "ms", "rows": {"REST": {"mean": 4.25}}}}}))
    (package / "sixth" / "report.py").write_text(textwrap.dedent('''
        from report.page import Heading, Page, Table
        from more_studies.sixth import STUDY


        def section(page: Page, inputs) -> list[str]:
            table = STUDY.published()["tables"]["1"]
            page.add(Heading(2, "The sixth study beside the lab", "sixth"),
                     Table(["protocol", f"mean ({table['unit']})"],
                           [[p, str(r["mean"])] for p, r in table["rows"].items()], "Table 1", "sixth-t1"))
            return ["sixth: one ranking line"]
    '''))
    return package


def test_a_sixth_study_is_a_folder(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    found = studies.discover([str(_sixth(tmp_path))], "more_studies.")
    assert [s.name for s in found] == ["sixth"]
    results = tmp_path / "results"
    results.mkdir()
    page, summary = build(report_inputs.load(results), "0" * 40, [], studies=[*studies.STUDIES, *found])
    text = to_markdown(page, tmp_path / "figs", "figs")
    assert "## The sixth study beside the lab" in text and "| REST | 4.25 |" in text
    assert "sixth: one ranking line" in summary["rankings"]
    assert "Sixth et al., A sixth study, 2026: one figure" in text  # in the sources, as every study
    # after the five in the page, by its order; the others still there
    assert text.index("The sixth study") > text.index("The study beside the lab")
    without, _ = build(report_inputs.load(results), "0" * 40, [])
    assert "sixth" not in to_markdown(without, tmp_path / "figs2", "figs2")


def test_no_file_of_the_report_or_the_load_instrument_names_a_study():
    names = sorted({re.sub(r"\d+$", "", s.name) for s in studies.STUDIES})
    pattern = re.compile("|".join(names), re.IGNORECASE)
    files = sorted((settings.ROOT / "report").rglob("*.py")) + sorted((settings.ROOT / "load").rglob("*.py"))
    assert files
    named = [f"{path.relative_to(settings.ROOT)}:{i}: {line.strip()}" for path in files
             for i, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not named, "\n".join(named)


def _impl(name: str, language: str, protocol: str, operations: tuple[str, ...]) -> SimpleNamespace:
    return SimpleNamespace(name=name, language=language, protocol=protocol,
                           serves=lambda *ops: set(ops) <= set(operations))


FAKE = [_impl("ws/rust_a", "rust", "ws", ("echo", "broadcast", "subscribe", "health")),
        _impl("sse/rust_b", "rust", "sse", ("subscribe", "health")),
        _impl("rest/rust_c", "rust", "rest", ("health",)),
        _impl("ws/node_d", "node", "ws", ("echo", "broadcast", "subscribe", "health")),
        _impl("sse/node_e", "node", "sse", ("subscribe", "health")),
        _impl("sse/node_f", "node", "sse", ("subscribe", "health")),
        _impl("rest/node_g", "node", "rest", ("health",)),
        _impl("grpc/node_h", "node", "grpc", ("health",)),
        _impl("grpc/node_i", "node", "grpc", ("health", "subscribe")),
        _impl("grpc/go_j", "go", "grpc", ("health", "subscribe"))]


@pytest.mark.parametrize("study, expected", [
    ("pathan", ["ws/node_d", "sse/node_e", "sse/node_f"]),                  # Node.js, SSE and WebSocket
    # one pair per language, and its gRPC stream beside it (Go has no pair: none of Go)
    ("timeplus", ["ws/rust_a", "sse/rust_b", "ws/node_d", "sse/node_e", "grpc/node_i"]),
    ("feathers", ["ws/node_d", "rest/node_g"]),                             # Node.js REST + messaging
    ("fernando", ["ws/rust_a", "ws/node_d"]),                               # serving echo and broadcast
])
def test_default_implementations_come_from_manifest_fields(study, expected, monkeypatch):
    scenario = studies.get(study).scenario()
    monkeypatch.setattr(scenario, "select", lambda names=None: FAKE)
    assert scenario.default() == expected


def _imports(path: Path) -> set[str]:
    import ast

    tree = ast.parse(path.read_text())
    out = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return out | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}


@pytest.mark.parametrize("package, above", [("studies", "report"), ("load", "studies"), ("capture", "report")])
def test_the_studies_sit_between_the_instruments_and_the_report(package, above):
    """contract -> clients -> lab -> instruments -> studies -> report: nothing imports upwards."""
    upward = [f"{path.relative_to(settings.ROOT)}: {m}" for path in sorted((settings.ROOT / package).rglob("*.py"))
              for m in sorted(_imports(path)) if m == above or m.startswith(above + ".")]
    assert not upward, "\n".join(upward)
