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
# Without a Docker engine, `npm run image` (scripts/image/build.sh) builds the
# same image from Debian packages and the npm registry's Node binary: the steps
# that put the project in and their checks are scripts both run
# (scripts/image/assemble.sh for /app, scripts/image/runtime.sh for the user
# and /data), so keep them there rather than in RUN lines here.
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
    bash /src/scripts/image/assemble.sh manifests /src /app

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
    --mount=type=bind,source=scripts/image/assemble.sh,target=/tmp/assemble.sh \
    bash /tmp/assemble.sh deps /app

# Each workspace linked into node_modules/@emailsvc gets its built dist folder,
# then the checks (entry points, no .mjmlconfig, no test kit or dev tool, no
# test files, every service loads with the production dependencies alone): see
# scripts/image/assemble.sh.
FROM prod-deps AS assemble
RUN --mount=type=bind,from=build,source=/app,target=/build \
    --mount=type=bind,source=scripts/image/assemble.sh,target=/tmp/assemble.sh \
    bash /tmp/assemble.sh dist /build /app

FROM ${NODE_IMAGE} AS runtime
# No package managers at run time; the user and group 10001; /data, theirs.
RUN --mount=type=bind,source=scripts/image/runtime.sh,target=/tmp/runtime.sh \
    bash /tmp/runtime.sh
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
