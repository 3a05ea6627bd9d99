import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { buffer } from "node:stream/consumers";
import { db, pool } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { openExportDownload, requestExport } from "@/lib/exports/service";
import { getJob, listJobs } from "@/lib/jobs/queries";
import { JOB_COLUMNS, jobFromRow } from "@/lib/jobs/sql/job-row";
import { jobView } from "@/lib/jobs/view";
import { useTestDatabase } from "../helpers/db";
import { admitAll } from "@/lib/admission/admitter";
import { drainJobs } from "../helpers/fixtures";

const fx = useTestDatabase();

/** Parses CSV (RFC 4180, as COPY writes it) into rows of fields. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") {
      row.push(field);
      field = "";
    } else if (ch === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
    } else field += ch;
  }
  if (field || row.length) rows.push([...row, field]);
  return rows;
}

async function countRows(table: string, tenantId: string): Promise<number> {
  const { rows } = await pool().query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE tenant_id = $1`, [
    tenantId,
  ]);
  return Number(rows[0]!.n);
}

describe("exports", () => {
  test("an orders CSV export runs to succeeded and its file matches the database", async () => {
    const { job, created } = await requestExport(fx.p.ada, { dataset: "orders", format: "csv", compression: "none" });
    assert.equal(created, true);
    assert.equal(job.status, "queued");
    // Read-only look at graphile's table: its public `jobs` view hides payloads.
    const graphile = await pool().query(
      `SELECT payload FROM graphile_worker._private_jobs WHERE task_id = (SELECT id FROM graphile_worker._private_tasks WHERE identifier = 'interactive:export')`,
    );
    assert.deepEqual(
      graphile.rows.map((r) => r.payload),
      [{ jobId: job.id }],
      "graphile carries only our job id",
    );

    await drainJobs();
    const done = await getJob(fx.p.ada, job.id);
    assert.equal(done.status, "succeeded");
    assert.equal(done.attempts, 1);
    const expected = await countRows("orders", fx.p.acmeId);
    assert.equal(done.progress.done, expected);
    assert.equal(done.progress.total, expected);
    const file = done.result?.files[0];
    assert.ok(file, "result lists the file");
    assert.equal(file.rows, expected);
    assert.match(file.name, /^orders-.*\.csv$/);
    assert.equal(file.downloadUrl, `/api/v1/exports/${job.id}/download`);

    const download = await openExportDownload(fx.p.ada, job.id);
    const body = (await buffer(download.stream)).toString("utf8");
    assert.equal(download.size, Buffer.byteLength(body));
    const rows = parseCsv(body);
    assert.deepEqual(rows[0], [
      "id",
      "customer_id",
      "status",
      "amount",
      "currency",
      "line_items",
      "note",
      "created_at",
      "updated_at",
    ]);
    assert.equal(rows.length - 1, expected, "one CSV record per order, embedded newlines included");
    assert.ok(body.includes("Line one\nline two, with comma"), "multi-line text survives quoted");
    assert.ok(body.includes("Zürich office — ünïcödé ✓ 東京 🚀"), "unicode survives");
    const { sha256 } = await db().exportFile.findFirstOrThrow({ where: { jobId: job.id } });
    const { createHash } = await import("node:crypto");
    assert.equal(createHash("sha256").update(body).digest("hex"), sha256);
    const after = await db().exportFile.findFirstOrThrow({ where: { jobId: job.id } });
    assert.equal(after.downloadCount, 1);
  });

  test("a job read in SQL is the job Prisma reads: every column, its files, who asked and who cancelled", async () => {
    const { job } = await requestExport(fx.p.ada, { dataset: "customers", format: "csv" });
    await drainJobs();
    await pool().query(
      `UPDATE jobs SET cancel_requested_at = now(), cancel_requested_by_id = $2, cancel_reason = 'checked' WHERE id = $1`,
      [job.id, fx.p.oscar.userId],
    );
    const prisma = await db().job.findUniqueOrThrow({
      where: { id: job.id },
      include: { files: true, createdBy: { select: { email: true } }, cancelRequestedBy: { select: { email: true } } },
    });
    const { rows } = await pool().query(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = $1`, [job.id]);
    const { files: _files, createdBy: _by, cancelRequestedBy: _cancelBy, ...columns } = prisma;
    assert.deepEqual(jobFromRow(rows[0]), columns, "JOB_COLUMNS names every column as Prisma does");
    const dto = await getJob(fx.p.ada, job.id);
    assert.deepEqual(dto, jobView(prisma, prisma.files), "the API's job, files and people as Prisma's rows give them");
    assert.equal(dto.requestedBy, "ada@acme.test");
    assert.equal(dto.cancelRequested?.by, "oscar@acme.test");
    assert.equal(dto.result?.files.length, 1);
    const listed = (await listJobs(fx.p.ada, { limit: "100" })).jobs.find((j) => j.id === job.id);
    assert.deepEqual(listed, dto, "the list shows the job as its own page does");
  });

  test("JSONL with gzip decompresses to one JSON object per event in the date window", async () => {
    const from = new Date(Date.now() - 2 * 86_400_000).toISOString();
    const to = new Date(Date.now() - 86_400_000).toISOString();
    const { job } = await requestExport(fx.p.ada, {
      dataset: "events",
      format: "jsonl",
      compression: "gzip",
      filter: { from, to },
    });
    await drainJobs();
    const done = await getJob(fx.p.ada, job.id);
    assert.equal(done.status, "succeeded", JSON.stringify(done.error));
    const download = await openExportDownload(fx.p.ada, job.id);
    assert.equal(download.contentType, "application/gzip");
    const lines = gunzipSync(await buffer(download.stream))
      .toString("utf8")
      .split("\n")
      .filter(Boolean);
    const { rows } = await pool().query<{ n: string }>(
      `SELECT count(*) AS n FROM events WHERE tenant_id = $1 AND occurred_at >= $2 AND occurred_at < $3`,
      [fx.p.acmeId, from, to],
    );
    assert.ok(Number(rows[0]!.n) > 0, "the window holds events");
    assert.equal(lines.length, Number(rows[0]!.n));
    const first = JSON.parse(lines[0]!) as { id: number; message: string; payload: { path: string } };
    assert.equal(typeof first.id, "number");
    assert.equal(typeof first.payload.path, "string", "JSON columns stay JSON");
    assert.ok(
      lines.some((l) => (JSON.parse(l) as { message: string }).message.includes("\n")),
      "newlines escaped inside JSON",
    );
    assert.equal(done.result?.files[0]?.rows, lines.length);
  });

  test("bad input is rejected with field paths and creates nothing", async () => {
    const before = await db().job.count();
    await assert.rejects(
      requestExport(fx.p.ada, { dataset: "invoices", format: "xml", filter: { from: "yesterday" } }),
      (err: unknown) => {
        assert.ok(err instanceof AppError);
        assert.equal(err.code, "invalid_input");
        const paths = err.fields?.map((f) => f.path).sort();
        assert.deepEqual(paths, ["dataset", "filter.from", "format"]);
        return true;
      },
    );
    await assert.rejects(
      requestExport(fx.p.ada, { dataset: "orders", filter: { from: "2026-02-01", to: "2026-01-01" } }),
      (err: unknown) => err instanceof AppError && err.fields?.[0]?.path === "filter.to",
    );
    assert.equal(await db().job.count(), before);
  });

  test("idempotency: same key and body → same job; other body → conflict; 50 concurrent → one job", async () => {
    const body = { dataset: "customers", format: "csv", compression: "none" };
    const a = await requestExport(fx.p.ada, body, "key-1");
    const b = await requestExport(fx.p.ada, { compression: "none", format: "csv", dataset: "customers" }, "key-1");
    assert.equal(b.job.id, a.job.id);
    assert.equal(b.created, false);
    await assert.rejects(
      requestExport(fx.p.ada, { ...body, format: "jsonl" }, "key-1"),
      (e: unknown) => e instanceof AppError && e.code === "conflict",
    );
    // Another tenant may use the same key independently.
    const g = await requestExport(fx.p.gus, body, "key-1");
    assert.notEqual(g.job.id, a.job.id);

    const dispatched = async () =>
      (await pool().query(`SELECT count(*)::int AS n FROM graphile_worker.jobs`)).rows[0].n as number;
    const before = await dispatched();
    const results = await Promise.all(Array.from({ length: 50 }, () => requestExport(fx.p.ada, body, "key-burst")));
    const ids = new Set(results.map((r) => r.job.id));
    assert.equal(ids.size, 1);
    assert.equal(results.filter((r) => r.created).length, 1);
    assert.equal(await db().job.count({ where: { idempotencyKey: "key-burst" } }), 1);
    // (A request that lost the race may have held the admission lock when the winner
    // tried its fast path; then a worker's admitter dispatches it, as here.)
    await admitAll();
    assert.equal(await dispatched(), before + 1, "one dispatch for the one job");
  });

  test("concurrent creates share commits, and each gets its own job and input, and runs", async () => {
    const datasets = ["customers", "orders", "events"] as const;
    // Two tenants, three users: the rows of one statement take their quota locks in one order.
    const who = [fx.p.ada, fx.p.gus, fx.p.oscar];
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        requestExport(who[i % 3]!, { dataset: datasets[i % 3]!, format: i % 2 ? "jsonl" : "csv" }),
      ),
    );
    assert.equal(new Set(results.map((r) => r.job.id)).size, 30);
    const { rows } = await pool().query<{
      id: string;
      input: { dataset: string; format: string };
      tenant_id: string;
      tx: string;
    }>(`SELECT id, input, tenant_id, xmin::text AS tx FROM jobs WHERE id = ANY($1::uuid[])`, [
      results.map((r) => r.job.id),
    ]);
    assert.equal(rows.length, 30);
    const byId = new Map(rows.map((r) => [r.id, r]));
    results.forEach((r, i) => {
      const row = byId.get(r.job.id)!;
      assert.equal(row.input.dataset, datasets[i % 3], "each create's own input");
      assert.equal(row.input.format, i % 2 ? "jsonl" : "csv");
      assert.equal(row.tenant_id, who[i % 3]!.tenantId);
      assert.equal(r.job.status, "queued");
    });
    // Group commit: the 30 rows were written by fewer transactions than creates.
    const transactions = new Set(rows.map((r) => r.tx)).size;
    assert.ok(transactions < 30, `${transactions} transactions for 30 concurrent creates`);
    // Nothing lost: every one of them runs to its end.
    await drainJobs();
    const ended = await pool().query<{ status: string }>(`SELECT status FROM jobs WHERE id = ANY($1::uuid[])`, [
      results.map((r) => r.job.id),
    ]);
    assert.deepEqual(
      ended.rows.map((r) => r.status),
      Array(30).fill("succeeded"),
    );
  });

  test("tenancy: another tenant's job and file are not found; lists are scoped", async () => {
    const { job } = await requestExport(fx.p.ada, { dataset: "customers" });
    await drainJobs();
    await assert.rejects(getJob(fx.p.gus, job.id), (e: unknown) => e instanceof AppError && e.code === "not_found");
    await assert.rejects(
      openExportDownload(fx.p.gus, job.id),
      (e: unknown) => e instanceof AppError && e.code === "not_found",
    );
    await assert.rejects(
      getJob(fx.p.gus, "not-a-uuid"),
      (e: unknown) => e instanceof AppError && e.code === "not_found",
    );
    const gusJobs = await listJobs(fx.p.gus, {});
    assert.ok(gusJobs.jobs.every((j) => j.tenantId === fx.p.globexId));
    assert.ok(
      (await listJobs(fx.p.oscar, {})).jobs.some((j) => j.id === job.id),
      "operators of the tenant see it",
    );
    assert.equal((await getJob(fx.p.root, job.id)).id, job.id, "platform admins see every tenant");
    await assert.rejects(
      requestExport(fx.p.root, { dataset: "orders" }),
      (e: unknown) => e instanceof AppError && e.code === "forbidden",
    );
  });

  test("keyset pagination walks every job once, newest first", async () => {
    const all: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listJobs(fx.p.ada, { limit: "2", ...(cursor ? { cursor } : {}) });
      all.push(...page.jobs.map((j) => j.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    const expected = await db().job.findMany({
      where: { tenantId: fx.p.acmeId },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    });
    assert.deepEqual(
      all,
      expected.map((j) => j.id),
    );
    await assert.rejects(
      listJobs(fx.p.ada, { cursor: "garbage" }),
      (e: unknown) => e instanceof AppError && e.code === "invalid_input",
    );
    await assert.rejects(
      listJobs(fx.p.ada, { limit: "1000" }),
      (e: unknown) => e instanceof AppError && e.fields?.[0]?.path === "limit",
    );
  });

  test("the exports list pages through 60 exports, 25 at a time: each once, newest first, none missed", async () => {
    // 60 exports of ada's tenant, a third of them made in the same millisecond (ties are broken by id),
    // between other jobs of the tenant and another tenant's exports, which the list never shows.
    const base = Date.now() - 3_600_000;
    const made: string[] = [];
    for (let i = 0; i < 60; i++) {
      const at = new Date(i < 20 ? base : base + i * 1_000);
      const { rows } = await pool().query<{ id: string }>(
        `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, created_at, finished_at, updated_at)
         VALUES (gen_random_uuid(), $1, 'export', 'interactive', 'succeeded', $2, 'paging', $3, $3, now()) RETURNING id`,
        [fx.p.acmeId, JSON.stringify({ dataset: "orders", format: "csv", compression: "none" }), at],
      );
      made.push(rows[0]!.id);
      await pool().query(
        `INSERT INTO jobs (id, tenant_id, type, queue, status, input, input_hash, created_at, finished_at, updated_at)
         VALUES (gen_random_uuid(), $1, $2, 'bulk', 'succeeded', '{}', 'paging', $3, $3, now())`,
        [i % 2 ? fx.p.globexId : fx.p.acmeId, i % 2 ? "export" : "probe", at],
      );
    }
    const seen: string[] = [];
    const pages: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await listJobs(fx.p.ada, { type: "export", limit: "25", ...(cursor ? { cursor } : {}) });
      pages.push(page.jobs.length);
      seen.push(...page.jobs.map((j) => j.id));
      assert.ok(page.jobs.every((j) => j.type === "export" && j.tenantId === fx.p.acmeId));
      cursor = page.nextCursor ?? undefined;
      // An export requested meanwhile is newer than every cursor: it shifts nothing into a later page.
      if (pages.length === 1) await requestExport(fx.p.ada, { dataset: "customers" });
    } while (cursor);
    const expected = await db().job.findMany({
      where: { tenantId: fx.p.acmeId, type: "export", createdAt: { lte: new Date(base + 59_000) } },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      select: { id: true },
    });
    const older = seen.slice(seen.indexOf(made[59]!));
    assert.equal(new Set(seen).size, seen.length, "no export twice");
    assert.deepEqual(
      older,
      expected.map((j) => j.id),
      "every export once, in order",
    );
    for (const id of made) assert.ok(seen.includes(id), `export ${id} listed`);
    assert.ok(pages.length >= 3 && pages.slice(0, -1).every((n) => n === 25), `pages of 25: ${pages.join(", ")}`);
  });

  test("an expired export answers gone", async () => {
    const { job } = await requestExport(fx.p.ada, { dataset: "customers", format: "jsonl" });
    await drainJobs();
    await db().exportFile.updateMany({ where: { jobId: job.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await assert.rejects(
      openExportDownload(fx.p.ada, job.id),
      (e: unknown) => e instanceof AppError && e.code === "gone",
    );
  });
});
