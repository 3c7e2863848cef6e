#!/usr/bin/env bash
# Build the local control plane's binaries from Go modules into a cache outside the repo
# (core, kueue, scheduler-plugins, volcano), and the binaries of real nodes (real: kubelet, kube-proxy, coredns, kube-router).
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
VOLCANO_OUT="${TFJOB_VOLCANO_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator/volcano-$VOLCANO_VERSION}"
SP_OUT="${TFJOB_SCHEDULER_PLUGINS_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator/scheduler-plugins-$SCHEDULER_PLUGINS_VERSION}"
REAL_OUT="${TFJOB_REAL_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator/real-k8s-$K8S_VERSION-coredns-$COREDNS_VERSION-kube-router-$KUBE_ROUTER_VERSION}"
WHAT="${1:-core}"   # core | kueue | scheduler-plugins | scheduler-plugins-crds | volcano | real | all (core + kueue) | dir | kueue-dir | scheduler-plugins-dir | volcano-dir | real-dir

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-trimpath
# k8s.io modules whose v$SCHEDULER_PLUGINS_VERSION (the tag scheduler-plugins' go.mod replaces them with)
# the module proxy refuses, with the nearest patch release of the same minor it serves (module@version).
SCHEDULER_PLUGINS_PROXY_FIXES="k8s.io/cli-runtime@v0.34.8 k8s.io/cluster-bootstrap@v0.34.8 k8s.io/cri-api@v0.34.5
  k8s.io/cri-client@v0.34.8 k8s.io/csi-translation-lib@v0.34.8 k8s.io/endpointslice@v0.34.8 k8s.io/externaljwt@v0.34.5
  k8s.io/kube-aggregator@v0.34.8 k8s.io/kube-controller-manager@v0.34.8 k8s.io/kube-proxy@v0.34.5
  k8s.io/kubectl@v0.34.8 k8s.io/sample-apiserver@v0.34.4"
# The same for the k8s.io modules volcano v$VOLCANO_VERSION's go.mod replaces: none for v1.10.0 (the proxy
# serves every v0.30.2 it names); kept so that a version bump repins like scheduler-plugins.
VOLCANO_PROXY_FIXES=""

have_core() {
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok; do
    [ -x "$OUT/$b" ] || return 1
  done
  [ -f "$OUT/kwok-stages/.complete" ] || return 1
}

have_real() {
  local b
  for b in kubelet kube-proxy coredns kube-router; do
    [ -x "$REAL_OUT/$b" ] || return 1
  done
  [ -f "$REAL_OUT/.complete" ] || return 1
}

if ! command -v go >/dev/null 2>&1; then
  echo "build-binaries: Go is not installed; install Go >= 1.26 or set TFJOB_BIN_DIR to a folder holding etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok" >&2
  exit 2
fi

# k8s_wrapper_module DIR MODULE PKG...: create in DIR (and cd there) a Go module that requires
# k8s.io/kubernetes@v$K8S_VERSION and replaces every staging module (k8s.io/api, client-go, ...)
# with its matching v0 tag, importing the commands PKG... so that `go mod tidy` resolves them; set
# K8S_LDFLAGS to the version stamps (gitVersion etc.) that `--version` prints. The one way this
# script builds anything from k8s.io/kubernetes (build_core and build_real both call it).
k8s_wrapper_module() {
  local dir=$1 module=$2; shift 2
  mkdir -p "$dir" && cd "$dir"
  go mod init "$module" >/dev/null 2>&1
  local GOMOD STAGING STAGING_VERSION MINOR GOLINE DATE p m
  GOMOD=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  STAGING=$(sed -n 's#^[[:space:]]*\(replace[[:space:]]\+\)\?\(k8s\.io/[A-Za-z0-9._-]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\2#p' "$GOMOD")
  GOLINE=$(grep -m1 '^go ' "$GOMOD")
  STAGING_VERSION=0.${K8S_VERSION#1.}
  MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
  {
    printf 'module %s\n\n%s\n\nrequire k8s.io/kubernetes v%s\n\n' "$module" "$GOLINE" "$K8S_VERSION"
    grep '^godebug' "$GOMOD" || true
    for m in $STAGING; do echo "replace $m => $m v$STAGING_VERSION"; done
  } > go.mod
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for p in "$@"; do printf '\t_ "%s"\n' "$p"; done
    printf ')\n'
  } > tools.go
  go mod tidy
  DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ); K8S_LDFLAGS="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    K8S_LDFLAGS="$K8S_LDFLAGS -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean -X $p.buildDate=$DATE"
  done
}

