"""The lab's pytest plugin (loaded by the root conftest.py, or `-p lab.pytest_plugin`):
one lab per session and its clients (fixtures.py)."""

pytest_plugins = ["lab.pytest_plugin.fixtures"]
