#!/usr/bin/env bash
# Build Argo Workflows' CLI (`argo`) from its Go module into a cache outside the repo, for
# `argo lint --offline` on manifests/examples/pipelines/argo-workflow.yaml
# (tests/unit/test_pipeline_argo_lint.py).
#
#   hack/build-argo.sh        build it unless cached; print nothing but progress on stderr
#   hack/build-argo.sh dir    print the folder the binary is (or would be) in, build nothing
#
# Idempotent: with the binary in the cache it exits at once. The version is pinned here, the
# one place. It is v4 because the module proxy refuses github.com/argoproj/argo-workflows/v3
# ("not available") and serves only v4.0.5 of v4; v4 validates the same argoproj.io/v1alpha1
# Workflow. Security flaws are reported for v4.0.5: this binary is only ever run offline, on the
# repository's own files, never as a server or against a cluster.
# Cost: about 12 minutes of CPU (29 minutes of wall time measured on two cores shared with a
# benchmark, under nice), a 110 MB binary, plus the modules it downloads on first use.
# Needs Go >= the version the module asks for (1.25.7) and the Go module proxy.
set -euo pipefail
ARGO_VERSION=4.0.5
OUT="${TFJOB_ARGO_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator/argo-$ARGO_VERSION}"

if [ "${1:-}" = dir ]; then
  echo "$OUT"
  exit 0
fi
if [ -x "$OUT/argo" ]; then
  echo "build-argo: reusing $OUT/argo" >&2
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "build-argo: Go is not installed; install Go >= 1.25.7 or set TFJOB_ARGO_DIR to a folder holding argo" >&2
  exit 2
fi

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -trimpath"
mkdir -p "$OUT"
start=$SECONDS
pkg=github.com/argoproj/argo-workflows/v4
stamps="-s -w -X $pkg.version=v$ARGO_VERSION -X $pkg.gitTag=v$ARGO_VERSION -X $pkg.gitTreeState=clean"
stamps="$stamps -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
# The module as released, copied out of the read-only module cache. Its UI is embedded from
# ui/dist/app, which the module zip does not carry (the UI is built by npm at release time):
# like Argo's own Makefile without static files, an empty index.html stands in (the CLI's `argo
# server` would serve that; lint never reads it). Built in a temporary folder and moved into
# place last, so a cut-short build never leaves a binary the check above would take as finished.
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
echo "build-argo: building argo v$ARGO_VERSION into $OUT (several minutes on two cores)" >&2
src=$(go mod download -json "$pkg@v$ARGO_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
mkdir -p "$work/src/ui/dist/app"
touch "$work/src/ui/dist/app/index.html"
(cd "$work/src" && go build -ldflags "$stamps" -o "$work/argo" ./cmd/argo)
mv "$work/argo" "$OUT/argo"
echo "build-argo: built $OUT/argo in $((SECONDS - start))s" >&2
