"""The lab's pytest plugin (loaded by the root conftest.py, or `-p lab.pytest_plugin`):
one lab per session and its clients (fixtures.py), and how make test's workers
share the tests out (scheduling.py)."""

pytest_plugins = ["lab.pytest_plugin.fixtures", "lab.pytest_plugin.scheduling"]
