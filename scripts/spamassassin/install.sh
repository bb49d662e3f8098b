#!/usr/bin/env bash
# Installs SpamAssassin for the deliverability tests (Debian's `spamassassin`
# package; its rules come with it, and the tests run local rules only) when it
# is missing, and prints the path of the executable. Quiet and immediate when
# it is there already. The tests find it the same way: `spamAssassinPath()` in
# packages/testing/src/spamassassin.ts (SPAMASSASSIN_PATH, else
# /usr/bin/spamassassin). Used by .ci/run before the tests; needs root (or
# sudo) for apt-get.
#
# No recommended packages: spamd's init scripts, sa-compile's compiler and the
# like are not needed to score a message with `spamassassin -t -L`.
set -euo pipefail
exec bash "$(dirname "$0")/../install-program.sh" SpamAssassin SPAMASSASSIN_PATH /usr/bin/spamassassin spamassassin
