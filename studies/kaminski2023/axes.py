"""Kamiński et al.'s Table 6 (fetch-100, µs) beside the sweep's payload axis, and its Table 7
(bytes per operation) beside the payload capture's bytes per call at 1, 100 and 1,000 games.

Every sentence here is computed from the two sides' data: which is larger, by how much, and
whether the lab's 99 % interval excludes 1 and holds the study's figure. The lab's ratios are
the sweep's (results/sweep/latest.json: medians paired by cycle, 99 % bootstrap intervals); the
study's are its tables' means, native (Windows) column. Pure functions of the data, so that
tests can give them known answers."""

from __future__ import annotations

from typing import Any

from studies import published

REFERENCE = "rest"          # each protocol set against REST, the study's first row
STUDY_COLUMN = "Windows"    # the study's native column (the lab's sweep runs natively)
LAB_OPERATION_GAMES = 100   # Table 6 is fetch-100


# --- Table 6 beside the payload axis -------------------------------------------------------

def payload_line(sweep: dict[str, Any]) -> list[dict[str, Any]]:
    """The sweep's cells along games per response, uncompressed, on loopback, fewest games first
    (a cell measured by two runs: the first)."""
    found: dict[int, dict[str, Any]] = {}
    for cell in sweep.get("cells", []):
        base = (cell.get("variant") in (None, "", "identity"))
        if cell.get("family") == "fetch" and cell.get("path") == "loopback" and base and cell.get("games"):
            found.setdefault(int(cell["games"]), cell)
    return [found[g] for g in sorted(found)]


def implementation_of(cell: dict[str, Any], protocol: str) -> str | None:
    return next((name for name, s in cell["subjects"].items() if s.get("protocol") == protocol), None)


def pair_ratio(cell: dict[str, Any], a: str, b: str) -> tuple[float, tuple[float, float]] | None:
    """a ÷ b in the cell, paired by cycle, with its interval (from a pair stated either way)."""
    for pair in cell.get("pairs", []):
        if (pair["a"], pair["b"]) == (a, b):
            return pair["ratio"], (pair["ci"][0], pair["ci"][1])
        if (pair["a"], pair["b"]) == (b, a):
            return 1 / pair["ratio"], (1 / pair["ci"][1], 1 / pair["ci"][0])
    return None


def excludes_one(ci: tuple[float, float]) -> bool:
    return ci[0] > 1 or ci[1] < 1


def against_interval(study: float, ratio: float, ci: tuple[float, float], who: str) -> str:
    """Where the study's ratio lies against the lab's interval, and by how much."""
    if ci[0] <= study <= ci[1]:
        return f"the study's {study:.2f} lies inside the lab's interval"
    if study < ci[0]:
        return (f"the study's {study:.2f} lies below the lab's interval: {who} {ci[0] / study:.2f}× lower than its "
                f"lower bound ({ci[0]:.2f}), {ratio / study:.2f}× lower than the lab's ratio")
    return (f"the study's {study:.2f} lies above the lab's interval: {who} {study / ci[1]:.2f}× higher than its "
            f"upper bound ({ci[1]:.2f}), {study / ratio:.2f}× higher than the lab's ratio")


def lab_verdict(a: str, b: str, ratio: float, ci: tuple[float, float]) -> str:
    if not excludes_one(ci):
        return f"the lab's interval includes 1: it cannot tell {a} from {b}"
    if ratio < 1:
        return f"the lab's interval excludes 1: {a} faster than {b} by {1 - ratio:.0%}"
    return f"the lab's interval excludes 1: {a} slower than {b} by {ratio - 1:.0%}"


def table_6(study: dict[str, Any], sweep: dict[str, Any]) -> list[dict[str, Any]]:
    """Per study protocol other than REST: the study's mean ÷ REST's (Table 6), the lab's paired ratio
    at every measured payload point with its interval, and the sentence."""
    means = published.study_latency(study, "fetch-100", STUDY_COLUMN)
    line = payload_line(sweep)
    out = []
    for protocol, mean in means.items():
        if protocol == REFERENCE or not means.get(REFERENCE):
            continue
        s_ratio = mean / means[REFERENCE]
        points = []
        for cell in line:
            a, b = implementation_of(cell, protocol), implementation_of(cell, REFERENCE)
            found = pair_ratio(cell, a, b) if a and b else None
            if found:
                points.append({"games": cell["games"], "a": a, "b": b, "ratio": found[0], "ci": list(found[1]),
                               "language": cell["subjects"][a].get("language", ""),
                               "reference_language": cell["subjects"][b].get("language", "")})
        out.append({"protocol": protocol, "study_ratio": s_ratio, "points": points,
                    "text": table_6_text(protocol, s_ratio, points, study)})
    return out


