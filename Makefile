# Everything a newcomer needs: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run cluster cluster-stop cluster-test test fuzz bench lint schemas worker clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,dev,embedded]'
	touch $(STAMP)

install: $(STAMP)

# `make run ARGS="--port 9000 --data-dir /srv/matcha"`; Ctrl-C stops everything it started
run: install
	$(BIN)/matcha run $(ARGS)

# The clustered shape on this machine (docs/scaling.md): 6 Redis nodes in cluster mode,
# a PostgreSQL primary + hot standby, nginx sticky by match id over two APIs, two workers.
# Debian's redis-server, PostgreSQL 15 and nginx (installed here when missing); data in
# var/cluster. `make cluster ARGS="--fresh"` starts a new one; Ctrl-C or
# `make cluster-stop` (from another terminal) stops everything it started.
cluster: install
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx)
	$(BIN)/matcha cluster up $(ARGS)

cluster-stop: install
	$(BIN)/matcha cluster stop $(ARGS)

# The tests that start the clustered shape's servers (tests/cluster; about three minutes,
# so not in `make test`, where they are skipped saying so).
cluster-test: install
	MATCHA_CLUSTER_TESTS=1 $(BIN)/python -m pytest tests/cluster

worker: install
	$(BIN)/matcha worker

# Three pytest-xdist workers: most of the suite waits on servers, sockets and browsers
# rather than computing, so three processes on two cores finish in about half the
# serial time. `make test TEST_WORKERS=0` runs it in one process.
TEST_WORKERS ?= 3
test: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

# The long fuzz run (docs/api.md "Fuzzing"): Schemathesis over every operation and
# the whole-service property test with far more examples than `make test` gives them.
fuzz: install
	MATCHA_FUZZ_EXAMPLES=60 MATCHA_FUZZ_STEPS=40 MATCHA_FUZZ_SCENARIOS=30 \
	MATCHA_SERVICE_EXAMPLES=60 MATCHA_SERVICE_STEPS=60 \
	$(BIN)/python -m pytest tests/fuzz --timeout 7200 -q

bench: install
	$(BIN)/python -m bench

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

schemas: install
	$(BIN)/matcha schemas --out docs/schemas

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
