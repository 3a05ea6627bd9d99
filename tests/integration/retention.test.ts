import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { z } from "zod";
import { PATCH as tenantSettingsRoute } from "@/app/api/v1/ops/tenants/[tenant]/route";
import { createPause } from "@/lib/admission/pauses";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { db, pool } from "@/lib/db";
import { databaseUrl } from "@/lib/env";
import { createExportLink } from "@/lib/exports/links";
import { requestExport } from "@/lib/exports/service";
import { cancelJob } from "@/lib/jobs/actions";
import { discardDeadLetters } from "@/lib/jobs/dead-letters";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { PermanentError } from "@/lib/jobs/errors";
import { defineTask } from "@/lib/jobs/task";
import { pruneOnce, rowsOf } from "@/lib/retention/prune";
import { storage } from "@/lib/storage";
import { updateTenantSettings } from "@/lib/tenants/settings";
import { useTestDatabase } from "../helpers/db";
import { drainJobs, isCode } from "../helpers/fixtures";
import { workerArgs } from "../helpers/worker";

// A job that always fails at once: its first failure makes a dead letter.
const failing = defineTask({
  type: "retention_fail",
  queue: "bulk",
  inputSchema: z.object({ n: z.number() }),
  retry: { maxAttempts: 1, initialBackoffMs: 0, maxBackoffMs: 0, multiplier: 2, jitter: "none" },
  timeoutMs: 10_000,
  leaseMs: 1_500,
  handler: async () => {
    throw new PermanentError("refused on purpose");
  },
});
// A job type paused for the whole file: its jobs stay queued.
const held = defineTask({
  type: "retention_held",
  queue: "bulk",
  inputSchema: z.object({ n: z.number() }),
  retry: { maxAttempts: 1, initialBackoffMs: 0, maxBackoffMs: 0, multiplier: 2, jitter: "none" },
  timeoutMs: 10_000,
  leaseMs: 1_500,
  handler: async () => ({}),
});

const fx = useTestDatabase({ seed: 0.001, tasks: [failing, held] });

let n = 0;
async function finishedProbes(count: number, tenantId = fx.p.acmeId, parentId?: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { job } = await enqueueJob({ tenantId, type: "probe", input: { sleepMs: 0 }, parentId });
    ids.push(job.id);
  }
  await drainJobs();
  return ids;
}

async function deadLetter(tenantId = fx.p.acmeId): Promise<string> {
  const { job } = await enqueueJob({ tenantId, type: "retention_fail", input: { n: n++ } });
  await drainJobs();
  return job.id;
}

/** Moves jobs' times `days` into the past, as if they had ended that long ago. */
async function age(ids: string[], days: number): Promise<void> {
  await pool().query(
    `UPDATE jobs SET created_at = created_at - make_interval(days => $2), run_at = run_at - make_interval(days => $2),
            started_at = started_at - make_interval(days => $2), finished_at = finished_at - make_interval(days => $2),
            discarded_at = discarded_at - make_interval(days => $2)
      WHERE id = ANY($1::uuid[])`,
    [ids, days],
  );
}

async function existing(ids: string[]): Promise<string[]> {
  const { rows } = await pool().query<{ id: string }>(`SELECT id::text FROM jobs WHERE id = ANY($1::uuid[])`, [ids]);
  return rows.map((r) => r.id).sort();
}