build_core() {
  if have_core; then echo "build-binaries: reusing $OUT"; return 0; fi
  mkdir -p "$OUT"
  local W; W=$(mktemp -d)
  trap 'rm -rf "$W"' RETURN
  local start=$SECONDS

  # ---- kubernetes: a wrapper module that pins every staging module to the matching v0 tag.
  if ! [ -x "$OUT/kube-apiserver" ] || ! [ -x "$OUT/kubectl" ] || ! [ -x "$OUT/kube-scheduler" ] || ! [ -x "$OUT/kube-controller-manager" ]; then
    k8s_wrapper_module "$W/k8s" local/k8s-testbins \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
    go build -ldflags "$K8S_LDFLAGS" -o "$OUT/" \
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

fetch_scheduler_plugins_crds() {
  # Only the two CRDs of the scheduler-plugins module (seconds: one module zip, nothing compiled), for
  # tests of the operator's PodGroups against the real CRD without the scheduler running.
  if [ -f "$SP_OUT/crd/scheduling.x-k8s.io_podgroups.yaml" ]; then echo "build-binaries: reusing $SP_OUT/crd"; return 0; fi
  local SPMOD
  SPMOD=$(go mod download -json "sigs.k8s.io/scheduler-plugins@v$SCHEDULER_PLUGINS_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  mkdir -p "$SP_OUT/crd.tmp.$$"
  cp "$SPMOD"/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml "$SPMOD"/config/crd/bases/scheduling.x-k8s.io_elasticquotas.yaml "$SP_OUT/crd.tmp.$$/"
  chmod -R u+w "$SP_OUT/crd.tmp.$$"
  rm -rf "$SP_OUT/crd" && mv "$SP_OUT/crd.tmp.$$" "$SP_OUT/crd"
  echo "build-binaries: scheduler-plugins CRDs -> $SP_OUT/crd"
}

build_scheduler_plugins() {
  # The kubernetes-sigs scheduler-plugins scheduler (kube-scheduler with the out-of-tree plugins,
  # Coscheduling among them) as `kube-scheduler-plugins`, its controller (PodGroup and ElasticQuota
  # reconcilers) as `scheduler-plugins-controller`, and the two CRDs they watch (config/crd/bases:
  # podgroups, elasticquotas) in crd/; devcluster/schedulerplugins.py runs them.
  # The module's go.mod replaces every k8s.io staging module, so `go install mod@version` is refused:
  # a wrapper module requires it, copies its replace directives and builds its two commands.
  if [ -x "$SP_OUT/kube-scheduler-plugins" ] && [ -x "$SP_OUT/scheduler-plugins-controller" ] && [ -f "$SP_OUT/.complete" ]; then
    echo "build-binaries: reusing $SP_OUT"; return 0
  fi
  mkdir -p "$SP_OUT"
  rm -f "$SP_OUT/.complete"
  local W; W=$(mktemp -d)
  trap 'rm -rf "$W"; trap - RETURN' RETURN
  local start=$SECONDS t MOD="sigs.k8s.io/scheduler-plugins" INFO GOMOD SPMOD GOLINE KV LDFLAGS b pkg
  INFO=$(go mod download -json "$MOD@v$SCHEDULER_PLUGINS_VERSION")
  GOMOD=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])' <<<"$INFO")
  SPMOD=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])' <<<"$INFO")
  GOLINE=$(grep -m1 '^go ' "$GOMOD")
  mkdir -p "$W/sp" && cd "$W/sp"
  # Every replace directive of upstream's go.mod (single lines and blocks: each k8s.io staging module
  # => its v0.34.N tag), except that the module proxy does not serve v$SCHEDULER_PLUGINS_VERSION of the
  # modules in SCHEDULER_PLUGINS_PROXY_FIXES (403 "not available"), so those take the nearest patch it
  # serves. Of them only csi-translation-lib is compiled in (the scheduler's volume plugins); the
  # others are in the module graph only.
  {
    printf 'module local/scheduler-plugins-devcluster\n\n%s\n\nrequire %s v%s\n\n' "$GOLINE" "$MOD" "$SCHEDULER_PLUGINS_VERSION"
    awk -v fixes="$SCHEDULER_PLUGINS_PROXY_FIXES" '
      BEGIN { n = split(fixes, pairs, " "); for (i = 1; i <= n; i++) { split(pairs[i], kv, "@"); fix[kv[1]] = kv[2] } }
      /^replace[[:space:]]*\($/ { block = 1; print; next }
      block && /^\)$/ { block = 0; print; next }
      block || /^replace[[:space:]]+[^(]/ { if ($(NF-1) in fix) { $NF = fix[$(NF-1)] } print }' "$GOMOD"
  } > go.mod
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "%s/cmd/controller"\n\t_ "%s/cmd/scheduler"\n)\n' "$MOD" "$MOD" > tools.go
  t=$SECONDS
  go mod tidy
  echo "build-binaries: scheduler-plugins wrapper module ready in $((SECONDS-t)) s"
  # Stamp the version of the kube-scheduler it is built from (the k8s.io/kubernetes tag its go.mod
  # replaces to), not upstream Makefile's v0.34.N: kube-scheduler derives its emulation version from
  # gitVersion, and 0.34 is refused at start ("emulation version 0.34 is not between [1.31, 0.34.0]").
  KV=$(awk '$1 == "k8s.io/kubernetes" && $2 == "=>" { print $NF }' "$GOMOD")
  [ -n "$KV" ] || { echo "build-binaries: no k8s.io/kubernetes replace line in $GOMOD" >&2; return 1; }
  LDFLAGS="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDFLAGS="$LDFLAGS -X $pkg.gitVersion=$KV -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$KV" | cut -d. -f2) -X $pkg.gitTreeState=clean"
  done
  for b in scheduler:kube-scheduler-plugins controller:scheduler-plugins-controller; do
    pkg=${b%%:*} b=${b#*:}
    [ -x "$SP_OUT/$b" ] && continue
    t=$SECONDS
    go build -ldflags "$LDFLAGS" -o "$SP_OUT/$b.tmp.$$" "$MOD/cmd/$pkg"
    mv -f "$SP_OUT/$b.tmp.$$" "$SP_OUT/$b"
    echo "build-binaries: $b built in $((SECONDS-t)) s (after $((SECONDS-start)) s)"
  done
  rm -rf "$SP_OUT/crd"
  mkdir -p "$SP_OUT/crd"
  cp "$SPMOD"/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml "$SPMOD"/config/crd/bases/scheduling.x-k8s.io_elasticquotas.yaml "$SP_OUT/crd/"
  chmod -R u+w "$SP_OUT/crd"
  "$SP_OUT/kube-scheduler-plugins" --version
  touch "$SP_OUT/.complete"
  echo "build-binaries: scheduler-plugins done in $((SECONDS-start)) s -> $SP_OUT (kube-scheduler-plugins, scheduler-plugins-controller, CRDs in crd/)"
}

