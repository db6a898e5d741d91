"""SOAP 1.1 over HTTP (contract/games.wsdl)."""

from clients.protocols import Protocol
from contract.errors import ERRORS


def soap_fault(native: object, code: str) -> bool:
    """(faultcode without its subcode, the contract code in the Fault's detail)."""
    return native == (ERRORS[code]["soap"]["faultcode"], code)


DESCRIPTOR = Protocol(
    name="soap", order=60, label="SOAP", client="clients.soap.client:SoapClient",
    endpoint="http://{host}:{port}/soap", default_port=8000, transport="http", payload="http_body",
    payload_source="HTTP body (the SOAP envelope): http.content_length, or a chunked body's http.chunk_size",
    client_packages=("zeep", "lxml", "requests"), native_error=soap_fault,
    error_spelling="a SOAP 1.1 Fault: faultcode Client or Server (contract.json column soap), "
                   "the contract code in <detail><code>",
    fuzzer="clients.soap.fuzz:fuzzer", load_client="clients.soap.load:connect", crosscheck="crosscheck",
    crosscheck_plan="clients.soap.client:wire_plan", codegen="clients.soap.codegen:write")