async function countFor(table: string, ids: string[]): Promise<number> {
  const { rows } = await pool().query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${table} WHERE job_id = ANY($1::uuid[])`,
    [ids],
  );
  return rows[0]!.n;
}

describe("retention", () => {
  test("old finished jobs go with their attempts and transitions; young and unfinished ones stay", async () => {
    const old = await finishedProbes(3);
    const young = await finishedProbes(2);
    await age(old, 31);
    await age(young, 29);
    // Unfinished jobs as old as the oldest: queued (its type paused), scheduled, running.
    await createPause(fx.p.root, { type: "retention_held", reason: "retention test" });
    const { job: queued } = await enqueueJob({ tenantId: fx.p.acmeId, type: "retention_held", input: { n: 1 } });
    const { job: scheduled } = await enqueueJob({
      tenantId: fx.p.acmeId,
      type: "probe",
      input: { sleepMs: 0 },
      runAt: new Date(Date.now() + 3_600_000),
    });
    const { job: running } = await enqueueJob({ tenantId: fx.p.acmeId, type: "retention_held", input: { n: 2 } });
    await pool().query(`UPDATE jobs SET status = 'running', started_at = now() WHERE id = $1`, [running.id]);
    const open = [queued.id, scheduled.id, running.id];
    await age(open, 400);
    assert.ok((await countFor("job_attempts", old)) >= 3, "the old jobs had attempts");
    assert.ok((await countFor("job_transitions", old)) >= 9, "and transitions");
    assert.equal(await countFor("probe_effects", old), 3);

    const r = await pruneOnce();
    assert.ok(r.ran);
    assert.deepEqual(await existing(old), [], "old finished jobs pruned");
    assert.equal(await countFor("job_attempts", old), 0);
    assert.equal(await countFor("job_transitions", old), 0);
    assert.equal(await countFor("probe_effects", old), 0);
    assert.deepEqual(await existing(young), [...young].sort(), "younger than JOB_RETENTION_DAYS: kept");
    assert.deepEqual(await existing(open), [...open].sort(), "unfinished jobs are never pruned");
    const jobs = r.batches.filter((b) => b.kind === "jobs").reduce((s, b) => s + b.rows.jobs, 0);
    assert.ok(jobs >= 3, `the batches report the jobs (${jobs})`);
    assert.ok(
      r.batches.every((b) => b.ms >= 0 && rowsOf(b) >= 0),
      "every batch is timed",
    );
  });

  test("an old export goes with its files, links and stored bytes", async () => {
    const { job } = await requestExport(fx.p.ada, { dataset: "customers", format: "csv" });
    await drainJobs();
    await createExportLink(fx.p.ada, job.id, {});
    const file = await db().exportFile.findFirstOrThrow({ where: { jobId: job.id } });
    assert.ok(await storage().open(file.storageKey), "the file is stored");
    await age([job.id], 31);
    await pruneOnce();
    assert.deepEqual(await existing([job.id]), []);
    assert.equal(await db().exportFile.count({ where: { jobId: job.id } }), 0);
    assert.equal(await db().exportLink.count({ where: { fileId: file.id } }), 0, "its links went with it");
    assert.equal(await storage().open(file.storageKey), null, "its bytes left storage");
  });

  test("a tree goes whole or not at all: one unfinished child keeps its parent and siblings", async () => {
    const [parent] = await finishedProbes(1);
    const children = await finishedProbes(2, fx.p.acmeId, parent);
    const { job: late } = await enqueueJob({
      tenantId: fx.p.acmeId,
      type: "probe",
      input: { sleepMs: 0 },
      parentId: parent,
      runAt: new Date(Date.now() + 3_600_000),
    });
    const tree = [parent!, ...children, late.id];
    await age(tree, 60);
    await pruneOnce();
    assert.deepEqual(await existing(tree), [...tree].sort(), "the scheduled child keeps the whole tree");

    // It ends now: the tree is still too young as a whole.
    await cancelJob(fx.p.ada, late.id, { reason: "retention test" });
    await pruneOnce();
    assert.deepEqual(await existing(tree), [...tree].sort(), "a child that ended today keeps the tree");

    await age([late.id], 31);
    await pruneOnce();
    assert.deepEqual(await existing(tree), [], "all old and ended: the tree went together");
  });

  test("dead letters stay for DEAD_LETTER_RETENTION_DAYS; discarded ones follow the job retention", async () => {
    const kept = await deadLetter();
    const old = await deadLetter();
    const discarded = await deadLetter();
    for (const id of [kept, old, discarded]) {
      assert.equal((await db().job.findUniqueOrThrow({ where: { id } })).status, "failed");
    }
    await discardDeadLetters(fx.p.oscar, { ids: [discarded] });
    await age([kept, discarded], 60);
    await age([old], 91);
    await pruneOnce();
    assert.deepEqual(await existing([kept, old, discarded]), [kept], "only the 60-day-old dead letter is left");
  });

  test("a tenant's own retention wins; only platform admins set it, audited", async () => {
    await assert.rejects(updateTenantSettings(fx.p.oscar, "acme", { jobRetentionDays: 5 }), isCode("forbidden"));
    const set = await updateTenantSettings(fx.p.root, "acme", { jobRetentionDays: 5, deadLetterRetentionDays: 7 });
    assert.deepEqual(set.retention, { jobDays: 5, deadLetterDays: 7, auditDays: null });
    assert.deepEqual(set.effectiveRetention, { jobs: 5, deadLetters: 7, audit: 365 });
    const audit = await db().auditLog.findFirstOrThrow({
      where: { action: "tenant.settings", tenantId: fx.p.acmeId },
      orderBy: { id: "desc" },
    });
    assert.deepEqual(audit.details, { jobRetentionDays: 5, deadLetterRetentionDays: 7 });

    const acme = await finishedProbes(1, fx.p.acmeId);
    const globex = await finishedProbes(1, fx.p.globexId);
    const acmeDead = await deadLetter(fx.p.acmeId);
    await age([...acme, ...globex], 10);
    await age([acmeDead], 8);
    await pruneOnce();
    assert.deepEqual(await existing([...acme, acmeDead]), [], "acme keeps jobs 5 days, dead letters 7");
    assert.deepEqual(await existing(globex), globex, "globex keeps the default 30");
    await updateTenantSettings(fx.p.root, "acme", { jobRetentionDays: null, deadLetterRetentionDays: null });
  });

  test("audit entries go after AUDIT_RETENTION_DAYS, or the tenant's own", async () => {
    const entry = async (tenantId: string | null, days: number) => {
      const row = await db().auditLog.create({
        data: { tenantId, action: "retention.test", targetIds: [], details: { days } },
      });
      await pool().query(`UPDATE audit_logs SET created_at = now() - make_interval(days => $2) WHERE id = $1`, [
        row.id,
        days,
      ]);
      return row.id;
    };
    const globexOld = await entry(fx.p.globexId, 366);
    const globexYoung = await entry(fx.p.globexId, 300);
    const platformOld = await entry(null, 400);
    const acmeMid = await entry(fx.p.acmeId, 20);
    await updateTenantSettings(fx.p.root, "acme", { auditRetentionDays: 10 });
    await pruneOnce();
    const left = await db().auditLog.findMany({
      where: { id: { in: [globexOld, globexYoung, platformOld, acmeMid] } },
      select: { id: true },
    });
    assert.deepEqual(
      left.map((r) => r.id),
      [globexYoung],
    );
    await updateTenantSettings(fx.p.root, "acme", { auditRetentionDays: null });
  });

  test("webhook messages with no delivery left and schedule events go after the job retention", async () => {
    const { rows: ep } = await pool().query<{ id: string }>(
      `INSERT INTO webhook_endpoints (id, tenant_id, url, events, secret)
       VALUES (gen_random_uuid(), $1, 'https://hooks.example.com/r', '{job.failed}', 'whsec_x') RETURNING id`,
      [fx.p.acmeId],
    );
    // A delivery names its job (a foreign key): a young one, which the pruner keeps.
    const [deliveryJob] = await finishedProbes(1);
    const message = async (id: string, daysAgo: number, delivered: boolean) => {
      await pool().query(
        `INSERT INTO webhook_messages (id, tenant_id, event_type, body, created_at)
         VALUES ($1, $2, 'job.failed', '{}', now() - make_interval(days => $3))`,
        [id, fx.p.acmeId, daysAgo],
      );
      if (delivered) {
        await pool().query(
          `INSERT INTO webhook_deliveries (id, tenant_id, message_id, endpoint_id, job_id)
           VALUES (gen_random_uuid(), $1, $2, $3, $4)`,
          [fx.p.acmeId, id, ep[0]!.id, deliveryJob],
        );
      }
    };
    await message("msg_retention_old", 45, false);
    await message("msg_retention_old_delivery", 45, true);
    await message("msg_retention_young", 2, false);
    const { rows: sched } = await pool().query<{ id: string }>(
      `INSERT INTO schedules (id, tenant_id, name, cron, task, input)
       VALUES (gen_random_uuid(), $1, 'retention', '0 * * * *', 'probe', '{}') RETURNING id`,
      [fx.p.acmeId],
    );
    await pool().query(
      `INSERT INTO schedule_events (schedule_id, kind, scheduled_for, at)
       VALUES ($1, 'missed', now() - interval '45 days', now() - interval '45 days'),
              ($1, 'overlap_skipped', now() - interval '2 days', now() - interval '2 days')`,
      [sched[0]!.id],
    );
    await pruneOnce();
    const { rows: messages } = await pool().query<{ id: string }>(
      `SELECT id FROM webhook_messages WHERE id LIKE 'msg_retention%' ORDER BY id`,
    );
    assert.deepEqual(
      messages.map((r) => r.id),
      ["msg_retention_old_delivery", "msg_retention_young"],
    );
    const { rows: events } = await pool().query<{ kind: string }>(
      `SELECT kind FROM schedule_events WHERE schedule_id = $1`,
      [sched[0]!.id],
    );
    assert.deepEqual(
      events.map((e) => e.kind),
      ["overlap_skipped"],
    );
  });

  test("stopped and dead worker rows go after a day", async () => {
    const worker = async (id: string, state: string, hoursAgo: number) => {
      await pool().query(
        `INSERT INTO workers (id, host, pid, version, queues, concurrency, state, started_at, heartbeat_at, stopped_at)
         VALUES ($1, 'test', 1, 'test', '{bulk}', 1, $2, now() - make_interval(hours => $3), now() - make_interval(hours => $3),
                 CASE WHEN $2 = 'stopped' THEN now() - make_interval(hours => $3) END)`,
        [id, state, hoursAgo],
      );
    };
    await worker("retention-stopped-old", "stopped", 25);
    await worker("retention-dead-old", "dead", 30);
    await worker("retention-stopped-new", "stopped", 2);
    await worker("retention-running", "running", 48);
    await pruneOnce();
    const { rows } = await pool().query<{ id: string }>(
      `SELECT id FROM workers WHERE id LIKE 'retention-%' ORDER BY id`,
    );
    assert.deepEqual(
      rows.map((r) => r.id),
      ["retention-running", "retention-stopped-new"],
    );
  });

  test("only one process prunes at a time", async () => {
    const old = await finishedProbes(4);
    await age(old, 45);
    // Another process holds the prune lock: this one skips its tick.
    const other = new pg.Client({ connectionString: databaseUrl() });
    await other.connect();
    try {
      await other.query("BEGIN");
      await other.query(`SELECT pg_advisory_xact_lock(hashtext('conveyor.maintenance'), hashtext('prune'))`);
      const skipped = await pruneOnce();
      assert.equal(skipped.ran, false);
      assert.deepEqual(skipped.batches, []);
      assert.equal((await existing(old)).length, 4, "nothing pruned while another holds the lock");
    } finally {
      await other.query("ROLLBACK");
      await other.end();
    }
    // Two at once: batches take turns, and each job is deleted once.
    const [a, b] = await Promise.all([pruneOnce({ batchSize: 1 }), pruneOnce({ batchSize: 1 })]);
    const deleted = [...a.batches, ...b.batches].reduce((s, x) => s + (x.kind === "jobs" ? x.rows.jobs : 0), 0);
    assert.equal(deleted, 4);
    assert.deepEqual(await existing(old), []);
  });

  test("worker processes prune on their timer (PRUNE_INTERVAL_MS), a batch at a time", async () => {
    const old = await finishedProbes(5);
    const young = await finishedProbes(1);
    await age(old, 40);
    const start = (): ChildProcess =>
      spawn(process.execPath, workerArgs("--concurrency", "1", "--queues", "bulk"), {
        env: { ...process.env, DATABASE_URL: fx.database.url, PRUNE_INTERVAL_MS: "1000", PRUNE_BATCH_SIZE: "2" },
        stdio: ["ignore", "pipe", "pipe", "ipc"],
      });
    const workers = [start(), start()];
    let output = "";
    for (const w of workers) {
      w.stdout!.on("data", (d: Buffer) => (output += d.toString()));
      w.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    }
    try {
      const deadline = Date.now() + 60_000;
      while ((await existing(old)).length && Date.now() < deadline) await sleep(250);
      assert.deepEqual(await existing(old), [], `the workers pruned the old jobs\n${output}`);
      assert.deepEqual(await existing(young), young);
    } finally {
      for (const w of workers) if (w.exitCode === null) w.kill("SIGTERM");
      await Promise.all(workers.map((w) => (w.exitCode === null ? once(w, "exit") : null)));
    }
  });

  test("PATCH /api/v1/ops/tenants/{tenant}: 400 naming the field, 403 for an operator", async () => {
    const patch = (token: string, body: unknown) =>
      tenantSettingsRoute(
        new Request("http://test/api/v1/ops/tenants/acme", {
          method: "PATCH",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify(body),
        }),
        { params: Promise.resolve({ tenant: "acme" }) },
      );
    const admin = await createApiTokenForEmail("root@conveyor.test", "retention");
    for (const [body, field] of [
      [{ jobRetentionDays: 0 }, "jobRetentionDays"],
      [{ deadLetterRetentionDays: "ninety" }, "deadLetterRetentionDays"],
      [{ auditRetentionDays: 4000 }, "auditRetentionDays"],
      [{ jobRetentionDays: 1.5 }, "jobRetentionDays"],
    ] as const) {
      const res = await patch(admin, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      const err = (await res.json()) as { error: { fields?: { path: string }[] } };
      assert.equal(err.error.fields?.[0]?.path, field);
    }
    const operator = await createApiTokenForEmail("oscar@acme.test", "retention", "acme");
    assert.equal((await patch(operator, { jobRetentionDays: 3 })).status, 403);
    const ok = await patch(admin, { jobRetentionDays: 45 });
    assert.equal(ok.status, 200);
    assert.equal(((await ok.json()) as { effectiveRetention: { jobs: number } }).effectiveRetention.jobs, 45);
    assert.equal((await db().tenant.findUniqueOrThrow({ where: { id: fx.p.acmeId } })).jobRetentionDays, 45);
    await updateTenantSettings(fx.p.root, "acme", { jobRetentionDays: null });
  });
});
