/**
 * What the benchmarks share: a query helper, percentiles, and starting and
 * stopping worker processes and the whole product (as `npm start` runs it) against
 * the benchmark's scratch database.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { pool } from "@/lib/db";
import { freePort } from "../tests/helpers/net";

export { freePort };

export const q = async <T>(text: string, values: unknown[] = []) => (await pool().query(text, values)).rows as T[];

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

export function startProcess(args: string[], env: Record<string, string>, readyWhen: RegExp): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    let ready = false;
    child.stdout!.on("data", (d: Buffer) => {
      if (ready) return; // drain, but keep nothing: per-job log lines would grow without bound
      out += d.toString();
      if (readyWhen.test(out)) {
        ready = true;
        resolve(child);
      }
    });
    child.on("exit", (code) => reject(new Error(`${args[0]} exited ${code} before it was ready:\n${out}`)));
  });
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  await new Promise<void>((resolve) => {
    child.removeAllListeners("exit");
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

export async function waitUntil(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await sleep(20);
}

/** The product as `npm start` runs it (the supervisor, in a process group of its own). */
export async function startProduct(
  url: string,
  env: Record<string, string>,
): Promise<{ base: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/supervisor.ts"], {
    env: { ...process.env, DATABASE_URL: url, PORT: String(port), ...env },
    stdio: ["ignore", "ignore", "inherit"],
    detached: true,
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 1_200; i++) {
    if (child.exitCode !== null) throw new Error("npm start exited during start-up");
    try {
      if ((await fetch(`${base}/api/health`)).ok) return { base, child };
    } catch {
      /* not up yet */
    }
    await sleep(500);
  }
  throw new Error("npm start did not come up");
}

export function stopProduct(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once("exit", () => resolve());
    process.kill(-child.pid!, "SIGTERM");
  });
}
