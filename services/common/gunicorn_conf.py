"""gunicorn settings shared by every HTTP service, so they run on one budget.

One process with LAB_THREADS threads (the gRPC server gets the same number),
bound where the lab says, with keep-alive long enough that a benchmark never
reconnects between rounds.
"""

import os

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ['PORT']}"
workers = 1
worker_class = "gthread"
threads = int(os.environ.get("LAB_THREADS", "4"))
keepalive = 75
# gunicorn's maximum request line (default 4094), so that the contract's own
# max_uri_bytes (4096, answered by the app in the protocol's terms) is met first.
limit_request_line = 8190
timeout = 60
graceful_timeout = 5
accesslog = None
loglevel = os.environ.get("LOG_LEVEL", "warning")
control_socket_disable = True  # gunicorn 27 otherwise shares one ~/.gunicorn socket between instances
