"""The report groups implementations by protocol, then by language within a protocol."""

from __future__ import annotations

from report.grouping import grouped, protocol_language_grid

SUBJECTS = ["ws/node_ws", "rest/go_nethttp", "direct", "ws/go_gorilla", "rest/python_flask",
            "grpc/python_grpcio", "ws/python_simple_websocket", "ws/go_coder", "rest/node_fastify"]


def protocol_of(s: str) -> str:
    return "direct" if s == "direct" else s.split("/")[0]


def language_of(s: str) -> str:
    return "" if s == "direct" else s.split("/")[1].split("_")[0]


def test_by_protocol_then_language_then_as_given() -> None:
    assert grouped(SUBJECTS, protocol_of, language_of) == [
        "rest/python_flask", "rest/go_nethttp", "rest/node_fastify", "grpc/python_grpcio",
        "ws/python_simple_websocket", "ws/go_gorilla", "ws/go_coder", "ws/node_ws", "direct"]


def test_protocol_by_language_grid() -> None:
    rows = {s: {"median": float(i + 1) * 100} for i, s in enumerate(SUBJECTS)}
    head, body = protocol_language_grid(rows, grouped(SUBJECTS, protocol_of, language_of),
                                        protocol_of, language_of)
    assert head == ["protocol", "Python", "Go", "Node.js"]
    assert body[0] == ["REST", "500", "200", "900"]
    assert body[1] == ["gRPC", "600", "–", "–"]
    assert body[2] == ["WebSockets", "700", "400 (gorilla) · 800 (coder)", "100"]
