#!/usr/bin/env bash
# The Debian packages the test bed's node needs (tests/harness/src/node.rs): containerd and runc
# to run pods, the CNI plugins for their network, iptables and conntrack for kube-proxy.
# Installs only what is missing; needs root to install.
set -euo pipefail

packages=(containerd runc containernetworking-plugins iptables conntrack)
missing=()
for pkg in "${packages[@]}"; do
	dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -eq 0 ]; then
	echo "node-packages: installed (${packages[*]})"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "node-packages: missing ${missing[*]}; run as root to install them" >&2
	exit 1
fi
echo "node-packages: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
