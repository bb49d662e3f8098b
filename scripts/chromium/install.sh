#!/usr/bin/env bash
# Installs Chromium for the browser tests (Debian's `chromium` package, which
# playwright-core drives; Playwright's own browser downloads are not used) when
# it is missing, and prints the path of the executable. Quiet and immediate
# when it is there already. The tests find it the same way:
# `chromiumPath()` in packages/testing/src/browser.ts (CHROMIUM_PATH, else
# /usr/bin/chromium). Used by .ci/run before the tests; needs root (or sudo)
# for apt-get.
#
# No recommended packages (a notification daemon, printer setup, upower, the
# Mesa drivers: a headless browser without GPU needs none of them), but
# fonts-liberation, which they would bring: metric-compatible Arial/Times/
# Courier faces, so pages lay out as on a desktop.
set -euo pipefail
exec bash "$(dirname "$0")/../install-program.sh" Chromium CHROMIUM_PATH /usr/bin/chromium chromium fonts-liberation