def table_6_text(protocol: str, s_ratio: float, points: list[dict[str, Any]], study: dict[str, Any]) -> str:
    name, ref = published.name(protocol), published.name(REFERENCE)
    head = (f"{name} ÷ {ref}, fetch-100: the study {s_ratio:.2f} (Table 6, {STUDY_COLUMN} means: "
            f"{name} {'faster' if s_ratio < 1 else 'slower'} by {abs(1 - s_ratio):.0%})")
    if not points:
        return head + "; the lab's sweep has no payload cell with both (run `make sweep`)."
    at = next((p for p in points if p["games"] == LAB_OPERATION_GAMES), None)
    parts = [head]
    if at is not None:
        ci = (at["ci"][0], at["ci"][1])
        parts.append(f"the lab at {LAB_OPERATION_GAMES} games {at['ratio']:.2f} (99 % interval "
                     f"{ci[0]:.2f}–{ci[1]:.2f}, {at['a']} ÷ {at['b']}): {lab_verdict(name, ref, at['ratio'], ci)}; "
                     + against_interval(s_ratio, at["ratio"], ci, "the study's ratio is"))
    inside = [p["games"] for p in points if p["ci"][0] <= s_ratio <= p["ci"][1]]
    told = [p["games"] for p in points if excludes_one((p["ci"][0], p["ci"][1]))]
    low = min(points, key=lambda p: p["ratio"])
    parts.append(f"along the payload axis ({points[0]['games']:,}–{points[-1]['games']:,} games) the lab's ratio runs "
                 + " → ".join(f"{p['ratio']:.2f}" for p in points)
                 + f", lowest at {low['games']:,} games; its interval excludes 1 at "
                 + (", ".join(f"{g:,}" for g in told) + " games" if told else "no point")
                 + "; the study's ratio lies inside the lab's interval at "
                 + (", ".join(f"{g:,}" for g in inside) + " games" if inside else "no point measured"))
    languages = {p["language"] for p in points} | {p["reference_language"] for p in points}
    if languages - {"python", ""}:   # the study's services were Python's (its setup's libraries)
        langs = ", ".join(sorted(languages - {""}))
        parts.append(f"the lab's sweep measured {points[0]['a']} and {points[0]['b']} ({langs}); the study's were "
                     f"Python ({study['setup']['libraries']})")
    return "; ".join(parts) + "."


# --- Table 7 beside the payload capture ---------------------------------------------------

def lab_bytes(wire: dict[str, Any], name: str, operation: str, kind: str) -> float | None:
    """Frame bytes, both directions: `kind` "steady" (per call on an open connection) or
    "new_connection" (the whole connection: setup, the call, teardown)."""
    cell = wire.get(kind, {}).get(name, {}).get(operation)
    if not cell:
        return None
    return cell["total"]["frame_bytes"] if kind == "steady" else cell["total"]["total"]["frame_bytes"]


def fetch_ops(wire: dict[str, Any]) -> list[tuple[int, str]]:
    """(games, operation) of the capture's fetch-<N> rows, fewest first."""
    out = []
    for op in wire.get("operations", []):
        if op.startswith("fetch-") and op[6:].isdigit():
            out.append((int(op[6:]), op))
    return sorted(out)


def table_7(study: dict[str, Any], wire: dict[str, Any], impl_of: dict[str, str]) -> dict[str, Any]:
    """The study's fetch-one bytes per protocol beside the lab's at each games count (kept-alive per call,
    and the 1-game call on a new connection), and the orders, smallest first."""
    study_fetch = published.study_bytes(study).get("fetch-one", {})
    ops = fetch_ops(wire)
    rows = []
    for protocol, s_bytes in study_fetch.items():
        name = impl_of.get(protocol)
        row: dict[str, Any] = {"protocol": protocol, "implementation": name, "study": s_bytes, "steady": {},
                               "new_connection_1": None}
        if name:
            for games, op in ops:
                row["steady"][games] = lab_bytes(wire, name, op, "steady")
            if ops and ops[0][0] == 1:
                row["new_connection_1"] = lab_bytes(wire, name, ops[0][1], "new_connection")
        rows.append(row)
    orders = {"study": published.ranking(study_fetch)}
    for games, _ in ops:
        values = {r["protocol"]: r["steady"][games] for r in rows if r["steady"].get(games)}
        orders[games] = published.ranking(values)
    return {"rows": rows, "orders": orders, "text": table_7_text(rows, orders)}


def table_7_text(rows: list[dict[str, Any]], orders: dict[Any, list[str]]) -> list[str]:
    out = []
    for r in rows:
        name = published.name(r["protocol"])
        if not r["implementation"] or not r["steady"]:
            out.append(f"{name}: not in the payload capture.")
            continue
        parts = [f"{name} fetch-one: the study {r['study']:,} B"]
        if r["new_connection_1"]:
            parts.append(f"{r['study'] / r['new_connection_1']:.2f}× the lab's 1-game fetch on a new connection "
                         f"({r['new_connection_1']:,.0f} B, {r['implementation']})")
        one = r["steady"].get(1)
        if one:
            parts.append(f"{r['study'] / one:.2f}× its 1-game call on an open connection ({one:,.0f} B)")
        big = [(g, b) for g, b in sorted(r["steady"].items()) if b and b >= r["study"]]
        if big:
            parts.append(f"the lab's kept-alive call first carries more than the study's record at {big[0][0]:,} "
                         f"games ({big[0][1]:,.0f} B)")
        out.append(", ".join(parts) + ".")
    study_order = orders.get("study", [])
    for games, order in orders.items():
        if games == "study" or not order:
            continue
        sentence = published.disagreement(study_order, order, "the study (fetch-one)",
                                          f"the lab ({games:,} games a call, kept-alive)", "smallest")
        out.append(f"Fewest bytes first at {games:,} games: {published.ranking_text(order)} — "
                   + ("the same order as the study's." if sentence is None else sentence))
    reference = next((r for r in rows if r["protocol"] == REFERENCE), None)
    if reference:
        for r in rows:
            if r is reference or not r["steady"]:
                continue
            ratios = [(g, r["steady"][g] / reference["steady"][g]) for g in sorted(r["steady"])
                      if r["steady"].get(g) and reference["steady"].get(g)]
            if ratios:
                out.append(f"{published.name(r['protocol'])} ÷ {published.name(REFERENCE)} bytes per call: the study "
                           f"{r['study'] / reference['study']:.2f} (fetch-one); the lab "
                           + ", ".join(f"{x:.2f} at {g:,} games" for g, x in ratios) + ".")
    return out
