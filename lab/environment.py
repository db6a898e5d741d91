"""A service's environment, in one place: the native launcher (lab/stack.py)
and the Compose renderer (lab/host/compose.py) both take it from here, so a
setting reaches a service the same way in every mode.

What a service gets, and nothing else of the lab's own environment:

- where it runs: HOST, PORT, MONGODB_URI, LAB_CONTRACT (the contract as data)
  and PYTHONPATH (the repository's root);
- the run's settings (RUN_SETTINGS): the lab's value when set, else the default
  here. Compose renders them as ${NAME:-default}, and the lab's Docker stack
  passes the values to docker-compose, so both modes read one table;
- what its subject's variant sets (lab/axes.py, Value.service_env), the run's own
  files put in place of the axis table's placeholders: a TLS subject's certificate
  chain and key (LAB_TLS_CERT, LAB_TLS_KEY: lab/tls.py, made at run time for the
  addresses it binds and is dialled at; in Docker mode the paths inside its container
  of a directory the lab mounts there: lab/host/compose.py), and, when the lab's
  environment names a key log (SSLKEYLOGFILE: the wire capture's), that key log, for
  the service to append its TLS secrets to (lab/tls.py, keylog_environment).

The lab's client of a subject gets its options the same way (client_options: the
CA file it verifies against).

Natively a service also keeps the host's basics (PATH, HOME, locale: HOST_BASICS),
which a container has from its image.
"""

from __future__ import annotations

import os
from typing import Any

from lab import settings, tls

# The settings a service reads (services/common/*, services/*/*), forwarded from the
# lab's environment; the default is the one the services themselves assume.
RUN_SETTINGS: dict[str, str] = {
    "LAB_THREADS": "4",                 # worker threads of every service (lab.settings.threads)
    "MONGODB_TIMEOUT_MS": "5000",       # a service's whole database operation
    "MONGODB_POOL": "16",               # connections of a Python service's pool
    "MONGODB_QUEUE_TIMEOUT_S": "30",    # a Python service's wait for a pooled connection
    "LAB_CONNECTIONS": "4096",          # gunicorn gevent's simultaneous connections
    "LOG_LEVEL": "warning",
}
# What a natively started service keeps of the host's environment.
HOST_BASICS = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER", "GOCACHE", "GOPATH")


def run_settings() -> dict[str, str]:
    """The run's settings as the lab has them now (its environment, else the defaults)."""
    return {name: os.environ.get(name) or default for name, default in RUN_SETTINGS.items()}


def service_environment(impl: Any, *, host: str, port: int | str, mongodb_uri: str,
                        root: str | None = None, settings_values: dict[str, str] | None = None,
                        tls_files: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of `impl` (a lab.registry.Implementation, any variant) bound to
    host:port, on the database at `mongodb_uri`. `root`: where the repository is as the
    service sees it (its container's /app in Docker mode); `settings_values`: the run's
    settings as given (Compose passes placeholders); `tls_files`: the TLS files' paths as
    the service sees them (placeholder -> path: its container's mount), else made here."""
    root = str(settings.ROOT) if root is None else root
    variant = tls.expand(impl.service_env(), hosts=(host, settings.dial_host()), files=tls_files)
    return {
        "HOST": host, "PORT": str(port), "MONGODB_URI": mongodb_uri,
        "LAB_CONTRACT": f"{root}/contract/contract.json", "PYTHONPATH": root,
        **(run_settings() if settings_values is None else settings_values),
        **variant,
        **({} if tls_files is not None else tls.keylog_environment(variant)),
    }


def client_options(impl: Any) -> dict[str, Any]:
    """The options of the lab's client of `impl`: what its variant sets (lab/axes.py,
    Value.client), the run's files in place of the placeholders (the CA to verify)."""
    return tls.expand(impl.client_options())


def native_environment(impl: Any, *, host: str, port: int, mongodb_uri: str) -> dict[str, str]:
    """The whole environment of a natively started service: the host's basics and the contract's."""
    basics = {name: os.environ[name] for name in HOST_BASICS if name in os.environ}
    return {**basics, **service_environment(impl, host=host, port=port, mongodb_uri=mongodb_uri)}
