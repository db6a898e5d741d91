"""hypercorn settings for the Python WSGI services' HTTP/2 variants (lab/axes.py, axis http):
gunicorn speaks HTTP/1.1 only, hypercorn speaks HTTP/2 and serves a WSGI app as it is
(its WSGI wrapper reads the request's body, then calls the app on a thread of the event
loop's executor). One process, one asyncio event loop, as gunicorn's one process.

- LAB_HTTP=h2: HTTP/2 over TLS (LAB_TLS, its certificate and key: services/common/tls.py),
  h2 and http/1.1 offered by ALPN (a client that offers only http/1.1 is served in it);
- LAB_HTTP=h2c: cleartext, HTTP/2 with prior knowledge (and HTTP/1.1, h2c by Upgrade too,
  on the same port: hypercorn tells them apart by the connection's first bytes).

    python -m hypercorn --config python:services.common.hypercorn_conf \
        "services.common.hypercorn_wsgi:app('services.rest.python_flask.app')"
"""

import os

from services.common import tls

_HTTP = os.environ.get("LAB_HTTP", "")
if _HTTP not in ("h2", "h2c"):
    raise SystemExit(f"LAB_HTTP={_HTTP!r}: this configuration serves HTTP/2 (h2 or h2c); HTTP/1.1 runs "
                     "under gunicorn (services/common/gunicorn_conf.py)")
if (_HTTP == "h2") != (tls.version() is not None):
    raise SystemExit(f"LAB_HTTP={_HTTP}: h2 is HTTP/2 over TLS (LAB_TLS set), h2c cleartext (LAB_TLS unset)")

bind = [f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ['PORT']}"]
workers = 1
worker_class = "asyncio"
backlog = 4096
keep_alive_timeout = 75  # as gunicorn's keepalive: a benchmark never reconnects between rounds
graceful_timeout = 5
# Streams one connection may hold open at once: a load run's users sharing one connection
# (load/: N users, N streams) are not held back by the server's default of 100.
h2_max_concurrent_streams = 1000
# A WSGI request's body is read whole before the app sees it; the app answers the contract's
# limit (413 RESOURCE_EXHAUSTED) itself, as under gunicorn. Past this, hypercorn's own 400.
wsgi_max_body_size = 16 * 1024 * 1024
accesslog = None
loglevel = os.environ.get("LOG_LEVEL", "WARNING").upper()

if _HTTP == "h2":
    certfile, keyfile = tls.files()

    def create_ssl_context():
        """The context hypercorn uses in place of its own method's (Config.from_object copies
        this module's names onto its Config): the one TLS version the lab asks for, with
        h2 and http/1.1 by ALPN (services/sse/python_hypercorn/hypercorn_conf.py does the same)."""
        return tls.server_context(alpn=["h2", "http/1.1"])
