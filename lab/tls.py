"""The run's own certificate authority, and the server certificate its TLS subjects
serve (lab/axes.py, axis `tls`).

Made at run time with trustme, never stored: one CA per lab process (the first
TLS subject started makes it), a server certificate per set of addresses the
services bind and are dialled at (127.0.0.1, ::1, localhost, and any other: a
network path's namespace address, LAB_HOST / LAB_DIAL_HOST), its files (PEM) in
one temporary directory that is removed when the process exits. No key is ever
written anywhere else, nor committed (tests/test_tls.py greps the repository).

The axis' values name the files as placeholders, expanded here:

    {tls_cert}   the server's certificate chain (leaf, then the CA)
    {tls_key}    the server's private key
    {tls_ca}     the CA's certificate: what every client of the lab verifies against
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme

ALWAYS = ("127.0.0.1", "::1", "localhost")   # every certificate names these

_lock = threading.Lock()
_state: dict[str, Any] = {}


@dataclass(frozen=True)
class ServerFiles:
    cert: Path   # certificate chain, PEM
    key: Path    # private key, PEM
    ca: Path     # the CA's certificate, PEM
    hosts: tuple[str, ...]


def _remove(path: Path, owner: int) -> None:
    if os.getpid() == owner:  # not in a forked child that inherited the hook
        shutil.rmtree(path, ignore_errors=True)


def _directory() -> Path:
    if "dir" not in _state:
        path = Path(tempfile.mkdtemp(prefix="protolab-tls-"))
        path.chmod(0o700)
        atexit.register(_remove, path, os.getpid())
        _state["dir"] = path
    return _state["dir"]


def authority() -> trustme.CA:
    """This process's CA (made on first use)."""
    with _lock:
        if "ca" not in _state:
            ca = trustme.CA(organization_name="protolab run")
            path = _directory() / "ca.pem"
            ca.cert_pem.write_to_path(str(path))
            _state["ca"], _state["ca_file"] = ca, path
        return _state["ca"]


def ca_file() -> Path:
    """The CA's certificate (PEM): what the lab's clients trust."""
    authority()
    return _state["ca_file"]


def _hosts(extra: Iterable[str]) -> tuple[str, ...]:
    names = [*ALWAYS]
    for host in extra:
        if host and host not in ("0.0.0.0", "::") and host not in names:
            names.append(host)
    return tuple(names)


def server_files(extra_hosts: Iterable[str] = ()) -> ServerFiles:
    """A server certificate (and key) of this process's CA for ALWAYS and `extra_hosts`,
    written once per set of hosts."""
    hosts = _hosts(extra_hosts)
    ca = authority()
    with _lock:
        known = _state.setdefault("servers", {})
        if hosts not in known:
            leaf = ca.issue_cert(*hosts)
            slug = f"server-{len(known)}"
            cert, key = _directory() / f"{slug}.pem", _directory() / f"{slug}.key"
            leaf.private_key_pem.write_to_path(str(key))
            key.chmod(0o600)
            with open(cert, "wb") as out:
                for blob in leaf.cert_chain_pems:
                    out.write(blob.bytes())
            known[hosts] = ServerFiles(cert, key, _state["ca_file"], hosts)
        return known[hosts]


def wrong_authority_file() -> Path:
    """Another CA's certificate, which signed nothing the lab serves: a client made to
    trust it alone must refuse every TLS subject (tests/test_tls.py)."""
    with _lock:
        if "wrong" not in _state:
            path = _directory() / "other-ca.pem"
            trustme.CA(organization_name="not the protolab run").cert_pem.write_to_path(str(path))
            _state["wrong"] = path
        return _state["wrong"]


def expand(values: Mapping[str, Any], hosts: Iterable[str] = ()) -> dict[str, Any]:
    """`values` (an environment, or client options) with the placeholders replaced by
    this run's files (a server certificate made for `hosts` besides ALWAYS, when one is
    named); as they are if none is named."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, str) and "{tls_" in value:
            if "{tls_cert}" in value or "{tls_key}" in value:
                files = server_files(hosts)
                value = value.replace("{tls_cert}", str(files.cert)).replace("{tls_key}", str(files.key))
            value = value.replace("{tls_ca}", str(ca_file()))
        out[name] = value
    return out
