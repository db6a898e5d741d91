# protolab: `make bench` measures, `make test` checks. Both bootstrap what they need.
# The system's python3 (>= 3.11) when it has one, the one the lab's Docker
# images use too: an interpreter's build changes results (a pyenv build ran
# the services ~20 % slower than Debian's). Results record which ran.
PYTHON ?= $(shell /usr/bin/python3 -c 'import sys, venv; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
            && echo /usr/bin/python3 || echo python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell (cat pyproject.toml; echo $(PYTHON)) | cksum | cut -d' ' -f1)
# Extra pytest arguments, e.g. make bench PYTEST_ARGS="-k fetch"
PYTEST_ARGS ?=

.PHONY: reference handshake connection-setup sweep profile fuzz conformance bootstrap db builds test bench bench-runs serve capture load load-ui report lint clean docker-images bench-docker test-docker

# The venv's packages, the database's cargo build and the Go and Node.js
# implementations' builds at the same time (the builds need no venv: they run
# with $(PYTHON)).
bootstrap:
	@$(MAKE) --no-print-directory -j3 $(STAMP) db builds

$(STAMP): pyproject.toml
	@want=$$($(PYTHON) -c 'import os, sys; print(os.path.realpath(sys.executable))'); \
	have=$$($(PY) -c 'import os, sys; print(os.path.realpath(sys._base_executable))' 2>/dev/null); \
	if [ "$$want" != "$$have" ]; then echo "creating $(VENV) with $$want"; $(PYTHON) -m venv --clear $(VENV); fi
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

# The embedded database server, built once into the cache (skipped with MONGODB_URI).
db:
	@if [ -z "$$MONGODB_URI" ]; then $(PYTHON) -c "from lab.database import secantus_binary; print('database:', secantus_binary())"; fi

# Every implementation's build step (Go, Node.js), cached by its inputs (lab/build.py).
builds:
	@$(PYTHON) -m lab.build

# On TEST_WORKERS pytest-xdist workers, each with its own lab (lab/pytest_plugin/scheduling.py:
# the tests that change the host as a whole share one worker); 0: in this process.
# -rs: each skipped test with its reason at the end.
TEST_WORKERS ?= 3
test: bootstrap
	$(PY) -m pytest --benchmark-disable -rs -n $(TEST_WORKERS) $(PYTEST_ARGS)

# Fuzzing from the contract, longer than make test's: FUZZ_CASES per implementation
# (counts in results/fuzz/latest.json and at the end of the output).
# FUZZ_WORKERS pytest-xdist workers fuzz an implementation each, with its own lab.
FUZZ_CASES ?= 10000
FUZZ_WORKERS ?= 2
fuzz: bootstrap
	@FUZZ_CASES=$(FUZZ_CASES) $(PY) -m pytest --benchmark-disable -n $(FUZZ_WORKERS) tests/test_fuzz.py $(PYTEST_ARGS); \
	status=$$?; $(PY) -m fuzz.summary; exit $$status

# Connect's own conformance suite against each Connect server, every feature it claims
# (services/connect/*/conformance/conformance.yaml): results/conformance/. make test runs a short set.
conformance: bootstrap
	LAB_CONFORMANCE=full $(PY) -m pytest --benchmark-disable -s tests/test_connect_conformance.py $(PYTEST_ARGS)

# The latency suite alone (benchmarks/): collecting tests/ too printed a skip mark for each of
# its ~1,400 tests before the first benchmark. Narrow it with -k: make bench PYTEST_ARGS="-k fetch"
bench: bootstrap
	$(PY) -m pytest --benchmark-only benchmarks $(PYTEST_ARGS)

# Repeated runs, modes alternating, to measure run-to-run noise: make bench-runs RUNS=3 MODES=native,docker
RUNS ?= 3
MODES ?= native,docker
bench-runs: bootstrap
	$(PY) -m lab.stats.runs --runs $(RUNS) --modes $(MODES) -- $(PYTEST_ARGS)

# The sandbox; its options (protolab serve --help) in SERVE_ARGS:
# make serve SERVE_ARGS="--port-base 18000 --only rest/python_flask grpc/go_grpc"
SERVE_ARGS ?=
serve: bootstrap
	$(VENV)/bin/protolab serve $(SERVE_ARGS)

# Docker mode (lab/host/compose.py). Local base, Python and database images for hosts
# without an image registry (debootstrap; about a minute once, then cached).
docker-images: bootstrap
	$(PY) -m lab.host.dockerd images

bench-docker: bootstrap
	LAB_MODE=docker $(PY) -m pytest --benchmark-only benchmarks $(PYTEST_ARGS)

