"""gRPC over HTTP/2 (contract/games.proto)."""

from clients.protocols import Protocol, PushWay
from contract.errors import GRPC_STATUS

# The length-prefixed message of gRPC's HTTP/2 framing: a compressed flag and a 4-byte length
# before each protobuf message, in the DATA frames (grpc.message_length counts the message alone).
GRPC_PREFIX = 5


def grpc_status(native: object, code: str) -> bool:
    return getattr(native, "name", None) == GRPC_STATUS[code]


DESCRIPTOR = Protocol(
    name="grpc", order=20, label="gRPC", client="clients.grpc.client:GrpcClient",
    endpoint="{host}:{port}", default_port=50051, transport="http2", payload="grpc.message_length",
    payload_source=f"protobuf messages: grpc.message_length (without the {GRPC_PREFIX}-byte prefix)",
    client_packages=("grpcio", "protobuf"), native_error=grpc_status,
    error_spelling="the gRPC status code of the contract's error table",
    fuzzer="clients.grpc.fuzz:fuzzer", load_client="clients.grpc.load:connect", crosscheck="crosscheck",
    crosscheck_plan="clients.grpc.client:wire_plan", codegen="clients.grpc.codegen:write",
    push=(PushWay("grpc", "gRPC server streaming (h2c)", "gRPC stream", mode="grpc",
                  capture_label="gRPC streaming (h2c)",
                  framing="gRPC over HTTP/2 (h2c): each message a protobuf PushMessage (its events typed, not JSON) "
                          "behind a 5-byte prefix, in DATA frames (9-byte header each)",
                  note="one Subscribe server stream per client, all on one HTTP/2 connection (grpc-go's "
                       "ClientConn), the messages decoded into the generated types"),))
