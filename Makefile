# One-command workflows. `make test` and `make run` set everything up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install binaries test unit lint run bench chaos clean

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

binaries:
	bash devcluster/build-binaries.sh core

lint: install
	$(BIN)/ruff check .

unit: install
	$(BIN)/pytest tests/unit

# The whole suite: lint, unit tests, and integration tests against a local control plane
# that the test session starts and stops itself (binaries built or reused from the cache).
test: install binaries lint
	$(BIN)/pytest tests

run: install binaries
	$(BIN)/tfjob-devcluster demo

bench: install binaries
	$(BIN)/python -m bench

# The fault-injection suite at full size (the test command runs a CI-sized version).
chaos: install binaries
	CHAOS_SCALE=full $(BIN)/pytest tests/integration/controller/chaos

clean:
	rm -rf $(VENV) build *.egg-info
