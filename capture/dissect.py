"""What tshark's protocol dissectors say about each packet of a capture.

`dissect(path, decode_as)` runs `tshark -r FILE -d tcp.port==P,PROTO ...` once
and returns, per frame number, the application framing tshark found in it:
HTTP/1.1 messages (`http.request`/`http.response`, `http.content_length`, or a chunked
body's `http.chunk_size`s),
HTTP/2 frames (`http2.type`, `http2.length`, `http2.streamid`, `http2.magic`),
WebSocket frames (`websocket.opcode`, `websocket.mask`,
`websocket.payload_length[_ext_16|_ext_64]`), MongoDB commands (the first
`mongo.element.name` of a message is its command) and, for a protocol that
frames its own messages inside the transport's (length-prefixed messages on
HTTP/2 streams), the tshark field its descriptor names as its `payload`: the
message lengths of each frame, kept per field in `Layers.messages`.
The services listen on ports chosen at run time, so every port is named with
`-d`: tshark's heuristics would not recognise them.  tshark reports a message
reassembled from several segments on its last segment, which is where its
fields land here too.

Nothing here parses packet bytes; it only adds up the lengths tshark reports.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from capture.tshark import PACKET_FIELDS, CaptureError, Packet, classify, ensure_tshark, packet, read_timeout
from clients.protocols import PROTOCOLS

H2_DATA, H2_HEADERS, H2_SETTINGS, H2_PING, H2_GOAWAY, H2_WINDOW_UPDATE = 0, 1, 4, 6, 7, 8
H2_FRAME_HEADER = 9
H2_PREFACE = 24  # "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
WS_CONTINUATION, WS_TEXT, WS_BINARY, WS_CLOSE = 0, 1, 2, 8
WS_DATA_OPCODES = (WS_CONTINUATION, WS_TEXT, WS_BINARY)
HELLO_COMMANDS = frozenset({"hello", "isMaster", "ismaster"})

# Which tshark dissector decodes each protocol's port (clients/<protocol>/__init__.py), and the database's.
DISSECTOR = {**{name: p.dissector for name, p in PROTOCOLS.items()}, "mongo": "mongo"}


@dataclass(frozen=True)
class H2Frame:
    type: int
    length: int   # frame payload, without the 9-byte frame header
    stream: int

    @property
    def size(self) -> int:
        return H2_FRAME_HEADER + self.length


@dataclass(frozen=True)
class WsFrame:
    opcode: int
    length: int   # payload length
    masked: bool

    @property
    def size(self) -> int:
        """Bytes on the wire: RFC 6455 header (2, +2 or +8 length, +4 mask key) + payload."""
        extra = 0 if self.length <= 125 else 2 if self.length <= 65535 else 8
        return 2 + extra + (4 if self.masked else 0) + self.length


@dataclass
class Layers:
    http_request: bool = False
    http_response: bool = False
    http_body: int = 0                     # sum of http.content_length, and of a chunked body's http.chunk_size
    h2_magic: bool = False
    h2: list[H2Frame] = field(default_factory=list)
    messages: dict[str, list[int]] = field(default_factory=dict)  # message-length field -> its values
    ws: list[WsFrame] = field(default_factory=list)
    mongo_command: str = ""                # first element name of the first message

    @property
    def framed(self) -> bool:
        """tshark found an application framing in the frame (HTTP, HTTP/2, WebSocket, a protocol's messages):
        over TLS, only when it could decrypt it."""
        return bool(self.http_request or self.http_response or self.h2_magic or self.h2 or self.ws or self.messages)


_BASE_FIELDS = ("frame.number", "http.request", "http.response", "http.content_length", "http.chunk_size",
                "http2.magic", "http2.type", "http2.length", "http2.streamid",
                "websocket.opcode", "websocket.mask", "websocket.payload_length",
                "websocket.payload_length_ext_16", "websocket.payload_length_ext_64",
                "mongo.element.name")
# The message-length fields the descriptors name (clients/<protocol>/__init__.py), each once.
MESSAGE_FIELDS = tuple(dict.fromkeys(p.message_field for p in PROTOCOLS.values() if p.message_field))
_FIELDS = _BASE_FIELDS + MESSAGE_FIELDS
_SEP = ";"


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(_SEP) if v != ""]


def _bools(text: str) -> list[bool]:
    return [v in ("1", "True") for v in text.split(_SEP) if v != ""]


def _ws_frames(opcodes: str, masks: str, short: str, ext16: str, ext64: str) -> list[WsFrame]:
    # The 16- and 64-bit lengths exist only on frames that need them, so they
    # are consumed in order as the 7-bit length calls for them.
    long16, long64 = iter(_ints(ext16)), iter(_ints(ext64))
    frames = []
    for opcode, masked, n in zip(_ints(opcodes), _bools(masks), _ints(short), strict=True):
        length = next(long16) if n == 126 else next(long64) if n == 127 else n
        frames.append(WsFrame(opcode, length, masked))
    return frames


def _argv(path: str | Path, decode_as: Mapping[int, str], keylog: str | Path | None,
          display_filter: str, fields: Sequence[str]) -> list[str]:
    argv = [ensure_tshark(), "-n", "-r", str(path)]
    if keylog is not None:
        argv += ["-o", f"tls.keylog_file:{keylog}"]
    for port, proto in sorted(decode_as.items()):
        argv += ["-d", f"tcp.port=={int(port)},{proto}"]
    argv += ["-Y", display_filter, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
             "-E", f"aggregator={_SEP}"]
    for name in fields:
        argv += ["-e", name]
    return argv


def _layers(values: Sequence[str]) -> Layers:
    """A frame's Layers from the values of _FIELDS but frame.number, as tshark printed them."""
    (req, resp, clen, chunks, magic, h2type, h2len, h2stream, ws_op, ws_mask,
     ws_len, ws_16, ws_64, mongo_names) = values[:len(_BASE_FIELDS) - 1]
    return Layers(
        http_request=any(_bools(req)), http_response=any(_bools(resp)),
        http_body=sum(_ints(clen)) + sum(_ints(chunks)), h2_magic=bool(magic),
        h2=[H2Frame(t, n, s) for t, n, s in zip(_ints(h2type), _ints(h2len),
                                                 _ints(h2stream), strict=True)],
        messages={f: _ints(v) for f, v in zip(MESSAGE_FIELDS, values[len(_BASE_FIELDS) - 1:],
                                               strict=True) if v},
        ws=_ws_frames(ws_op, ws_mask, ws_len, ws_16, ws_64),
        mongo_command=mongo_names.split(_SEP, 1)[0])


def dissect(path: str | Path, decode_as: Mapping[int, str], keylog: str | Path | None = None) -> dict[int, Layers]:
    """Layers per frame number, for frames where tshark found any; decode_as: port -> dissector.
    `keylog`: a TLS key log (SSLKEYLOGFILE's format, which the lab's Python clients write when it
    is set) to decrypt TLS with; decode such a port as "tls", and the layers inside are found."""
    done = subprocess.run(_argv(path, decode_as, keylog, "tcp.len > 0", _FIELDS), check=False,
                          capture_output=True, text=True, timeout=read_timeout(path))
    if done.returncode:
        raise CaptureError(f"tshark -r {path} (dissectors) failed: {done.stderr.strip()}")
    out: dict[int, Layers] = {}
    for line in done.stdout.splitlines():
        values = line.split("\t")
        out[int(values[0])] = _layers(values[1:])
    return out


def read(path: str | Path, decode_as: Mapping[int, str],
         keylog: str | Path | None = None) -> tuple[list[Packet], dict[int, Layers]]:
    """read_packets(path) and dissect(path, decode_as, keylog) in one tshark pass over the file: the
    TCP packets, classified, and the Layers of each one with a payload."""
    packet_fields = len(PACKET_FIELDS)
    done = subprocess.run(_argv(path, decode_as, keylog, "tcp && !icmp && !icmpv6",
                                (*PACKET_FIELDS, *_FIELDS[1:])),
                          check=False, capture_output=True, text=True, timeout=read_timeout(path))
    if done.returncode:
        raise CaptureError(f"tshark -r {path} failed: {done.stderr.strip()}")
    packets, out = [], {}
    for line in done.stdout.splitlines():
        values = line.split("\t")
        p = packet([v.split(_SEP, 1)[0] for v in values[:packet_fields]])
        packets.append(p)
        if p.payload > 0:
            out[p.number] = _layers(values[packet_fields:])
    return classify(packets), out
