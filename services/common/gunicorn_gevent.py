"""gunicorn settings for the HTTP and WebSocket services that hold load: one
process with gevent workers (greenlets), the concurrency model Flask runs in
production when it must hold many connections. Every connection is a
greenlet, so an idle, slow or long-lived (WebSocket) connection holds no
thread; pymongo cooperates with gevent's monkey-patching (gunicorn applies it
before the application is imported).

The same bind, keep-alive and timeouts as gunicorn_conf.py (the gthread
configuration the *_gthread implementations keep).
"""

import os

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ['PORT']}"
workers = 1
worker_class = "gevent"
# Simultaneous connections the one process accepts; the load instrument asks
# for up to 1,000 clients plus the lab's own health checks.
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