# The conformance, bad-input, push and database-files suites against the Docker stack (the Docker
# smoke test, with its host-restore check, is part of `make test`).
test-docker: bootstrap
	$(PY) -m pytest --benchmark-disable --lab-mode docker tests/test_conformance.py tests/test_bad_input.py tests/test_push.py tests/test_database.py $(PYTEST_ARGS)

# Bytes on the wire per operation (tshark; installed via apt when missing and root).
# make capture NETNS=1: over a veth pair in a network namespace, MTU 1500.
NETNS ?=
capture: bootstrap
	$(PY) -m capture $(if $(NETNS),--netns)
	$(PY) -m capture.push

# A new connection's setup apart: TCP, TLS 1.3 and 1.2 full and resumed, per language
# (benchmarks/handshake.py; the tls variants of lab/axes.py). HANDSHAKE_ARGS, e.g. --connections 100
HANDSHAKE_ARGS ?=
handshake: bootstrap
	$(PY) -m benchmarks.handshake $(HANDSHAKE_ARGS)

# A new connection's setup apart from the steady call, one implementation per protocol, across
# network paths (root; benchmarks/connection_setup.py): SETUP_ARGS, e.g. --paths veth,rtt20ms --rounds 20
SETUP_ARGS ?=
connection-setup: bootstrap
	$(PY) -m benchmarks.connection_setup $(SETUP_ARGS)

# Concurrent load on Locust (load/): make load LOAD_ARGS="--impl rest/python_flask --clients 10 100"
# (--workers N: a Locust master and N workers; --netns: each worker on a simulated host)
LOAD_ARGS ?=
load: bootstrap
	$(PY) -m load $(LOAD_ARGS)

# Locust's web UI on 127.0.0.1 with the lab started and its users preloaded: pick an
# implementation and an operation, start, watch (make load-ui LOAD_UI_ARGS="--workers 2").
LOAD_UI_ARGS ?=
load-ui: bootstrap
	$(PY) -m load.ui $(LOAD_UI_ARGS)

# The latency suite over a grid of cells: payload x compression x network path, the crossovers
# with their intervals (sweep/; results/sweep/latest.json; protolab advise reads it).
# make sweep SWEEP_ARGS="--axis payload --cycles 50"; "--dry-run": the cells and commands only.
SWEEP_ARGS ?=
sweep: bootstrap
	$(PY) -m sweep $(SWEEP_ARGS)

# One page from the saved results: results/report.html (self-contained) and results/report.md.
report: $(STAMP)
	$(PY) -m report

# ruff; the layers and no import cycles (import-linter, pyproject.toml's [tool.importlinter];
# --no-cache: its cache once answered from files as they no longer were); gofmt and go vet.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
	@if command -v go >/dev/null; then \
	  modules=$$(find . \( -name node_modules -o -name '.*' ! -name . \) -prune -o -name go.mod -printf '%h\n'); \
	  unformatted=$$(gofmt -l $$modules); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would reformat: $$unformatted"; exit 1; fi; \
	  for module in $$modules; do (cd $$module && go vet ./...) || exit 1; done; \
	  echo "gofmt, go vet: clean ($$(echo $$modules))"; \
	else echo "lint: no Go toolchain here; gofmt and go vet left out"; fi

# The venv and everything the commands wrote under results/ (all but its committed README.md).
clean:
	rm -rf $(VENV)
	find results -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +

# Every instrument once at its full design into docs/reference/ (report/reference.py; hours: run it in a
# quiet hour). Resumable: a run lives in results/reference/<run>/, a stage that ended is not run again;
# STAGES=capture,report runs those again; REFERENCE_SCALE=smoke: every stage in minutes (a check, not a
# reference); GO_ON=1 goes on with the run under way at a later commit (each stage names its own),
# or, its folder lost with its machine, from docs/reference-under-way.tar.xz (python -m report.reference --keep
# wrote it between two sessions) or else from the committed docs/reference/.
# python -m report.reference --list: the stages, commands and expected cost.
STAGES ?=
REFERENCE_SCALE ?= full
reference: bootstrap
	$(PY) -m report.reference --scale $(REFERENCE_SCALE) $(if $(STAGES),--stages $(STAGES)) $(if $(GO_ON),--go-on)

# CPU profiles per implementation and operation with each runtime's own profiler
# (profiling/): results/profiles/<impl>/<operation>/. make profile PROFILE_ARGS="--impl grpc/go_grpc --seconds 10"
PROFILE_ARGS ?=
profile: bootstrap
	$(PY) -m profiling $(PROFILE_ARGS)
