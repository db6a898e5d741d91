"""A latency run's file, cut into the sweep's cells.

A cell is one operation, one value of the sweep's variant axis and one network
path: its subjects are the run's subjects at that path (their site) in that
value, each named by its implementation (the folder, variant taken off, so that
the same implementation is one entity along every axis). Per cell: each
subject's median and ratio to its site's `direct` (as the run computed them),
every pair's paired ratio with its 99 % interval, computed here from the run's
per-round data with the run's own design (lab.stats.statistics: cycles_of,
PairedBootstrap, compare), the ranking those intervals support (the latency
tables' rule: '<' only where the interval excludes 1), the site's ranking as the
run printed it, and where the figures came from.
"""

from __future__ import annotations

from typing import Any

from lab.axes import LOOPBACK, NetworkPath, Site, parse_subject
from lab.stats.statistics import CONFIDENCE, PairedBootstrap, compare, cycles_of, tiers, tiers_text
from sweep import grid


def run_site(run: dict[str, Any]) -> Site:
    """The site whose subjects carry plain names: a one-site run's only site; in a run of several
    (its context's mode is their key, "native+native@rtt20ms"), the first mode's own loopback."""
    sites = run["context"].get("sites") or []
    if len(sites) == 1:
        return Site(sites[0]["mode"], NetworkPath.parse(sites[0]["path"]["name"]))
    return Site(str(run["context"].get("mode", "native")).split("+")[0].split("@")[0], LOOPBACK)


def design_of(run: dict[str, Any]) -> dict[str, Any]:
    return run["context"].get("settings", {}).get("benchmark", {}).get("design", {})


def split(subject: str, default: Site) -> tuple[str, tuple[str, ...], Site]:
    """(implementation, variant values, site) of a subject's name in a run's file."""
    name, site = parse_subject(subject)
    if "@" not in subject:
        site = default
    base, *values = name.split("+")
    return base, tuple(values), site


def value_on(values: tuple[str, ...], axis_values: tuple[str, ...]) -> str | None:
    """The subject's value on the sweep's variant axis (its base when it names none), or None when
    it carries a value of another axis (not a subject of the sweep's cells)."""
    base = axis_values[0] if axis_values else ""
    on_axis = [v for v in values if v in axis_values]
    if len(on_axis) != len(values):
        return None
    return on_axis[0] if on_axis else base


def run_source(run: dict[str, Any], file: str) -> dict[str, Any]:
    ctx = run["context"]
    cpu = ctx.get("cpu", {})
    return {"file": file, "date": ctx.get("date"), "commit": ctx.get("commit"),
            "machine": {"cpu": cpu.get("model"), "cores": cpu.get("count"), "platform": ctx.get("platform"),
                        "python": ctx.get("python")},
            **({"noise_flagged": bool(ctx["noise"].get("flagged"))} if isinstance(ctx.get("noise"), dict) else {})}


def oriented(a: str, b: str, pair: dict[str, Any]) -> tuple[float, tuple[float, float]]:
    """The ratio a ÷ b and its interval, from a pair stated either way round."""
    if pair["a"] == a and pair["b"] == b:
        return pair["ratio"], (pair["ci"][0], pair["ci"][1])
    return 1 / pair["ratio"], (1 / pair["ci"][1], 1 / pair["ci"][0])


