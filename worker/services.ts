/**
 * What a worker process runs besides graphile's pool, in start order (they stop
 * in reverse): the engine's services, then every registered workload's.
 * Periodic maintenance takes a maintenance lock inside its own pass (the reaper,
 * the rollup, the pruner): every worker ticks, one at a time works.
 */
import { Admitter, describeQueueSeed, seedQueueSettings } from "@/lib/admission/admitter";
import { downstreamSweeper } from "@/lib/downstream/sweeper";
import { env } from "@/lib/env";
import { reap } from "@/lib/jobs/reaper";
import { rollupStats } from "@/lib/ops/stats";
import { pruneOnce, rowsOf } from "@/lib/retention/prune";
import { loop, type Service } from "@/lib/runtime/service";
import type { Heartbeat } from "./heartbeat";

/** The engine's services: registration and heartbeat first, then admission and upkeep (the workloads' own, the scheduler among them, come from their manifests). */
export function engineServices(heartbeat: Heartbeat): Service[] {
  return [
    heartbeat,
    {
      // Caps and windows are the fleet's, in the database: the environment only seeds a new one.
      name: "queues",
      async start(ctx) {
        describeQueueSeed(await seedQueueSettings()).forEach((line) => ctx.log(line));
      },
      async stop() {},
    },
    // Every worker admits for every queue: admission only hands jobs to graphile.
    new Admitter(),
    loop({
      // Crash recovery (lib/jobs/reaper.ts). At start too: a worker started in place of one that
      // died reaps at once rather than a tick later.
      name: "reaper",
      everyMs: () => env().REAPER_INTERVAL_MS,
      runAtStart: true,
      async run(ctx) {
        const r = await reap({ deadAfterMs: env().WORKER_DEAD_AFTER_MS, selfId: ctx.workerId });
        const lines = [
          ...(r.deadWorkers.length ? [`declared dead: ${r.deadWorkers.join(", ")}`] : []),
          ...r.reapedJobs.map((j) => `job ${j.id} (lease of ${j.previousOwner}) → ${j.status}`),
          ...r.redispatched.map((j) => `job ${j} had lost its dispatch; dispatched again`),
        ];
        // A dead worker may have held a thousand attempts: the next batch at once, not a tick later.
        return r.more ? { lines, nextInMs: 0 } : lines;
      },
    }),
    loop({
      // The console overview's counts and per-minute statistics.
      name: "stats",
      everyMs: () => env().STATS_ROLLUP_MS,
      async run() {
        await rollupStats();
        return [];
      },
    }),
    loop({
      // Retention: old finished jobs, dead letters, audit entries, dead worker rows (lib/retention).
      name: "prune",
      everyMs: () => env().PRUNE_INTERVAL_MS,
      async run() {
        const r = await pruneOnce();
        const trees = r.batches.reduce((n, b) => n + b.trees, 0);
        const rows = r.batches.reduce((n, b) => n + rowsOf(b), 0);
        return rows ? [`pruned ${trees} job trees, ${rows} rows in ${r.batches.length} batches`] : [];
      },
    }),
    // Parked jobs a lost wake-up left behind a busy downstream (lib/downstream).
    downstreamSweeper(),
  ];
}
