#!/usr/bin/env bash
# The runtime image's system part, run as root inside the image's root file
# system: by the Dockerfile's runtime stage (on node:24-bookworm-slim) and by
# the build without Docker (scripts/image/build.sh, in a chroot of its Debian
# base), so that both make the same user and directories.
set -euo pipefail
# No package managers at run time: less to patch, nothing to install with.
rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
  /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
  /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*
# The services run as 10001:10001, with no home and no shell. /data is the
# one place they write (DATA_DIR), besides /tmp: the root file system can be
# mounted read-only (the Helm chart does).
groupadd --system --gid 10001 emailsvc
useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
  --shell /usr/sbin/nologin emailsvc
mkdir /data
chown 10001:10001 /data
chmod 0750 /data
mkdir -p /app