def ranking(subjects: dict[str, dict[str, Any]], pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """The cell's order by ratio to `direct` (else median), in the groups its intervals support."""
    order = sorted(subjects, key=lambda s: ((subjects[s].get("ratio_to_direct") or {}).get("ratio")
                                            or subjects[s]["median_us"], s))
    by_pair = {(p["a"], p["b"]): p for p in pairs if p["a"] in subjects and p["b"] in subjects}
    for i, a in enumerate(order):  # a pair without an interval cannot be told apart
        for b in order[i + 1:]:
            if (a, b) not in by_pair and (b, a) not in by_pair:
                by_pair[(a, b)] = {"a": a, "b": b, "relation": "~"}
    groups = tiers(order, by_pair) if order else []
    return {"order": order, "tiers": groups, "chain": tiers_text(groups)}


def chain_text(cell: dict[str, Any]) -> str:
    """The cell's ranking with each subject's ratio to `direct`: "a (1.52) < b (2.10) = c (2.14)"."""
    def one(name: str) -> str:
        r = cell["subjects"][name].get("ratio_to_direct")
        return f"{name} ({r['ratio']:.2f})" if r else name
    return " < ".join(" = ".join(one(n) for n in group) for group in cell["ranking"]["tiers"])


def cells_of(run: dict[str, Any], file: str, variant_axis: str, axis_values: tuple[str, ...],
             group: str = "", confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """Every cell of one latency run (results/sweep/runs/<key>-<date>.json)."""
    default_site = run_site(run)
    design = design_of(run)
    block = int(design.get("block", 1))
    implementations = run["context"].get("implementations", {})
    source = run_source(run, file)
    out = []
    for operation, rows in run["results"].items():
        found: dict[tuple[str, str], dict[str, tuple[str, dict[str, Any]]]] = {}
        for subject, row in rows.items():
            base, values, site = split(subject, default_site)
            if base == design.get("baseline", "direct") or site.mode != "native":
                continue
            value = value_on(values, axis_values)
            if value is None:
                continue
            found.setdefault((site.path.name, value), {})[base] = (subject, row)
        site_rankings = run.get("site_rankings", {}).get(operation, {})
        for (path, value), members in found.items():
            link = NetworkPath.parse(path)
            site = Site("native", link)
            direct = rows.get(site.subject("direct")) or (rows.get("direct") if len(run["context"].get(
                "sites") or [1]) == 1 else None)
            subjects = {}
            for base, (subject, row) in members.items():
                impl = implementations.get(subject.split("@")[0], implementations.get(base, {}))
                subjects[base] = {
                    "subject": subject, "protocol": impl.get("protocol", base.split("/")[0]),
                    "language": impl.get("language", ""), "library": impl.get("library", ""),
                    "median_us": row["median"], "median_ci95": row.get("median_ci95"),
                    "rounds": row.get("rounds"),
                    **({"ratio_to_direct": {"ratio": row["ratio_to_direct"]["ratio"],
                                            "ci": list(row["ratio_to_direct"]["ci"])}}
                       if row.get("ratio_to_direct") else {})}
            pairs = paired(members, block, confidence)
            suffix = site.suffix if len(run["context"].get("sites") or []) > 1 else ""
            site_ranking = site_rankings.get(suffix) or (site_rankings.get("") if not suffix else None) or {}
            out.append({
                "group": group, "operation": operation, "family": grid.family_of(operation),
                "games": grid.games_of(operation), "bytes": grid.payload_bytes(operation),
                "variant": value, "path": path, "link": link.describe(),
                # the cycles measured (a time budget may have stopped them before design["blocks"])
                "cycles": min((len(row.get("data_s") or []) // block for _, row in members.values()),
                              default=0) or int(design.get("blocks", 0)) or None, "design": design,
                "direct_median_us": direct["median"] if direct else None,
                "subjects": subjects, "pairs": pairs, "ranking": ranking(subjects, pairs),
                "site_ranking": {"chain": site_ranking.get("chain", ""), "order": site_ranking.get("order", [])},
                "run": source})
    return out


def paired(members: dict[str, tuple[str, dict[str, Any]]], block: int,
           confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """Every pair of the cell's subjects: a ÷ b (a before b by name), paired by cycle, from the
    per-round data (`data_s`, cycle-major, `block` timed rounds a cycle for a subject)."""
    groups = {base: cycles_of(row.get("data_s") or [], block) for base, (_, row) in members.items()}
    groups = {b: g for b, g in groups.items() if g}
    if len(groups) < 2:
        return []
    boot = PairedBootstrap(groups, confidence)
    names = sorted(groups)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ratio, interval = boot.ratio(a, b)
            statement = compare(a, b, ratio, interval, confidence)
            out.append({k: statement[k] for k in ("a", "b", "ratio", "ci", "relation")})
    return out
