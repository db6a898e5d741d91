"""The baseline, not a protocol: the services' own store called in-process (client.py)."""
