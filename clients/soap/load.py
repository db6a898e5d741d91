"""SOAP in a Locust process: the lab's SoapClient (zeep over requests), whose
sockets gevent's patching makes cooperative."""

from clients.soap.client import SoapClient


def connect(endpoint: str, timeout: float, compression: str | None = None) -> SoapClient:
    return SoapClient(endpoint, timeout, compression=compression)
