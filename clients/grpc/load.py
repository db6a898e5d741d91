"""gRPC in a Locust process: the lab's GrpcClient, grpcio's core made to
cooperate with gevent (grpc.experimental.gevent, which must run before the
first channel: at this module's import, which the locustfile does first)."""

import grpc.experimental.gevent

from clients.grpc.client import GrpcClient

grpc.experimental.gevent.init_gevent()


def connect(endpoint: str, timeout: float, compression: str | None = None) -> GrpcClient:
    return GrpcClient(endpoint, timeout, compression=compression)
