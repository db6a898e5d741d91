"""gRPC over HTTP/2 (contract/games.proto)."""

from clients.protocols import Protocol
from contract.errors import GRPC_STATUS


def grpc_status(native: object, code: str) -> bool:
    return getattr(native, "name", None) == GRPC_STATUS[code]


DESCRIPTOR = Protocol(
    name="grpc", order=20, label="gRPC", client="clients.grpc.client:GrpcClient",
    endpoint="{host}:{port}", default_port=50051, transport="http2", payload="grpc_messages",
    payload_source="protobuf messages: grpc.message_length (without the 5-byte prefix)",
    client_packages=("grpcio", "protobuf"), native_error=grpc_status,
    error_spelling="the gRPC status code of the contract's error table",
    fuzzer="clients.grpc.fuzz:fuzzer", load_client="clients.grpc.load:connect", crosscheck="crosscheck",
    crosscheck_plan="clients.grpc.client:wire_plan", codegen="clients.grpc.codegen:write")
