# syntax=docker/dockerfile:1
#
# One image for the whole monorepo. It holds every service; each container picks
# its service by command (the Helm chart sets it per component):
#   node services/<name>/dist/main.js    e.g. services/subscribers/dist/main.js
#   node embedded/dist/main.js           every service in one process (a quick try)
# The default command starts the gateway.
#
#   docker build -t emailsvc .
#   docker run --rm -p 8080:8080 -e SUBSCRIBERS_URL=... -e MONGO_URL=... emailsvc
#
# Needs BuildKit (cache and bind mounts). Pin the base image by digest for
# reproducible builds: --build-arg NODE_IMAGE=node:22-bookworm-slim@sha256:...
ARG NODE_IMAGE=node:22-bookworm-slim

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
# (swc, turbo, buf) come as per-platform packages and need none.
FROM base AS build
COPY --from=manifests /app ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts
COPY . .
RUN npm run build

# Production dependencies of the runnable workspaces only (services/* and the
# embedded launcher, with the internal packages they use): no dev tools and no
# test kit (testcontainers).
FROM base AS prod-deps
COPY --from=manifests /app ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --workspace=services --workspace=embedded

# Each workspace linked into node_modules/@emailsvc gets its built dist folder.
# Everything a service needs at run time must be in its dist.
FROM prod-deps AS assemble
RUN --mount=type=bind,from=build,source=/app,target=/build \
    set -e; \
    for link in node_modules/@emailsvc/*; do \
      dir=$(realpath --relative-to=/app "$link"); \
      test -d "/build/$dir/dist" || { echo "no dist in $dir: did its build run?" >&2; exit 1; }; \
      cp -a "/build/$dir/dist" "/app/$dir/dist"; \
    done; \
    test -f services/gateway/dist/main.js

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
# Owned by root and not writable by the service user.
COPY --from=assemble /app ./
ENV NODE_ENV=production \
    DATA_DIR=/data
LABEL org.opencontainers.image.title="emailsvc" \
      org.opencontainers.image.description="Open-source email platform: every service of the monorepo; pick one by command." \
      org.opencontainers.image.licenses="Apache-2.0"
USER 10001:10001
# gateway REST API; gRPC services (GRPC_PORT).
EXPOSE 8080 50051
# node is PID 1 and handles SIGTERM itself (drains, then exits).
CMD ["node", "services/gateway/dist/main.js"]
