"""The pytest plugin of the lab (loaded by the root conftest.py, through
lab/pytest_plugin/__init__.py): one lab per session, started and stopped here,
and one connected client per implementation; the suites' parameters. How
make test's workers share the tests out is scheduling.py's."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from clients.base import GameClient
from lab import axes, context, settings
from lab.axes import Site
from lab.registry import CRUD_CALLS, Implementation, discover, missing_line
from lab.running import Sites
from lab.stack import Lab, running_sites


def implementations(*operations: str, where: Callable[[Implementation], bool] = lambda impl: True) -> list[Any]:
    """The implementations the lab runs here that serve all of `operations` and
    satisfy `where`, as pytest parameters: a test is generated only where it
    applies, so a skip says something is missing on this machine. Where every
    implementation it applies to is left out (its toolchain is not installed),
    one parameter, skipped, says which and how to get it."""
    only = settings.only()
    applies = [impl for impl in discover() if impl.serves(*operations) and where(impl)
               and (not only or impl.name in only)]
    here = [impl for impl in applies if not impl.missing()]
    if here or not applies:  # none in the repository at all: the test's own defect, pytest says so
        return [pytest.param(impl.name, id=impl.name) for impl in here]
    left_out = "; ".join(missing_line(impl) for impl in applies)
    return [pytest.param(None, id="none-here", marks=pytest.mark.skip(reason=left_out))]


# The CRUD suites' parameters: every implementation here that serves CRUD (not the push-only ones).
IMPLEMENTATIONS = implementations(*CRUD_CALLS)
LAB_KEY = pytest.StashKey[Lab]()
SITES_KEY = pytest.StashKey[Sites]()


def _terminate(signum: int, frame: object) -> None:
    # A runner stopping pytest with SIGTERM still unwinds the fixtures, so
    # the lab's processes are stopped.
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The implementations left out here (their toolchain is missing): no test
    is generated for them, so the run says so at its top."""
    return [missing_line(impl) for impl in discover() if impl.missing()]


def _modes(value: str) -> str:
    for mode in value.split(","):
        if mode.strip() not in settings.MODES:
            raise pytest.UsageError(f"--lab-mode {value!r}: each of a comma list must be one of "
                                    f"{', '.join(settings.MODES)}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--lab-mode", type=_modes, default=os.environ.get("LAB_MODE", "native"),
                     help="native processes, the Docker Compose stack, or both in one run: native,docker "
                          "(env LAB_MODE)")
    parser.addoption("--lab-paths", default=os.environ.get("LAB_PATHS", "loopback"),
                     help="the network paths the subjects are measured across, a comma list: loopback, veth, "
                          "rtt20ms, 10mbit, rtt20ms_10mbit_loss1pct (lab/axes.py; env LAB_PATHS)")


def run_sites(config: pytest.Config) -> list[Site]:
    """The sites this run measures: every --lab-mode on every --lab-paths."""
    try:
        return axes.sites(config.getoption("--lab-mode"), config.getoption("--lab-paths"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    signal.signal(signal.SIGTERM, _terminate)
    # Before any lab starts, here or in a test's own process: a test run keeps the
    # database's files in memory, a measurement does not fsync at every commit (lab/settings.py).
    if config.getoption("benchmark_only", False):
        settings.measuring()
    else:
        settings.testing()
    context.git_commit()  # the commit the run starts from, whatever the checkout does meanwhile


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    """The session's fixtures are torn down (the lab stops) even when another
    plugin's sessionfinish fails before pytest's own teardown runs. pytest-benchmark
    writes its JSON and says so first; to a closed pipe (Ctrl-C on `make bench |
    tee log` stops tee as well) that raises BrokenPipeError, and pytest skipped the
    teardown, then hung at exit on the clients' threads with every service up.
    After pytest's own teardown there is nothing left to do here."""
    try:
        return (yield)
    finally:
        session._setupstate.teardown_exact(None)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """A service that died during a test stops the run, saying which and why
    (rather than every later test failing on a refused connection)."""
    running = item.config.stash.get(LAB_KEY, None)
    gone = running.exited() if running is not None else []
    if gone:
        pytest.exit("stopping the run: a service of the lab is gone: " + "; ".join(gone), returncode=3)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """A failed test's report carries the last lines of the log of each server it named (its
    `impl`, `served` or other parameter naming one of the lab's implementations): what the server
    said when its client timed out, got a 500 or was refused."""
    report = yield
    running = item.config.stash.get(LAB_KEY, None)
    callspec = getattr(item, "callspec", None)
    if report.failed and call.when == "call" and running is not None and callspec is not None:
        for name in dict.fromkeys(v for v in callspec.params.values() if isinstance(v, str)):
            if name in running.endpoints:
                try:
                    tail = running.log_tail(name)
                except Exception as e:  # noqa: BLE001 - the report keeps the test's own failure first
                    tail = f"(its log could not be read: {e!r})"
                report.sections.append((f"{name}: its server's last log lines ({running.mode})",
                                        tail or "(nothing written)"))
    return report


def _subjects_per_site(session: pytest.Session) -> dict[Site, list[str]] | None:
    """A measuring run made only of tests parametrized by `subject` (the latency suite, or a slice
    of it) starts only the implementations those tests name, at each site; any other run (the
    tests, whose subjects are the site's plain names), all of them."""
    if not session.config.getoption("benchmark_only", False):
        return None
    found: dict[Site, list[str]] = {}
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "subject" not in callspec.params:
            return None
        implementation, site = axes.parse_subject(str(callspec.params["subject"]))
        if implementation != "direct" and implementation not in found.setdefault(site, []):
            found[site].append(implementation)
    return found or None


@pytest.fixture(scope="session")
def sites(request: pytest.FixtureRequest) -> Iterator[Sites]:
    """The run's labs, one per site (--lab-mode × --lab-paths); most runs have one."""
    # Tests need change streams (the push feed `changes`); timings are taken without.
    change_streams = not request.config.getoption("benchmark_only", False)
    with running_sites(run_sites(request.config), _subjects_per_site(request.session),
                       change_streams=change_streams) as running:
        request.config.stash[SITES_KEY] = running  # for the benchmark summary
        request.config.stash[LAB_KEY] = running.default
        yield running


@pytest.fixture(scope="session")
def lab(sites: Sites) -> Lab:
    """The first site's lab (the only one, unless --lab-mode or --lab-paths names more)."""
    return sites.default


@pytest.fixture(scope="session")
def _clients(sites: Sites) -> Iterator[dict[str, GameClient]]:
    opened: dict[str, GameClient] = {}
    yield opened
    for client in opened.values():
        client.close()


@pytest.fixture(scope="session")
def client_of(sites: Sites, _clients: dict[str, GameClient]):
    """client_of(name) -> the session's connected client of that subject (an implementation,
    "direct", the baseline, or either at another site: "direct@docker"), opened on first use."""
    def get(name: str) -> GameClient:
        if name not in _clients:
            _clients[name] = sites.client(name)
        return _clients[name]
    return get