build_volcano() {
  # The Volcano scheduler (volcano.sh/volcano's cmd/scheduler) as `vc-scheduler` and the CRDs it
  # watches (config/crd/volcano/bases: podgroups and queues of scheduling.volcano.sh, jobs of
  # batch.volcano.sh, commands of bus.volcano.sh, numatopologies of nodeinfo.volcano.sh) in crd/;
  # devcluster/volcano.py runs it. Like scheduler-plugins its go.mod replaces every k8s.io staging
  # module, so a wrapper module requires it, copies its replace directives and builds the command.
  if [ -x "$VOLCANO_OUT/vc-scheduler" ] && [ -f "$VOLCANO_OUT/.complete" ]; then
    echo "build-binaries: reusing $VOLCANO_OUT"; return 0
  fi
  mkdir -p "$VOLCANO_OUT"
  rm -f "$VOLCANO_OUT/.complete"
  local W; W=$(mktemp -d)
  trap 'rm -rf "$W"; trap - RETURN' RETURN
  local start=$SECONDS t MOD="volcano.sh/volcano" INFO GOMOD VMOD GOLINE KV LDFLAGS pkg
  INFO=$(go mod download -json "$MOD@v$VOLCANO_VERSION")
  GOMOD=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])' <<<"$INFO")
  VMOD=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])' <<<"$INFO")
  GOLINE=$(grep -m1 '^go ' "$GOMOD")
  mkdir -p "$W/vc" && cd "$W/vc"
  {
    printf 'module local/volcano-devcluster\n\n%s\n\nrequire %s v%s\n\n' "$GOLINE" "$MOD" "$VOLCANO_VERSION"
    awk -v fixes="$VOLCANO_PROXY_FIXES" '
      BEGIN { n = split(fixes, pairs, " "); for (i = 1; i <= n; i++) { split(pairs[i], kv, "@"); fix[kv[1]] = kv[2] } }
      /^replace[[:space:]]*\($/ { block = 1; print; next }
      block && /^\)$/ { block = 0; print; next }
      block || /^replace[[:space:]]+[^(]/ { if ($(NF-1) in fix) { $NF = fix[$(NF-1)] } print }' "$GOMOD"
  } > go.mod
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s/cmd/scheduler"\n' "$MOD" > tools.go
  t=$SECONDS
  go mod tidy
  echo "build-binaries: volcano wrapper module ready in $((SECONDS-t)) s"
  # Version stamps as upstream's Makefile sets them (pkg/version), and the kube libraries' own
  # (the k8s.io/kubernetes tag its go.mod requires).
  KV=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2; exit }' "$GOMOD")
  LDFLAGS="-s -w -X $MOD/pkg/version.GitSHA=v$VOLCANO_VERSION -X $MOD/pkg/version.Built=$(date -u +%Y-%m-%dT%H:%M:%SZ) -X $MOD/pkg/version.Version=v$VOLCANO_VERSION"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDFLAGS="$LDFLAGS -X $pkg.gitVersion=$KV -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$KV" | cut -d. -f2) -X $pkg.gitTreeState=clean"
  done
  if ! [ -x "$VOLCANO_OUT/vc-scheduler" ]; then
    t=$SECONDS
    go build -ldflags "$LDFLAGS" -o "$VOLCANO_OUT/vc-scheduler.tmp.$$" "$MOD/cmd/scheduler"
    mv -f "$VOLCANO_OUT/vc-scheduler.tmp.$$" "$VOLCANO_OUT/vc-scheduler"
    echo "build-binaries: vc-scheduler built in $((SECONDS-t)) s (after $((SECONDS-start)) s)"
  fi
  rm -rf "$VOLCANO_OUT/crd"
  mkdir -p "$VOLCANO_OUT/crd"
  cp "$VMOD"/config/crd/volcano/bases/*.yaml "$VOLCANO_OUT/crd/"
  chmod -R u+w "$VOLCANO_OUT/crd"
  "$VOLCANO_OUT/vc-scheduler" --version
  touch "$VOLCANO_OUT/.complete"
  echo "build-binaries: volcano done in $((SECONDS-start)) s -> $VOLCANO_OUT (vc-scheduler, CRDs in crd/)"
}

# The CoreDNS plugins the real nodes' Corefile uses (corefile() in devcluster/realnode_config.py);
# a plugin added there must be added here too (an unknown directive stops CoreDNS at start-up).
COREDNS_PLUGINS="bind errors ready kubernetes template"

# build_coredns DIR OUTPUT: build CoreDNS v$COREDNS_VERSION with only $COREDNS_PLUGINS into OUTPUT
# (through a temporary name, so a running coredns or a concurrent reader never sees half a file).
build_coredns() {
  local dir=$1 output=$2 CMOD GOLINE ORDER entry name pkg imports="" directives="" p
  mkdir -p "$dir" && cd "$dir"
  CMOD=$(go mod download -json "github.com/coredns/coredns@v$COREDNS_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  GOLINE=$(grep -m1 '^go ' "$CMOD/go.mod")
  # plugin.cfg lines are name:package (a bare package is under github.com/coredns/coredns/plugin/),
  # in execution order; keep ours in that order.
  ORDER=$(awk -F: -v want=" $COREDNS_PLUGINS " '!/^#/ && NF == 2 && index(want, " " $1 " ") { print $1 ":" $2 }' "$CMOD/plugin.cfg")
  for p in $COREDNS_PLUGINS; do
    grep -qx "$p:.*" <<<"$ORDER" || { echo "build-binaries: plugin $p is not in $CMOD/plugin.cfg" >&2; return 1; }
  done
  for entry in $ORDER; do
    name=${entry%%:*} pkg=${entry#*:}
    case "$pkg" in */*) ;; *) pkg="github.com/coredns/coredns/plugin/$pkg" ;; esac
    imports="$imports"$'\t_ "'"$pkg"$'"\n'
    directives="$directives\"$name\", "
  done
  printf 'module local/coredns-devcluster\n\n%s\n\nrequire github.com/coredns/coredns v%s\n' "$GOLINE" "$COREDNS_VERSION" > go.mod
  cat > main.go <<GOEOF
