"""The subject model (lab/axes.py, lab/registry.py, lab/environment.py):
implementation × variant × mode × network path, declared once."""

from __future__ import annotations

import random

import pytest

from benchmarks.suite import comparisons, counterparts
from lab import axes, registry
from lab.axes import NetworkPath, Site, parse_subject
from lab.environment import RUN_SETTINGS, service_environment
from lab.host import compose


@pytest.mark.parametrize("name", ["loopback", "veth", "rtt1ms", "rtt20ms", "100mbit", "rtt0.5ms_10mbit",
                                  "rtt20ms_10mbit_loss1pct", "loss1pct"])
def test_a_path_name_is_its_spec(name):
    path = NetworkPath.parse(name)
    assert path.name == name
    assert NetworkPath.parse(path.name) == path
    assert path.veth == (name != "loopback")


@pytest.mark.parametrize("name", ["rtt20", "20ms", "rtt20ms_rtt1ms", "loss100pct", "fast"])
def test_a_bad_path_name_says_what_a_path_is(name):
    with pytest.raises(ValueError, match="network path"):
        NetworkPath.parse(name)


def test_a_subject_name_shows_its_variant_mode_and_path():
    assert Site().subject("rest/python_flask+gthread") == "rest/python_flask+gthread"
    assert Site("docker").subject("direct") == "direct@docker"
    rtt = Site("native", NetworkPath.parse("rtt20ms_10mbit"))
    assert rtt.subject("rest/go_nethttp") == "rest/go_nethttp@rtt20ms_10mbit"
    for site in (Site(), Site("docker"), rtt):
        assert parse_subject(site.subject("ws/node_ws+x")) == ("ws/node_ws+x", site)


def test_sites_are_every_mode_on_every_path():
    got = axes.sites("native,docker", "loopback,rtt20ms")
    assert [s.subject("direct") for s in got] == ["direct", "direct@rtt20ms", "direct@docker",
                                                  "direct@docker,rtt20ms"]


def test_every_value_name_belongs_to_one_axis():
    names = [v.name for a in axes.VARIANT_AXES.values() for v in a.values]
    assert len(names) == len(set(names)), "a subject's +value must name its axis unambiguously"


def test_the_thread_workers_are_a_variant_not_a_folder():
    assert not list(registry.SERVICES.glob("*/*_gthread")), "a *_gthread folder is back"
    names = [i.name for i in registry.discover()]
    for base in ("rest/python_flask", "graphql/python_graphene", "ws/python_simple_websocket"):
        assert base in names and f"{base}+gthread" in names
        variant = registry.variant(f"{base}+gthread")
        assert variant.base == base and variant.variant == ("gthread",)
        assert variant.service_env() == {"LAB_WORKER_MODEL": "gthread"}
        assert registry.variant(base).service_env() == {"LAB_WORKER_MODEL": "gevent"}
        assert variant.command == registry.variant(base).command, "a variant is the same code"
        assert variant.concurrency.startswith("gunicorn gthread")
    # soap's only worker model is gthread: its base sets it, and it has no suffix
    assert registry.variant("soap/python_spyne").service_env() == {"LAB_WORKER_MODEL": "gthread"}


def test_a_variant_an_implementation_does_not_support_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="rest/go_nethttp does not support workers=gthread"):
        registry.variant("rest/go_nethttp+gthread")
    with pytest.raises(ValueError, match="no value of any axis"):
        registry.variant("rest/python_flask+turbo")
    with pytest.raises(SystemExit, match="does not support"):
        registry.select(["rest/go_nethttp+gthread"])


def test_a_variant_keeps_its_own_manifest_fields():
    ws = registry.variant("ws/python_simple_websocket+gthread")
    assert "subscribe" not in ws.operations and "subscribe" in registry.variant("ws/python_simple_websocket").operations
    assert ws.max_connections == "threads" and ws.holds_idle_connections is False
    assert ws.fixed_port_offset != registry.variant("ws/python_simple_websocket").fixed_port_offset


def test_no_two_subjects_share_a_fixed_port():
    # those asked for (tls) included; a subject served by another's process is on that one's port
    offsets = [i.fixed_port_offset for i in registry.every_variant() if i.served_by == i.name]
    assert len(offsets) == len(set(offsets))
    assert registry.variant("rest/go_nethttp+tls13").fixed_port_offset == 200 + registry.variant(
        "rest/go_nethttp").fixed_port_offset
    assert registry.variant("rest/python_flask+gthread+tls12").fixed_port_offset == 300 + registry.variant(
        "rest/python_flask+gthread").fixed_port_offset


