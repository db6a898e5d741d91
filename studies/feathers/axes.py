"""The Feathers comparison's calls-per-connection figures beside the lab's round-trip rows
(benchmarks/connection_setup.py across network paths: results/setup/connection-setup-latest.json).

The study's one numeric row: 100 connections making 500-2,000 calls each, HTTP ~950 requests/s,
socket.io ~3,900: a call took 100 ÷ 950 = 105 ms on an HTTP connection, 100 ÷ 3,900 = 25.6 ms on
a socket.io one, 4.1 times as long. At each path the lab measured, per round, an HTTP (REST)
call on a new connection, one on a kept-alive connection, and a messaging protocol's call on
its open connection (and its first call on a new one), so the same ratios have intervals there:
the median of the per-round ratios, paired by round, with its 95 % interval (order statistics).
Every sentence is computed from those figures. Pure functions of the data, for tests."""

from __future__ import annotations

import re
from typing import Any

from lab.stats.statistics import median_ci95, percentile

HTTP_PROTOCOL = "rest"


def study_call_times(published: dict[str, Any]) -> dict[str, float] | None:
    """From the study's long-run row: each side's time a call on one connection (ms) and their ratio."""
    connections = published["scenario"]["connections"]
    for label, row in published["tables"]["requests_per_s"]["rows"].items():
        http, sio = row.get("HTTP"), row.get("socket.io")
        if http and sio:
            rate = {k: float(re.sub(r"[^0-9.]", "", str(v))) for k, v in (("http", http), ("sio", sio))}
            http_ms, sio_ms = 1000 * connections / rate["http"], 1000 * connections / rate["sio"]
            return {"calls": label, "http_rps": rate["http"], "sio_rps": rate["sio"], "http_ms": http_ms,
                    "sio_ms": sio_ms, "ratio": http_ms / sio_ms}
    return None


def paired_ratio(a: list[float], b: list[float]) -> dict[str, Any] | None:
    """The median of a_i ÷ b_i (the same round), with its 95 % interval."""
    ratios = sorted(x / y for x, y in zip(a, b, strict=False) if y > 0)
    if len(ratios) < 3:
        return None
    low, high = median_ci95(ratios)
    return {"ratio": percentile(ratios, 0.5), "ci95": [low, high], "n": len(ratios)}


def _new(samples: dict[str, list[float]]) -> list[float]:
    return [m + f for m, f in zip(samples["made"], samples["first"], strict=True)]


def pairs(subjects: dict[str, Any], protocol_of: Any, messaging: Any, language_of: Any) -> list[tuple[str, str]]:
    """(HTTP subject, messaging subject): each messaging subject beside the REST one of its language, else
    beside the first REST subject measured."""
    http = [n for n in subjects if protocol_of(n) == HTTP_PROTOCOL]
    out = []
    for name in subjects:
        if not messaging(protocol_of(name)) or not http:
            continue
        same = [h for h in http if language_of(h) == language_of(name)]
        out.append(((same or http)[0], name))
    return out


def beside(study: dict[str, float], setup: dict[str, Any], protocol_of: Any, messaging: Any,
           language_of: Any) -> list[dict[str, Any]]:
    """Per path and (HTTP, messaging) pair: the three paired ratios and the sentence."""
    out = []
    for path in setup.get("paths", []):
        subjects = path["subjects"]
        rtt = ((path.get("link") or {}).get("measured") or {}).get("connect_rtt_ms")
        for h, w in pairs(subjects, protocol_of, messaging, language_of):
            hs, ws = subjects[h]["samples_s"], subjects[w]["samples_s"]
            row = {"path": path["path"], "set_rtt_ms": (path.get("set") or {}).get("rtt_ms"), "measured_rtt_ms": rtt,
                   "http": h, "messaging": w,
                   "new_http_over_messaging": paired_ratio(_new(hs), ws["steady"]),
                   "kept_http_over_messaging": paired_ratio(hs["steady"], ws["steady"]),
                   "first_call_messaging_over_http": paired_ratio(_new(ws), _new(hs)),
                   "http_new_ms": subjects[h]["new"]["median_ms"], "messaging_ms": subjects[w]["steady"]["median_ms"]}
            row["text"] = text(study, row)
            out.append(row)
    return out


def _excl(r: dict[str, Any]) -> bool:
    return r["ci95"][0] > 1 or r["ci95"][1] < 1


def _r(r: dict[str, Any]) -> str:
    return f"{r['ratio']:.2f} [{r['ci95'][0]:.2f}–{r['ci95'][1]:.2f}]"


def text(study: dict[str, float], row: dict[str, Any]) -> str:
    where = f"{row['path']}" + (f" (measured round trip {row['measured_rtt_ms']:.2f} ms)"
                                if row.get("measured_rtt_ms") is not None else "")
    new, kept, first = (row["new_http_over_messaging"], row["kept_http_over_messaging"],
                        row["first_call_messaging_over_http"])
    if not new or not kept or not first:
        return f"{where}: too few rounds for an interval."
    parts = [f"{where}: an HTTP call on a new connection ({row['http']}) takes {_r(new)}× a {row['messaging']} call "
             f"on its open connection, a kept-alive HTTP call {_r(kept)}×"]
    s = study["ratio"]
    for label, r in (("the first", new), ("the second", kept)):
        if r["ci95"][0] <= s <= r["ci95"][1]:
            parts.append(f"the study's {s:.1f}× lies inside {label} interval")
        else:
            bigger = s > r["ci95"][1]
            parts.append(f"the study's {s:.1f}× is {s / r['ratio']:.1f}× {label} ratio ("
                         + ("above" if bigger else "below") + " its interval)")
    rtt = row.get("measured_rtt_ms")
    if rtt and row["set_rtt_ms"]:
        parts.append(f"in round trips: {row['http_new_ms'] / rtt:.1f} for the new HTTP connection and its call, "
                     f"{row['messaging_ms'] / rtt:.1f} for the messaging call; the study's HTTP call took "
                     f"{study['http_ms'] / study['sio_ms']:.1f} of its socket.io calls")
    verdict = ("slower" if first["ratio"] > 1 else "faster") if _excl(first) else "not told apart from HTTP's"
    parts.append(f"one call on a new connection: {row['messaging']} {_r(first)}× HTTP's, {verdict} "
                 f"(the interval {'excludes' if _excl(first) else 'includes'} 1; the study found socket.io's "
                 "single call slower)")
    return "; ".join(parts) + "."
