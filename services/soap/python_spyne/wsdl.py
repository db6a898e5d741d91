"""Print this SOAP service's WSDL into contract/games.wsdl:
python -m services.soap.python_spyne.wsdl (tests/test_contract.py fails when
the file is stale). Here, not in contract/: the contract imports nothing, and
the WSDL is what spyne makes of this service."""

from __future__ import annotations

import os
from pathlib import Path

from lxml import etree

import contract

WSDL = Path(contract.__file__).resolve().parent / "games.wsdl"
ADDRESS = "http://127.0.0.1:8000/soap"  # clients set their own (zeep create_service)


def wsdl() -> bytes:
    from spyne.interface.wsdl import Wsdl11

    # Imported here, not at the top: the app makes its store at import (never
    # contacted here) from MONGODB_URI, which is set only for the import: left
    # set, it would point every later lab of the same process at this address.
    previous = os.environ.get("MONGODB_URI")
    os.environ.setdefault("MONGODB_URI", "mongodb://127.0.0.1:9/?directConnection=true")
    try:
        from services.soap.python_spyne.app import soap
    finally:
        if previous is None:
            del os.environ["MONGODB_URI"]

    document = Wsdl11(soap.interface)
    document.build_interface_document(ADDRESS)
    tree = etree.fromstring(document.get_interface_document())
    return etree.tostring(tree, pretty_print=True, xml_declaration=True, encoding="UTF-8")


if __name__ == "__main__":
    WSDL.write_bytes(wsdl())
    print(f"wrote {WSDL}")
