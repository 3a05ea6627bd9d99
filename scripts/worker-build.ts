/**
 * The worker as one plain JavaScript file, `dist/worker.js`, run by `node` alone.
 *   npm run build:worker
 *
 * Run through tsx (`node --import tsx worker/index.ts`), every worker process
 * carried tsx's module-loader thread, a second V8 isolate, and compiled
 * TypeScript at start: about 40 MB more resident memory per worker, idle or
 * busy (docs/BENCHMARKS.md, "Worker memory"). The bundle holds our own code
 * (worker/, lib/, the generated Prisma client); packages stay in node_modules.
 * esbuild takes a fraction of a second, so `npm start` makes it on every
 * start and it is never stale. A source map is written beside it: set
 * NODE_OPTIONS=--enable-source-maps to have stack traces name the .ts files.
 */
import { mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import path from "node:path";
import { build, stop } from "esbuild";
import { WORKER_NODE_FLAGS } from "../worker/node-flags";

export const WORKER_BUNDLE = path.join("dist", "worker.js");

/** `node`'s arguments for a worker as the product starts it: its flags, the bundle, then `args`. */
export function workerNodeArgs(...args: string[]): string[] {
  return [...WORKER_NODE_FLAGS, WORKER_BUNDLE, ...args];
}

/** Builds the bundle and its map beside it, then moves them into place (a worker starting meanwhile reads the old whole file). */
export async function buildWorker(outfile = WORKER_BUNDLE): Promise<string> {
  const dir = path.dirname(outfile);
  await mkdir(dir, { recursive: true });
  const tmp = await mkdtemp(path.join(dir, ".build-"));
  const name = path.basename(outfile);
  try {
    await bundle(path.join(tmp, name));
    await rename(path.join(tmp, `${name}.map`), `${outfile}.map`);
    await rename(path.join(tmp, name), outfile);
  } finally {
    await rm(tmp, { recursive: true, force: true });
    // esbuild's service is a child process that would otherwise live on beside `npm start` (~30 MB).
    await stop();
  }
  return outfile;
}

async function bundle(outfile: string): Promise<void> {
  await build({
    entryPoints: ["worker/index.ts"],
    outfile,
    bundle: true,
    platform: "node",
    target: "node22",
    format: "cjs",
    // graphile-worker, pg, Prisma's runtime and the rest load from node_modules as they are.
    packages: "external",
    // Resolves "@/..." from tsconfig.json's paths.
    tsconfig: "tsconfig.json",
    sourcemap: true,
    // Class and function names as written, for logs and stack traces.
    keepNames: true,
    logLevel: "warning",
  });
}

if (require.main === module) {
  buildWorker().then(
    (file) => console.log(`[build] ${file}`),
    (err: Error) => {
      console.error(`[build] ${err.message}`);
      process.exit(1);
    },
  );
}
