#!/usr/bin/env bash
# The steps that put the project into its image, and the checks on the result:
# one implementation for the Dockerfile (its manifests, prod-deps and assemble
# stages) and for the build without Docker (scripts/image/build.sh), so that
# the two images cannot drift apart.
#
#   assemble.sh manifests <source> <app>  every workspace's package.json and the
#                                         lockfile, from a checkout to <app>
#   assemble.sh deps <app>                production dependencies of the runnable
#                                         workspaces (services/* and embedded)
#   assemble.sh dist <build> <app>        each linked workspace's dist from a
#                                         built checkout, then the checks
#
# `NODE` names the Node that loads the services in the last check (default:
# `node` on PATH; the offline build passes the image's own).
set -euo pipefail

manifests() {
  local source="$1" app="$2"
  mkdir -p "$app"
  # Build outputs and installed packages are not manifests (the Docker
  # context has neither; a checkout that was built has both).
  (cd "$source" && find . \( -name node_modules -o -name dist -o -name .git \) -prune -o -name package.json -print0 |
    xargs -0 cp --parents -t "$app")
  cp "$source/package-lock.json" "$app/"
}

deps() {
  local app="$1"
  # Install scripts stay off, as on the developers' npm 11; the native tools
  # (swc, turbo, buf) come as per-platform packages and need none. `npm install`
  # rather than `npm ci`: the lockfile is written on machines whose registry
  # serves only their own platform's optional binaries, and `npm ci` rejects a
  # lockfile without the other platforms' entries. Versions stay pinned by it.
  # No dev tools and no test kit (testcontainers): services/* and the embedded
  # launcher only, with the internal packages they use.
  # npm's --omit=dev alone still installs the devDependencies of workspaces
  # that a runnable one depends on (packages/outbox's test kit, and through it
  # testcontainers and playwright-core), and keeps packages that only a
  # peerOptional edge reaches (typescript, through mjml's cosmiconfig): so the
  # manifests here lose their devDependencies first. The versions stay the
  # lockfile's.
  (cd "$app" && find . -name package.json -not -path '*/node_modules/*' -print0 |
    xargs -0 node -e 'const fs = require("fs");
      for (const file of process.argv.slice(1)) {
        const manifest = JSON.parse(fs.readFileSync(file, "utf8"));
        delete manifest.devDependencies;
        fs.writeFileSync(file, JSON.stringify(manifest, null, 2) + "\n");
      }')
  (cd "$app" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --workspace=services --workspace=embedded)
}

fail() {
  echo "$*" >&2
  exit 1
}

dist() {
  local build="$1" app="$2" link dir file
  cd "$app"
  # Each workspace linked into node_modules/@emailsvc gets its built dist
  # folder (proto, packages/runtime, packages/grpc, packages/storage, ...,
  # services/*, embedded, dashboard's static files). Everything a service needs
  # at run time must be in its dist: e.g. templates starts dist/compile-worker.js
  # by path as a worker thread (without it, it would compile MJML on its event loop).
  for link in node_modules/@emailsvc/*; do
    dir=$(realpath --relative-to="$app" "$link")
    test -d "$build/$dir/dist" || fail "no dist in $dir: did its build run?"
    rm -rf "${app:?}/$dir/dist"
    cp -a "$build/$dir/dist" "$app/$dir/dist"
    # Type declarations, source maps and tsc's build state serve no process: the maps point to
    # src/, which the image does not hold (read a stack trace against a build
    # of the same commit).
    find "$app/$dir/dist" \( -name '*.d.ts' -o -name '*.map' -o -name '*.tsbuildinfo' \) -delete
    # Run by node, never executed directly: no execute bit (a checkout's npm
    # install sets it on `bin` files such as the gateway's cli.js).
    find "$app/$dir/dist" -type f -perm /111 -exec chmod a-x {} +
  done
  # Owned by root (the Dockerfile's COPY makes it so) and writable by nobody
  # else: /app is the services' working directory, where mjml-core looks for a
  # .mjmlconfig (which could load code).
  chmod -R go-w "$app"
  # Checks: every service has its entry point; no .mjmlconfig in /app, which
  # mjml-core reads from the working directory when loaded; and every service
  # loads with the production dependencies alone, so that a missing package or
  # workspace fails the build, not the pod at start-up.
  for dir in services/* embedded; do
    test -f "$dir/dist/main.js" || fail "no $dir/dist/main.js: is $dir in the install above?"
  done
  test -f services/templates/dist/compile-worker.js || fail "no services/templates/dist/compile-worker.js"
  for file in .mjmlconfig .mjmlconfig.js; do
    test ! -e "$file" || fail "/app/$file would configure MJML"
  done
  # Test kits and dev tools must not have come in through a dependency.
  for dir in node_modules/@emailsvc/testing node_modules/jest node_modules/typescript node_modules/@swc node_modules/turbo node_modules/testcontainers node_modules/playwright-core; do
    test ! -e "$dir" || fail "$dir is in the image: a dev dependency reached the production install"
  done
  if find . -path ./node_modules -prune -o \( -name '*.test.js' -o -name '*.spec.js' -o -name test -type d \) -print | grep -q .; then
    fail "test files in the image: $(find . -path ./node_modules -prune -o \( -name '*.test.js' -o -name '*.spec.js' -o -name test -type d \) -print | head -3)"
  fi
  "${NODE:-node}" -e 'for (const d of require("fs").readdirSync("services")) require(require("path").resolve("services", d))'
}

step="${1:-}"
shift || true
case "$step" in
  manifests) manifests "$@" ;;
  deps) deps "$@" ;;
  dist) dist "$@" ;;
  *) fail "usage: assemble.sh manifests <source> <app> | deps <app> | dist <build> <app>" ;;
esac
