import { after, afterEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { buffer } from "node:stream/consumers";
import * as uploadsRoute from "@/app/api/v1/uploads/[[...path]]/route";
import * as importsRoute from "@/app/api/v1/imports/route";
import * as importRoute from "@/app/api/v1/imports/[id]/route";
import * as errorsRoute from "@/app/api/v1/imports/[id]/errors/route";
import * as errorsLinksRoute from "@/app/api/v1/imports/[id]/errors/links/route";
import { createPause, resumePause } from "@/lib/admission/pauses";
import { forgetRefusals } from "@/lib/auth/rate-limit";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { cancelOnAbort, inTransaction, pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { openExportDownload, requestExport } from "@/lib/exports/service";
import { openLinkDownload } from "@/lib/exports/links";
import { cleanupImports } from "@/lib/imports/cleanup";
import type { ImportDto } from "@/lib/imports/service";
import { cancelJob, replayJob } from "@/lib/jobs/actions";
import { getJob } from "@/lib/jobs/queries";
import { reap } from "@/lib/jobs/reaper";
import { resetStorage, storage } from "@/lib/storage";
import { resetUploadServer } from "@/lib/uploads/tus";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";

const dataDir = mkdtempSync(path.join(tmpdir(), "conveyor-imports-test-"));
process.env.CONVEYOR_DATA_DIR = dataDir;
process.env.IMPORT_CHUNK_ROWS = "100";
resetEnvCache();
resetStorage();
resetUploadServer();
after(() => rmSync(dataDir, { recursive: true, force: true }));

const fx = useTestDatabase({ seed: 0.01 });

afterEach(async () => {
  await pool().query("DELETE FROM rate_limits");
  forgetRefusals();
});

const tokens = new Map<string, string>();
async function tokenFor(email: string): Promise<string> {
  if (!tokens.has(email)) tokens.set(email, await createApiTokenForEmail(email, "imports test"));
  return tokens.get(email)!;
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

/** Uploads `data` over tus (the route, in-process as Next.js calls it): creation, then two PATCHes. */
async function upload(email: string, data: Buffer, filename = "data.csv"): Promise<string> {
  const token = await tokenFor(email);
  const headers = { Authorization: `Bearer ${token}`, "Tus-Resumable": "1.0.0" };
  const created = await uploadsRoute.POST(
    new Request("http://test/api/v1/uploads", {
      method: "POST",
      headers: { ...headers, "Upload-Length": String(data.length), "Upload-Metadata": `filename ${b64(filename)}` },
    }),
    { params: Promise.resolve({}) },
  );
  assert.equal(created.status, 201, await created.clone().text());
  const id = created.headers.get("location")!.split("/").pop()!;
  const half = Math.floor(data.length / 2);
  for (const [from, to] of [
    [0, half],
    [half, data.length],
  ] as const) {
    const res = await uploadsRoute.PATCH(
      new Request(`http://test/api/v1/uploads/${id}`, {
        method: "PATCH",
        headers: { ...headers, "Upload-Offset": String(from), "Content-Type": "application/offset+octet-stream" },
        body: new Uint8Array(data.subarray(from, to)),
      }),
      { params: Promise.resolve({ path: [id] }) },
    );
    assert.equal(res.status, 204, await res.clone().text());
  }
  return id;
}

async function api(
  email: string,
  method: "GET" | "POST",
  url: string,
  body?: unknown,
): Promise<{ status: number; json: () => Promise<unknown>; res: Response }> {
  const token = await tokenFor(email);
  const req = new Request(`http://test${url}`, {
    method,
    headers: {
      Authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parts = url.split("/");
  const id = parts[4];
  let res: Response;
  if (url.split("?")[0] === "/api/v1/imports") {
    res = await (method === "POST" ? importsRoute.POST : importsRoute.GET)(req, { params: Promise.resolve({}) });
  } else if (url.endsWith("/errors/links")) {
    res = await errorsLinksRoute.POST(req, { params: Promise.resolve({ id: id! }) });
  } else if (url.endsWith("/errors")) {
    res = await errorsRoute.GET(req, { params: Promise.resolve({ id: id! }) });
  } else {
    res = await importRoute.GET(req, { params: Promise.resolve({ id: id! }) });
  }
  return { status: res.status, json: () => res.clone().json() as Promise<unknown>, res };
}

async function startImport(email: string, body: Record<string, unknown>): Promise<string> {
  const r = await api(email, "POST", "/api/v1/imports", body);
  assert.equal(r.status, 202, JSON.stringify(await r.json()));
  return ((await r.json()) as { id: string }).id;
}

const getImport = async (email: string, id: string) => {
  const r = await api(email, "GET", `/api/v1/imports/${id}`);
  assert.equal(r.status, 200, JSON.stringify(await r.json()));
  return (await r.json()) as ImportDto;
};

async function count(table: string, tenantId: string, where = "true"): Promise<number> {
  const { rows } = await pool().query<{ n: string }>(
    `SELECT count(*)::text AS n FROM ${table} WHERE tenant_id = $1 AND ${where}`,
    [tenantId],
  );
  return Number(rows[0]!.n);
}

async function exported(dataset: "customers" | "orders" | "events", format: "csv" | "jsonl" = "csv"): Promise<Buffer> {
  const { job } = await requestExport(fx.p.ada, { dataset, format, compression: "none" });
  await drainJobs();
  const file = await openExportDownload(fx.p.ada, job.id);
  return buffer(file.stream);
}

const stagingTables = async () =>
  (await pool().query<{ n: string }>(`SELECT count(*)::text AS n FROM pg_tables WHERE schemaname = 'import_staging'`))
    .rows[0]!.n;

describe("imports", () => {
  test("an exported events CSV imports back as it is: new ids, every row, in stages", async () => {
    const rows = await count("events", fx.p.acmeId);
    const csv = await exported("events");
    assert.ok(rows > 100, `more rows than one chunk (${rows})`);
    const before = rows;
    const uploadId = await upload("ada@acme.test", csv, "events.csv");
    const id = await startImport("ada@acme.test", { uploadId, dataset: "events", format: "csv", mode: "insert" });
    await drainJobs();
    const imp = await getImport("ada@acme.test", id);
    assert.equal(imp.job.status, "succeeded", imp.job.error?.message ?? "");
    assert.deepEqual(
      imp.stages.map((s) => [s.name, s.status]),
      ["scan", "parse", "chunk", "load", "commit"].map((n) => [n, "succeeded"]),
    );
    assert.equal(imp.counts.rowsRead, rows);
    assert.equal(imp.counts.inserted, rows);
    assert.equal(imp.counts.rejected, 0);
    assert.equal(imp.file?.rows, rows);
    assert.equal(imp.fileName, "events.csv");
    assert.match(imp.file!.sha256, /^[0-9a-f]{64}$/);
    assert.equal(await count("events", fx.p.acmeId), before + rows);
    // Every row twice now: the original and its copy under a new id, the same in every column.
    const pairs = await pool().query<{ n: string }>(
      `SELECT count(*)::text AS n FROM events a JOIN events b
         ON a.tenant_id = $1 AND b.tenant_id = $1 AND a.id < b.id AND a.message = b.message AND a.payload = b.payload
        AND a.occurred_at = b.occurred_at AND a.type = b.type AND a.source = b.source
        AND a.customer_id IS NOT DISTINCT FROM b.customer_id`,
      [fx.p.acmeId],
    );
    const lonely = await pool().query(
      `SELECT a.id, a.type, a.source, a.message, a.payload::text, a.occurred_at::text, a.customer_id FROM events a
       WHERE a.tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM events b WHERE b.tenant_id = $1 AND b.id <> a.id
         AND a.message = b.message AND a.payload = b.payload AND a.occurred_at = b.occurred_at) LIMIT 4`,
      [fx.p.acmeId],
    );
    assert.ok(
      Number(pairs.rows[0]!.n) >= rows,
      `${pairs.rows[0]!.n} copies of ${rows} rows: ${JSON.stringify(lonely.rows)}`,
    );
    // Into another tenant, the same file names customers that tenant does not have: refused whole.
    const foreign = await startImport("gus@globex.test", {
      uploadId: await upload("gus@globex.test", csv),
      dataset: "events",
    });
    const globexBefore = await count("events", fx.p.globexId);
    await drainJobs();
    const refused = await getImport("gus@globex.test", foreign);
    assert.equal(refused.job.status, "failed");
    assert.match(
      refused.job.error?.message ?? "",
      /Stage commit failed: Line \d+: customer_id \d+ is not a customer of this tenant/,
    );
    assert.equal(await count("events", fx.p.globexId), globexBefore);
    // The load stage fanned out one job per chunk; the staging table and the upload go afterwards.
    const chunks = await pool().query(`SELECT 1 FROM jobs WHERE type = 'import_load_chunk' AND parent_id = $1`, [
      imp.stages[3]!.jobId,
    ]);
    assert.equal(chunks.rowCount, Math.ceil(rows / 100));
    await cleanupImports();
    const up = await pool().query<{ deleted_at: Date | null }>("SELECT deleted_at FROM uploads WHERE id = $1", [
      uploadId,
    ]);
    assert.ok(up.rows[0]!.deleted_at, "the upload is removed once the import succeeded");
    const left = await pool().query(`SELECT to_regclass($1) AS t`, [
      `import_staging.i_${imp.importId.replace(/-/g, "")}`,
    ]);
    assert.equal((left.rows[0] as { t: string | null }).t, null);
  });

  test("customers upsert by email: changed rows update, new ones insert, nothing twice", async () => {
    const csv = (await exported("customers")).toString();
    const lines = csv.trim().split("\n");
    const header = lines[0]!;
    const body = lines.slice(1);
    let renamed = 0;
    const changed = body.map((l) =>
      renamed < 3 && /^\d+,/.test(l) && ++renamed ? l.replace(/^(\d+),[^,]*,/, "$1,Renamed Customer,") : l,
    );
    const extra = `,New Person,new.person@example.org,DE,team,,{},2026-11-30 10:00:00+00`;
    const file = [header, ...changed, extra].join("\n") + "\n";
    const before = await count("customers", fx.p.acmeId);
    assert.ok(lines.length - 1 >= before, "the export holds every customer (a note may span lines)");
    const uploadId = await upload("ada@acme.test", Buffer.from(file));
    const id = await startImport("ada@acme.test", { uploadId, dataset: "customers", mode: "upsert" });
    await drainJobs();
    const imp = await getImport("ada@acme.test", id);
    assert.equal(imp.job.status, "succeeded", imp.job.error?.message ?? "");
    assert.equal(imp.counts.updated, before);
    assert.equal(imp.counts.inserted, 1);
    assert.equal(await count("customers", fx.p.acmeId), before + 1);
    assert.equal(await count("customers", fx.p.acmeId, "name = 'Renamed Customer'"), 3);

    // The same file with insert: the emails are taken, so the commit refuses it whole.
    const again = await upload("ada@acme.test", Buffer.from(file));
    const id2 = await startImport("ada@acme.test", { uploadId: again, dataset: "customers", mode: "insert" });
    await drainJobs();
    const failed = await getImport("ada@acme.test", id2);
    assert.equal(failed.job.status, "failed");
    assert.match(failed.job.error?.message ?? "", /Stage commit failed: .*already exists; import with mode upsert/);
    assert.equal(await count("customers", fx.p.acmeId), before + 1, "all or nothing");
  });

  test("bad rows: over maxBadRows the import fails in parse; under it they are rejected; both give the errors file", async () => {
    const header = "type,source,payload,message,occurred_at,customer_id";
    const good = (i: number) => `signup,web,"{""n"": ${i}}",hello ${i},2026-11-30T10:00:00Z,`;
    const lines = [
      header,
      good(1),
      `signup,web,{not json},x,2026-11-30T10:00:00Z,`,
      good(2),
      `signup,web,{},x,yesterday,`,
      good(3),
    ];
    const data = Buffer.from(lines.join("\n") + "\n");
    const before = await count("events", fx.p.acmeId);

    const strict = await startImport("ada@acme.test", {
      uploadId: await upload("ada@acme.test", data),
      dataset: "events",
    });
    await drainJobs();
    const failed = await getImport("ada@acme.test", strict);
    assert.equal(failed.job.status, "failed");
    assert.match(failed.job.error?.message ?? "", /Stage parse failed: more bad rows than allowed: 2 found, 0 allowed/);
    assert.deepEqual(failed.badRows, [
      { line: 3, column: "payload", reason: "is not valid JSON" },
      { line: 5, column: "occurred_at", reason: "must be a date and time (ISO 8601)" },
    ]);
    assert.equal(failed.stages[1]!.status, "failed");
    assert.equal(failed.stages[2]!.status, "pending", "no stage after the failed one ran");
    const errors = await api("ada@acme.test", "GET", `/api/v1/imports/${strict}/errors`);
    assert.equal(errors.status, 200);
    const text = await errors.res.text();
    assert.equal(text.split("\n")[0], "line,column,reason,value");
    assert.match(text, /^3,payload,is not valid JSON,\{not json\}$/m);
    assert.match(text, /^5,occurred_at,must be a date and time \(ISO 8601\),yesterday$/m);
    // A short-lived link opens the same file without signing in.
    const link = await api("ada@acme.test", "POST", `/api/v1/imports/${strict}/errors/links`, { ttlSeconds: 60 });
    assert.equal(link.status, 201);
    const url = ((await link.json()) as { url: string }).url;
    assert.equal((await buffer((await openLinkDownload(url.replace("/d/", ""))).stream)).toString(), text);

    const lenient = await startImport("ada@acme.test", {
      uploadId: await upload("ada@acme.test", data),
      dataset: "events",
      maxBadRows: 5,
    });
    await drainJobs();
    const ok = await getImport("ada@acme.test", lenient);
    assert.equal(ok.job.status, "succeeded", ok.job.error?.message ?? "");
    assert.equal(ok.counts.inserted, 3);
    assert.equal(ok.counts.rejected, 2);
    assert.equal(ok.errorsFile?.rows, 2);
    // The job object (the console, /api/v1/jobs) points at the import's own download route.
    const asJob = await getJob(fx.p.ada, lenient);
    assert.deepEqual(
      asJob.result?.files.map((f) => [f.name, f.downloadUrl]),
      [["errors.csv", `/api/v1/imports/${lenient}/errors`]],
    );
    assert.equal(await count("events", fx.p.acmeId), before + 3);
  });

  test("a failed import's upload imports again allowing its bad rows, no file sent again; the first's cleanup leaves it; the list filters by status", async () => {
    const tag = `again-${Date.now()}`;
    const lines = [
      "type,source,message,occurred_at",
      `signup,web,${tag} a,2026-11-30T10:00:00Z`,
      `signup,web,${tag} b,not-a-time`,
      `signup,web,${tag} c,2026-11-30T10:00:00Z`,
    ];
    const uploadId = await upload("ada@acme.test", Buffer.from(lines.join("\n") + "\n"));
    const first = await startImport("ada@acme.test", { uploadId, dataset: "events" });
    await drainJobs();
    const failed = await getImport("ada@acme.test", first);
    assert.equal(failed.job.status, "failed");
    assert.equal(failed.counts.rejected, 1);
    assert.equal(failed.request.maxBadRows, 0);

    // Tried again strictly, it fails again; the first's day is over: its cleanup leaves the upload
    // to the later import, which may still be imported again.
    const second = await startImport("ada@acme.test", { uploadId, dataset: "events" });
    await drainJobs();
    assert.equal((await getImport("ada@acme.test", second)).job.status, "failed");
    await pool().query("UPDATE jobs SET finished_at = now() - interval '2 days' WHERE id = $1", [first]);
    await cleanupImports();
    const [firstRow] = (
      await pool().query<{ cleaned: boolean }>("SELECT cleaned_at IS NOT NULL AS cleaned FROM imports WHERE id = $1", [
        first,
      ])
    ).rows;
    assert.equal(firstRow?.cleaned, true);
    const [up] = (
      await pool().query<{ deleted_at: Date | null }>("SELECT deleted_at FROM uploads WHERE id = $1", [uploadId])
    ).rows;
    assert.equal(up?.deleted_at, null, "the upload is the later import's");

    const again = await startImport("ada@acme.test", {
      uploadId,
      dataset: "events",
      maxBadRows: failed.counts.rejected,
    });
    await drainJobs();
    const ok = await getImport("ada@acme.test", again);
    assert.equal(ok.job.status, "succeeded", ok.job.error?.message ?? "");
    assert.equal(ok.counts.inserted, 2);
    assert.equal(ok.counts.rejected, 1);

    const list = await api("ada@acme.test", "GET", "/api/v1/imports?status=failed&limit=100");
    assert.equal(list.status, 200);
    const shown = ((await list.json()) as { imports: ImportDto[] }).imports;
    assert.ok(shown.length > 0 && shown.every((i) => i.job.status === "failed"));
    const ids = shown.map((i) => i.job.id);
    assert.ok(ids.includes(first) && ids.includes(second) && !ids.includes(again));
    const wrong = await api("ada@acme.test", "GET", "/api/v1/imports?status=done");
    assert.equal(wrong.status, 400);
  });

  test("a file that is not what it claims fails in scan with a clear message", async () => {
    const cases: [string, Buffer, RegExp, Record<string, unknown>?][] = [
      ["binary", Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00, 0x08, 0x00]), /binary, not CSV/],
      ["not UTF-8", Buffer.from("type,source,message\nsignup,web,caf\xe9\n", "latin1"), /not UTF-8/],
      [
        "wrong columns",
        Buffer.from("kind,origin\na,b\n"),
        /header does not match events: unknown columns "kind", "origin"/,
      ],
      ["missing column", Buffer.from("type,message\na,b\n"), /missing column source/],
      [
        "broken quoting",
        Buffer.from('type,source,message\nsignup,web,"never closed\nx,y,z\n'),
        /Broken quoting: the quoted field opened on line 2 is never closed/,
      ],
      [
        "text after a quote",
        Buffer.from('type,source,message\nsignup,"web"x,hi\n'),
        /Broken quoting on line 2: text after a closing quote/,
      ],
      ["JSON Lines as CSV", Buffer.from('{"type":"a","source":"b","message":"c"}\n'), /looks like JSON Lines, not CSV/],
      [
        "CSV as JSON Lines",
        Buffer.from("type,source,message\na,b,c\n"),
        /not JSON Lines: line 1 is not a JSON object/,
        { format: "jsonl" },
      ],
      ["empty", Buffer.alloc(0), /empty|Upload-Length/],
    ];
    const before = await count("events", fx.p.acmeId);
    for (const [name, data, expected, extra] of cases) {
      if (data.length === 0) continue; // tus refuses an empty upload at creation? it is allowed; checked below
      const id = await startImport("ada@acme.test", {
        uploadId: await upload("ada@acme.test", data),
        dataset: "events",
        ...extra,
      });
      await drainJobs();
      const imp = await getImport("ada@acme.test", id);
      assert.equal(imp.job.status, "failed", name);
      assert.equal(imp.stages[0]!.status, "failed", `${name}: scan failed`);
      assert.match(imp.job.error?.message ?? "", expected, name);
    }
    assert.equal(await count("events", fx.p.acmeId), before, "nothing half-loaded");
  });

  test("a record longer than IMPORT_MAX_RECORD_BYTES fails in scan, naming the line it starts on", async () => {
    process.env.IMPORT_MAX_RECORD_BYTES = "1024";
    resetEnvCache();
    try {
      const long = "x".repeat(1_500);
      // A quoted record over several short lines is one record: its length counts them all.
      const quotedLines = Array.from({ length: 30 }, () => "y".repeat(60)).join("\n");
      const cases: [string, Buffer, RegExp, Record<string, unknown>?][] = [
        [
          "CSV",
          Buffer.from(`type,source,message\na,b,c\na,b,${long}\na,b,c\n`),
          /record on line 3 is longer than 1,024 bytes/,
        ],
        [
          "CSV, quoted newlines",
          Buffer.from(`type,source,message\na,b,c\na,b,c\na,b,"${quotedLines}"\na,b,c\n`),
          /record on line 4 is longer than 1,024 bytes \(IMPORT_MAX_RECORD_BYTES\)/,
        ],
        ["CSV, the last record without a newline", Buffer.from(`type,source,message\na,b,c\na,b,${long}`), /line 3/],
        [
          "JSON Lines",
          Buffer.from(`{"type":"a","source":"b","message":"c"}\n{"type":"a","source":"b","message":"${long}"}\n`),
          /record on line 2 is longer than 1,024 bytes/,
          { format: "jsonl" },
        ],
      ];
      for (const [name, data, expected, extra] of cases) {
        const id = await startImport("ada@acme.test", {
          uploadId: await upload("ada@acme.test", data),
          dataset: "events",
          ...extra,
        });
        await drainJobs();
        const imp = await getImport("ada@acme.test", id);
        assert.equal(imp.job.status, "failed", name);
        assert.equal(imp.stages[0]!.status, "failed", `${name}: scan failed`);
        assert.match(imp.job.error?.message ?? "", expected, name);
      }
      // At the limit it passes scan.
      const fits = "z".repeat(1_024 - "a,b,".length);
      const ok = await startImport("ada@acme.test", {
        uploadId: await upload("ada@acme.test", Buffer.from(`type,source,message\na,b,${fits}\n`)),
        dataset: "events",
      });
      await drainJobs();
      assert.equal((await getImport("ada@acme.test", ok)).stages[0]!.status, "succeeded");
    } finally {
      delete process.env.IMPORT_MAX_RECORD_BYTES;
      resetEnvCache();
    }
  });

  test("a stage whose input is gone fails for good, naming the stage (chunk: the parsed file; load: a chunk file), and nothing lands", async () => {
    const data = Buffer.from(
      "type,source,message\n" + Array.from({ length: 250 }, (_, i) => `t,s,m${i}`).join("\n") + "\n",
    );
    for (const [type, stage, gone, expected] of [
      ["import_chunk", 2, "cleanKey", /Stage chunk failed: The parsed file is gone; replay the import/],
      ["import_load_chunk", 3, "chunk", /Stage load failed: Chunk 1 failed: Chunk 1 is gone; replay the import/],
    ] as const) {
      const before = await count("events", fx.p.acmeId);
      const pause = await createPause(fx.p.root, { type, reason: `test: hold ${type}` });
      const id = await startImport("ada@acme.test", {
        uploadId: await upload("ada@acme.test", data),
        dataset: "events",
      });
      await drainJobs();
      const held = await getImport("ada@acme.test", id);
      // Take the stage's input away while it waits.
      if (gone === "cleanKey") {
        const parse = await pool().query<{ result: { cleanKey: string } }>("SELECT result FROM jobs WHERE id = $1", [
          held.stages[1]!.jobId,
        ]);
        await storage().delete(parse.rows[0]!.result.cleanKey);
      } else {
        const chunk = await pool().query<{ result: { chunks: { key: string }[] } }>(
          "SELECT result FROM jobs WHERE id = $1",
          [held.stages[2]!.jobId],
        );
        await storage().delete(chunk.rows[0]!.result.chunks[0]!.key);
      }
      await resumePause(fx.p.root, pause.id);
      await drainJobs();
      const failed = await getImport("ada@acme.test", id);
      assert.equal(failed.job.status, "failed", type);
      assert.equal(failed.stages[stage]!.status, "failed", type);
      assert.equal(failed.stages[stage]!.attempts, 1, `${type}: a permanent failure is not retried`);
      assert.match(failed.job.error?.message ?? "", expected);
      assert.equal(await count("events", fx.p.acmeId), before);
    }
    await cleanupImports();
    assert.equal(await stagingTables(), "0", "the failed load's staging table is dropped");
    // Failed imports keep their files and upload for a day (a replay may need them), but once their
    // staging table is gone the cleanup has nothing to do for them and does not read them again.
    const kept = await pool().query<{ staging_table: string | null; cleaned_at: Date | null }>(
      // (Those within their day: an earlier test ages one past it.)
      "SELECT staging_table, cleaned_at FROM imports i JOIN jobs j ON j.id = i.job_id WHERE j.status = 'failed' AND j.finished_at > now() - interval '1 day'",
    );
    assert.ok(kept.rows.length >= 2);
    for (const k of kept.rows) assert.deepEqual([k.staging_table, k.cleaned_at], [null, null]);
    assert.deepEqual(await cleanupImports(), { ran: true, staging: 0, imports: 0, parses: 0 });
  });

  test("a long statement stops at once when the attempt's signal fires (the commit's cancel)", async () => {
    const aborter = new AbortController();
    const started = Date.now();
    const run = inTransaction(async (tx) => {
      const stop = await cancelOnAbort(tx, aborter.signal);
      try {
        await tx.query("SELECT pg_sleep(20)");
      } finally {
        stop();
      }
    });
    setTimeout(() => aborter.abort(new Error("cancelled")), 300);
    await assert.rejects(run, /canceling statement due to user request/);
    assert.ok(Date.now() - started < 5_000, `stopped after ${Date.now() - started} ms`);
  });

  test("JSON Lines exported from Conveyor import back (orders upsert by id within the tenant)", async () => {
    const jsonl = await exported("orders", "jsonl");
    const n = jsonl.toString().trim().split("\n").length;
    const before = await count("orders", fx.p.acmeId);
    const id = await startImport("ada@acme.test", {
      uploadId: await upload("ada@acme.test", jsonl, "orders.jsonl"),
      dataset: "orders",
      format: "jsonl",
      mode: "upsert",
    });
    await drainJobs();
    const imp = await getImport("ada@acme.test", id);
    assert.equal(imp.job.status, "succeeded", imp.job.error?.message ?? "");
    assert.equal(imp.counts.updated, n);
    assert.equal(imp.counts.inserted, 0);
    assert.equal(await count("orders", fx.p.acmeId), before);
  });

  test("another tenant's import, errors file and upload answer 404", async () => {
    const data = Buffer.from("type,source,message\nsignup,web,hi\n");
    const adaUpload = await upload("ada@acme.test", data);
    const theft = await api("gus@globex.test", "POST", "/api/v1/imports", { uploadId: adaUpload, dataset: "events" });
    assert.equal(theft.status, 404);
    const id = await startImport("ada@acme.test", { uploadId: adaUpload, dataset: "events" });
    for (const url of [`/api/v1/imports/${id}`, `/api/v1/imports/${id}/errors`]) {
      assert.equal((await api("gus@globex.test", "GET", url)).status, 404, url);
    }
    assert.equal((await api("gus@globex.test", "POST", `/api/v1/imports/${id}/errors/links`, {})).status, 404);
    // A second import of an upload an open import holds is refused.
    const twice = await api("ada@acme.test", "POST", "/api/v1/imports", { uploadId: adaUpload, dataset: "events" });
    assert.equal(twice.status, 409);
    // Bad input names the field.
    const bad = await api("ada@acme.test", "POST", "/api/v1/imports", { uploadId: adaUpload, dataset: "planets" });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(await bad.json()), /dataset/);
    await drainJobs();
    const list = await api("gus@globex.test", "GET", "/api/v1/imports");
    assert.ok(!((await list.json()) as { imports: ImportDto[] }).imports.some((i) => i.job.id === id));
  });

  test("cancel mid-load: the import ends cancelled, its chunks stop, the staging table goes, nothing lands", async () => {
    const csv = await exported("events");
    const before = await count("events", fx.p.globexId);
    // Hold the chunk loads so the import sits inside its load stage.
    const pause = await createPause(fx.p.root, { type: "import_load_chunk", reason: "test: hold loads" });
    const id = await startImport("gus@globex.test", {
      uploadId: await upload("gus@globex.test", csv),
      dataset: "events",
    });
    await drainJobs();
    const mid = await getImport("gus@globex.test", id);
    assert.equal(mid.stages[3]!.status, "running", "waiting in load");
    assert.equal((await stagingTables()) !== "0", true, "the staging table exists");
    await cancelJob(fx.p.gina, id, { reason: "test" });
    // The import's cancel reaches the load stage, then its chunks: one reaper pass each.
    // (the reaper works in batches: as it does every second, again until every chunk ended)
    for (let pass = 0; pass < 6; pass++) await reap({ deadAfterMs: 60_000 });
    const after = await getImport("gus@globex.test", id);
    assert.equal(after.job.status, "cancelled");
    const open = await pool().query(
      `SELECT 1 FROM jobs WHERE type = 'import_load_chunk' AND parent_id = $1 AND status NOT IN ('cancelled', 'succeeded', 'failed')`,
      [mid.stages[3]!.jobId],
    );
    const states = await pool().query(
      `SELECT status, admitted_at IS NOT NULL AS admitted, cancel_requested_at IS NOT NULL AS asked FROM jobs WHERE parent_id = $1`,
      [mid.stages[3]!.jobId],
    );
    assert.equal(open.rowCount, 0, `every chunk ended: ${JSON.stringify(states.rows)}`);
    await cleanupImports();
    const left = await pool().query(`SELECT to_regclass($1) AS t`, [
      `import_staging.i_${mid.importId.replace(/-/g, "")}`,
    ]);
    assert.equal((left.rows[0] as { t: string | null }).t, null, "staging dropped");
    assert.equal(await count("events", fx.p.globexId), before);
    await resumePause(fx.p.root, pause.id);
  });

  test("replay of a failed import starts at the failed stage (load again: its staging did not outlive the end)", async () => {
    const data = Buffer.from("type,source,message\nsignup,web,one\nsignup,web,two\n");
    const before = await count("events", fx.p.acmeId);
    const id = await startImport("ada@acme.test", { uploadId: await upload("ada@acme.test", data), dataset: "events" });
    // Hold the commit, then take its staged rows away: the commit fails for good.
    const pause = await createPause(fx.p.root, { type: "import_commit", reason: "test: hold commits" });
    await drainJobs();
    const held = await getImport("ada@acme.test", id);
    assert.equal(held.stages[3]!.status, "succeeded");
    await pool().query(`DROP TABLE import_staging."i_${held.importId.replace(/-/g, "")}"`);
    await resumePause(fx.p.root, pause.id);
    await drainJobs();
    const failed = await getImport("ada@acme.test", id);
    assert.equal(failed.job.status, "failed");
    assert.match(failed.job.error?.message ?? "", /Stage commit failed: The staged rows are gone/);

    const replay = await replayJob(fx.p.oscar, id);
    await drainJobs();
    const done = await getImport("ada@acme.test", replay.id);
    assert.equal(done.job.status, "succeeded", done.job.error?.message ?? "");
    assert.equal(done.importId, failed.importId, "the same import");
    assert.equal(await count("events", fx.p.acmeId), before + 2);
    // The replay ran load and commit only: scan, parse and chunk were kept.
    const ran = await pool().query<{ type: string }>(
      `SELECT type FROM jobs WHERE parent_id = $1 ORDER BY child_index`,
      [replay.id],
    );
    assert.deepEqual(
      ran.rows.map((r) => r.type),
      ["import_load", "import_commit"],
    );
    assert.deepEqual(
      done.stages.map((s) => s.status),
      ["succeeded", "succeeded", "succeeded", "succeeded", "succeeded"],
    );
  });
});
