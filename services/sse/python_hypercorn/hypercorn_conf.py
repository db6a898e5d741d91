"""hypercorn settings: one process, one asyncio event loop holding every open
stream; HTTP/1.1 and cleartext HTTP/2 (h2c, prior knowledge or Upgrade) on one port;
over TLS (lab/axes.py, axis tls) HTTP/2 or HTTP/1.1 by ALPN."""

import os

from services.common import tls

bind = [f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ['PORT']}"]
workers = 1
worker_class = "asyncio"
backlog = 2048  # the push scenarios open up to 1,000 streams at once
keep_alive_timeout = 75
graceful_timeout = 2  # open streams never end by themselves: do not wait for them
h2_max_concurrent_streams = 1000
accesslog = None
loglevel = os.environ.get("LOG_LEVEL", "WARNING").upper()

if tls.version() is not None:
    certfile, keyfile = tls.files()

    def create_ssl_context():
        """hypercorn copies every name of this module onto its Config (Config.from_object),
        this function included, in place of its own method, which pins TLS >= 1.2 and no
        maximum: the context holds the one version the lab asks for (services/common/tls.py),
        with hypercorn's ALPN protocols ("h2", "http/1.1")."""
        return tls.server_context(alpn=["h2", "http/1.1"])
