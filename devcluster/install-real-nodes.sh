#!/usr/bin/env bash
# Install what the devcluster's real nodes need from Debian's packages: a container runtime
# (containerd 1.6, runc), the CNI plugins (bridge, host-local, loopback), iptables and ipset for
# kube-proxy and kube-router, and the image tools of devcluster/images.py (mmdebstrap, umoci).
# Idempotent: installs nothing when every package is there. Needs root (apt-get).
set -euo pipefail
PACKAGES=(containerd runc containernetworking-plugins iptables ipset conntrack iproute2 kmod mmdebstrap umoci)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-real-nodes: every package is installed"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-real-nodes: need root to install ${missing[*]}" >&2
  exit 2
fi
echo "install-real-nodes: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The Debian package may start a system containerd where an init system runs; the real nodes run
# their own instances and never use it.
