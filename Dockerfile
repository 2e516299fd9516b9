# syntax=docker/dockerfile:1
# The agent server image: build with the dev toolchain, run with production dependencies only.
# test/deploy/production-start.test.ts rehearses the runtime stage (its ENV and CMD are read
# from this file) without a Docker engine.

# --- build: compile TypeScript and the better-sqlite3 native module ---
FROM node:20-bookworm-slim AS build
# python3, make and g++ build better-sqlite3 when no prebuilt binary can be downloaded.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY routes ./routes
RUN npm run build
# Drop the dev dependencies; the compiled better-sqlite3 binary stays.
RUN npm prune --omit=dev --no-audit --no-fund

# --- runtime ---
FROM node:20-bookworm-slim AS runtime
# tini is PID 1: it forwards SIGTERM to node and reaps the processes shell commands leave behind.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/* \
  && mkdir -p /data /workspaces \
  && chown node:node /data /workspaces
WORKDIR /app
# The application files stay owned by root: the server (user node) can read but not change them.
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY migrations ./migrations
COPY openapi.yaml package.json ./
ENV HOST=0.0.0.0 PORT=3000 DATABASE_PATH=/data/agent.db WORKSPACE_ROOT=/workspaces NODE_ENV=production
VOLUME ["/data", "/workspaces"]
USER node
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Shutdown takes at most SHUTDOWN_GRACE_MS (5 s by default) plus 2 s, inside `docker stop`'s default 10 s;
# raise --stop-timeout with SHUTDOWN_GRACE_MS.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/src/server.js"]
