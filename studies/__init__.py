"""The published studies the lab sets beside its own figures, one folder each.

A study is a package `studies/<name>/` whose `__init__.py` holds a `STUDY`
descriptor (name, citation, what it measured, where its section goes), with,
beside it:

    published.json   its figures as data: tables of rows and columns with their unit
    report.py        section(page, inputs) -> ranking lines: its part of the report
    scenario.py      where the study has a scenario of its own: it calls the load
                     instrument (load/) with the study's figures and default
                     implementations (chosen from manifest fields, not names)

Studies sit above the instruments (they may import load/, capture/) and below
the report, which iterates over STUDIES and names none of them. A sixth study
is a sixth folder: nothing else changes.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Study:
    name: str           # the folder's name
    citation: str       # one line: authors, title, venue, year
    measured: str       # what the study measured, in a sentence
    order: int = 50     # its place among the studies on the page, smallest first

    @property
    def package(self) -> ModuleType:
        return _packages[self.name]

    @property
    def folder(self) -> Path:
        return Path(self.package.__file__).parent

    def published(self) -> dict[str, Any]:
        """Its figures (published.json)."""
        return json.loads((self.folder / "published.json").read_text())

    def report(self) -> ModuleType:
        return importlib.import_module(f"{self.package.__name__}.report")

    def scenario(self) -> ModuleType | None:
        """Its scenario module, or None when it has none of its own."""
        if not (self.folder / "scenario.py").exists():
            return None
        return importlib.import_module(f"{self.package.__name__}.scenario")


_packages: dict[str, ModuleType] = {}


def discover(paths: list[str] | None = None, prefix: str = "studies.") -> list[Study]:
    """Every package under `paths` (default: this folder) with a STUDY, in page order."""
    found = []
    for info in pkgutil.iter_modules(paths if paths is not None else __path__, prefix):
        if not info.ispkg:
            continue
        module = importlib.import_module(info.name)
        study = getattr(module, "STUDY", None)
        if isinstance(study, Study):
            _packages[study.name] = module
            found.append(study)
    return sorted(found, key=lambda s: (s.order, s.name))


STUDIES: list[Study] = discover()
BY_NAME: dict[str, Study] = {s.name: s for s in STUDIES}


def get(name: str) -> Study:
    return BY_NAME[name]

