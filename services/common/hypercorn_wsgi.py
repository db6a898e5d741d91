"""A Python WSGI service's app as hypercorn serves it for the HTTP/2 variants
(lab/axes.py, axis http; services/common/hypercorn_conf.py).

hypercorn 0.18's WSGI wrapper (hypercorn/app_wrappers.py, WSGIWrapper.run_app) sends
the response's start (status and headers) with the body's first chunk only: a reply
whose body yields no chunk (REST's 204 for a delete) never has its status sent, and the
stream ends without one (pgjones/hypercorn issue 331, open). `app(module)` is the
module's WSGI `app` with such a body handed on as one empty chunk, so the start goes
out; a body that yields is passed on as it is. The manifests name it as hypercorn's
application, which hypercorn evaluates in this module:

    services.common.hypercorn_wsgi:app('services.rest.python_flask.app')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from importlib import import_module
from typing import Any

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _NeverEmpty:
    """A WSGI body that yields at least one (possibly empty) chunk, and closes what it wraps."""

    def __init__(self, body: Iterable[bytes]):
        self.body = body

    def __iter__(self) -> Iterator[bytes]:
        empty = True
        for chunk in self.body:
            empty = False
            yield chunk
        if empty:
            yield b""

    def close(self) -> None:
        close = getattr(self.body, "close", None)
        if close is not None:
            close()


def never_empty(wsgi: Wsgi) -> Wsgi:
    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        return _NeverEmpty(wsgi(environ, start_response))
    return wrapped


def app(module: str, name: str = "app") -> Wsgi:
    """The WSGI app `name` of `module` ("services.rest.python_flask.app"), its empty bodies one chunk."""
    return never_empty(getattr(import_module(module), name))
