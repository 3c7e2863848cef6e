#!/usr/bin/env bash
# Build Argo Workflows from its Go module into a cache outside the repo: the CLI (`argo`, for
# `argo lint --offline` on manifests/examples/pipelines/argo-workflow.yaml,
# tests/unit/test_pipeline_argo_lint.py), and the workflow controller and the executor
# (`workflow-controller`, `argoexec`), which run the example workflow on a local cluster, and the
# module's minimal CRDs (manifests/base/crds/minimal) beside them in crd/, which devcluster/argo.py
# installs before it starts the controller.
#
#   hack/build-argo.sh        build what is not cached; print nothing but progress on stderr
#   hack/build-argo.sh dir    print the folder the binaries are (or would be) in, build nothing
#
# Idempotent: with the binaries in the cache it exits at once. The version is pinned here, the
# one place. It is v4 because the module proxy refuses github.com/argoproj/argo-workflows/v3
# ("not available") and serves only v4.0.5 of v4; v4 validates the same argoproj.io/v1alpha1
# Workflow. Security flaws are reported for v4.0.5: this binary is only ever run offline, on the
# repository's own files, never as a server or against a cluster.
# Cost: the CLI about 12 minutes of CPU (29 minutes of wall time measured on two cores shared with a
# benchmark, under nice), a 110 MB binary, plus the modules it downloads on first use; the workflow
# controller and the executor after it about 4 more minutes of wall time (most packages are the
# CLI's, already compiled), 80 and 113 MB.
# Needs Go >= the version the module asks for (1.25.7) and the Go module proxy.
set -euo pipefail
ARGO_VERSION=4.0.5
OUT="${TFJOB_ARGO_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator/argo-$ARGO_VERSION}"

if [ "${1:-}" = dir ]; then
  echo "$OUT"
  exit 0
fi
BINARIES=(argo workflow-controller argoexec)
pkg=github.com/argoproj/argo-workflows/v4
missing=()
for binary in "${BINARIES[@]}"; do
  [ -x "$OUT/$binary" ] || missing+=("$binary")
done
# The CRDs the controller needs, as the release's "minimal" set (the full ones exceed the size of an
# annotation; server-side apply takes either): copied out of the module, which the build downloads.
copy_crds() {
  local src
  src=$(go mod download -json "$pkg@v$ARGO_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  mkdir -p "$OUT/crd.partial"
  cp "$src"/manifests/base/crds/minimal/argoproj.io_*.yaml "$OUT/crd.partial/"
  chmod u+w "$OUT"/crd.partial/*
  rm -rf "$OUT/crd"
  mv "$OUT/crd.partial" "$OUT/crd"
}
if [ ${#missing[@]} -eq 0 ]; then
  if [ ! -d "$OUT/crd" ]; then
    export GOTOOLCHAIN=local GOFLAGS=-mod=mod
    copy_crds
  fi
  echo "build-argo: reusing ${BINARIES[*]} in $OUT" >&2
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "build-argo: Go is not installed; install Go >= 1.25.7 or set TFJOB_ARGO_DIR to a folder holding argo" >&2
  exit 2
fi

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -trimpath"
mkdir -p "$OUT"
start=$SECONDS
stamps="-s -w -X $pkg.version=v$ARGO_VERSION -X $pkg.gitTag=v$ARGO_VERSION -X $pkg.gitTreeState=clean"
stamps="$stamps -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
# The module as released, copied out of the read-only module cache. Its UI is embedded from
# ui/dist/app, which the module zip does not carry (the UI is built by npm at release time):
# like Argo's own Makefile without static files, an empty index.html stands in (the CLI's `argo
# server` would serve that; lint never reads it). Built in a temporary folder and moved into
# place last, so a cut-short build never leaves a binary the check above would take as finished.
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
echo "build-argo: building ${missing[*]} of argo v$ARGO_VERSION into $OUT (minutes on two cores)" >&2
src=$(go mod download -json "$pkg@v$ARGO_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
mkdir -p "$work/src/ui/dist/app"
touch "$work/src/ui/dist/app/index.html"
# The v4.0.5 module zip lacks workflow/executor/osspecific/signal_linux.go (the repository has it),
# so argoexec does not build for Linux as released ("undefined: Setpgid"). The Darwin variant of
# the same four functions is plain POSIX (process groups, SIGTERM, reaping with wait4) and holds on
# Linux as written: it stands in, under the Linux name.
osspecific="$work/src/workflow/executor/osspecific"
if [ ! -e "$osspecific/signal_linux.go" ]; then
  cp "$osspecific/signal_darwin.go" "$osspecific/signal_linux.go"
fi
for binary in "${missing[@]}"; do
  (cd "$work/src" && go build -ldflags "$stamps" -o "$work/$binary" "./cmd/$binary")
  mv "$work/$binary" "$OUT/$binary"
done
copy_crds
echo "build-argo: built ${missing[*]} in $OUT in $((SECONDS - start))s" >&2
