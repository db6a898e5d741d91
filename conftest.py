# The lab's fixtures live in a plugin module so tests and benchmarks can import from it.
pytest_plugins = ["lab.pytest_plugin", "lab.results_check"]
