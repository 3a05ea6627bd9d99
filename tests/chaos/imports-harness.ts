/**
 * Import chaos: imports run by worker processes that are SIGKILLed whenever
 * a chunk is loading or a commit is moving rows, and restarted. Each import's
 * rows carry a tag of their own, so the check is exact: an import that
 * succeeded left exactly its good rows, once each; one that failed left none;
 * no staging table is left once the cleanup ran.
 *
 * Uploads are made in this process through the uploads route (as Next.js
 * calls it), into the CONVEYOR_DATA_DIR the workers share.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import * as uploadsRoute from "@/app/api/v1/uploads/[[...path]]/route";
import { loadUserPrincipal } from "@/lib/auth/principal";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { cleanupImports } from "@/lib/imports/cleanup";
import { requestImport } from "@/lib/imports/service";
import { workerArgs } from "../helpers/worker";

export type ImportChaosOptions = {
  databaseUrl: string;
  /** The workers' CONVEYOR_DATA_DIR (this process must use the same one). */
  dataDir: string;
  email: string;
  imports: number;
  rowsEach: number;
  chunkRows: number;
  workers: number;
  /** Give up waiting after this long. */
  timeoutMs: number;
  log: (line: string) => void;
};

export type ImportChaosReport = {
  imports: number;
  succeeded: number;
  failed: number;
  kills: { load: number; commit: number };
  seconds: number;
  checks: { name: string; ok: boolean; detail: string }[];
  ok: boolean;
};

const b64 = (s: string) => Buffer.from(s).toString("base64");

/** `rows` events tagged `chaos<k>`; every 97th row is bad (an unparseable time). */
function fileFor(k: number, rows: number): { data: Buffer; good: number } {
  const lines = ["type,source,message,occurred_at"];
  let good = 0;
  for (let i = 1; i <= rows; i++) {
    const bad = i % 97 === 0;
    if (!bad) good++;
    lines.push(`chaos,test,chaos${k} row ${i},${bad ? "soon" : "2026-11-30T12:00:00Z"}`);
  }
  return { data: Buffer.from(lines.join("\n") + "\n"), good };
}

