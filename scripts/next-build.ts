/**
 * Whether the Next.js build (`.next`) is missing or older than the app's
 * sources, and building it then: `npm start` (scripts/supervisor.ts) and the
 * tests that start the real web server (tests/integration/fleet.test.ts) share it.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

function newestMtime(entry: string): number {
  if (!existsSync(entry)) return 0;
  const st = statSync(entry);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const name of readdirSync(entry)) {
    if (name === "generated" || name === "node_modules") continue;
    newest = Math.max(newest, newestMtime(path.join(entry, name)));
  }
  return newest;
}

/** The build is missing, or a source it was made from changed since. */
export function needsBuild(): boolean {
  const buildId = path.join(".next", "BUILD_ID");
  if (!existsSync(buildId)) return true;
  const built = statSync(buildId).mtimeMs;
  const sources = [
    "app",
    "components",
    "lib",
    "public",
    "proxy.ts",
    "next.config.ts",
    "postcss.config.mjs",
    "package.json",
  ];
  return sources.some((s) => newestMtime(s) > built);
}

/** Runs `next build` in the given environment, its output inherited. */
export function runNextBuild(env: NodeJS.ProcessEnv): Promise<void> {
  const nextBin = createRequire(__filename).resolve("next/dist/bin/next");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [nextBin, "build"], { stdio: "inherit", env });
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`next build exited with ${code}`))));
  });
}
