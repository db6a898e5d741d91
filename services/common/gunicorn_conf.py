"""gunicorn settings shared by every Python HTTP and WebSocket service, so they
run on one budget: one process, bound where the lab says, with keep-alive long
enough that a benchmark never reconnects between rounds.

The worker model is a variant (lab/axes.py, axis `workers`), set by the lab
through LAB_WORKER_MODEL:

- gevent (the base of the services that hold load): every connection is a
  greenlet, so an idle, slow or long-lived (WebSocket) connection holds no
  thread; pymongo cooperates with gevent's monkey-patching (gunicorn applies
  it before the application is imported). The concurrency model Flask runs in
  production when it must hold many connections.
- gthread: LAB_THREADS threads (the gRPC server gets the same number), a
  thread per request; a new connection holds a thread until its request is read.
"""

import os

from services.common import tls

WORKER_MODELS = ("gevent", "gthread")
worker_class = os.environ.get("LAB_WORKER_MODEL", "gevent")
if worker_class not in WORKER_MODELS:
    raise SystemExit(f"LAB_WORKER_MODEL={worker_class!r}: expected one of {', '.join(WORKER_MODELS)}")

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ['PORT']}"
workers = 1
threads = int(os.environ.get("LAB_THREADS", "4"))  # gthread's
# Simultaneous connections the one process accepts under gevent; the load
# instrument asks for up to 1,000 clients plus the lab's own health checks.
worker_connections = int(os.environ.get("LAB_CONNECTIONS", "4096"))
backlog = 4096
keepalive = 75
# gunicorn's maximum request line (default 4094), so that the contract's own
# max_uri_bytes (4096, answered by the app in the protocol's terms) is met first.
limit_request_line = 8190
timeout = 60
graceful_timeout = 5
accesslog = None
loglevel = os.environ.get("LOG_LEVEL", "warning")
control_socket_disable = True  # gunicorn 27 otherwise shares one ~/.gunicorn socket between instances

# TLS when the lab asks for it (lab/axes.py, axis tls; services/common/tls.py): the
# certificate and key, and one context for the process with the one version asked for,
# offering HTTP/1.1 by ALPN (as the Go and Node.js services). gunicorn's gthread worker
# would otherwise make a context (and read the key) per connection, and a session
# ticket (TLS 1.2 resumption) would find no key of the context that issued it.
if tls.version() is not None:
    certfile, keyfile = tls.files()
    _contexts: list = []

    def ssl_context(conf, default_ssl_context_factory):
        if not _contexts:
            _contexts.append(tls.pin(default_ssl_context_factory(), alpn=["http/1.1"]))
        return _contexts[0]
