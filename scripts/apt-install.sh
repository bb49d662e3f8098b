#!/usr/bin/env bash
# Installs Debian packages quietly for the project's scripts:
#   bash scripts/apt-install.sh <what, for messages> <package>...
# No recommended packages, existing config files kept; as root, or through
# sudo. Prints nothing on success; on failure prints apt-get's output to
# stderr and exits non-zero. The one place the install scripts
# (scripts/install-program.sh behind scripts/chromium and scripts/spamassassin,
# scripts/etcd) and .ci/run call apt-get through.
set -euo pipefail
what="$1"
shift
if ! command -v apt-get >/dev/null; then
  echo "$what is missing and there is no apt-get: install it ($*) by hand" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "$what is missing: run as root, or \`apt-get install $*\` as root first" >&2
    exit 1
  fi
  SUDO="sudo"
fi
log=$(mktemp)
if ! { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  -o Dpkg::Options::=--force-confold "$@"; } >"$log" 2>&1; then
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
