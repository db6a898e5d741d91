"""The language-neutral contract of protolab, and its Python binding.

The files beside this module (games.proto, openapi.yaml, schema.graphql,
ws-protocol.md, ws-protocol.schema.json) are the contract; this package holds
what Python code on both sides shares: the Game field table and its
validation (game.py), the error table (errors.py), the JSON encoding
(codec.py) and the code generated from games.proto.
"""
