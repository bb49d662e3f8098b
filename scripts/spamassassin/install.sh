#!/usr/bin/env bash
# Installs SpamAssassin for the deliverability tests (Debian's `spamassassin`
# package; its rules come with it, and the tests run local rules only) when it
# is missing, and prints the path of the executable. Quiet and immediate when
# it is there already. The tests find it the same way: `spamAssassinPath()` in
# packages/testing/src/spamassassin.ts (SPAMASSASSIN_PATH, else
# /usr/bin/spamassassin). Used by .ci/run before the tests; needs root (or
# sudo) for apt-get.
set -euo pipefail
BIN="${SPAMASSASSIN_PATH:-/usr/bin/spamassassin}"
if [ -x "$BIN" ]; then
  echo "$BIN"
  exit 0
fi
if [ -n "${SPAMASSASSIN_PATH:-}" ]; then
  echo "SPAMASSASSIN_PATH=$SPAMASSASSIN_PATH is not an executable; unset it to install Debian's spamassassin at /usr/bin/spamassassin" >&2
  exit 1
fi
# No recommended packages: spamd's init scripts, sa-compile's compiler and the
# like are not needed to score a message with `spamassassin -t -L`.
bash "$(dirname "$0")/../apt-install.sh" SpamAssassin spamassassin
if [ ! -x "$BIN" ]; then
  echo "apt-get installed spamassassin, but $BIN is still missing" >&2
  exit 1
fi
echo "$BIN"
