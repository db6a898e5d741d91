"""The strict protobuf codec of the lab's connect-python services (the Games service and its conformance
server): google.protobuf's binary codec refusing unknown or mistyped fields, as the gRPC services do."""

from __future__ import annotations

from typing import Any

from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.errors import ConnectError

from contract.grpc_codec import unknown_field_numbers


class StrictProto:
    """protobuf's binary codec (google.protobuf) refusing unknown or mistyped fields."""

    def __init__(self) -> None:
        self.inner = google_protobuf_binary_codec()

    def name(self) -> str:
        return self.inner.name()

    def encode(self, message: Any) -> bytes:
        return self.inner.encode(message)

    def decode(self, data: bytes | bytearray, message_class: Any) -> Any:
        message = self.inner.decode(data, message_class)
        unknown = unknown_field_numbers(message)
        if unknown:
            raise ConnectError(Code.INVALID_ARGUMENT,
                               f"unknown or mistyped field number {unknown[0]} in {message_class.__name__}")
        return message
