"""hypercorn settings: one process, one asyncio event loop holding every open
stream; HTTP/1.1 and cleartext HTTP/2 (h2c, prior knowledge or Upgrade) on one port."""

import os

bind = [f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ['PORT']}"]
workers = 1
worker_class = "asyncio"
backlog = 2048  # the push scenarios open up to 1,000 streams at once
keep_alive_timeout = 75
graceful_timeout = 2  # open streams never end by themselves: do not wait for them
h2_max_concurrent_streams = 1000
accesslog = None
loglevel = os.environ.get("LOG_LEVEL", "WARNING").upper()
