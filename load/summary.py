"""The sweep's per-implementation summary: closed-model p50/p99, throughput
and the answers behind them at 10, 100 and 1,000 clients, the open-model knee, CPU µs per
request of the service and the database, peak RSS, and the generator's CPU
in every run. One set of rows for the terminal (printed at the end of
`make load`, saved in the result file) and for the report (report/load.py).
"""

from __future__ import annotations

import re
from typing import Any

SHOWN_CLIENTS = (10, 100, 1000)
CPU_AT = 100   # CPU per request is taken from this closed level (else the first valid run)


def ms(us: float | None) -> str:
    return "–" if us is None else f"{us / 1000:,.1f}" if us < 100_000 else f"{us / 1000:,.0f}"


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:,.0f}"


def _mb(b: float) -> str:
    return f"{b / 2 ** 20:,.0f}" if b else "–"


def concurrency(entry: dict[str, Any]) -> str:
    conc = entry.get("concurrency", "")
    return conc.get("model", "") if isinstance(conc, dict) else re.split(r"[:;]", conc)[0]


def cells(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """One implementation's summary (strings, ready to print)."""
    closed = {r["clients"]: r for r in entry.get("closed", [])}
    out: dict[str, Any] = {"implementation": name, "concurrency": concurrency(entry)}
    name = entry.get("implementation", name)   # a path's subject (name@path): its runs name the implementation
    for n in SHOWN_CLIENTS:
        r = closed.get(n)
        if r is None:
            out[n] = ("–", "–", "–", "–")
        elif "skipped" in r:
            out[n] = ("–", "–", "skipped", "–")
        elif not r["valid"]:
            out[n] = (f"({ms(r['latency_us']['p50'])})", f"({ms(r['latency_us']['p99'])})", "invalid",
                      _num(r["latency_us"]["count"]))
        else:
            errors = sum(r["errors"].values())
            out[n] = (ms(r["latency_us"]["p50"]), ms(r["latency_us"]["p99"]),
                      f"{r['throughput_rps']:,.0f}" + (f" ({errors} err)" if errors else ""),
                      _num(r["latency_us"]["count"]))
    runs = [r for r in entry.get("closed", []) + entry.get("open", []) if "resources" in r]
    valid = [r for r in runs if r.get("valid")]
    at = closed.get(CPU_AT) if closed.get(CPU_AT, {}).get("valid") else (valid[0] if valid else None)
    res = (at or {}).get("resources", {})
    knee = entry.get("knee_rps")
    # "≥": no valid run at a higher rate failed (every step was held, or the
    # ones above were invalid: the generator's limit, not the service's)
    bounded = any(r.get("valid") and not r.get("held") and (r.get("rate") or 0) > (knee or 0)
                  for r in entry.get("open", []))
    bound = "≥" if knee and not bounded else ""
    out["knee"] = f"{bound}{knee:,}" if knee else ("not found" if "knee_rps" in entry else "–")
    out["service_cpu_us"] = _num(res.get(name, {}).get("cpu_us_per_request"))
    out["database_cpu_us"] = _num(res.get("database", {}).get("cpu_us_per_request"))
    out["cpu_at"] = (f"{at['model']} {at['clients']}" + (f" @{at['rate']}/s" if at.get("rate") else "")) if at else "–"
    out["service_rss_mb"] = _mb(max((r["resources"].get(name, {}).get("rss_peak_bytes", 0) for r in runs), default=0))
    out["database_rss_mb"] = _mb(max((r["resources"].get("database", {}).get("rss_peak_bytes", 0) for r in runs),
                                     default=0))
    out["generator_cpu"] = " ".join(_generator(r) for r in runs) or "–"
    gen_us = (at or {}).get("generator_cpu_us_per_request")
    out["generator_cpu_us"] = _num(gen_us)
    out["seconds"] = entry.get("seconds")
    return out


def _generator(r: dict[str, Any]) -> str:
    """A run's generator CPU (% of one core), named by the run: c100 = closed
    100 clients, o250 = open 250 requests/s; * = invalid."""
    tag = f"c{r['clients']}" if r["model"] == "closed" else f"o{r['rate']}"
    return f"{tag}:{r['generator_cpu_percent']:.0f}" + ("" if r.get("valid") else "*")


HEAD = (["implementation", "concurrency"]
        + [f"{n} {what}" for n in SHOWN_CLIENTS for what in ("p50 ms", "p99 ms", "req/s", "answers")]
        + ["knee req/s", "svc CPU µs/req", "db CPU µs/req", "gen CPU µs/req", "svc peak RSS MB", "db peak RSS MB"])


def row(c: dict[str, Any]) -> list[str]:
    return ([c["implementation"], c["concurrency"]] + [v for n in SHOWN_CLIENTS for v in c[n]]
            + [c["knee"], c["service_cpu_us"], c["database_cpu_us"], c.get("generator_cpu_us", "–"),
               c["service_rss_mb"], c["database_rss_mb"]])


def table(results: dict[str, Any]) -> str:
    """The summary as plain text, one line per implementation, then each one's
    generator CPU per run."""
    all_cells = [cells(name, entry) for name, entry in results.items()]
    rows = [HEAD[:1] + HEAD[2:]] + [row(c)[:1] + row(c)[2:] for c in all_cells]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]
    lines.append("(…): invalid run (the invalid-run rule), not the service's figure; answers: the requests "
                 "answered in the window, behind each percentile (a p99 needs 1,000, else –); CPU µs/req at "
                 f"{CPU_AT} clients, else the first valid run. Generator CPU, % of one core, per run "
                 "(cN: closed, N clients; oR: open, R requests/s; *: invalid):")
    width = max(len(c["implementation"]) for c in all_cells)
    lines += [f"  {c['implementation']:<{width}}  {c['generator_cpu']}" for c in all_cells]
    return "\n".join(lines)


