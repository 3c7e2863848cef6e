# syntax=docker/dockerfile:1.7
# The tfjob-operator image: `docker build -t tfjob-operator:0.1.0 .`
#
# Two stages so the runtime image holds only a virtualenv with the operator and its pinned
# dependencies (no compilers, no pip, no caches, no sources beyond the installed packages). The
# runtime runs as an unprivileged numeric user (65532, matching the Deployment's runAsUser) on a
# read-only root filesystem: nothing is written at run time (no .pyc, logs go to stdout).
# The CRDs are package data of `tfjob_api`, in the client distribution (tfjob_api/crds/ links to
# manifests/crd.yaml and manifests/kubeflow/tfjob-crd.yaml; the wheel carries their contents). The final stage also keeps
# them at $TFJOB_CRD / $TFJOB_KUBEFLOW_CRD, the same files, which `tfjob_api.crd` then reads.

ARG PYTHON_IMAGE=python:3.11.7-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# Exact versions of every runtime dependency, transitive ones included: the set the test suite
# ran with (setup.cfg gives ranges; this pins the image). Update together with setup.cfg.
COPY <<CONSTRAINTS /src/constraints.txt
aiohappyeyeballs==2.7.1
aiohttp==3.14.5
aiosignal==1.4.0
attrs==26.1.0
cachetools==8.0.2
certifi==2026.10.19.post1
charset-normalizer==3.5.3
durationpy==0.11
frozenlist==1.8.0
idna==3.20
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
kubernetes==36.0.3
multidict==7.2.1
oauthlib==4.0.1
orjson==3.13.0
prometheus-client==0.26.0
propcache==0.5.4
python-dateutil==4.0.0
pyyaml==6.0.4
referencing==0.37.0
requests==2.34.2
requests-oauthlib==2.0.0
rpds-py==2026.9.1
six==1.17.0
structlog==26.1.0
tenacity==9.2.1
typing-extensions==4.16.0
tzdata==2026.6
urllib3==2.8.0
websocket-client==1.9.2
yarl==1.25.1
CONSTRAINTS
COPY setup.cfg pyproject.toml README.md ./
# The client distribution (client/ links to tfjobs/, tfjob_api/, tfconfig/, tfheartbeat/): the
# operator's distribution depends on it for the API contract.
COPY client/ client/
COPY tfjobs/ tfjobs/
COPY tfjob_api/ tfjob_api/
# The CRDs tfjob_api/crds/ links to, so the installed package carries them.
COPY manifests/crd.yaml manifests/crd.yaml
COPY manifests/kubeflow/tfjob-crd.yaml manifests/kubeflow/tfjob-crd.yaml
COPY kube/ kube/
COPY controller/ controller/
COPY informers/ informers/
COPY workqueue/ workqueue/
COPY tfconfig/ tfconfig/
COPY tfheartbeat/ tfheartbeat/
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --constraint constraints.txt ./client . \
 && /opt/venv/bin/pip uninstall --yes pip \
 && find /opt/venv -name '__pycache__' -prune -exec rm -rf {} +

FROM ${PYTHON_IMAGE}
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TFJOB_CRD=/etc/tfjob-operator/crd.yaml \
    TFJOB_KUBEFLOW_CRD=/etc/tfjob-operator/tfjob-crd.yaml
RUN groupadd --system --gid 65532 tfjob \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin tfjob
COPY --from=build /opt/venv /opt/venv
COPY manifests/crd.yaml /etc/tfjob-operator/crd.yaml
COPY manifests/kubeflow/tfjob-crd.yaml /etc/tfjob-operator/tfjob-crd.yaml
USER 65532:65532
# 8080: Prometheus /metrics; 8081: /healthz and /readyz.
EXPOSE 8080 8081
ENTRYPOINT ["tfjob-operator", "run"]
