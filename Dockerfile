# syntax=docker/dockerfile:1
#
# One image for the whole monorepo. It holds every service; each container picks
# its service by command (the Helm chart sets it per component):
#   node services/gateway/dist/main.js       REST API (GATEWAY_PORT 8080)
#   node services/subscribers/dist/main.js   gRPC (GRPC_PORT 50051)
#   node services/templates/dist/main.js     gRPC (GRPC_PORT 50052); MJML compiles in
#                                            worker threads (dist/compile-worker.js)
#   node services/delivery/dist/main.js      gRPC (GRPC_PORT 50053); Kafka, SMTP
#   node services/campaigns/dist/main.js     gRPC (GRPC_PORT 50054)
#   node services/portal/dist/main.js        gRPC (GRPC_PORT 50055), the preference page (PORTAL_PORT 8081)
#   node services/webhooks/dist/main.js      gRPC (GRPC_PORT 50058); HTTPS to integrators' endpoints
#   node embedded/dist/main.js               every service in one process (a quick try)
# The default command starts the gateway.
#
#   docker build -t emailsvc .
#   docker run --rm -p 8080:8080 -e SUBSCRIBERS_URL=... -e MONGO_URL=... emailsvc
#
# Needs BuildKit (cache and bind mounts). Pin the base image by digest for
# reproducible builds: --build-arg NODE_IMAGE=node:24-bookworm-slim@sha256:...
# Node 24 is the active LTS (Node 22 is in maintenance until April 2027 and
# still works: --build-arg NODE_IMAGE=node:22-bookworm-slim); the code is kept
# runnable on 20.19+, 22 and 24.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS base
WORKDIR /app
ENV npm_config_audit=false \
    npm_config_fund=false \
    npm_config_update_notifier=false \
    TURBO_TELEMETRY_DISABLED=1 \
    DO_NOT_TRACK=1

# The package manifests alone (every workspace's package.json and the lockfile),
# so that the dependency layers below are rebuilt only when one of them changes.
FROM base AS manifests
RUN --mount=type=bind,target=/src \
    cd /src \
    && find . -name package.json -not -path '*/node_modules/*' -exec cp --parents {} /app/ \; \
    && cp package-lock.json /app/

# All dependencies, then the TypeScript build of every workspace (turbo).
# Install scripts stay off, as on the developers' npm 11; the native tools
# (swc, turbo, buf) come as per-platform packages and need none. `npm install`
# rather than `npm ci`: the lockfile is written on machines whose registry
# serves only their own platform's optional binaries, and `npm ci` rejects a
# lockfile without the other platforms' entries. Versions stay pinned by it.
FROM base AS build
COPY --from=manifests /app ./
RUN --mount=type=cache,target=/root/.npm \
    npm install --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build

# Production dependencies of the runnable workspaces only (services/* and the
# embedded launcher, with the internal packages they use): no dev tools and no
# test kit (testcontainers).
FROM base AS prod-deps
COPY --from=manifests /app ./
RUN --mount=type=cache,target=/root/.npm \
    npm install --omit=dev --ignore-scripts --no-audit --no-fund --workspace=services --workspace=embedded

# Each workspace linked into node_modules/@emailsvc gets its built dist folder
# (proto, packages/runtime, packages/grpc, packages/storage, packages/events, packages/render, ...,
# services/*, embedded).
# Everything a service needs at run time must be in its dist: e.g. templates
# starts dist/compile-worker.js by path as a worker thread (without it, it would
# compile MJML on its event loop). Then checks: every service has its entry
# point; no .mjmlconfig in /app, which mjml-core reads from the working directory
# when loaded; and every service loads with the production dependencies alone, so
# a missing package or workspace fails the build, not the pod at start-up.
FROM prod-deps AS assemble
RUN --mount=type=bind,from=build,source=/app,target=/build \
    set -e; \
    for link in node_modules/@emailsvc/*; do \
      dir=$(realpath --relative-to=/app "$link"); \
      test -d "/build/$dir/dist" || { echo "no dist in $dir: did its build run?" >&2; exit 1; }; \
      cp -a "/build/$dir/dist" "/app/$dir/dist"; \
    done; \
    for dir in services/* embedded; do \
      test -f "$dir/dist/main.js" || { echo "no $dir/dist/main.js: is $dir in the install above?" >&2; exit 1; }; \
    done; \
    test -f services/templates/dist/compile-worker.js || { echo "no services/templates/dist/compile-worker.js" >&2; exit 1; }; \
    for file in .mjmlconfig .mjmlconfig.js; do \
      test ! -e "$file" || { echo "/app/$file would configure MJML" >&2; exit 1; }; \
    done; \
    node -e 'for (const d of require("fs").readdirSync("services")) require(require("path").resolve("services", d))'

FROM ${NODE_IMAGE} AS runtime
# No package managers at run time: less to patch, nothing to install with.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
           /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
           /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* \
    && groupadd --system --gid 10001 emailsvc \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
               --shell /usr/sbin/nologin emailsvc \
    && mkdir /data && chown 10001:10001 /data
WORKDIR /app
# Owned by root and not writable by the service user: /app is also the working
# directory where mjml-core looks for a .mjmlconfig (which could load code), so
# nobody but root may put one there. Keep it the working directory (no workdir
# override to /tmp or /data, which the service user can write).
COPY --from=assemble /app ./
ENV NODE_ENV=production \
    DATA_DIR=/data
LABEL org.opencontainers.image.title="emailsvc" \
      org.opencontainers.image.description="Open-source email platform: every service of the monorepo; pick one by command." \
      org.opencontainers.image.licenses="Apache-2.0"
USER 10001:10001
# gateway REST API; gRPC of subscribers, templates, delivery, campaigns, portal, webhooks (GRPC_PORT); the portal page (PORTAL_PORT); Prometheus metrics (METRICS_PORT, as the chart sets it).
EXPOSE 8080 8081 50051 50052 50053 50054 50055 50058 9464
# node is PID 1 and handles SIGTERM itself (drains, then exits).
CMD ["node", "services/gateway/dist/main.js"]