PATH_HEAD = ("subject", "path", "set rtt ms", "measured rtt ms", "clients", "req/s", "p50 ms", "p99 ms",
             "clients ÷ rtt", "req/s ÷ (clients ÷ rtt)", "valid")


def path_rows(results: dict[str, Any], paths: dict[str, Any]) -> list[list[str]]:
    """One row per subject and closed level: its throughput beside the path's set and measured round trip,
    and the ceiling a closed model holds there (clients ÷ the measured round trip: each client has one
    request in flight, and each waits at least one round trip for its answer)."""
    rows = []
    for subject, entry in results.items():
        link = paths.get(entry.get("path", "")) or {}
        rtt = (link.get("measured") or {}).get("connect_rtt_ms")
        for r in entry.get("closed", []):
            if "skipped" in r:
                continue
            set_rtt = (link.get("set") or {}).get("rtt_ms") or 0
            bound = r["clients"] / (rtt / 1000) if rtt and set_rtt else None   # a path without a set round trip: none
            rps = r.get("throughput_rps")
            rows.append([subject, entry.get("path", "loopback"), f"{set_rtt:g}",
                         f"{rtt:.3f}" if rtt is not None else "–", str(r["clients"]), _num(rps),
                         ms(r["latency_us"]["p50"]), ms(r["latency_us"]["p99"]), _num(bound),
                         f"{rps / bound:.2f}" if rps and bound else "–",
                         "yes" if r.get("valid") else "no: " + "; ".join(r.get("invalid_reasons", []))[:120]])
    return rows


def path_table(results: dict[str, Any], paths: dict[str, Any]) -> str:
    """The path rows as plain text, then each path's set and measured values."""
    rows = [list(PATH_HEAD), *path_rows(results, paths)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(PATH_HEAD) - 1)]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1] for r in rows]
    for name, link in paths.items():
        if link:
            m = link.get("measured") or {}
            rate = link["set"]["rate_mbit"] or "unlimited"
            lines.append(f"{name}: {link.get('mechanism')}; set rtt {link['set']['rtt_ms']:g} ms, rate {rate}; "
                         f"measured connect rtt {m.get('connect_rtt_ms')} ms "
                         f"(added {m.get('added_rtt_ms')}), goodput up {m.get('up_mbit')} / down "
                         f"{m.get('down_mbit')} Mbit/s ({m.get('at')})")
    return "\n".join(lines)
