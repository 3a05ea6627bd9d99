/**
 * What the benchmarks share: a query helper, percentiles, and starting and
 * stopping worker processes against the benchmark's scratch database.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { pool } from "@/lib/db";

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