/** Uploads `data` through the uploads route (as Next.js calls it); its id. */
export async function upload(token: string, data: Buffer): Promise<string> {
  const headers = { Authorization: `Bearer ${token}`, "Tus-Resumable": "1.0.0" };
  const created = await uploadsRoute.POST(
    new Request("http://chaos/api/v1/uploads", {
      method: "POST",
      headers: { ...headers, "Upload-Length": String(data.length), "Upload-Metadata": `filename ${b64("chaos.csv")}` },
    }),
    { params: Promise.resolve({}) },
  );
  if (created.status !== 201) throw new Error(`upload creation answered ${created.status}: ${await created.text()}`);
  const id = created.headers.get("location")!.split("/").pop()!;
  const res = await uploadsRoute.PATCH(
    new Request(`http://chaos/api/v1/uploads/${id}`, {
      method: "PATCH",
      headers: { ...headers, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream" },
      body: new Uint8Array(data),
    }),
    { params: Promise.resolve({ path: [id] }) },
  );
  if (res.status !== 204) throw new Error(`upload PATCH answered ${res.status}: ${await res.text()}`);
  return id;
}

export async function runImportChaos(o: ImportChaosOptions): Promise<ImportChaosReport> {
  const db = new pg.Client({ connectionString: o.databaseUrl });
  await db.connect();
  const env = {
    ...process.env,
    DATABASE_URL: o.databaseUrl,
    CONVEYOR_DATA_DIR: o.dataDir,
    IMPORT_CHUNK_ROWS: String(o.chunkRows),
    WORKER_DEAD_AFTER_MS: "3000",
    WORKER_HEARTBEAT_MS: "500",
    ADMISSION_SWEEP_MS: "200",
    REAPER_INTERVAL_MS: "300",
    IMPORT_CLEANUP_MS: "1000",
  };
  const procs: (ChildProcess | null)[] = [];
  const spawnWorker = (i: number) => {
    procs[i] = spawn(process.execPath, workerArgs("--concurrency", "4"), {
      env,
      stdio: ["ignore", "ignore", "ignore", "ipc"],
    });
  };
  const kills = { load: 0, commit: 0 };
  const t0 = Date.now();
  try {
    const { rows: users } = await db.query<{ id: string }>("SELECT id FROM users WHERE email = $1", [o.email]);
    const principal = (await loadUserPrincipal(users[0]!.id))!;
    const token = await createApiTokenForEmail(o.email, "chaos:imports");
    const made: { k: number; jobId: string; good: number }[] = [];
    for (let k = 0; k < o.imports; k++) {
      const { data, good } = fileFor(k, o.rowsEach);
      const uploadId = await upload(token, data);
      const { job } = await requestImport(principal, { uploadId, dataset: "events", maxBadRows: o.rowsEach });
      made.push({ k, jobId: job.id, good });
    }
    for (let i = 0; i < o.workers; i++) spawnWorker(i);
    const deadline = Date.now() + o.timeoutMs;
    let lastKill = 0;
    const killed = new Set<string>();
    for (;;) {
      const { rows: s } = await db.query<{ open: number }>(
        `SELECT count(*)::int AS open FROM jobs WHERE type = 'import' AND status NOT IN ('succeeded', 'failed', 'cancelled')`,
      );
      const open = s[0]!.open;
      if (open === 0 || Date.now() > deadline) break;
      // The process running a chunk load or a commit right now (its lease, and the worker's pid).
      // Each job loses at most one attempt to a kill, whether it was the target or only ran beside
      // it in the same process (a stage, another chunk): the retry it costs must leave the import
      // able to finish, so a process running any job a kill already cost an attempt is spared.
      const { rows: busy } = await db.query<{ id: string; type: string; pid: number; worker: string }>(
        `SELECT j.id, j.type, w.pid, w.id AS worker FROM jobs j JOIN workers w ON w.id = j.lease_owner
         WHERE j.type IN ('import_load_chunk', 'import_commit') AND j.status = 'running' AND w.state = 'running'
           AND NOT EXISTS (SELECT 1 FROM job_attempts a
                           WHERE a.worker_id = w.id AND a.finished_at IS NULL AND a.job_id = ANY($1::uuid[]))
         ORDER BY j.type = 'import_commit' DESC LIMIT 1`,
        [[...killed]],
      );
      const target = busy[0];
      const i = target ? procs.findIndex((p) => p?.pid === target.pid && p.exitCode === null) : -1;
      // Kill it while rows move, at most every 300 ms, in the first two thirds of the time.
      if (i >= 0 && Date.now() - lastKill > 300 && Date.now() - t0 < (o.timeoutMs * 2) / 3) {
        procs[i]!.kill("SIGKILL");
        killed.add(target!.id);
        // Every attempt the dead process held (its own rows stay open until the reaper finds them).
        const { rows: lost } = await db.query<{ job_id: string }>(
          "SELECT job_id FROM job_attempts WHERE worker_id = $1 AND finished_at IS NULL",
          [target!.worker],
        );
        for (const r of lost) killed.add(r.job_id);
        if (target!.type === "import_commit") kills.commit++;
        else kills.load++;
        lastKill = Date.now();
        o.log(`[chaos:imports] SIGKILLed worker ${i} during ${target!.type}; ${open} imports open`);
        await sleep(200);
        spawnWorker(i);
      }
      await sleep(20);
    }
    for (const p of procs) p?.kill("SIGKILL");
    await cleanupImports();
    const checks: ImportChaosReport["checks"] = [];
    let succeeded = 0;
    let failed = 0;
    const wrong: string[] = [];
    for (const m of made) {
      const { rows: j } = await db.query<{ status: string; error: string | null }>(
        "SELECT status::text AS status, error_message AS error FROM jobs WHERE id = $1",
        [m.jobId],
      );
      const { rows: c } = await db.query<{ n: number; distinct: number }>(
        `SELECT count(*)::int AS n, count(DISTINCT message)::int AS distinct FROM events WHERE message LIKE $1`,
        [`chaos${m.k} row %`],
      );
      const status = j[0]!.status;
      if (status === "succeeded") succeeded++;
      else failed++;
      const expected = status === "succeeded" ? m.good : 0;
      if (c[0]!.n !== expected || c[0]!.distinct !== c[0]!.n) {
        wrong.push(
          `import ${m.k} ${status}${j[0]!.error ? ` (${j[0]!.error})` : ""}: ${c[0]!.n} rows (${c[0]!.distinct} distinct), expected ${expected}`,
        );
      }
    }
    const { rows: left } = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'import_staging'",
    );
    checks.push({
      name: "every import ended",
      ok: made.length === succeeded + failed,
      detail: `${succeeded + failed} of ${made.length}`,
    });
    checks.push({
      name: "the table holds exactly each import's good rows once, or none",
      ok: wrong.length === 0,
      detail: wrong.join("; ") || "all exact",
    });
    checks.push({ name: "no staging table left", ok: left[0]!.n === 0, detail: `${left[0]!.n} left` });
    return {
      imports: made.length,
      succeeded,
      failed,
      kills,
      seconds: (Date.now() - t0) / 1000,
      checks,
      ok: checks.every((c) => c.ok),
    };
  } finally {
    for (const p of procs) p?.kill("SIGKILL");
    await db.end();
  }
}

export function formatImportReport(r: ImportChaosReport): string {
  return [
    `imports: ${r.imports} (${r.succeeded} succeeded, ${r.failed} failed); SIGKILLs: ${r.kills.load} while loading, ${r.kills.commit} while committing; ${r.seconds.toFixed(1)} s`,
    ...r.checks.map((c) => `${c.ok ? "ok  " : "FAIL"} ${c.name}: ${c.detail}`),
  ].join("\n");
}
