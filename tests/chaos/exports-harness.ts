/**
 * Export chaos: split and single exports run by worker processes that are
 * SIGKILLed while a file is half written (a part's, or a single export's), and
 * restarted. What must hold: every export succeeds; each file a kill caught
 * continues from the checkpoint its killed attempt had committed, not from row
 * zero; the rows read again after each kill (what the killed attempt had read
 * past its checkpoint: the rows of its COPY in flight that Postgres had sent,
 * from `pg_stat_progress_copy` read just before the SIGKILL, and any segment it
 * had finished but not yet checkpointed) are at most one segment; and every
 * file equals, byte for byte, the same file of an export run afterwards
 * without kills.
 *
 * Exports are requested in this process; the workers share its storage
 * directory (CONVEYOR_DATA_DIR) and database.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { loadUserPrincipal } from "@/lib/auth/principal";
import { resetEnvCache } from "@/lib/env";
import { resetStorage } from "@/lib/storage";
import type { ExportResult } from "@/lib/exports/files";
import type { PartResult } from "@/lib/exports/parts";
import type { ExportRequest } from "@/lib/exports/schema";
import { requestExport } from "@/lib/exports/service";
import { recordWorkerExit } from "@/lib/jobs/workers";
import { withScratchDatabase } from "../../scripts/database";
import { seedDemo } from "../helpers/fixtures";
import { workerArgs } from "../helpers/worker";

export type ExportChaosOptions = {
  databaseUrl: string;
  /** The workers' DATABASE_URL through a pooler (npm run chaos -- --pgbouncer); databaseUrl is then their DATABASE_DIRECT_URL. */
  pooledUrl?: string;
  email: string;
  /** Split exports (each of `partRows`), and one single export beside them. */
  exports: number;
  partRows: number;
  segmentRows: number;
  workers: number;
  timeoutMs: number;
  log: (line: string) => void;
};

type Caught = { job: string; type: string; committed: number; reread: number };
type Resumed = Caught & { resumedFrom: number };

type Queryable = {
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
};

/**
 * An export COPY of a worker's: its ids, and the rows Postgres has sent so far (null: all of them —
 * the COPY is done and its connection waits in its transaction for the worker's next statement).
 */
export type CopyInFlight = { from: number; to: number; sent: number | null; format: "csv" | "jsonl" };

/**
 * The export COPYs the connections named `appName` (one worker's, by PGAPPNAME) run or last ran in
 * their open transaction, with what each has sent (`pg_stat_progress_copy` while it runs).
 */
export async function exportCopiesInFlight(db: Queryable, appName: string): Promise<CopyInFlight[]> {
  const { rows } = await db.query<{ query: string; sent: string | null }>(
    `SELECT a.query, p.tuples_processed AS sent FROM pg_stat_activity a LEFT JOIN pg_stat_progress_copy p ON p.pid = a.pid
     WHERE a.application_name = $1 AND a.query LIKE 'COPY (%' AND a.state IN ('active', 'idle in transaction')`,
    [appName],
  );
  return rows.flatMap((r) => {
    const m = /id BETWEEN (\d+) AND (\d+)/.exec(r.query);
    if (!m) return [];
    const format = r.query.includes("row_to_json(") ? ("jsonl" as const) : ("csv" as const);
    return [{ from: Number(m[1]), to: Number(m[2]), sent: r.sent === null ? null : Number(r.sent), format }];
  });
}

/**
 * The rows a killed attempt had read past its last checkpoint (`after`: the id that ended its
 * last committed segment, or null if it committed none) — what its successor reads again: the
 * rows of a segment it finished but had not checkpointed yet (ids from `after + 1` up to its COPY
 * in flight), and what that COPY had been sent. `copies` (those of the killed process) are taken
 * as they are matched to the files it was writing; with `format` given, only a COPY of that format
 * is the file's. Without it, a COPY read just before the kill whose segment its own file then
 * checkpointed (it no longer matches that file) could be taken for another file's, and every row
 * between that file's checkpoint and the COPY counted as read again.
 */
export async function rowsReadAgain(
  db: Queryable,
  file: { tenantId: string; after: number | null; to: number | null; format?: "csv" | "jsonl" },
  copies: CopyInFlight[],
): Promise<number> {
  const mine = copies
    .filter(
      (c) =>
        (file.format === undefined || c.format === file.format) &&
        (file.after === null || c.from > file.after) &&
        (file.to === null || c.to <= file.to),
    )
    .sort((a, b) => a.from - b.from)[0];
  if (!mine) return 0; // killed between two segments, its last one checkpointed
  copies.splice(copies.indexOf(mine), 1);
  // Rows of segments before it not yet checkpointed, and the COPY's own: all of them once it is done.
  const from = file.after === null ? mine.from : file.after + 1;
  const to = mine.sent === null ? mine.to : mine.from - 1;
  if (to < from) return mine.sent ?? 0;
  const { rows } = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM events WHERE tenant_id = $1 AND id BETWEEN $2 AND $3",
    [file.tenantId, from, to],
  );
  return rows[0]!.n + (mine.sent ?? 0);
}

