"""REST in a Locust process: the lab's RestClient over geventhttpclient (clients/cooperative.py)."""

from clients.cooperative import GeventTransport
from clients.rest.client import RestClient


def connect(endpoint: str, timeout: float, compression: str | None = None) -> RestClient:
    return RestClient(endpoint, timeout, transport=GeventTransport(endpoint, timeout, compression))