def test_one_environment_for_native_and_docker(monkeypatch):
    """The one function both launchers call: the variant's value and the run's settings."""
    monkeypatch.setenv("MONGODB_TIMEOUT_MS", "4321")
    impl = registry.variant("rest/python_flask+gthread")
    native = service_environment(impl, host="127.0.0.1", port=1234, mongodb_uri="mongodb://x")
    assert native["LAB_WORKER_MODEL"] == "gthread" and native["MONGODB_TIMEOUT_MS"] == "4321"
    assert set(RUN_SETTINGS) <= set(native)
    docker = compose.container_environment(impl)
    assert set(docker) == set(native), "a setting reaches the service in one mode only"
    assert docker["LAB_WORKER_MODEL"] == "gthread"
    assert docker["MONGODB_TIMEOUT_MS"] == "${MONGODB_TIMEOUT_MS:-5000}"  # compose substitutes the lab's value
    rendered = compose.render([impl])
    assert 'LAB_WORKER_MODEL: "gthread"' in rendered


def test_one_axis_changed_pairs_each_subject_with_its_reference():
    subjects = ["rest/a", "rest/a+gthread", "rest/a@docker", "direct", "direct@docker", "rest/a@rtt20ms",
                "direct@rtt20ms", "rest/b@docker"]
    got = set(counterparts(subjects))
    assert got == {("rest/a+gthread", "rest/a", "variant"), ("rest/a@docker", "rest/a", "mode"),
                   ("direct@docker", "direct", "mode"), ("rest/a@rtt20ms", "rest/a", "path"),
                   ("direct@rtt20ms", "direct", "path")}  # rest/b has no native counterpart


def test_a_paired_comparison_finds_a_known_ratio_and_no_difference_where_there_is_none():
    rng = random.Random(7)
    cycles = 300
    drift = [1 + 0.5 * (i % 50) / 50 for i in range(cycles)]  # the machine's speed moving, shared by all
    times = {
        "rest/a": [d * rng.gauss(100, 5) for d in drift],
        "rest/a@docker": [d * rng.gauss(110, 5) for d in drift],       # 1.10 × native
        "rest/a+gthread": [d * rng.gauss(100, 5) for d in drift],      # no difference
    }
    got = {c["a"]: c for c in comparisons(times, {s: 1 for s in times})}
    docker = got["rest/a@docker"]
    assert docker["axis"] == "mode" and docker["relation"] == ">"
    assert docker["ci"][0] < 1.10 < docker["ci"][1]
    same = got["rest/a+gthread"]
    assert same["relation"] == "~" and same["ci"][0] < 1 < same["ci"][1]


def test_a_run_may_ask_for_an_axis_and_who_cannot_serve_it_is_named(monkeypatch, capsys):
    registry._warn_once.cache_clear()
    monkeypatch.setenv("LAB_VARIANTS", "workers")
    names = [i.name for i in registry.discover()]
    assert "rest/python_flask+gthread" in names and "rest/go_nethttp+gthread" not in names
    assert "rest/go_nethttp+gthread left out: rest/go_nethttp does not support workers=gthread" \
        in capsys.readouterr().err
    monkeypatch.setenv("LAB_VARIANTS", "turbo")
    with pytest.raises(SystemExit, match="neither an axis nor a value"):
        registry.discover()


def test_compose_has_every_declared_variant():
    """Every one Docker mode runs (a variant it leaves out says why: lab/axes.py, Value.not_in_docker), as a
    container of its own unless another's process serves it (registry served_by: its container's)."""
    rendered = compose.render()
    for impl in registry.every_variant():
        own = not impl.not_in_docker and impl.served_by == impl.name
        assert (f"  {compose.service_name(impl)}:" in rendered) == own, impl.name


def test_a_plain_name_is_native_on_loopback_or_the_only_site():
    from lab.running import Lab, Sites
    native = Lab(mode="native", database=None, implementations=[])
    docker = Lab(mode="docker", database=None, implementations=[])
    both = Sites({Site("docker"): docker, Site(): native})
    assert both.lab_of("rest/go_nethttp") is native and both.lab_of("rest/go_nethttp@docker") is docker
    only = Sites({Site("docker"): docker})
    assert only.lab_of("rest/go_nethttp") is docker
    with pytest.raises(KeyError, match="not running"):
        only.lab_of("rest/go_nethttp@rtt20ms")