/**
 * Waits until no backend of the connections named `appName` is left: a COMMIT the killed process
 * sent just before its SIGKILL may still be applied by its backend after the process is gone, and
 * a checkpoint read before then could be one segment behind the one its next attempt finds.
 */
export async function backendsGone(db: Queryable, appName: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const { rows } = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1",
      [appName],
    );
    if (rows[0]!.n === 0) return;
    await sleep(20);
  }
}

export type ExportChaosReport = {
  exports: number;
  files: number;
  kills: { pid: number; files: Resumed[] }[];
  segmentRows: number;
  maxReread: number;
  seconds: number;
  checks: { name: string; ok: boolean; detail: string }[];
  ok: boolean;
};

export async function runExportChaos(o: ExportChaosOptions): Promise<ExportChaosReport> {
  const db = new pg.Client({ connectionString: o.databaseUrl });
  await db.connect();
  const env = {
    ...process.env,
    DATABASE_URL: o.pooledUrl ?? o.databaseUrl,
    ...(o.pooledUrl ? { DATABASE_DIRECT_URL: o.databaseUrl } : {}),
    EXPORT_SEGMENT_ROWS: String(o.segmentRows),
    WORKER_DEAD_AFTER_MS: "2000",
    WORKER_HEARTBEAT_MS: "500",
    ADMISSION_SWEEP_MS: "200",
    REAPER_INTERVAL_MS: "250",
    PROGRESS_INTERVAL_MS: "50",
  };
  const procs: ChildProcess[] = [];
  const appNames: string[] = [];
  let spawned = 0;
  const spawnWorker = (i: number) => {
    // Its own application name: its COPYs are told apart in pg_stat_activity.
    appNames[i] = `conveyor-export-chaos:${++spawned}`;
    procs[i] = spawn(process.execPath, workerArgs("--queues", "interactive,bulk", "--concurrency", "2"), {
      env: { ...env, PGAPPNAME: appNames[i] },
      stdio: ["ignore", "ignore", "ignore", "ipc"],
    });
  };
  const t0 = Date.now();
  const q = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
    (await db.query<T>(text, values)).rows;
  try {
    const { id: userId } = (await q<{ id: string }>("SELECT id FROM users WHERE email = $1", [o.email]))[0]!;
    const principal = (await loadUserPrincipal(userId))!;
    const split = { dataset: "events", format: "jsonl", compression: "gzip", partRows: o.partRows } as ExportRequest;
    const single = { dataset: "events", format: "csv", compression: "gzip" } as ExportRequest;
    const requests = [...Array.from({ length: o.exports }, () => split), single];
    // Fresh statistics: the planner's estimate sets a split export's parts, the same for the reference run.
    await q("ANALYZE events");
    const ids: string[] = [];
    for (const r of requests) ids.push((await requestExport(principal, r)).job.id);
    for (let i = 0; i < o.workers; i++) spawnWorker(i);

    const kills: { pid: number; caught: Caught[] }[] = [];
    const killed = new Set<string>();
    const deadline = Date.now() + o.timeoutMs;
    let lastKill = 0;
    for (;;) {
      const open = (
        await q<{ n: number }>(
          `SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[]) AND status NOT IN ('succeeded', 'failed', 'cancelled')`,
          [ids],
        )
      )[0]!.n;
      if (open === 0 || Date.now() > deadline) break;
      // A file half written (a committed segment, and more to come) on a live worker; each job is
      // killed at most once (the retry it costs must leave it budget to finish).
      const busy = await q<{ pid: number; worker: string }>(
        `SELECT w.pid, w.id AS worker FROM jobs j JOIN workers w ON w.id = j.lease_owner
         WHERE (j.id = ANY($1::uuid[]) OR j.parent_id = ANY($1::uuid[])) AND j.status = 'running'
           AND j.checkpoint->>'phase' = 'segments' AND (j.checkpoint->>'segments')::int >= 1
           AND j.progress_done < coalesce(j.progress_total, 0) - $3 AND w.state = 'running'
           AND NOT EXISTS (SELECT 1 FROM job_attempts a
                           WHERE a.worker_id = w.id AND a.finished_at IS NULL AND a.job_id = ANY($2::uuid[]))
         LIMIT 1`,
        [ids, [...killed], o.segmentRows],
      );
      const target = busy[0];
      const i = target ? procs.findIndex((p) => p.pid === target.pid && p.exitCode === null) : -1;
      if (i >= 0 && Date.now() - lastKill > 300 && Date.now() - t0 < (o.timeoutMs * 2) / 3) {
        // What its COPYs had been sent, read just before the kill (a few ms of rows may follow).
        const copies = await exportCopiesInFlight(db, appNames[i]!);
        procs[i]!.kill("SIGKILL");
        await new Promise((resolve) => procs[i]!.once("exit", resolve));
        await backendsGone(db, appNames[i]!);
        await recordWorkerExit(target!.pid, "SIGKILL");
        // Every file the dead process was writing, with its checkpoint as the next attempt finds it.
        const files = await q<{
          job: string;
          type: string;
          tenant: string;
          format: "csv" | "jsonl";
          checkpoint: { rows: number; after: number; ids: { to: number } | null } | null;
          range: { from: number; to: number } | null;
        }>(
          `SELECT a.job_id AS job, j.type, j.tenant_id AS tenant, j.checkpoint, j.input->'range' AS range,
                  coalesce(j.input->'request'->>'format', j.input->>'format') AS format
           FROM job_attempts a JOIN jobs j ON j.id = a.job_id
           WHERE a.worker_id = $1 AND a.outcome <> 'waiting'
             AND a.started_at = (SELECT max(b.started_at) FROM job_attempts b WHERE b.job_id = a.job_id)
             AND j.type IN ('export', 'export_part') AND j.status NOT IN ('succeeded', 'failed', 'cancelled')
             AND NOT (j.type = 'export' AND j.input ? 'partRows') -- a split export writes no file of its own
             AND (j.checkpoint IS NULL OR j.checkpoint->>'phase' = 'segments')
           ORDER BY j.type DESC`, // parts (their ranges known) matched to the COPYs first
          [target!.worker],
        );
        const caught: Caught[] = [];
        for (const f of files) {
          const after = f.checkpoint ? f.checkpoint.after : f.range ? f.range.from - 1 : null;
          const to = f.range?.to ?? f.checkpoint?.ids?.to ?? null;
          const reread = await rowsReadAgain(db, { tenantId: f.tenant, after, to, format: f.format }, copies);
          caught.push({ job: f.job, type: f.type, committed: f.checkpoint?.rows ?? 0, reread });
          killed.add(f.job);
        }
        kills.push({ pid: target!.pid, caught });
        lastKill = Date.now();
        o.log(`[chaos:exports] SIGKILLed worker ${target!.pid} writing ${caught.length} files; ${open} exports open`);
        await sleep(200);
        spawnWorker(i);
      }
      await sleep(10);
    }

    // The same exports again, without kills: each file must come out the same.
    const reference = new Map<string, string>();
    for (const r of [split, single]) reference.set(JSON.stringify(r), (await requestExport(principal, r)).job.id);
    const refDeadline = Date.now() + o.timeoutMs;
    while (Date.now() < refDeadline) {
      const n = (
        await q<{ n: number }>(
          `SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[]) AND status NOT IN ('succeeded', 'failed', 'cancelled')`,
          [[...reference.values()]],
        )
      )[0]!.n;
      if (n === 0) break;
      await sleep(100);
    }
    for (const p of procs) p.kill("SIGKILL");

    const statuses = await q<{ id: string; status: string; error: string | null }>(
      "SELECT id, status::text AS status, error_message AS error FROM jobs WHERE id = ANY($1::uuid[])",
      [[...ids, ...reference.values()]],
    );
    const failed = statuses.filter((s) => s.status !== "succeeded");
    const filesOf = async (id: string) => {
      const children = await q<{ result: PartResult }>(
        "SELECT result FROM jobs WHERE parent_id = $1 AND type = 'export_part' ORDER BY child_index",
        [id],
      );
      if (children.length) return children.map((c) => ({ rows: c.result.rows, sha256: c.result.sha256 }));
      const { result } = (await q<{ result: ExportResult }>("SELECT result FROM jobs WHERE id = $1", [id]))[0]!;
      return result.files.map((f) => ({ rows: f.rows, sha256: f.sha256 }));
    };
    const differ: string[] = [];
    let files = 0;
    for (let k = 0; k < ids.length; k++) {
      const mine = await filesOf(ids[k]!);
      const ref = await filesOf(reference.get(JSON.stringify(requests[k]))!);
      files += mine.length;
      if (JSON.stringify(mine) !== JSON.stringify(ref)) differ.push(`export ${k + 1}`);
    }
    const resumed: { pid: number; files: Resumed[] }[] = [];
    const wrongStart: string[] = [];
    for (const k of kills) {
      const out: Resumed[] = [];
      for (const c of k.caught) {
        const { result } = (
          await q<{ result: { resumedFrom?: number } | null }>("SELECT result FROM jobs WHERE id = $1", [c.job])
        )[0]!;
        const resumedFrom = result?.resumedFrom ?? 0;
        if (resumedFrom !== c.committed)
          wrongStart.push(`${c.type} ${c.job}: resumed from ${resumedFrom}, committed ${c.committed}`);
        out.push({ ...c, resumedFrom });
      }
      resumed.push({ pid: k.pid, files: out });
    }
    const rereads = resumed.flatMap((k) => k.files.map((f) => f.reread));
    const maxReread = rereads.length ? Math.max(...rereads) : 0;
    const caughtFiles = rereads.length;
    const checks = [
      {
        name: "every export succeeded",
        ok: failed.length === 0,
        detail:
          failed.map((f) => `${f.id} ${f.status}: ${f.error}`).join("; ") || `${statuses.length} of ${statuses.length}`,
      },
      {
        name: "a kill caught a file half written",
        ok: caughtFiles > 0,
        detail: `${caughtFiles} files in ${kills.length} kills`,
      },
      {
        name: "each caught file continued from its killed attempt's checkpoint",
        ok: wrongStart.length === 0,
        detail: wrongStart.join("; ") || "all",
      },
      {
        name: `rows read again after each kill ≤ one segment (${o.segmentRows})`,
        ok: maxReread <= o.segmentRows,
        detail: `max ${maxReread}`,
      },
      {
        name: "every file equals the uninterrupted run's (rows and sha256)",
        ok: differ.length === 0,
        detail: differ.join(", ") || `${files} files`,
      },
    ];
    return {
      exports: ids.length,
      files,
      kills: resumed,
      segmentRows: o.segmentRows,
      maxReread,
      seconds: (Date.now() - t0) / 1000,
      checks,
      ok: checks.every((c) => c.ok),
    };
  } finally {
    for (const p of procs) p.kill("SIGKILL");
    await db.end();
  }
}

