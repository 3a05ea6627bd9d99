/**
 * The `probe` task: a job that sleeps (abortably) and then records an
 * idempotent side effect — one `probe_effects` row per job, however often it
 * runs, with an execution counter. It exercises the full bookkeeping without
 * business logic: `npm run chaos` and `npm run bench:throughput` use it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { pool } from "../db";
import { defineTask } from "../jobs/task";

export const probeTask = defineTask({
  type: "probe",
  queue: "bulk",
  inputSchema: z
    .object({
      sleepMs: z.number().int().min(0).max(60_000).default(0),
      /** Kill the worker process running it (SIGKILL), every time: a poison job, to prove recovery. */
      crashWorker: z.boolean().default(false),
    })
    .strict(),
  retry: { maxAttempts: 10, initialBackoffMs: 100, maxBackoffMs: 2_000, multiplier: 2, jitter: "full" },
  timeoutMs: 120_000,
  leaseMs: 3_000,
  // Made only in-process (tests, benchmarks, chaos): never through the API or the CLI.
  internal: true,
  // Schedulable for `npm run chaos:schedules` (a run that sleeps makes overlaps).
  schedulable: {
    inputSchema: z.object({ sleepMs: z.number().int().min(0).max(60_000).default(0) }).strict(),
    runInput: (input) => input,
  },
  async handler(ctx) {
    if (ctx.input.crashWorker) process.kill(process.pid, "SIGKILL");
    if (ctx.input.sleepMs > 0) await sleep(ctx.input.sleepMs, undefined, { signal: ctx.signal });
    // Keyed by the job: a second execution (at-least-once) counts, but adds no row.
    await pool().query(
      `INSERT INTO probe_effects (job_id) VALUES ($1)
       ON CONFLICT (job_id) DO UPDATE SET executions = probe_effects.executions + 1, last_at = clock_timestamp()`,
      [ctx.job.id],
    );
    return { ok: true };
  },
});
