"""The run's own certificate authority, and the server certificate its TLS subjects
serve (lab/axes.py, axis `tls`).

Made at run time with trustme, never stored: one CA per lab process (the first
TLS subject started makes it), a server certificate per set of addresses the
services bind and are dialled at (127.0.0.1, ::1, localhost, and any other: a
network path's namespace address, LAB_HOST / LAB_DIAL_HOST), its files (PEM) in
one temporary directory that is removed when the process exits. A run writes no key
anywhere else (`python -m lab.tls containers DIR` writes one where it is told, for running
compose.yaml by hand), and none is committed (tests/test_tls.py greps the repository).

The axis' values name the files as placeholders, expanded here:

    {tls_cert}   the server's certificate chain (leaf, then the CA)
    {tls_key}    the server's private key
    {tls_ca}     the CA's certificate: what every client of the lab verifies against

In Docker mode the placeholders name the files as a container sees them (lab/host/compose.py
mounts a directory of the run's, `container_files`, read-only at one path in every TLS
service's container): `expand(values, files=...)`.

A key log (SSLKEYLOGFILE in the lab's environment, as the wire capture sets it:
capture/wire.py) is a TLS service's too (`keylog_environment`): the services append their
TLS secrets to it beside the lab's clients', so that tshark decrypts a connection whichever
end's TLS library logs its keys (grpcio's and pyqwest's clients log none).
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


# The file names in a directory of container_files (and so inside a container: lab/host/compose.py).
CONTAINER_NAMES = {"tls_cert": "server.pem", "tls_key": "server.key", "tls_ca": "ca.pem"}


def container_files(hosts: Iterable[str] = ()) -> Path:
    """A directory of this run holding the CA's certificate and a server certificate chain and key
    for ALWAYS and `hosts` (the names containers are reached by), named as CONTAINER_NAMES says:
    what Docker mode mounts read-only into each TLS service's container. The services there run as
    another user (the images' `nobody`), so its files are readable by all; the run's directory
    above it (mode 0700) keeps them from the host's other users."""
    files = server_files(hosts)
    with _lock:
        made = _state.setdefault("containers", {})
        if files.hosts not in made:
            path = _directory() / f"containers-{len(made)}"
            path.mkdir(mode=0o755)
            path.chmod(0o755)  # whatever the umask
            for placeholder, source in (("tls_cert", files.cert), ("tls_key", files.key), ("tls_ca", files.ca)):
                target = path / CONTAINER_NAMES[placeholder]
                shutil.copyfile(source, target)
                target.chmod(0o644)
            made[files.hosts] = path
        return made[files.hosts]


def keylog_environment(env: Mapping[str, str]) -> dict[str, str]:
    """What a TLS service's environment `env` gains of the lab's: SSLKEYLOGFILE when the lab's
    environment names a key log (the wire capture's), for the service to append its secrets to;
    nothing for a cleartext service, or without a key log."""
    keylog = os.environ.get("SSLKEYLOGFILE", "")
    return {"SSLKEYLOGFILE": keylog} if keylog and env.get("LAB_TLS") else {}


def expand(values: Mapping[str, Any], hosts: Iterable[str] = (),
           files: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`values` (an environment, or client options) with the placeholders replaced by
    this run's files (a server certificate made for `hosts` besides ALWAYS, when one is
    named); as they are if none is named. `files`: placeholder -> path to put instead (the
    paths inside a container: lab/host/compose.py), no file made here."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, str) and "{tls_" in value and files is not None:
            for placeholder, path in files.items():
                value = value.replace("{" + placeholder + "}", path)
        elif isinstance(value, str) and "{tls_" in value:
            if "{tls_cert}" in value or "{tls_key}" in value:
                made = server_files(hosts)
                value = value.replace("{tls_cert}", str(made.cert)).replace("{tls_key}", str(made.key))
            value = value.replace("{tls_ca}", str(ca_file()))
        out[name] = value
    return out


def write_container_files(directory: Path, hosts: Iterable[str] = ()) -> Path:
    """A CA of its own and a server certificate for ALWAYS and `hosts` in `directory`, named as
    CONTAINER_NAMES says: for running compose.yaml's TLS services by hand (LAB_TLS_DIR). The lab's
    runs never call this: they make theirs in the run's temporary directory (container_files)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="protolab, by hand")
    leaf = ca.issue_cert(*_hosts(hosts))
    ca.cert_pem.write_to_path(str(directory / CONTAINER_NAMES["tls_ca"]))
    leaf.private_key_pem.write_to_path(str(directory / CONTAINER_NAMES["tls_key"]))
    with open(directory / CONTAINER_NAMES["tls_cert"], "wb") as out:
        for blob in leaf.cert_chain_pems:
            out.write(blob.bytes())
    for name in CONTAINER_NAMES.values():
        (directory / name).chmod(0o644)  # the containers' user reads them
    return directory


def main(argv: list[str] | None = None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m lab.tls", description="TLS files for compose.yaml by hand")
    sub = parser.add_subparsers(dest="cmd", required=True)
    made = sub.add_parser("containers", help="a CA and a server certificate and key in DIR, for LAB_TLS_DIR=DIR")
    made.add_argument("directory", type=Path)
    made.add_argument("--host", action="append", default=[],
                      help="a name the services are reached by besides 127.0.0.1, ::1 and localhost")
    args = parser.parse_args(argv)
    out = write_container_files(args.directory, args.host)
    print(f"wrote {', '.join(CONTAINER_NAMES.values())} in {out}; "
          f"clients verify against {out / CONTAINER_NAMES['tls_ca']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
