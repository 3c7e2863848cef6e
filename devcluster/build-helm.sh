#!/usr/bin/env bash
# Build Helm from its Go module into a cache outside the repo, for the chart's tests
# (tests/unit/test_helm_*.py, tests/integration/controller/test_helm*.py) and `make`-driven lint.
#
#   devcluster/build-helm.sh        # build if missing, print nothing else
#   devcluster/build-helm.sh dir    # print the folder holding `helm` (building it first if needed)
#
# Idempotent: reuses ~/.cache/tfjob-operator/helm-<version>/helm when present. Needs Go and the Go
# module proxy; no prebuilt binary is downloaded. About 9 minutes cold under nice on two busy cores (most of it compiling
# the Kubernetes client libraries).
set -euo pipefail
HELM_VERSION="${HELM_VERSION:-3.22.0}"
OUT="${TFJOB_HELM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator/helm-$HELM_VERSION}"
WHAT="${1:-build}"

# .complete marks a binary built by this script with the stamps below (an older build lacks them).
if [ ! -x "$OUT/helm" ] || [ ! -f "$OUT/.complete" ]; then
  if ! command -v go >/dev/null 2>&1; then
    echo "build-helm: Go is not installed; install Go or set TFJOB_HELM_DIR to a folder holding helm" >&2
    exit 2
  fi
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath
  mkdir -p "$OUT"
  start=$SECONDS
  # What Helm's own Makefile stamps: the version `helm version` prints, and the Kubernetes version
  # `helm template` and `helm lint` assume without a cluster (client-go v0.X => 1.X; unstamped it
  # is 1.20, below the chart's kubeVersion).
  GOMOD=$(go mod download -json "helm.sh/helm/v3@v$HELM_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  K8S_MINOR=$(sed -n 's#^[[:space:]]*k8s\.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$GOMOD" | head -1)
  LDFLAGS="-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    LDFLAGS="$LDFLAGS -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$K8S_MINOR"
  done
  GOBIN="$OUT.tmp" go install -ldflags "$LDFLAGS" "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION" >&2
  mv "$OUT.tmp/helm" "$OUT/helm" && rmdir "$OUT.tmp"
  touch "$OUT/.complete"
  echo "build-helm: built helm v$HELM_VERSION (Kubernetes 1.$K8S_MINOR) into $OUT in $((SECONDS - start)) s" >&2
fi

if [ "$WHAT" = dir ]; then echo "$OUT"; fi
