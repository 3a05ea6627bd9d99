/**
 * A workload is a manifest (issue 33): a queue it brings is seeded into `queues`, gets a
 * worker pool under `npm start` and health rows with its own thresholds; the tables it owns
 * go with their job by cascade (the pruner names none of them).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { configuredQueues, seedQueueSettings } from "@/lib/admission/admitter";
import { getQueues } from "@/lib/admission/queues";
import { pool } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { queueNames, registerWorkloads, workloadTables } from "@/lib/jobs/registry";
import { defineTask, defineWorkload } from "@/lib/jobs/task";
import { computeHealth } from "@/lib/ops/health";
import { pruneOnce } from "@/lib/retention/prune";
import { workerPools } from "../../scripts/worker-pools";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";

const gaugeTask = defineTask({
  type: "manifest_gauge",
  queue: "gauges",
  inputSchema: z.object({}).strict(),
  retry: { maxAttempts: 1, initialBackoffMs: 0, maxBackoffMs: 0, multiplier: 2, jitter: "none" },
  timeoutMs: 10_000,
  leaseMs: 1_500,
  handler: async () => ({ ok: true }),
});

// A workload of this file's own, with its own queue: nothing outside its manifest names it.
registerWorkloads([
  defineWorkload({
    name: "gauges",
    tasks: [gaugeTask],
    queues: [
      {
        name: "gauges",
        description: "a test workload's queue",
        tenantCap: () => 3,
        window: () => 7,
        concurrency: () => 5,
        health: { oldestReadyAge: { warning: 11, behind: 22 }, startLatencyP95: { warning: 33, behind: 44 } },
      },
    ],
  }),
]);

const fx = useTestDatabase({ seed: 0.001 });

describe("manifests", () => {
  test("a manifest's queue is seeded into queues, gets a worker pool and health rows with its thresholds", async () => {
    assert.ok(queueNames().includes("gauges"));
    assert.deepEqual(
      configuredQueues().find((q) => q.name === "gauges"),
      { name: "gauges", tenantCap: 3, window: 7 },
    );
    const seeded = await seedQueueSettings();
    assert.equal(seeded.find((r) => r.name === "gauges")?.seeded, true, "seeded from the manifest");
    const { rows } = await pool().query(`SELECT tenant_cap, max_admitted FROM queues WHERE name = 'gauges'`);
    assert.deepEqual(rows, [{ tenant_cap: 3, max_admitted: 7 }]);

    assert.deepEqual(
      workerPools().find((p) => p.queues === "gauges"),
      { queues: "gauges", concurrency: 5 },
      "npm start runs a pool for it, as wide as its manifest says",
    );
    assert.deepEqual(
      workerPools().map((p) => p.queues),
      queueNames(),
      "one pool per queue",
    );

    const health = await computeHealth();
    const row = health.queues.find((q) => q.queue === "gauges");
    assert.ok(row, "a fleet health row for the queue");
    assert.deepEqual(
      [row.signals.oldestReadyAge.warning, row.signals.oldestReadyAge.behind],
      [11, 22],
      "its own thresholds",
    );
    assert.deepEqual([row.signals.startLatencyP95.warning, row.signals.startLatencyP95.behind], [33, 44]);

    const queues = await getQueues(fx.p.root);
    assert.ok(
      queues.queues.some((q) => q.name === "gauges"),
      "the console's queues list it",
    );

    // Its jobs run on it, admitted like any other queue's.
    const { job } = await enqueueJob({ tenantId: fx.p.acmeId, type: "manifest_gauge", input: {} });
    await drainJobs();
    const { rows: done } = await pool().query(`SELECT queue, status::text FROM jobs WHERE id = $1`, [job.id]);
    assert.deepEqual(done, [{ queue: "gauges", status: "succeeded" }]);
  });

  test("every job-keyed table a manifest lists has a foreign key to jobs ON DELETE CASCADE, indexed", async () => {
    const tables = workloadTables().filter((t) => (t.jobColumn ?? "job_id") !== "id");
    assert.ok(tables.length >= 3, "imports, webhook_deliveries, probe_effects at least");
    for (const t of tables) {
      const column = t.jobColumn ?? "job_id";
      const { rows: fks } = await pool().query<{ deltype: string }>(
        `SELECT c.confdeltype AS deltype FROM pg_constraint c
           JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
          WHERE c.contype = 'f' AND c.conrelid = $1::regclass AND c.confrelid = 'jobs'::regclass AND a.attname = $2`,
        [t.name, column],
      );
      assert.deepEqual(
        fks.map((f) => f.deltype),
        ["c"],
        `${t.name}.${column} cascades from jobs`,
      );
      const { rows: idx } = await pool().query(
        `SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
          WHERE i.indrelid = $1::regclass AND a.attname = $2`,
        [t.name, column],
      );
      assert.ok(idx.length > 0, `${t.name}.${column} leads an index (a cascade finds its rows by it)`);
    }
  });

  test("pruning a job takes its webhook delivery with it, by cascade", async () => {
    const { job } = await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: 0 } });
    await drainJobs();
    const { rows: ep } = await pool().query<{ id: string }>(
      `INSERT INTO webhook_endpoints (id, tenant_id, url, events, secret)
       VALUES (gen_random_uuid(), $1, 'https://hooks.example.com/m', '{job.failed}', 'whsec_x') RETURNING id`,
      [fx.p.acmeId],
    );
    await pool().query(
      `INSERT INTO webhook_messages (id, tenant_id, event_type, body) VALUES ('msg_m', $1, 'job.failed', '{}')`,
      [fx.p.acmeId],
    );
    await pool().query(
      `INSERT INTO webhook_deliveries (id, tenant_id, message_id, endpoint_id, job_id)
       VALUES (gen_random_uuid(), $1, 'msg_m', $2, $3)`,
      [fx.p.acmeId, ep[0]!.id, job.id],
    );
    await pool().query(`UPDATE jobs SET finished_at = now() - interval '400 days' WHERE id = $1`, [job.id]);
    await pruneOnce();
    const { rows: jobs } = await pool().query(`SELECT 1 FROM jobs WHERE id = $1`, [job.id]);
    assert.equal(jobs.length, 0, "the job was pruned");
    const { rows: left } = await pool().query(`SELECT 1 FROM webhook_deliveries WHERE job_id = $1`, [job.id]);
    assert.equal(left.length, 0, "its delivery went with it");
    const { rows: effects } = await pool().query(`SELECT 1 FROM probe_effects WHERE job_id = $1`, [job.id]);
    assert.equal(effects.length, 0, "and its probe effect");
  });
});
