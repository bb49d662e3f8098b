#!/usr/bin/env bash
# Builds the root Dockerfile without a Docker engine (buildah, chroot isolation)
# and checks that its /app is the one `npm run image` makes: the same files,
# owners, modes and bytes. No registry is reachable here, so NODE_IMAGE is a
# stand-in for node:24-bookworm-slim made from the same Debian base and Node as
# `npm run image`'s, with npm from the npm registry (the Dockerfile's build
# stages need it). Every stage runs as written: the full install and
# `npm run build` included (several minutes).
#
#   bash scripts/image/check-dockerfile.sh
#
# Needs root and Debian's buildah (installed through scripts/apt-install.sh
# when missing). Works in a temporary folder, removed at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/scripts/image"
CACHE="${EMAILSVC_IMAGE_CACHE:-$HOME/.cache/emailsvc/image}"
# A lowercase path without dot folders (so not under ~/.cache): buildah 1.28
# derives an image name from an oci: image's path and refuses anything else.
WORK="/tmp/emailsvc-dockerfile-check-$$"
rm -rf "$WORK"
mkdir -p "$WORK"
log() { printf '%s (%ss)\n' "$*" "$SECONDS" >&2; }

command -v buildah >/dev/null || bash "$ROOT/scripts/apt-install.sh" "the Dockerfile check's buildah" buildah
# npm run image first: its tar to compare with, and its Debian base and Node.
read -r NAME TAR < <(bash "$HERE/build.sh" | tail -1) || true
[ -n "${TAR:-}" ] || { echo "npm run image failed" >&2; exit 1; }
NODE_VERSION=$(grep -oP '^NODE_VERSION=\K\S+' "$HERE/build.sh")
DEBIAN=$(ls -d "$CACHE"/debian-*-minbase | head -1)

trap 'buildah --root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs rm --all >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
buildah_() { buildah --root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs "$@"; }

log "NODE_IMAGE stand-in: Debian, Node $NODE_VERSION, npm"
umoci init --layout "$WORK/oci"
umoci new --image "$WORK/oci:node"
umoci unpack --image "$WORK/oci:node" "$WORK/bundle" >/dev/null
cp -a "$DEBIAN/rootfs/." "$WORK/bundle/rootfs/"
install -m 0755 "$CACHE/node-v$NODE_VERSION/node" "$WORK/bundle/rootfs/usr/local/bin/node"
(cd "$WORK" && npm pack --silent npm@11 >/dev/null && tar -xzf npm-*.tgz && rm npm-*.tgz)
mkdir -p "$WORK/bundle/rootfs/usr/local/lib/node_modules"
mv "$WORK/package" "$WORK/bundle/rootfs/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$WORK/bundle/rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$WORK/bundle/rootfs/usr/local/bin/npx"
config=(--config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
# The CA bundle this machine's npm trusts (a TLS-inspecting egress proxy's, here), so npm in the build reaches the registry.
cafile=$(npm config get cafile)
if [ "$cafile" != null ] && [ -f "$cafile" ]; then
  mkdir -p "$WORK/bundle/rootfs/etc/ssl/certs"
  cp "$cafile" "$WORK/bundle/rootfs/etc/ssl/certs/npm-ca.crt"
  config+=(--config.env npm_config_cafile=/etc/ssl/certs/npm-ca.crt)
fi
umoci repack --image "$WORK/oci:node" "$WORK/bundle" >/dev/null
umoci config --image "$WORK/oci:node" "${config[@]}"
rm -rf "$WORK/bundle"

log "buildah bud (the Dockerfile, every stage)"
buildah_ bud --quiet --isolation chroot --layers=false -f "$ROOT/Dockerfile" \
  --build-arg NODE_IMAGE="oci:$WORK/oci:node" -t localhost/emailsvc-dockerfile:check "$ROOT" >"$WORK/bud.log" 2>&1 ||
  { tail -40 "$WORK/bud.log" >&2; exit 1; }

log "comparing /app with $NAME"
container=$(buildah_ from localhost/emailsvc-dockerfile:check)
theirs=$(buildah_ mount "$container")
mkdir -p "$WORK/ours"
tar -xf "$TAR" -C "$WORK/ours" manifest.json
app_layer=$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0].Layers.at(-1)' "$WORK/ours/manifest.json")
tar -xf "$TAR" -C "$WORK/ours" "$app_layer"
mkdir "$WORK/ours/rootfs"
tar -xf "$WORK/ours/$app_layer" -C "$WORK/ours/rootfs" --same-owner --numeric-owner
describe() { (cd "$1/app" && find . -printf '%U:%G %m %y %p\n' | LC_ALL=C sort -k4 && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); }
if ! diff <(describe "$theirs") <(describe "$WORK/ours/rootfs") >"$WORK/app.diff"; then
  echo "the Dockerfile's /app and npm run image's differ (< Dockerfile, > npm run image):" >&2
  head -40 "$WORK/app.diff" >&2
  exit 1
fi
log "the same /app: $(find "$theirs/app" | wc -l) entries, owners, modes and contents"
