#!/usr/bin/env bash
# Installs etcd for the Kubernetes API server of the tests (Debian's
# `etcd-server` package) when it is missing, and prints the path of the
# executable. Quiet and immediate when it is there already. The tests find it
# the same way: EMAILSVC_ETCD_BIN, else `etcd` on PATH (packages/testing/src/kube.ts,
# which runs this script itself when etcd is missing). Used by .ci/run before
# the tests; needs root (or sudo) for apt-get.
#
# The package's init script does not start a system etcd here: Debian's
# invoke-rc.d asks /usr/sbin/policy-rc.d first, and containers without an init
# system have none to start it with. The tests run their own etcd on a free port
# with a temporary data directory.
set -euo pipefail
if [ -n "${EMAILSVC_ETCD_BIN:-}" ]; then
  [ -x "$EMAILSVC_ETCD_BIN" ] || { echo "EMAILSVC_ETCD_BIN=$EMAILSVC_ETCD_BIN is not an executable" >&2; exit 1; }
  echo "$EMAILSVC_ETCD_BIN"
  exit 0
fi
if command -v etcd >/dev/null; then
  command -v etcd
  exit 0
fi
bash "$(dirname "$0")/../apt-install.sh" etcd etcd-server
command -v etcd >/dev/null || { echo "apt-get installed etcd-server, but etcd is not on PATH" >&2; exit 1; }
command -v etcd
