# One-command workflows. `make test` and `make run` set everything up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install binaries kueue test-flakes scheduler-plugins volcano real-node-deps real-binaries images helm argo argo-up prometheus test test-real test-real-two-nodes test-tools unit lint run bench chaos soak clean tf-heartbeat

# Two distributions from this repository: the operator (.) and the user tools it builds on (client/).
$(VENV)/.installed: setup.cfg pyproject.toml client/setup.cfg
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ./client -e '.[test]'
	touch $@

install: $(VENV)/.installed

binaries:
	bash devcluster/build-binaries.sh core

# Kueue's manager and CRDs, which the Kueue tests run beside the local cluster.
kueue:
	bash devcluster/build-binaries.sh kueue

# The gang scheduler the gang-scheduling tests run beside kube-scheduler: kubernetes-sigs
# scheduler-plugins (Coscheduling) and its PodGroup controller, built into the cache outside the repo.
scheduler-plugins:
	bash devcluster/build-binaries.sh scheduler-plugins

# The other gang scheduler: Volcano's scheduler (vc-scheduler) and its CRDs, built likewise.
volcano:
	bash devcluster/build-binaries.sh volcano

# What real nodes need from Debian's packages (containerd, runc, CNI plugins, iptables, ipset, image
# tools); real-binaries builds their Go binaries (kubelet, kube-proxy, coredns, kube-router) into the
# cache outside the repo. Both are reused when present, like the control plane's binaries.
real-node-deps:
	bash devcluster/install-real-nodes.sh

real-binaries:
	bash devcluster/build-binaries.sh real

# The pod sandbox and the TensorFlow image the examples use (no registry: built from Debian packages
# and PyPI into ~/.cache/tfjob-operator/images/, imported into the real nodes by the tests).
images: install real-node-deps
	$(BIN)/python -m devcluster.images build --only pause --only tensorflow

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

unit: install
	$(BIN)/pytest tests/unit -m "not tools"

# The whole suite: lint, unit tests, integration tests against a local control plane that the test
# session starts and stops itself (binaries built or reused from the cache), and the real-node
# scenarios marked real_ci (real containers on a real node; the rest: `make test-real`).
# They run on TEST_WORKERS pytest-xdist workers side by side (3 by default: the tests mostly wait), each
# with a local cluster of its own (tests/conftest.py says how they are shared out); TEST_WORKERS=1
# runs them in one process, in pytest's own order.
# The tests of Helm, Argo's CLI and the real gang schedulers are not part of it: all are built from
# their Go modules (about 9, 7, 10 and 5 cold minutes on two idle cores, which a cold `make test`
# cannot afford); `make test-tools` runs them. Of gang scheduling, `make test` runs the operator's
# PodGroups against the real PodGroup CRD (downloaded in seconds) without the scheduler. Prometheus
# and promtool (Debian's package, seconds) are, for the alert rules and the dashboard; so is the real kfp SDK (its own venv, under two minutes) for the pipeline example.
TEST_WORKERS ?= 3
PARALLEL := $(if $(filter 1,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder)
SUITE := -m "(not real or real_ci) and not tools"

test: install binaries kueue real-node-deps real-binaries images prometheus lint
	$(BIN)/pytest tests $(SUITE) $(PARALLEL)

# Every test of `make test` (lint aside) FLAKE_RUNS times in a row, with another local cluster and a
# CPU-bound process running beside them the whole time; reports every test that failed even once
# (exit 1 if any did). hack/test_flakes.py says more.
FLAKE_RUNS ?= 3
test-flakes: install binaries kueue real-node-deps real-binaries images prometheus
	$(BIN)/python hack/test_flakes.py --runs $(FLAKE_RUNS) -- tests $(SUITE) $(PARALLEL)

# The Helm chart (lint, template, its drift against the kustomize install, install and upgrade on the
# local cluster), the Argo example under Argo's own offline lint, and jobs placed by the real
# Coscheduling and Volcano gang schedulers; and on a real node (hence the real-node set-up and the
# images): the chart's `helm test`, the Argo example run by Argo's workflow controller (its executor
# image), and one Keras program trained on TensorFlow 2.15 and 2.21 through the start-up profiles.
test-tools: install binaries helm argo scheduler-plugins volcano real-node-deps real-binaries images
	$(BIN)/python -m devcluster.images build --only operator --only argoexec --only tensorflow-2.15
	$(BIN)/pytest tests -m tools

helm:
	bash devcluster/build-helm.sh

argo:
	nice -n 19 bash hack/build-argo.sh

# Argo's workflow controller on the running devcluster (`tfjob-devcluster up --real-nodes 1 --nodes 0`),
# its executor image imported into the real node; `tfjob-devcluster down` stops it with the cluster.
argo-up: install argo
	$(BIN)/tfjob-devcluster argo

prometheus:
	bash devcluster/install-prometheus.sh

# Every scenario on real nodes: each example trains real TensorFlow, repairs, scaling, stall probes,
# log following, NetworkPolicy, the operator in-cluster (about 25 min warm on two cores); then, in a
# pytest run of its own (one cluster with real nodes at a time), the scenarios on two real nodes.
test-real: install binaries real-node-deps real-binaries images
	$(BIN)/python -m devcluster.images build --only operator
	$(BIN)/pytest tests/real -m "not tools and not real_two_nodes"
	$(BIN)/pytest tests/real -m real_two_nodes

# The scenarios that need two real nodes (a node lost under training) on their own.
test-real-two-nodes: install binaries real-node-deps real-binaries images
	$(BIN)/pytest tests/real -m real_two_nodes

run: install binaries
	$(BIN)/tfjob-devcluster demo

bench: install binaries
	$(BIN)/python -m bench

# The fault-injection suite at full size (the test command runs a CI-sized version).
chaos: install binaries
	CHAOS_SCALE=full $(BIN)/pytest tests/integration/controller/chaos

# Every feature at once (Kueue + TAS + gang + NetworkPolicy + failure rules + progress) for SOAK_MINUTES
# under a mixed stream of jobs and faults, on a devcluster and Kueue of its own; exits 1 on any broken
# invariant (bench/soak.py says which). Results in bench/results/soak.json.
SOAK_MINUTES ?= 30
soak: install binaries kueue
	$(BIN)/python -m bench.soak --minutes $(SOAK_MINUTES)

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
