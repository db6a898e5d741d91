# protolab: `make bench` measures, `make test` checks. Both bootstrap what they need.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# Extra pytest arguments, e.g. make bench PYTEST_ARGS="-k fetch"
PYTEST_ARGS ?=

.PHONY: bootstrap db test bench serve capture report lint clean docker-images bench-docker test-docker

bootstrap: $(STAMP) db

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

# The embedded database server, built once into the cache (skipped with MONGODB_URI).
db: $(STAMP)
	@if [ -z "$$MONGODB_URI" ]; then $(PY) -c "from lab.database import secantus_binary; print('database:', secantus_binary())"; fi

test: bootstrap
	$(PY) -m pytest --benchmark-disable $(PYTEST_ARGS)

bench: bootstrap
	$(PY) -m pytest --benchmark-only $(PYTEST_ARGS)

serve: bootstrap
	$(VENV)/bin/protolab serve

# Docker mode (lab/compose.py). Local base, Python and database images for hosts
# without an image registry (debootstrap; about a minute once, then cached).
docker-images: bootstrap
	$(PY) -m lab.dockerd images

bench-docker: bootstrap
	LAB_MODE=docker $(PY) -m pytest --benchmark-only $(PYTEST_ARGS)

# The conformance and bad-input suites against the Docker stack (the Docker
# smoke test, with its host-restore check, is part of `make test`).
test-docker: bootstrap
	$(PY) -m pytest --benchmark-disable --lab-mode docker tests/test_conformance.py tests/test_bad_input.py $(PYTEST_ARGS)

# Bytes on the wire per operation (tshark; installed via apt when missing and root).
# make capture NETNS=1: over a veth pair in a network namespace, MTU 1500.
NETNS ?=
capture: bootstrap
	$(PY) -m capture $(if $(NETNS),--netns)

# One page from the saved results: results/report.html (self-contained) and results/report.md.
report: $(STAMP)
	$(PY) -m report

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) results/benchmarks results/capture
