"""Connect RPC (contract/games.proto, https://connectrpc.com/docs/protocol): the Games service
over Connect's own protocol (a unary call is an HTTP POST of the encoded message, or a GET for
a call without side effects), and, from the same server, gRPC and gRPC-Web: the wire protocol
and the codec are this protocol's own variant axes, which change only the lab's client."""

from clients.protocols import ClientAxis, ClientValue, Protocol
from contract.errors import CONNECT_CODE

# Connect's streaming envelope (and gRPC-Web's, gRPC's): a flags byte and a 4-byte length before
# each message. A unary Connect call carries none: its HTTP body is the message itself.
ENVELOPE_PREFIX = 5


def connect_code(native: object, code: str) -> bool:
    return native == CONNECT_CODE[code]


WIRE = ClientAxis(
    "wire", "the wire protocol the lab's client speaks to the one server (connect-go serves all three "
            "from one handler, on one port: the subjects share one process)", (
        ClientValue("connect", "Connect's protocol: a unary call is a POST of the encoded message over HTTP/1.1 "
                               "(Content-Type application/proto or application/json), a call without side "
                               "effects a GET with the message in the query; errors as an HTTP status and a "
                               "JSON body with the Connect code"),
        ClientValue("grpc", "gRPC over cleartext HTTP/2 (prior knowledge), the message length-prefixed, the "
                            "status in trailers (grpc-status)",
                    client={"wire": "grpc"},
                    capture={"transport": "http2", "payload": "grpc.message_length"}),
        ClientValue("grpcweb", "gRPC-Web over HTTP/1.1: gRPC's length-prefixed messages in the body, the "
                               "status in a trailer frame at its end (no HTTP trailers)",
                    client={"wire": "grpcweb"}),
    ), in_default_run=True)
CODEC = ClientAxis(
    "codec", "how the lab's client encodes its messages (Content-Type application/proto or application/json; "
             "served by the same process)", (
        ClientValue("proto", "protobuf's binary encoding"),
        ClientValue("json", "protobuf's canonical JSON mapping (protojson)", client={"codec": "json"}),
    ), in_default_run=True)

DESCRIPTOR = Protocol(
    name="connect", order=25, label="Connect", client="clients.connect.client:ConnectClient",
    endpoint="http://{host}:{port}", default_port=8000, transport="http", payload="http_body",
    payload_source="HTTP body: http.content_length, or a chunked body's http.chunk_size (a unary Connect call's "
                   "body is the message alone; "
                   f"gRPC-Web's holds {ENVELOPE_PREFIX}-byte envelopes and a trailer frame)",
    client_packages=("connectrpc", "pyqwest"), native_error=connect_code,
    error_spelling="the Connect code of the contract's error table (column connect)",
    fuzzer="clients.connect.fuzz:fuzzer", load_client="clients.connect.load:connect", crosscheck="crosscheck",
    crosscheck_plan="clients.connect.client:wire_plan", codegen="clients.connect.codegen:write",
    axes=(WIRE, CODEC),
    no_capture="its subjects share one server port per implementation (the wire and codec variants) and "
               "connect-python's client may hold two connections or open one mid-window, so a steady window "
               "cannot be told apart by port: capture them with --only (docs/notes/2026-12-03-connect.md)")
