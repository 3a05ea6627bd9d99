/**
 * What the benchmarks share: a query helper, percentiles, and starting and
 * stopping worker processes and the whole product (as `npm start` runs it) against
 * the benchmark's scratch database.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { pool } from "@/lib/db";
import { buildWorker, workerNodeArgs } from "../scripts/worker-build";
import { freePort } from "../tests/helpers/net";

export { freePort };

export const q = async <T>(text: string, values: unknown[] = []) => (await pool().query(text, values)).rows as T[];

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

/** Starts `node` on `args` (TypeScript, through tsx, unless `through` says otherwise) and waits for `readyWhen` on its stdout. */
export function startProcess(
  args: string[],
  env: Record<string, string>,
  readyWhen: RegExp,
  through: string[] = ["--import", "tsx"],
): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...through, ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "inherit", "ipc"],
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
    stdio: ["ignore", "ignore", "inherit", "ipc"],
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

/**
 * A process's /proc/<pid>/stat: its command name and the fields after it, from `state` on
 * ("pid (comm) state ppid …"; comm may hold spaces and parentheses).
 */
function procStat(pid: number | string): { comm: string; fields: string[] } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return {
    comm: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
    fields: stat.slice(stat.lastIndexOf(")") + 2).split(" "),
  };
}

/** The parent pid of `pid`. */
function parentOf(pid: number): number {
  return Number(procStat(pid).fields[1]);
}

let bundled: Promise<string> | null = null;

/** A worker process as `npm start` runs it (the bundle, built once per benchmark), started. */
export async function startWorker(args: string[], env: Record<string, string>): Promise<ChildProcess> {
  await (bundled ??= buildWorker());
  return startProcess(workerNodeArgs(...args), env, /started/, []);
}

/** A worker process: the bundle `npm start` runs (scripts/worker-build.ts), or the sources through tsx. */
function isWorker(cmdline: string): boolean {
  return cmdline.includes("dist/worker.js") || cmdline.includes("worker/index.ts");
}

/** Peak RSS (VmHWM, MB) of every worker process under the product (`root`: the pid `npm start` runs as). */
export function workerPeaks(root: number): Map<string, number> {
  const peaks = new Map<string, number>();
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (!isWorker(cmd)) continue;
      let up = Number(pid);
      while (up > 1 && up !== root) up = parentOf(up);
      if (up !== root) continue; // another product's worker (another run on this machine)
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      const queues = /--queues\0([^\0]+)/.exec(cmd)?.[1] ?? pid;
      if (hwm) peaks.set(queues, Number(hwm[1]) / 1024);
    } catch {
      /* gone */
    }
  }
  return peaks;
}

/** CPU seconds each process has used so far, by pid, with its role: this process (the client), the web server, the workers, Postgres. */
export type CpuSnapshot = { at: Map<number, { role: string; used: number }>; machine: number };

export function cpuByRole(): CpuSnapshot {
  const at = new Map<number, { role: string; used: number }>();
  const tick = 100; // USER_HZ: /proc's clock ticks per second on Linux
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const { comm, fields: f } = procStat(pid);
      const used = (Number(f[11]) + Number(f[12])) / tick; // utime, stime
      let role: string | null = null;
      if (Number(pid) === process.pid) role = "client";
      else if (comm.startsWith("postgres")) role = "postgres";
      else {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
        if (cmd.includes("scripts/serve.ts")) role = "web";
        else if (isWorker(cmd)) role = "workers";
      }
      if (role) at.set(Number(pid), { role, used });
    } catch {
      /* gone */
    }
  }
  // The machine's busy time over all CPUs (/proc/stat's first line less idle and iowait).
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number);
  const machine = (cpu.reduce((a, b) => a + b, 0) - cpu[3]! - cpu[4]!) / tick;
  return { at, machine };
}

/**
 * CPU milliseconds per request by role between two snapshots: each process's own use over the span
 * (a Postgres backend that ended meanwhile is not counted), and the machine's, everything included.
 */
export function cpuPerRequest(before: CpuSnapshot, after: CpuSnapshot, requests: number): string {
  const roles: Record<string, number> = { client: 0, web: 0, workers: 0, postgres: 0 };
  for (const [pid, { role, used }] of after.at) roles[role]! += used - (before.at.get(pid)?.used ?? 0);
  const per = (s: number) => ((s * 1000) / requests).toFixed(2);
  return [
    ...Object.entries(roles).map(([role, s]) => `${role} ${per(s)}`),
    `machine ${per(after.machine - before.machine)}`,
  ].join(", ");
}

/**
 * The product's processes under `root` (the pid `npm start` runs as), each with its role: `web`
 * (the server), or `worker <queues>` (a worker pool's process). Another product on this machine
 * (another run) is not under `root`, so not listed.
 */
export function productProcesses(root: number): { pid: number; role: string }[] {
  const found: { pid: number; role: string }[] = [];
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      const role = cmd.includes("scripts/serve.ts")
        ? "web"
        : isWorker(cmd)
          ? `worker ${/--queues\0([^\0]+)/.exec(cmd)?.[1] ?? pid}`
          : null;
      if (!role) continue;
      let up = Number(pid);
      while (up > 1 && up !== root) up = parentOf(up);
      if (up === root) found.push({ pid: Number(pid), role });
    } catch {
      /* gone */
    }
  }
  return found;
}

/** A process's resident memory now (VmRSS, MB), or null if it is gone. */
export function rssMb(pid: number): number | null {
  try {
    const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return rss ? Number(rss[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** CPU seconds a process has used so far (user + system), or null if it is gone. */
export function cpuSeconds(pid: number): number | null {
  try {
    const f = procStat(pid).fields;
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in USER_HZ (100 on Linux)
  } catch {
    return null;
  }
}

/** The machine's busy CPU seconds over all cores so far (/proc/stat's first line less idle and iowait). */
export function machineBusySeconds(): number {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number);
  return (cpu.reduce((a, b) => a + b, 0) - cpu[3]! - cpu[4]!) / 100;
}
