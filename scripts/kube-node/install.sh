#!/usr/bin/env bash
# Installs what the tests' Kubernetes node needs from Debian when it is
# missing, quiet and immediate when it is there: containerd (started by the
# kit itself, with its own root, state and socket; no system service is
# started here, see scripts/etcd/install.sh), runc, the CNI plugins (bridge,
# host-local, portmap), iptables (kube-proxy, the bridge plugin), conntrack
# (kube-proxy's cleanup of UDP flows), nftables (to remove the firewall tables
# that iptables-nft created, when stopping), busybox-static (the tests' busybox
# image) and ipset (kube-router's network policy controller). Used by
# packages/testing/src/kube-node.ts and .ci/run; needs root.
set -euo pipefail
missing=()
command -v containerd >/dev/null || missing+=(containerd)
command -v runc >/dev/null || missing+=(runc)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null || missing+=(iptables)
command -v conntrack >/dev/null || missing+=(conntrack)
[ -x /bin/busybox ] || missing+=(busybox-static)
command -v nft >/dev/null || missing+=(nftables)
command -v ipset >/dev/null || missing+=(ipset)
if [ ${#missing[@]} -gt 0 ]; then
  bash "$(dirname "$0")/../apt-install.sh" "the tests' Kubernetes node" "${missing[@]}"
fi
