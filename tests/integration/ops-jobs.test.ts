import { beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { createPause } from "@/lib/admission/pauses";
import { pool } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { defineTask } from "@/lib/jobs/task";
import { getJob } from "@/lib/jobs/queries";
import { getOpsJob, listOpsJobs, planJobAction, runJobAction } from "@/lib/ops/jobs";
import { useTestDatabase } from "../helpers/db";
import { isCode } from "../helpers/fixtures";

// A task with a secret in its input: the console must never show it.
const secretTask = defineTask({
  type: "webhook_test",
  queue: "bulk",
  inputSchema: z.object({ url: z.string(), apiKey: z.string() }),
  sensitive: ["apiKey"],
  retry: { maxAttempts: 3, initialBackoffMs: 10, maxBackoffMs: 10, multiplier: 1, jitter: "none" },
  timeoutMs: 10_000,
  leaseMs: 5_000,
  handler: async () => ({ ok: true }),
});

const fx = useTestDatabase({ tasks: [secretTask] });
beforeEach(async () => {
  await pool().query(`DELETE FROM jobs`);
  await pool().query(`DELETE FROM queue_pauses`);
  // Nothing runs in this file: every job stays where the test puts it.
  await createPause(fx.p.root, { queue: "bulk" });
  await createPause(fx.p.root, { queue: "interactive" });
});

const probe = async (tenantId: string, input: Record<string, unknown> = { sleepMs: 0 }) =>
  (await enqueueJob({ tenantId, type: "probe", input })).job.id;
const statusOf = async (id: string) =>
  (await pool().query(`SELECT status FROM jobs WHERE id = $1`, [id])).rows[0]?.status;

async function moveTo(id: string, status: "failed" | "retrying" | "cancelled", message = "boom") {
  await pool().query(`UPDATE jobs SET status = 'running', attempts = 1 WHERE id = $1`, [id]);
  await pool().query(
    `UPDATE jobs SET status = $2::job_status, error_class = 'retryable', error_message = $3, admitted_at = NULL,
            run_at = CASE WHEN $2 = 'retrying' THEN now() + interval '1 hour' ELSE run_at END,
            finished_at = CASE WHEN $2 = 'retrying' THEN NULL ELSE now() END WHERE id = $1`,
    [id, status, message],
  );
}

describe("jobs explorer", () => {
  test("filters by status, type, queue and text; operators see their tenant, admins any", async () => {
    const a1 = await probe(fx.p.acmeId, { sleepMs: 1234 });
    const a2 = await probe(fx.p.acmeId);
    await moveTo(a2, "failed", "upstream said teapot");
    const g1 = await probe(fx.p.globexId);
    const mine = await listOpsJobs(fx.p.oscar, {});
    assert.deepEqual(mine.jobs.map((j) => j.id).sort(), [a1, a2].sort());
    assert.deepEqual(
      (await listOpsJobs(fx.p.oscar, { status: "failed" })).jobs.map((j) => j.id),
      [a2],
    );
    assert.deepEqual(
      (await listOpsJobs(fx.p.oscar, { q: "1234" })).jobs.map((j) => j.id),
      [a1],
      "searches the input",
    );
    assert.deepEqual(
      (await listOpsJobs(fx.p.oscar, { q: "TEAPOT" })).jobs.map((j) => j.id),
      [a2],
      "searches the error, case-insensitively",
    );
    assert.deepEqual(
      (await listOpsJobs(fx.p.oscar, { q: "said_teapot" })).jobs.map((j) => j.id),
      [],
      "`_` and `%` in a search match themselves, not any character",
    );
    assert.deepEqual(
      (await listOpsJobs(fx.p.oscar, { q: "said teapot" })).jobs.map((j) => j.id),
      [a2],
    );
    assert.equal((await listOpsJobs(fx.p.oscar, { queue: "interactive" })).jobs.length, 0);
    assert.deepEqual(
      (await listOpsJobs(fx.p.root, { tenant: "globex" })).jobs.map((j) => j.id),
      [g1],
    );
    assert.equal((await listOpsJobs(fx.p.root, {})).jobs.length, 3);
    await assert.rejects(listOpsJobs(fx.p.oscar, { tenant: "globex" }), isCode("not_found"));
    await assert.rejects(listOpsJobs(fx.p.ada, {}), isCode("forbidden"));
    await assert.rejects(listOpsJobs(fx.p.oscar, { status: "lost" }), (e: unknown) => {
      assert.ok(e instanceof AppError && e.fields?.[0]?.path === "status");
      return true;
    });

    // Keyset paging walks each job once.
    for (let i = 0; i < 5; i++) await probe(fx.p.acmeId);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listOpsJobs(fx.p.oscar, { limit: 2, ...(cursor ? { cursor } : {}) });
      seen.push(...page.jobs.map((j) => j.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    assert.equal(new Set(seen).size, 7);
    assert.equal(seen.length, 7);
  });

  test("job detail redacts sensitive input and tells the whole story; another tenant's is 404", async () => {
    const { job } = await enqueueJob({
      tenantId: fx.p.acmeId,
      type: "webhook_test",
      input: { url: "https://example.test/hook", apiKey: "sk_live_secret" },
    });
    await moveTo(job.id, "retrying", "503 from example.test");
    const detail = await getOpsJob(fx.p.oscar, job.id);
    assert.deepEqual(detail.job.input, { url: "https://example.test/hook", apiKey: "[redacted]" });
    assert.ok(!JSON.stringify(detail).includes("sk_live_secret"), "the secret appears nowhere");
    assert.deepEqual(
      detail.transitions.map((t) => t.to),
      ["queued", "running", "retrying"],
    );
    assert.ok(!JSON.stringify(await listOpsJobs(fx.p.oscar, {})).includes("sk_live_secret"));
    assert.deepEqual(
      (await listOpsJobs(fx.p.oscar, { q: "sk_live" })).jobs,
      [],
      "a search cannot look inside a redacted field (no guessing the secret piece by piece)",
    );
    assert.deepEqual(
      (await listOpsJobs(fx.p.oscar, { q: "example.test/hook" })).jobs.map((j) => j.id),
      [job.id],
      "the rest of the input is searched",
    );
    const member = await getJob(fx.p.ada, job.id);
    assert.equal((member.input as { apiKey: string }).apiKey, "[redacted]", "write-only for members too");
    const g = await probe(fx.p.globexId);
    await assert.rejects(getOpsJob(fx.p.oscar, g), isCode("not_found"));
    await assert.rejects(getOpsJob(fx.p.oscar, "nope"), isCode("not_found"));
    assert.equal((await getOpsJob(fx.p.root, g)).job.id, g);
  });
});

describe("bulk actions", () => {
  test("cancel by filter, replay and discard by ids, retry now — counts matched and affected, audited", async () => {
    const waiting = [await probe(fx.p.acmeId), await probe(fx.p.acmeId), await probe(fx.p.acmeId)];
    const other = await probe(fx.p.globexId);
    const cancelled = await runJobAction(fx.p.oscar, { action: "cancel", filter: { status: "queued" } });
    assert.deepEqual(cancelled, { action: "cancel", matched: 3, affected: 3 });
    for (const id of waiting) assert.equal(await statusOf(id), "cancelled");
    assert.equal(await statusOf(other), "queued", "another tenant's job is never matched");

    const again = await runJobAction(fx.p.oscar, { action: "cancel", ids: waiting });
    assert.deepEqual([again.matched, again.affected], [3, 0], "finished jobs are skipped");

    const replayed = await runJobAction(fx.p.oscar, { action: "replay", ids: waiting.slice(0, 2) });
    assert.deepEqual([replayed.matched, replayed.affected], [2, 2]);
    const replays = await pool().query(`SELECT count(*)::int AS n FROM jobs WHERE replay_of_id = ANY($1::uuid[])`, [
      waiting,
    ]);
    assert.equal(replays.rows[0].n, 2);

    const dead = await probe(fx.p.acmeId);
    await moveTo(dead, "failed");
    const discarded = await runJobAction(fx.p.oscar, { action: "discard", ids: [dead, waiting[2]!] });
    assert.deepEqual([discarded.matched, discarded.affected], [2, 1]);

    const retrying = await probe(fx.p.acmeId);
    await moveTo(retrying, "retrying");
    await pool().query(`UPDATE queue_pauses SET resumed_at = now()`);
    const now = await runJobAction(fx.p.oscar, { action: "retry_now", filter: { status: "retrying" } });
    assert.deepEqual([now.matched, now.affected], [1, 1]);
    const r = (
      await pool().query(`SELECT run_at <= now() AS due, admitted_at IS NOT NULL AS admitted FROM jobs WHERE id = $1`, [
        retrying,
      ])
    ).rows[0];
    assert.deepEqual(r, { due: true, admitted: true }, "due at once, and admitted");

    const audit = await pool().query(`SELECT action FROM audit_logs WHERE action LIKE 'jobs.%' ORDER BY id`);
    assert.deepEqual(
      audit.rows.map((a) => a.action),
      ["jobs.cancel", "jobs.cancel", "jobs.replay", "jobs.discard", "jobs.retry_now"],
    );
    await assert.rejects(runJobAction(fx.p.ada, { action: "cancel", ids: [other] }), isCode("forbidden"));
    await assert.rejects(runJobAction(fx.p.oscar, { action: "explode", ids: [other] }), (e: unknown) => {
      assert.ok(e instanceof AppError && e.fields?.[0]?.path === "action");
      return true;
    });
    await assert.rejects(runJobAction(fx.p.oscar, { action: "cancel" }), isCode("invalid_input"));
    assert.deepEqual(
      await runJobAction(fx.p.oscar, { action: "cancel", ids: [other] }),
      { action: "cancel", matched: 0, affected: 0 },
      "another tenant's id matches nothing",
    );
  });
  test("a dry run counts what matches and what the action applies to, changing nothing; ids are held to the filter", async () => {
    const a = await probe(fx.p.acmeId);
    const b = await probe(fx.p.acmeId);
    await moveTo(b, "failed", "dry-run test");
    const g = await probe(fx.p.globexId);
    const plan = await planJobAction(fx.p.oscar, { action: "replay", ids: [a, b, g] });
    assert.deepEqual(
      { ...plan, ids: plan.ids },
      { action: "replay", dryRun: true, matched: 2, moreThanLimit: false, applicable: 1, ids: [b] },
    );
    assert.equal(await statusOf(a), "queued", "nothing changed");
    const replays = await pool().query(`SELECT 1 FROM jobs WHERE replay_of_id = $1`, [b]);
    assert.equal(replays.rowCount, 0);

    // ids together with a filter: only the ids that match it.
    const both = await runJobAction(fx.p.oscar, { action: "cancel", ids: [a, b], filter: { status: "failed" } });
    assert.deepEqual([both.matched, both.affected], [1, 0], "a is queued, not failed: untouched");
    assert.equal(await statusOf(a), "queued");
    await assert.rejects(
      runJobAction(fx.p.oscar, { action: "cancel", ids: [a], dryRun: true }),
      isCode("invalid_input"),
    );
  });
});
