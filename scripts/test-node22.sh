#!/usr/bin/env bash
# `npm run test:node22`: the unit and integration suites on Node.js 22 (the oldest supported line,
# 22.18+), which CI does not run (it runs everything on 24 and stays under 30 minutes). Node 22 comes
# from the npm registry (the `node` package's platform binary) into .ci/node22, like .ci/run's 24.
# The installed node_modules serve both lines: nothing in them is built for one Node ABI.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .ci/node22/node_modules/.bin/node ]; then
  echo "[test:node22] installing Node.js 22 from the npm registry into .ci/node22"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix .ci/node22 node@22 >/dev/null
fi
export PATH="$PWD/.ci/node22/node_modules/.bin:$PATH"
echo "[test:node22] node $(node --version)"
node scripts/require-node.cjs
npx tsx tests/run.ts unit
npx tsx tests/run.ts integration
