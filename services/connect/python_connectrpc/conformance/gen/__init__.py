"""Generated from connectrpc.com/conformance's .proto files (clients/connect/codegen.py)."""
