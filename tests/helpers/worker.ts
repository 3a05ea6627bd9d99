/**
 * A worker process's arguments as `npm start` and `npm run worker` give them: the
 * bundle (scripts/worker-build.ts; tests/run.ts makes it before the integration
 * suite, the chaos harnesses before they start) with the worker's Node flags.
 */
import { existsSync } from "node:fs";
import { WORKER_BUNDLE, workerNodeArgs } from "../../scripts/worker-build";

export function workerArgs(...args: string[]): string[] {
  if (!existsSync(WORKER_BUNDLE)) {
    throw new Error(`${WORKER_BUNDLE} is missing: run the tests with npm test, or npm run build:worker first`);
  }
  return workerNodeArgs(...args);
}