export function formatExportReport(r: ExportChaosReport): string {
  return [
    `exports: ${r.exports} (${r.files} files); SIGKILLs mid-file: ${r.kills.length}; segments of ${r.segmentRows} rows; ${r.seconds.toFixed(1)} s`,
    ...r.kills.flatMap((k) =>
      k.files.map(
        (f) =>
          `  SIGKILL worker ${k.pid}: ${f.type} ${f.job.slice(-8)} had committed ${f.committed} rows; ` +
          `its next attempt resumed from ${f.resumedFrom}: ${f.reread} rows read again`,
      ),
    ),
    `rows read again per file caught by a kill: max ${r.maxReread} (one segment: ${r.segmentRows})`,
    ...r.checks.map((c) => `${c.ok ? "ok  " : "FAIL"} ${c.name}: ${c.detail}`),
  ].join("\n");
}

/** The command-line options of the export chaos (`npm run chaos:exports`, and `npm run chaos` after the probe chaos). */
export const exportChaosOptions = {
  exports: { type: "string", default: "4" },
  "part-rows": { type: "string", default: "60000" },
  "segment-rows": { type: "string", default: "2000" },
  "export-workers": { type: "string", default: "3" },
  scale: { type: "string", default: "0.2" },
} as const;

/** Runs the export chaos in its own scratch database and storage directory; true when every check passed. */
export async function exportChaos(
  values: { [K in keyof typeof exportChaosOptions]: string },
  /** Runs `run` with the URL the workers' DATABASE_URL should be (a pooler before `directUrl`), or undefined for direct. */
  pooled?: <T>(directUrl: string, run: (pooledUrl: string) => Promise<T>) => Promise<T>,
): Promise<boolean> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "conveyor-chaos-exports-"));
  const before = process.env.CONVEYOR_DATA_DIR;
  process.env.CONVEYOR_DATA_DIR = dataDir;
  resetEnvCache();
  resetStorage();
  try {
    return await withScratchDatabase("conveyor_chaos_exports", async ({ url }) => {
      await seedDemo(Number(values.scale));
      const run = (pooledUrl: string | undefined) =>
        runExportChaos({
          databaseUrl: url,
          pooledUrl,
          email: "ada@acme.test",
          exports: Number(values.exports),
          partRows: Number(values["part-rows"]),
          segmentRows: Number(values["segment-rows"]),
          workers: Number(values["export-workers"]),
          timeoutMs: 600_000,
          log: console.log,
        });
      const report = pooled ? await pooled(url, run) : await run(undefined);
      console.log(`\n${formatExportReport(report)}`);
      return report.ok;
    });
  } finally {
    if (before === undefined) delete process.env.CONVEYOR_DATA_DIR;
    else process.env.CONVEYOR_DATA_DIR = before;
    resetEnvCache();
    resetStorage();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
