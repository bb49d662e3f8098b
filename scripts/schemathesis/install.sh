#!/usr/bin/env bash
# Installs schemathesis (PyPI) into a virtualenv cached outside the repo,
# ~/.cache/emailsvc/schemathesis-<version>, and prints the path of its `st`.
# Idempotent: a finished install is reused. Used by the schemathesis test
# (embedded/test/schemathesis.test.ts) and by .ci/run's preparation step.
set -euo pipefail
VERSION="${SCHEMATHESIS_VERSION:-4.32.5}"
ROOT="${EMAILSVC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/emailsvc}"
DIR="$ROOT/schemathesis-$VERSION"
if [ -x "$DIR/bin/st" ] && [ -f "$DIR/.complete" ]; then
  echo "$DIR/bin/st"
  exit 0
fi
mkdir -p "$ROOT"
# A virtualenv cannot be moved (its scripts name its path), so it is built in
# place and marked complete last: an interrupted install is redone.
rm -rf "$DIR"
python3 -m venv "$DIR" >&2
"$DIR/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION" >&2
touch "$DIR/.complete"
echo "$DIR/bin/st"
