#!/usr/bin/env bash
# Put Prometheus and promtool into a cache outside the repo, for the alert-rule unit tests
# (promtool test rules) and the dashboard test (a real Prometheus scraping the operator).
#
#   devcluster/install-prometheus.sh        # fetch if missing
#   devcluster/install-prometheus.sh dir    # print the folder holding prometheus and promtool
#
# From Debian's package, unpacked with dpkg -x rather than installed: nothing is started, no
# system user is made, and the binaries land in ~/.cache/tfjob-operator/prometheus-<version>/.
# Cold: about 11 s (one 19 MB download), chosen over building github.com/prometheus/prometheus from
# its Go module (not measured). Runs `apt-get update` first when apt has no list of the package.
set -euo pipefail
PROMETHEUS_DEB_VERSION="${PROMETHEUS_DEB_VERSION:-2.42.0+ds-5+deb12u1}"
OUT="${TFJOB_PROMETHEUS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator/prometheus-${PROMETHEUS_DEB_VERSION%%+*}}"
WHAT="${1:-install}"

if [ ! -x "$OUT/prometheus" ] || [ ! -x "$OUT/promtool" ]; then
  start=$SECONDS
  W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
  if ! apt-cache show "prometheus=$PROMETHEUS_DEB_VERSION" >/dev/null 2>&1; then
    apt-get update -qq >&2 || true
  fi
  (cd "$W" && apt-get download "prometheus=$PROMETHEUS_DEB_VERSION" >&2) || {
    echo "install-prometheus: apt-get download failed (is apt's list up to date?), or set TFJOB_PROMETHEUS_DIR" >&2
    exit 2
  }
  dpkg -x "$W"/prometheus_*.deb "$W/root"
  mkdir -p "$OUT"
  cp "$W/root/usr/bin/prometheus" "$W/root/usr/bin/promtool" "$OUT/"
  echo "install-prometheus: unpacked Prometheus $PROMETHEUS_DEB_VERSION into $OUT in $((SECONDS - start)) s" >&2
fi

if [ "$WHAT" = dir ]; then echo "$OUT"; fi
