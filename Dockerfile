# syntax=docker/dockerfile:1
#
# One image for every Conveyor process; the command chooses which (see compose.yaml):
#   app       node web/serve.js                                   (the default: HTTP on $PORT)
#   worker    node --max-semi-space-size=4 dist/worker.js --queues bulk --concurrency 4
#   migrate   node --import tsx scripts/migrate.ts                (one-off, safe to re-run)
#   cli       node --import tsx scripts/cli.ts --help
# The app runs from Next's standalone output (.next/standalone: the server files and the
# node_modules they need, traced) through scripts/serve.ts, bundled: Conveyor's own node:http
# server records the client's address in a header no client can set, which Next's standalone
# server.js would not. Workers run worker/index.ts bundled into dist/worker.js (scripts/worker-build.ts,
# as `npm start` runs them: without tsx, about 40 MB less each); migrations and the CLI run the
# TypeScript sources with tsx. All from the production node_modules. Runs as the unprivileged user `conveyor`.
# Nothing is downloaded at run time: Prisma's engines are WASM inside the prisma package.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- deps: every dependency (the build needs the dev ones), and the generated Prisma client
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NEXT_TELEMETRY_DISABLED=1
COPY package.json package-lock.json prisma.config.ts ./
COPY prisma ./prisma
# postinstall runs `prisma generate` into lib/generated.
RUN npm ci --no-audit --no-fund

# ---- build: the Next.js build (standalone output), the bundled web server and the bundled worker
FROM deps AS build
COPY . .
RUN npx next build && npx tsx scripts/worker-build.ts
# scripts/serve.ts with lib/env.ts bundled in; `next` stays external, resolved from the standalone
# node_modules. Like Next's server.js, it starts in its own directory (where .next is).
RUN npx esbuild scripts/serve.ts --bundle --platform=node --target=node22 --format=cjs \
      --external:next --banner:js='process.chdir(__dirname);' --outfile=.next/standalone/serve.js \
 && cp -r .next/static .next/standalone/.next/static \
 && cp -r public .next/standalone/public

# ---- prod-deps: the dependencies without the dev ones (tsx, prisma and graphile-worker are runtime ones)
FROM deps AS prod-deps
RUN npm prune --omit=dev --no-audit --no-fund

# ---- runtime
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    NEXT_TELEMETRY_DISABLED=1 \
    PORT=3000 \
    HOST=0.0.0.0 \
    CONVEYOR_DATA_DIR=/data
WORKDIR /app
RUN groupadd --system --gid 10001 conveyor \
 && useradd --system --uid 10001 --gid conveyor --home-dir /data --shell /usr/sbin/nologin conveyor \
 && mkdir -p /data \
 && chown conveyor:conveyor /data
# The code is root's and read-only to the process; only /data (local files, if STORAGE_DRIVER=local)
# and Next's cache are writable.
COPY --from=prod-deps /app/node_modules ./node_modules
COPY package.json tsconfig.json prisma.config.ts ./
COPY prisma ./prisma
COPY lib ./lib
COPY worker ./worker
COPY scripts ./scripts
COPY --from=deps /app/lib/generated ./lib/generated
COPY --from=build /app/.next/standalone ./web
COPY --from=build /app/dist ./dist
RUN mkdir -p web/.next/cache && chown conveyor:conveyor web/.next/cache
USER conveyor
EXPOSE 3000
# No HEALTHCHECK here: workers serve no HTTP. compose.yaml checks the app's GET /api/health.
CMD ["node", "web/serve.js"]
