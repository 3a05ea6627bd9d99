import { beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { createPause } from "@/lib/admission/pauses";
import { pool } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { defineTask } from "@/lib/jobs/task";
import { getJob } from "@/lib/jobs/queries";
import { listDeadLetterGroups } from "@/lib/ops/console";
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
    // JSON as a user types it finds the input Postgres prints with a space after the colon.
    for (const q of ['"sleepMs":1234', '"sleepMs" :1234', '"sleepMs":  1234']) {
      assert.deepEqual(
        (await listOpsJobs(fx.p.oscar, { q })).jobs.map((j) => j.id),
        [a1],
        `searches ${q} as the input is printed`,
      );
    }
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
    // The searched text (table job_search) follows the job's error as it changes, and only then.
    await pool().query(`UPDATE jobs SET error_message = 'gateway timed out' WHERE id = $1`, [a2]);
    assert.deepEqual((await listOpsJobs(fx.p.oscar, { q: "teapot" })).jobs, [], "the old error is gone");
    assert.deepEqual(
      (await listOpsJobs(fx.p.oscar, { q: "gateway timed" })).jobs.map((j) => j.id),
      [a2],
      "the new error is found",
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

  test("the searched text comes and goes with its jobs, created one by one or many in one statement", async () => {
    const searchRows = async (ids: string[]) =>
      Number(
        (await pool().query(`SELECT count(*) AS n FROM job_search WHERE job_id = ANY($1::uuid[])`, [ids])).rows[0].n,
      );
    const one = await probe(fx.p.acmeId, { sleepMs: 4321 });
    // A batch of creates is one INSERT: one row each all the same.
    const many = (
      await pool().query<{ id: string }>(
        `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash)
         SELECT gen_random_uuid(), $1::uuid, 'probe', 'bulk', 'queued', jsonb_build_object('sleepMs', 8765 + g), 'x'
         FROM generate_series(1, 3) g RETURNING id`,
        [fx.p.acmeId],
      )
    ).rows.map((r) => r.id);
    assert.equal(await searchRows([one, ...many]), 4);
    assert.deepEqual(
      (await listOpsJobs(fx.p.oscar, { q: "8767" })).jobs.map((j) => j.id),
      [many[1]],
    );
    // A status change writes no search row (the reason it is a table of its own).
    const before = (await pool().query(`SELECT xmin::text FROM job_search WHERE job_id = $1`, [one])).rows[0].xmin;
    await pool().query(`UPDATE jobs SET status = 'running', attempts = 1 WHERE id = $1`, [one]);
    const after = (await pool().query(`SELECT xmin::text FROM job_search WHERE job_id = $1`, [one])).rows[0].xmin;
    assert.equal(after, before);
    await pool().query(`DELETE FROM jobs WHERE id = ANY($1::uuid[])`, [[one, ...many]]);
    assert.equal(await searchRows([one, ...many]), 0, "deleted with their jobs");
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

/** Rejects with a 400 (invalid_input) naming exactly these fields. */
const namesFields =
  (...paths: string[]) =>
  (e: unknown) => {
    assert.ok(e instanceof AppError, String(e));
    assert.equal(e.status, 400);
    assert.deepEqual(
      e.fields?.map((f) => f.path),
      paths,
    );
    return true;
  };

describe("jobs explorer: parts, requester, dead-letter groups", () => {
  test("parts are left out unless asked; each job says who asked for it", async () => {
    const { job: parent } = await enqueueJob({
      tenantId: fx.p.acmeId,
      type: "probe",
      input: { sleepMs: 0 },
      createdById: fx.p.ada.userId,
    });
    const parts = [];
    for (let i = 0; i < 2; i++) {
      parts.push(
        (await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: i }, parentId: parent.id })).job.id,
      );
    }
    const plain = await listOpsJobs(fx.p.oscar, {});
    assert.deepEqual(
      plain.jobs.map((j) => j.id),
      [parent.id],
      "no part by default",
    );
    assert.equal(plain.jobs[0]!.requestedBy, "ada@acme.test");
    assert.deepEqual(
      (await listOpsJobs(fx.p.oscar, { children: "0" })).jobs.map((j) => j.id),
      [parent.id],
    );
    const all = await listOpsJobs(fx.p.oscar, { children: "1" });
    assert.deepEqual(all.jobs.map((j) => j.id).sort(), [parent.id, ...parts].sort());
    assert.deepEqual(
      all.jobs.filter((j) => j.parentId).map((j) => j.requestedBy),
      [null, null],
      "a part was asked for by nobody",
    );
    // The same default for a bulk action by filter: what the explorer lists is what it acts on.
    const plan = await planJobAction(fx.p.oscar, { action: "cancel", filter: { status: "queued" } });
    assert.deepEqual([plan.matched, plan.ids], [1, [parent.id]]);
    const withParts = await planJobAction(fx.p.oscar, {
      action: "cancel",
      filter: { status: "queued", children: true },
    });
    assert.equal(withParts.matched, 3);
  });

  test("a dead-letter group's filter (type, error class, fingerprint) lists exactly its jobs", async () => {
    const timeout = async (message: string, errorClass = "timeout") => {
      const id = await probe(fx.p.acmeId);
      await moveTo(id, "failed", message);
      await pool().query(`UPDATE jobs SET error_class = $2 WHERE id = $1`, [id, errorClass]);
      return id;
    };
    const t1 = await timeout("timed out after 3012 ms on row 17");
    const t2 = await timeout("timed out after 2988 ms on row 4");
    const t3 = await timeout("timed out after 15 ms on row 9", "crashed");
    const reset = await timeout("connection reset by peer");
    const queued = await probe(fx.p.acmeId);
    const parent = await probe(fx.p.acmeId);
    const { job: part } = await enqueueJob({
      tenantId: fx.p.acmeId,
      type: "probe",
      input: { sleepMs: 7 },
      parentId: parent,
    });
    await moveTo(part.id, "failed", "timed out after 1 ms on row 1");
    await pool().query(`UPDATE jobs SET error_class = 'timeout' WHERE id = $1`, [part.id]);
    const g = await probe(fx.p.globexId);
    await moveTo(g, "failed", "timed out after 5 ms on row 5");
    await pool().query(`UPDATE jobs SET error_class = 'timeout' WHERE id = $1`, [g]);

    const { rows } = await pool().query(`SELECT error_fingerprint AS fp FROM jobs WHERE id = $1`, [t1]);
    const fingerprint = rows[0].fp as string;
    assert.equal(fingerprint, "timed out after <duration> on row <n>");
    const ids = async (f: Record<string, unknown>) => (await listOpsJobs(fx.p.oscar, f)).jobs.map((j) => j.id).sort();

    assert.deepEqual(await ids({ fingerprint }), [t1, t2, t3].sort(), "another tenant's job is not listed");
    assert.deepEqual(await ids({ errorClass: "timeout" }), [t1, t2, reset].sort());
    assert.deepEqual(
      await ids({ status: "failed", type: "probe", errorClass: "timeout", fingerprint }),
      [t1, t2].sort(),
    );
    assert.deepEqual(
      await ids({ errorClass: "timeout", fingerprint, children: "1" }),
      [t1, t2, part.id].sort(),
      "the failed part, when parts are asked for",
    );
    assert.ok(!(await ids({ fingerprint })).includes(queued));

    // A replayed (or discarded) job has left the group: `dead=1` leaves it out, as the group does.
    await runJobAction(fx.p.oscar, { action: "replay", ids: [t2] });
    assert.deepEqual(await ids({ status: "failed", errorClass: "timeout", fingerprint }), [t1, t2].sort());
    assert.deepEqual(await ids({ dead: "1", errorClass: "timeout", fingerprint }), [t1]);

    // The link from the dead-letters page lists as many jobs as its group counts (a group holds no parts:
    // a part fails with its parent, which is the entry people see).
    const groups = await listDeadLetterGroups(fx.p.oscar, {});
    assert.ok(groups.length >= 3);
    for (const group of groups) {
      const listed = await ids({
        type: group.type,
        ...(group.errorClass ? { errorClass: group.errorClass } : {}),
        ...(group.fingerprint ? { fingerprint: group.fingerprint } : {}),
        status: "failed",
        dead: "1",
      });
      assert.equal(listed.length, group.count, `${group.errorClass} ${group.fingerprint}`);
    }
  });

  test("bad filters answer 400 naming the field", async () => {
    await assert.rejects(listOpsJobs(fx.p.oscar, { fingerprint: "" }), namesFields("fingerprint"));
    await assert.rejects(listOpsJobs(fx.p.oscar, { fingerprint: "x".repeat(501) }), namesFields("fingerprint"));
    await assert.rejects(listOpsJobs(fx.p.oscar, { errorClass: "x".repeat(51) }), namesFields("errorClass"));
    await assert.rejects(listOpsJobs(fx.p.oscar, { children: "yes" }), namesFields("children"));
    await assert.rejects(listOpsJobs(fx.p.oscar, { dead: "maybe" }), namesFields("dead"));
    await assert.rejects(listOpsJobs(fx.p.oscar, { finger: "abc" }), namesFields("(body)"));
    await assert.rejects(
      listOpsJobs(fx.p.oscar, { from: "2026-03-02T00:00:00Z", to: "2026-03-01T00:00:00Z" }),
      (e: unknown) => namesFields("to")(e) && /to: must be after from/.test((e as Error).message),
    );
    await assert.rejects(
      listOpsJobs(fx.p.oscar, { from: "2026-03-01T00:00:00Z", to: "2026-03-01T00:00:00Z" }),
      namesFields("to"),
      "an empty range too",
    );
    await assert.rejects(
      planJobAction(fx.p.oscar, { action: "cancel", filter: { children: "sometimes" } }),
      namesFields("filter.children"),
    );
    await assert.rejects(
      planJobAction(fx.p.oscar, { action: "cancel", filter: { from: "2026-03-02", to: "2026-03-01" } }),
      namesFields("filter.to"),
    );
  });
});

describe("bulk actions", () => {
  test("cancel by filter, replay and discard by ids, retry now — counts matched and affected, audited", async () => {
    const auditBefore = (await pool().query(`SELECT coalesce(max(id), 0) AS id FROM audit_logs`)).rows[0].id;
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

    const audit = await pool().query(
      `SELECT action FROM audit_logs WHERE action LIKE 'jobs.%' AND id > $1 ORDER BY id`,
      [auditBefore],
    );
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
