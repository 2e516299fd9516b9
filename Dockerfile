# syntax=docker/dockerfile:1
# The agent server image: build with the dev toolchain, run with production dependencies only.
# test/deploy/production-start.test.ts rehearses the runtime stage (its ENV, CMD, COPY sources
# and `ln -s` are read from this file) without a Docker engine.

# Node 24 LTS. Pin the base by digest in your own registry mirror (`node:24-bookworm-slim@sha256:...`)
# for reproducible builds; the tag follows Node 24's security releases.

# --- build: compile TypeScript and bundle the console into dist/console ---
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No install scripts: the slim base has no Python, make or compiler, and better-sqlite3's
# binding.gyp would make npm run node-gyp for it. better-sqlite3 loads the Node-API binary its
# package ships (prebuilds/); esbuild's script only checks the binary of its platform package.
# test/deploy/image-build-stage-installs-dependencies-on-its-slim-base.test.ts rehearses this.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY routes ./routes
COPY console ./console
RUN npm run build
# Drop the dev dependencies, then what the runtime never loads: better-sqlite3's sources and the
# binaries of other platforms, and source maps.
COPY scripts/slim-image.mjs ./scripts/
RUN npm prune --omit=dev --no-audit --no-fund && node scripts/slim-image.mjs .

# --- runtime ---
FROM node:24-bookworm-slim AS runtime
# tini is PID 1: it forwards SIGTERM to node and reaps the processes shell commands leave behind.
# bubblewrap is the shell tools' sandbox (SHELL_SANDBOX; the README says what the container needs).
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini bubblewrap \
  && rm -rf /var/lib/apt/lists/* \
  && mkdir -p /data /workspaces \
  && chown node:node /data /workspaces
WORKDIR /app
# The application files stay owned by root: the server (user node) can read but not change them.
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY migrations ./migrations
COPY bin ./bin
# The command-line client on PATH: `docker exec <container> agent-server run "..."` (npx would
# link the root-owned /app as the node user, and fail).
RUN ln -s /app/bin/agent-server.mjs /usr/local/bin/agent-server
COPY openapi.yaml package.json ./
# On 0.0.0.0 the server refuses to start without AGENT_API_KEYS (or ALLOW_UNAUTHENTICATED=1): pass them at `docker run`.
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
