#!/usr/bin/env bash
# Installs a program the tests need from Debian's packages when it is missing,
# and prints the path of its executable; quiet and immediate when it is there:
#   bash scripts/install-program.sh <what> <VARIABLE> <default path> <package>...
# <VARIABLE> (e.g. CHROMIUM_PATH) names another executable instead of the
# default; the tests find the program the same way (installedProgram in
# packages/testing/src/programs.ts). Used by scripts/chromium/install.sh and
# scripts/spamassassin/install.sh; needs root (or sudo) for apt-get.
set -euo pipefail
what="$1" variable="$2" default="$3"
shift 3
explicit="${!variable:-}"
BIN="${explicit:-$default}"
if [ -x "$BIN" ]; then
  echo "$BIN"
  exit 0
fi
if [ -n "$explicit" ]; then
  echo "$variable=$explicit is not an executable; unset it to install Debian's $1 at $default" >&2
  exit 1
fi
bash "$(dirname "$0")/apt-install.sh" "$what" "$@"
if [ ! -x "$BIN" ]; then
  echo "apt-get installed $*, but $BIN is still missing" >&2
  exit 1
fi
echo "$BIN"