// CoreDNS's command (coremain) with only the plugins devcluster's Corefile uses.
package main

import (
	"log"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

${imports})

func main() {
	if err := dnsserver.SetDirectives([]string{${directives%, }}); err != nil {
		log.Fatal(err)
	}
	coremain.Run()
}
GOEOF
  go mod tidy
  # grpcnotrace: as upstream's Makefile builds it.
  go build -tags grpcnotrace -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=v$COREDNS_VERSION" \
    -o "$output.tmp.$$" .
  for p in $COREDNS_PLUGINS; do
    "$output.tmp.$$" -plugins | grep -Eqx "[[:space:]]*(dns\.)?$p" \
      || { echo "build-binaries: the built coredns lacks plugin $p" >&2; rm -f "$output.tmp.$$"; return 1; }
  done
  mv -f "$output.tmp.$$" "$output"
}

build_real() {
  # The binaries of real nodes beside the KWOK ones: kubelet and kube-proxy (k8s.io/kubernetes,
  # built like the control plane), coredns (cluster DNS: a wrapper module with only the plugins
  # the devcluster's Corefile uses) and kube-router (NetworkPolicy enforcement with iptables +
  # ipset; its go.mod has no replace directives, so a plain `go install mod@version` builds it).
  if have_real; then echo "build-binaries: reusing $REAL_OUT"; return 0; fi
  mkdir -p "$REAL_OUT"
  rm -f "$REAL_OUT/.complete"
  local W; W=$(mktemp -d)
  trap 'rm -rf "$W"; trap - RETURN' RETURN
  local start=$SECONDS t b

  # ---- kubelet, kube-proxy: the same wrapper module and version stamps as the control plane.
  if ! [ -x "$REAL_OUT/kubelet" ] || ! [ -x "$REAL_OUT/kube-proxy" ]; then
    t=$SECONDS
    k8s_wrapper_module "$W/k8s" local/k8s-realbins k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
    echo "build-binaries: kubernetes wrapper module ready in $((SECONDS-t)) s"
    for b in kubelet kube-proxy; do
      [ -x "$REAL_OUT/$b" ] && continue
      t=$SECONDS
      go build -ldflags "$K8S_LDFLAGS" -o "$REAL_OUT/$b" "k8s.io/kubernetes/cmd/$b"
      echo "build-binaries: $b built in $((SECONDS-t)) s (after $((SECONDS-start)) s)"
    done
  fi

  # ---- coredns: upstream's main (coremain.Run) in a wrapper module that imports only the plugins
  # of the Corefile devcluster/realnode_config.py writes, not every plugin with its cloud SDKs
  # (route53, azure, clouddns, etcd, dnstap, ...): 130 s cold on 2 cores instead of 819 s.
  # The directives keep CoreDNS's own execution order, the order of the module's plugin.cfg.
  if ! [ -x "$REAL_OUT/coredns" ]; then
    t=$SECONDS
    build_coredns "$W/coredns" "$REAL_OUT/coredns"
    echo "build-binaries: coredns built in $((SECONDS-t)) s (after $((SECONDS-start)) s)"
  fi

  # ---- kube-router (its Makefile stamps pkg/version.Version and BuildDate)
  if ! [ -x "$REAL_OUT/kube-router" ]; then
    t=$SECONDS
    local KRV=github.com/cloudnativelabs/kube-router/v2/pkg/version
    GOBIN="$REAL_OUT" go install \
      -ldflags "-s -w -X $KRV.Version=v$KUBE_ROUTER_VERSION -X $KRV.BuildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
      "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@v$KUBE_ROUTER_VERSION"
    echo "build-binaries: kube-router built in $((SECONDS-t)) s (after $((SECONDS-start)) s)"
  fi

  "$REAL_OUT/kubelet" --version; "$REAL_OUT/kube-proxy" --version
  "$REAL_OUT/coredns" -version | sed -n 1p; "$REAL_OUT/kube-router" --version | sed -n 1p
  touch "$REAL_OUT/.complete"
  echo "build-binaries: real done in $((SECONDS-start)) s -> $REAL_OUT"
}

# One build at a time into the cache: parallel test workers, or a second checkout, that ask for the
# same binaries wait for the first build and then find them made.
case "$WHAT" in
  *dir) ;;
  *) mkdir -p "${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator"
     exec 9>"${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator/.build.lock"
     flock 9 ;;
esac

case "$WHAT" in
  core) build_core ;;
  kueue) build_kueue ;;
  scheduler-plugins) build_scheduler_plugins ;;
  scheduler-plugins-crds) fetch_scheduler_plugins_crds ;;
  volcano) build_volcano ;;
  real) build_real ;;
  all) build_core; build_kueue ;;
  dir) echo "$OUT" ;;
  kueue-dir) echo "$KUEUE_OUT" ;;
  scheduler-plugins-dir) echo "$SP_OUT" ;;
  volcano-dir) echo "$VOLCANO_OUT" ;;
  real-dir) echo "$REAL_OUT" ;;
  *) echo "usage: build-binaries.sh [core|kueue|scheduler-plugins|scheduler-plugins-crds|volcano|real|all|dir|kueue-dir|scheduler-plugins-dir|volcano-dir|real-dir]" >&2; exit 2 ;;
esac
