"""The user's documentation says what the lab does: the README stays a guide
(short, no dated timing tables, every top-level folder in its layout), the
toolchain minimums and the database's version come from one place, the docs' links lead
somewhere, every command they show (`make X`, `python -m X`, `protolab X`) exists and
answers --help, and the AGPL-licensed former load engine is named only where the docs say
why it is not used."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clients.protocols import PROTOCOLS
from lab.database import SECANTUS_VERSION
from lab.host import compose, dockerd
from lab.registry import TOOLCHAIN_HINTS, TOOLCHAIN_MINIMUMS, discover, every_variant
from lab.settings import ROOT

README = ROOT / "README.md"
DOCS = [README, ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def layout_block() -> str:
    block = re.search(r"^## Layout\n+```\n(.*?)```", README.read_text(), re.S | re.M)
    assert block, "README.md lost its Layout block"
    return block.group(1)


def test_the_readme_is_a_guide_not_a_notebook() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 320, f"README.md has {len(lines)} lines; the method goes to docs/, logs to docs/notes/"
    dated_rows = [line for line in lines if line.startswith("|") and re.search(r"\b20\d\d-\d\d-\d\d\b", line)]
    assert not dated_rows, f"dated table rows belong in docs/notes/: {dated_rows}"
    first_screen = "\n".join(lines[:40])
    assert "make bench" in first_screen and "make test" in first_screen


def test_the_layout_names_every_top_level_folder() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("no git checkout to list the tracked folders from")
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True,
                             timeout=60, check=True).stdout.splitlines()
    folders = {path.split("/")[0] for path in tracked if "/" in path and not path.startswith(".")}
    named = set(re.findall(r"^(\w[\w.-]*)/", layout_block(), re.M))
    assert folders - named == set(), f"README's Layout leaves out {sorted(folders - named)}"


def test_the_toolchain_minimums_are_stated_in_one_place_and_quoted() -> None:
    go_line = re.search(r"^go (\d+\.\d+)", (ROOT / "services" / "go.mod").read_text(), re.M)
    assert go_line and go_line.group(1) == TOOLCHAIN_MINIMUMS["go"], "services/go.mod's go line moved"
    engines = json.loads((ROOT / "services" / "package.json").read_text())["engines"]["node"]
    assert engines == f">={TOOLCHAIN_MINIMUMS['node']}", "services/package.json's engines moved"
    text = README.read_text()
    assert f"Go ≥ {TOOLCHAIN_MINIMUMS['go']}" in text and f"Node.js ≥ {TOOLCHAIN_MINIMUMS['node']}" in text
    assert "TOOLCHAIN_MINIMUMS" in text, "the README should say where the minimums live"
    for tool in ("go", "node"):
        assert f">= {TOOLCHAIN_MINIMUMS[tool]}" in TOOLCHAIN_HINTS[tool]
    stated = {doc.name: re.findall(r"\b(?:Go|Node\.js) ≥ [\d.]+", doc.read_text()) for doc in DOCS}
    quoted = {f"Go ≥ {TOOLCHAIN_MINIMUMS['go']}", f"Node.js ≥ {TOOLCHAIN_MINIMUMS['node']}"}
    assert all(set(found) <= quoted for found in stated.values()), stated


def test_no_code_states_a_toolchain_minimum_of_its_own() -> None:
    """Messages and default images take TOOLCHAIN_MINIMUMS; the other Go module and Node.js project
    declare the same; the Dockerfiles and docs quote the default images compose.py derives from it."""
    assert re.search(r"^go (\d+\.\d+)", (ROOT / "clients" / "go.mod").read_text(), re.M).group(1) \
        == TOOLCHAIN_MINIMUMS["go"]
    crosscheck = json.loads((ROOT / "clients" / "socketio" / "crosscheck" / "package.json").read_text())
    assert crosscheck["engines"]["node"] == f">={TOOLCHAIN_MINIMUMS['node']}"
    literal = re.compile(r"\b(?:Go|Node(?:\.js)?)\s*(?:>=|≥)\s*\d")
    code = [path for path in (ROOT / "lab").rglob("*.py") if literal.search(path.read_text())]
    assert not code, f"a toolchain minimum written out, not read from TOOLCHAIN_MINIMUMS: {code}"
    defaults = {variable: image for language in ("go", "node")
                for _, variable, image in compose.LANGUAGES[language].images if variable != "LAB_DEBIAN_IMAGE"}
    assert defaults == {"LAB_GO_IMAGE": f"golang:{TOOLCHAIN_MINIMUMS['go']}-bookworm",
                        "LAB_NODE_IMAGE": f"node:{TOOLCHAIN_MINIMUMS['node'].split('.')[0]}-bookworm-slim"}
    quoting = [ROOT / "docker" / "go" / "Dockerfile", ROOT / "docker" / "node" / "Dockerfile",
               ROOT / "docs" / "docker.md", ROOT / "docker" / "images" / "README.md",
               ROOT / "lab" / "host" / "compose.py"]
    for path in quoting:
        text = path.read_text()
        images = set(re.findall(r"\b(?:golang|node):\d[\w.-]*", text))
        assert images and images <= set(defaults.values()), f"{path.relative_to(ROOT)} quotes {images}"


def test_the_database_version_is_stated_in_one_place() -> None:
    """lab/database.py's SECANTUS_VERSION; Docker mode's image and the docs quote it (dated notes aside)."""
    assert dockerd.SECANTUSD_IMAGE.endswith(f":{SECANTUS_VERSION}")
    assert "SECANTUS_VERSION" in (ROOT / "lab" / "host" / "dockerd.py").read_text()
    assert not re.search(r"^SECANTUSD?_VERSION\s*=", (ROOT / "lab" / "host" / "dockerd.py").read_text(), re.M)
    quoted = {doc.relative_to(ROOT).as_posix(): set(re.findall(r"\b\d+\.\d+\.\d+-beta\.\d+\b", doc.read_text()))
              for doc in [*DOCS, *(ROOT / "docker").rglob("Dockerfile")] if "notes" not in doc.parts}
    stale = {doc: versions for doc, versions in quoted.items() if versions - {SECANTUS_VERSION}}
    assert not stale, f"SecantusDB is at {SECANTUS_VERSION}: {stale}"


def test_every_relative_link_in_the_docs_leads_to_a_file() -> None:
    broken = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if not re.match(r"[a-z]+:", target) and not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not broken, broken


FORMER_ENGINE = "k" + "6"  # spelt so that this file does not name it


def test_the_former_load_engine_is_named_once_and_only_to_say_why_it_is_not_used() -> None:
    """Not in any tracked file but one sentence of the docs (lock files' hashes
    hold the letters by chance), and its Go module nowhere, go.sum included."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    files = subprocess.run(["git", "grep", "-Iliw", FORMER_ENGINE, "--", ".", ":!*package-lock.json", ":!*go.sum"],
                           cwd=ROOT, capture_output=True, text=True, timeout=60).stdout.split()
    assert files == ["docs/load.md"], files
    mentions = [line for line in re.split(r"(?<=[.!?])\s+", (ROOT / "docs" / "load.md").read_text())
                if re.search(rf"\b{FORMER_ENGINE}\b", line, re.I)]
    assert len(mentions) == 1 and "AGPL-3.0" in mentions[0], mentions
    module = subprocess.run(["git", "grep", "-Il", f"go.{FORMER_ENGINE}.io"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60).stdout.split()
    assert module == [], module


# --- every command the docs show resolves and runs -----------------------------------------------

COMMAND_DOCS = [README, ROOT / "benchmarks" / "README.md", ROOT / "services" / "README.md",
                *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`([^`]+)`")  # inline code may wrap onto the next line
COMMAND = re.compile(r"(?<![\w/.-])(?:\.venv/bin/)?(?:(make)\s+([a-z][\w-]*)|python3?\s+-m\s+([A-Za-z_][\w.]*)"
                     r"|(protolab)\s+([a-z-]+))")
# Modules the docs show that cannot answer --help, with the reason; checked to import instead.
NO_HELP = {
    "lab.codegen": "takes no options: run with any, it regenerates the contract's code (go-installing protoc plugins)",
}
HELP_TIMEOUT_S = 120


def command_spans(text: str) -> list[str]:
    """The code a doc shows: each line of a fenced block (a trailing backslash joins the next), and each
    inline code span, whitespace made single (inline code may wrap onto the next line)."""
    spans = []
    for block in FENCE.findall(text):
        spans += [" ".join(line.split()) for line in re.sub(r"\\\n", " ", block).splitlines()]
    spans += [" ".join(span.split()) for span in INLINE.findall(FENCE.sub("", text))]
    return spans


# What ends a command's arguments in a shell line: a separator, a pipe, a comment, a redirection.
END = re.compile(r"\s(?:;|&&|\|\|?|#|>|&(?:\s|$))|;")
FLAG = re.compile(r"(?<![\w/.-])(--[a-z][\w-]*)")
MAKE_VARIABLE = re.compile(r"(?<![\w-])([A-Z][A-Z0-9_]*)=(\"[^\"]*\"|'[^']*'|\S*)")


def documented_commands() -> dict[tuple[str, str], list[str]]:
    """(kind, name) -> where the docs show it: each `make X`, `python -m X` and `protolab X` in a fenced
    block or inline code span (prose that merely says "make" is not a command)."""
    return {key: sorted({where for where, _ in shown}) for key, shown in documented_uses().items()}


def documented_uses() -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(kind, name) -> (doc, the arguments shown after it) for every time the docs show it."""
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for doc in COMMAND_DOCS:
        where = doc.relative_to(ROOT).as_posix()
        for span in command_spans(doc.read_text()):
            matches = list(COMMAND.finditer(span))
            for i, match in enumerate(matches):
                make, target, module, _protolab, sub = match.groups()
                key = ("make", target) if make else ("python -m", module) if module else ("protolab", sub)
                rest = span[match.end():matches[i + 1].start() if i + 1 < len(matches) else len(span)]
                stop = END.search(rest)
                found.setdefault(key, []).append((where, rest[:stop.start()] if stop else rest))
    return found


def make_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", (ROOT / "Makefile").read_text(), re.M))


def make_variables() -> set[str]:
    """The variables the Makefile sets (`NAME ?=`, `NAME :=`, `NAME =`)."""
    return set(re.findall(r"^([A-Z][A-Z0-9_]*)\s*[:?]?=", (ROOT / "Makefile").read_text(), re.M))


def args_commands() -> dict[str, tuple[str, str]]:
    """A Makefile's X_ARGS variable -> the command its recipe passes it to: ("python -m", module) or
    ("protolab", sub); pytest's own (PYTEST_ARGS) is not one of them."""
    out = {}
    for line in (ROOT / "Makefile").read_text().splitlines():
        for variable in re.findall(r"\$\(([A-Z_]+_ARGS)\)", line):
            if variable == "PYTEST_ARGS":  # pytest's own, even where a command passes them on after --
                continue
            module = re.search(r"-m ([\w.]+)", line)
            sub = re.search(r"protolab (\w+)", line)
            if sub:
                out[variable] = ("protolab", sub.group(1))
            elif module and module.group(1) != "pytest":
                out[variable] = ("python -m", module.group(1))
    return out


def read_by_the_lab(variable: str) -> bool:
    """An environment variable some code of the lab reads (its name in a Python file)."""
    return any(variable in path.read_text() for folder in ("lab", "benchmarks", "load", "capture", "fuzz",
                                                           "profiling", "sweep", "studies", "report", "tests")
               for path in (ROOT / folder).rglob("*.py"))


def help_text(kind: str, name: str, *words: str) -> tuple[int, str]:
    """`--help`'s exit code and text; `words`: a subcommand first (python -m studies fernando --help)."""
    if kind == "python -m":
        argv = [sys.executable, "-m", name, *words, "--help"]
    else:  # .venv/bin/protolab (lab/cli.py's main), beside the interpreter that runs the tests
        script = Path(sys.executable).with_name("protolab")
        entry = [str(script)] if script.exists() else [sys.executable, "-c",
                                                       "import sys, lab.cli; sys.exit(lab.cli.main())"]
        argv = [*entry, *([name] if name != "--help" else []), *words, "--help"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=HELP_TIMEOUT_S)
    return done.returncode, done.stdout + done.stderr


def test_the_docs_show_commands_of_every_kind() -> None:
    kinds = {kind for kind, _ in documented_commands()}
    assert kinds == {"make", "python -m", "protolab"}, kinds
    assert {"bench", "test", "serve", "bootstrap"} <= make_targets()


def test_the_docs_arguments_are_read_off_each_command() -> None:
    """The parser behind the next test: each command's own flags, not its neighbours' on the line."""
    uses = documented_uses()
    assert any("--check" in rest for _, rest in uses["python -m", "lab.stats.runs"])
    assert any("--port-base" in rest for _, rest in uses["protolab", "serve"])
    assert any('SERVE_ARGS="--port-base 18000"' in rest for _, rest in uses["make", "serve"])
    assert args_commands()["SERVE_ARGS"] == ("protolab", "serve")
    assert args_commands()["LOAD_ARGS"] == ("python -m", "load")
    assert "PYTEST_ARGS" not in args_commands()


@pytest.mark.parametrize("kind,name", [pytest.param(*key, id=" ".join(key)) for key in sorted(documented_commands())])
def test_every_command_the_docs_show_resolves_and_runs(kind: str, name: str) -> None:
    """It exists (a Makefile target, a module, a protolab subcommand) and answers --help; each --flag the docs
    pass it is one its --help lists; each VAR=... passed to make is the Makefile's or read by the lab, and the
    flags inside an X_ARGS="..." are the flags of the command the Makefile passes them to."""
    uses = documented_uses()[kind, name]
    where = ", ".join(sorted({doc for doc, _ in uses}))
    if kind == "make":
        assert name in make_targets(), f"`make {name}` ({where}) is not a target of the Makefile"
        passed = {}
        for doc, rest in uses:
            for variable, value in MAKE_VARIABLE.findall(rest):
                passed.setdefault(variable, []).append((doc, value.strip("\"'")))
        unknown = {v: sorted({d for d, _ in shown}) for v, shown in passed.items()
                   if v not in make_variables() and not read_by_the_lab(v)}
        assert not unknown, f"`make {name}` is shown with variables neither the Makefile nor the lab reads: {unknown}"
        commands = args_commands()
        for variable, shown in passed.items():
            if variable not in commands:
                continue
            flags = {flag for _, value in shown for flag in FLAG.findall(value)}
            code, text = help_text(*commands[variable])
            assert code == 0, f"`{' '.join(commands[variable])} --help` exited {code}: {text[-1000:]}"
            missing = sorted(f for f in flags if f not in text)
            assert not missing, (f"`make {name} {variable}=...` ({where}) passes {missing} to "
                                 f"`{' '.join(commands[variable])}`, whose --help does not list them")
        return
    if kind == "python -m" and name in NO_HELP:
        import importlib.util

        assert importlib.util.find_spec(name) is not None, f"`python -m {name}` ({where}): no such module"
        return
    code, text = help_text(kind, name)
    assert code == 0, f"`{kind} {name} --help` ({where}) exited {code}:\n{text[-3000:]}"
    missing = {}
    for doc, rest in uses:
        flags = [flag for flag in FLAG.findall(rest) if flag not in text]
        word = re.match(r"\s*([a-z][\w-]*)(?:\s|$)", rest)  # a subcommand's own flags: its own --help
        if flags and word:
            code, own = help_text(kind, name, word.group(1))
            flags = [flag for flag in flags if code != 0 or flag not in own]
        missing |= {f"{name}{' ' + word.group(1) if word else ''} {flag}": doc for flag in flags}
    assert not missing, f"`{kind} {name}` is shown with flags its --help does not list: {missing}"


def test_the_port_scheme_the_readme_states_is_the_manifests() -> None:
    """`--port-base N`: each service on N + its manifest's port_offset, units digit the protocol, tens
    the language (+1 for a second implementation of the same protocol and language), no two alike."""
    text = " ".join(README.read_text().split())
    units = re.search(r"the units digit the protocol \(([^)]*)\)", text)
    tens = re.search(r"the tens the language \(([^)]*)\), plus one for a second implementation[^(]*\(([^)]*)\)", text)
    assert units and tens, "README.md lost its port scheme (the serve section)"
    label = {descriptor.label: name for name, descriptor in PROTOCOLS.items()}
    protocol_digit = {label[name]: int(digit) for name, digit in re.findall(r"([\w.]+) (\d)", units.group(1))}
    languages = {"Python": "python", "Go": "go", "Node.js": "node"}
    language_tens = {languages[name]: int(digit) for name, digit in re.findall(r"([\w.]+) (\d)", tens.group(1))}
    offsets: dict[int, str] = {}
    second: set[int] = set()
    # a subject served by another's process (lab/registry.py, served_by) is on that one's port
    every = {impl.name: impl.fixed_port_offset for impl in every_variant() if impl.served_by == impl.name}
    assert None not in every.values(), "an implementation with no [run] port_offset"
    taken = [o for o in every.values()]
    assert len(taken) == len(set(taken)), f"two subjects share a port offset: {every}"
    for impl in [i for i in discover() if not set(i.variant) - {"gthread"}]:  # the scheme's own digits
        offset = impl.fixed_port_offset
        assert offset is not None
        assert offset not in offsets, f"{impl.name} and {offsets[offset]} share port_offset {offset}"
        offsets[offset] = impl.name
        assert offset % 10 == protocol_digit[impl.protocol], f"{impl.name}: {offset}, units digit not its protocol's"
        assert offset // 10 - language_tens[impl.language] in (0, 1), f"{impl.name}: {offset}, tens not its language's"
        if offset // 10 > language_tens[impl.language]:
            second.add(offset)
    quoted = {int(n) for n in re.findall(r"\b(\d\d)\b", tens.group(2))}
    assert quoted == second, f"README names {sorted(quoted)} as the second implementations; they are {sorted(second)}"
