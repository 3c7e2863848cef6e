# One-command workflows. `make test` and `make run` set everything up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install binaries test unit lint run bench chaos clean tf-heartbeat

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

# The heartbeat helper (tfheartbeat/) with real TensorFlow: not part of `make test`, because
# tensorflow-cpu (about 250 MB) takes minutes to install. Installed once into its own virtualenv,
# outside the repository beside the control-plane binaries, then reused.
TF_VENV ?= $(HOME)/.cache/tfjob-operator/tf-heartbeat-venv

$(TF_VENV)/.installed:
	$(PYTHON) -m venv $(TF_VENV)
	$(TF_VENV)/bin/pip install -q --upgrade pip
	$(TF_VENV)/bin/pip install -q 'tensorflow-cpu>=2.16,<3' 'pytest>=9.2,<10' 'pytest-timeout>=2.4,<3'
	touch $@

tf-heartbeat: $(TF_VENV)/.installed
	$(TF_VENV)/bin/python -m pytest -p no:cacheprovider tests/tensorflow/tf_heartbeat_training.py

clean:
	rm -rf $(VENV) build *.egg-info
