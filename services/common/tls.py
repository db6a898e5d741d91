"""TLS for the Python services, from the lab's environment (lab/axes.py, axis tls):
LAB_TLS=1.3 or 1.2 is the one version a service accepts (its minimum and its maximum),
LAB_TLS_CERT and LAB_TLS_KEY its certificate chain and key (PEM files the lab made for
this run). Unset: cleartext. The one place a Python service's TLS is decided: gunicorn
(services/common/gunicorn_conf.py), hypercorn (services/sse/python_hypercorn/hypercorn_conf.py)
and grpcio (services/grpc/python_grpcio/server.py) take it from here."""

from __future__ import annotations

import os
import ssl
from collections.abc import Sequence

VERSIONS = {"1.3": ssl.TLSVersion.TLSv1_3, "1.2": ssl.TLSVersion.TLSv1_2}


def version() -> ssl.TLSVersion | None:
    """The TLS version the lab asks for, or None: cleartext."""
    want = os.environ.get("LAB_TLS", "")
    if not want:
        return None
    if want not in VERSIONS:
        raise SystemExit(f"LAB_TLS={want!r}: expected one of {', '.join(VERSIONS)}")
    return VERSIONS[want]


def files() -> tuple[str, str]:
    """(certificate chain, key): LAB_TLS_CERT and LAB_TLS_KEY."""
    cert, key = os.environ.get("LAB_TLS_CERT", ""), os.environ.get("LAB_TLS_KEY", "")
    if not (cert and key and os.path.isfile(cert) and os.path.isfile(key)):
        raise SystemExit(f"LAB_TLS={os.environ.get('LAB_TLS')}: LAB_TLS_CERT ({cert!r}) and LAB_TLS_KEY ({key!r}) "
                         "must name the certificate chain and key")
    return cert, key


def pin(context: ssl.SSLContext, alpn: Sequence[str] = ()) -> ssl.SSLContext:
    """`context` accepting the one version asked for, offering the ALPN protocols `alpn`, and
    appending its connections' TLS secrets to the key log the lab names (SSLKEYLOGFILE, set by
    the wire capture: lab/tls.py), when it names one."""
    wanted = version()
    assert wanted is not None, "pin() without LAB_TLS"
    context.minimum_version = context.maximum_version = wanted
    if alpn:
        context.set_alpn_protocols(list(alpn))
    if os.environ.get("SSLKEYLOGFILE"):
        context.keylog_filename = os.environ["SSLKEYLOGFILE"]
    return context


def server_context(alpn: Sequence[str] = ()) -> ssl.SSLContext | None:
    """A server context with the certificate and key, or None when cleartext."""
    if version() is None:
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*files())
    return pin(context, alpn)
