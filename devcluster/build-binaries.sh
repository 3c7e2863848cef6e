#!/usr/bin/env bash
# Build the local control plane's binaries from Go modules into a cache outside the repo.
#
# Idempotent: when every binary for the pinned versions is already in the cache it
# exits at once. The versions are pinned in devcluster/versions.env (the one place).
# Needs Go (>= the version the pinned modules ask for) and the Go module proxy.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"
OUT="${TFJOB_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION}"
KUEUE_OUT="${TFJOB_KUEUE_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator/kueue-$KUEUE_VERSION}"
WHAT="${1:-core}"   # core | kueue

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath

have_core() {
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok; do
    [ -x "$OUT/$b" ] || return 1
  done
  [ -f "$OUT/kwok-stages/.complete" ] || return 1
}

if ! command -v go >/dev/null 2>&1; then
  echo "build-binaries: Go is not installed; install Go >= 1.26 or set TFJOB_BIN_DIR to a folder holding etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok" >&2
  exit 2
fi

build_core() {
  if have_core; then echo "build-binaries: reusing $OUT"; return 0; fi
  mkdir -p "$OUT"
  local W; W=$(mktemp -d)
  trap 'rm -rf "$W"' RETURN
  local start=$SECONDS

  # ---- kubernetes: a wrapper module that pins every staging module to the matching v0 tag.
  if ! [ -x "$OUT/kube-apiserver" ] || ! [ -x "$OUT/kubectl" ] || ! [ -x "$OUT/kube-scheduler" ] || ! [ -x "$OUT/kube-controller-manager" ]; then
    mkdir -p "$W/k8s" && cd "$W/k8s"
    go mod init local/k8s-testbins >/dev/null 2>&1
    local GOMOD STAGING STAGING_VERSION MINOR GOLINE
    GOMOD=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
    STAGING=$(sed -n 's#^[[:space:]]*\(replace[[:space:]]\+\)\?\(k8s\.io/[A-Za-z0-9._-]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\2#p' "$GOMOD")
    GOLINE=$(grep -m1 '^go ' "$GOMOD")
    STAGING_VERSION=0.${K8S_VERSION#1.}
    MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
    {
      printf 'module local/k8s-testbins\n\n%s\n\nrequire k8s.io/kubernetes v%s\n\n' "$GOLINE" "$K8S_VERSION"
      grep '^godebug' "$GOMOD" || true
      for m in $STAGING; do echo "replace $m => $m v$STAGING_VERSION"; done
    } > go.mod
    cat > tools.go <<'GOEOF'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GOEOF
    go mod tidy
    local DATE LD p
    DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ); LD="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      LD="$LD -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean -X $p.buildDate=$DATE"
    done
    go build -ldflags "$LD" -o "$OUT/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
    echo "build-binaries: kubernetes built after $((SECONDS-start)) s"
  fi

  # ---- etcd: upstream's server/main.go in a wrapper module (the server module has replace lines).
  if ! [ -x "$OUT/etcd" ]; then
    mkdir -p "$W/etcd" && cd "$W/etcd"
    printf 'module local/etcd-testbin\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 v%s\n' "$ETCD_VERSION" > go.mod
    cat > main.go <<'GOEOF'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GOEOF
    go mod tidy
    go build -ldflags "-s -w" -o "$OUT/etcd" .
    echo "build-binaries: etcd built after $((SECONDS-start)) s"
  fi

  # ---- kwok
  if ! [ -x "$OUT/kwok" ]; then
    GOBIN="$OUT" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
    echo "build-binaries: kwok built after $((SECONDS-start)) s"
  fi
  local SRC
  SRC="$(go env GOMODCACHE)/sigs.k8s.io/kwok@v$KWOK_VERSION"
  [ -d "$SRC" ] || go mod download "sigs.k8s.io/kwok@v$KWOK_VERSION"
  mkdir -p "$OUT/kwok-stages"
  cp -r "$SRC/kustomize/stage" "$OUT/kwok-stages/"
  cp -r "$SRC/kustomize/crd" "$OUT/kwok-stages/" 2>/dev/null || true
  chmod -R u+w "$OUT/kwok-stages"
  touch "$OUT/kwok-stages/.complete"
  "$OUT/kube-apiserver" --version; "$OUT/etcd" --version | sed -n 1p; "$OUT/kwok" --version || true
  echo "build-binaries: done in $((SECONDS-start)) s -> $OUT"
}

build_kueue() {
  # Kueue's manager (binary `kueue`, the name devcluster/kueue.py runs) and its 11 CRDs
  # (config/components/crd/bases of the same module version). v0.17.0's go.mod has no replace
  # directives, so a plain `go install` of cmd/kueue works (about 10 min cold on 2 cores).
  if [ -x "$KUEUE_OUT/kueue" ] && [ -f "$KUEUE_OUT/.complete" ]; then echo "build-binaries: reusing $KUEUE_OUT"; return 0; fi
  mkdir -p "$KUEUE_OUT"
  local start=$SECONDS KMOD
  if ! [ -x "$KUEUE_OUT/kueue" ]; then
    GOBIN="$KUEUE_OUT" go install -ldflags "-s -w" "sigs.k8s.io/kueue/cmd/kueue@v$KUEUE_VERSION"
    echo "build-binaries: kueue built after $((SECONDS-start)) s"
  fi
  KMOD=$(go mod download -json "sigs.k8s.io/kueue@v$KUEUE_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  rm -rf "$KUEUE_OUT/crd"
  mkdir -p "$KUEUE_OUT/crd"
  cp "$KMOD"/config/components/crd/bases/*.yaml "$KUEUE_OUT/crd/"
  chmod -R u+w "$KUEUE_OUT/crd"
  [ "$(find "$KUEUE_OUT/crd" -name '*.yaml' | wc -l)" -eq 11 ] || { echo "build-binaries: expected 11 Kueue CRDs in $KMOD/config/components/crd/bases" >&2; return 1; }
  touch "$KUEUE_OUT/.complete"
  echo "build-binaries: kueue done in $((SECONDS-start)) s -> $KUEUE_OUT (binary kueue, CRDs in crd/)"
}

case "$WHAT" in
  core) build_core ;;
  kueue) build_kueue ;;
  all) build_core; build_kueue ;;
  dir) echo "$OUT" ;;
  kueue-dir) echo "$KUEUE_OUT" ;;
  *) echo "usage: build-binaries.sh [core|kueue|all|dir|kueue-dir]" >&2; exit 2 ;;
esac
