import { after, afterEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { setTimeout as sleep } from "node:timers/promises";
import * as tus from "tus-js-client";
import * as route from "@/app/api/v1/uploads/[[...path]]/route";
import { forgetRefusals } from "@/lib/auth/rate-limit";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { inTransaction, pool } from "@/lib/db";
import { resetEnvCache, uploadStorageDir } from "@/lib/env";
import { requestExport } from "@/lib/exports/service";
import { checkQuotas } from "@/lib/tenants/quotas";
import {
  claimUploadForImport,
  cleanupUploads,
  findUpload,
  openUpload,
  removeUpload,
  touchUpload,
  type UploadDto,
} from "@/lib/uploads/service";
import { resetUploadServer } from "@/lib/uploads/tus";
import { useTestDatabase } from "../helpers/db";
import { isCode } from "../helpers/fixtures";

// The uploads' bytes go to a directory of this file's own.
const dataDir = mkdtempSync(path.join(tmpdir(), "conveyor-uploads-test-"));
process.env.CONVEYOR_DATA_DIR = dataDir;
resetEnvCache();
resetUploadServer();
after(() => rmSync(dataDir, { recursive: true, force: true }));

const fx = useTestDatabase({ seed: 0.001 });

afterEach(async () => {
  delete process.env.UPLOAD_MAX_BYTES;
  resetEnvCache();
  await pool().query("DELETE FROM rate_limits");
  forgetRefusals();
});

type Method = "POST" | "HEAD" | "PATCH" | "DELETE" | "GET" | "OPTIONS";
const b64 = (s: string) => Buffer.from(s).toString("base64");

/** A request to the uploads route, called in-process like Next.js calls it. */
async function call(
  method: Method,
  opts: { token?: string; id?: string; headers?: Record<string, string>; body?: BodyInit; tus?: boolean } = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...(opts.tus === false ? {} : { "Tus-Resumable": "1.0.0" }) };
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  const req = new Request(`http://test/api/v1/uploads${opts.id ? `/${opts.id}` : ""}`, {
    method,
    headers: { ...headers, ...opts.headers },
    body: opts.body,
    ...(opts.body instanceof ReadableStream ? { duplex: "half" } : {}),
  } as RequestInit);
  return route[method](req, { params: Promise.resolve(opts.id ? { path: [opts.id] } : {}) });
}

async function create(token: string, size: number, filename = "data.csv"): Promise<string> {
  const res = await call("POST", {
    token,
    headers: {
      "Upload-Length": String(size),
      "Upload-Metadata": `filename ${b64(filename)},filetype ${b64("text/csv")}`,
    },
  });
  assert.equal(res.status, 201, await res.clone().text());
  const location = res.headers.get("location")!;
  assert.match(location, /^\/api\/v1\/uploads\/[A-Za-z0-9_-]{32}$/, "a relative Location ending in the upload id");
  return location.split("/").pop()!;
}

const patch = (token: string, id: string, offset: number, body: BodyInit, headers: Record<string, string> = {}) =>
  call("PATCH", {
    token,
    id,
    body,
    headers: { "Upload-Offset": String(offset), "Content-Type": "application/offset+octet-stream", ...headers },
  });

const offsetOf = async (token: string, id: string) => {
  const res = await call("HEAD", { token, id });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("cache-control"), "no-store");
  return Number(res.headers.get("upload-offset"));
};

const errorOf = async (res: Response) =>
  ((await res.json()) as { error: { code: string; message: string; details?: Record<string, unknown> } }).error;

const row = async (id: string) =>
  (
    await pool().query<{
      received: string;
      completed_at: Date | null;
      deleted_at: Date | null;
      import_job_id: string | null;
    }>("SELECT received, completed_at, deleted_at, import_job_id FROM uploads WHERE id = $1", [id])
  ).rows[0];

/**
 * A body that sends `first`, then fails as a dropped connection does: once the server has taken
 * `first` (an error before that would discard it unread, however slow the server was to start).
 */
function droppedAfter(first: Buffer): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new Uint8Array(first));
    },
    async pull(controller) {
      await sleep(100);
      controller.error(new Error("connection reset"));
    },
  });
}

describe("uploads (tus 1.0)", () => {
  test("create, a PATCH cut off, HEAD, resume from the offset, complete: the bytes read back equal", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "uploads");
    const data = randomBytes(1024 * 1024 + 17);
    const id = await create(token, data.length);
    assert.equal((await findUpload(fx.p.ada, id)).filename, "data.csv");
    assert.equal(await offsetOf(token, id), 0);

    // The first PATCH loses its connection part of the way.
    const cut = await patch(token, id, 0, droppedAfter(data.subarray(0, 300_000))).catch(() => null);
    if (cut) assert.ok(cut.status < 500, `a dropped connection is no server error (${cut.status})`);
    const resumeAt = await offsetOf(token, id);
    assert.ok(resumeAt > 0 && resumeAt <= 300_000, `what arrived is kept (${resumeAt})`);
    assert.equal(Number((await row(id))!.received), resumeAt, "received follows the offset");
    assert.equal((await row(id))!.completed_at, null);

    // Resuming from a wrong offset is refused; from the right one, it completes.
    const wrong = await patch(token, id, 0, data.subarray(0, 10));
    assert.equal(wrong.status, 409);
    assert.match((await errorOf(wrong)).message, /HEAD for the offset/);
    const rest = await patch(token, id, resumeAt, data.subarray(resumeAt));
    assert.equal(rest.status, 204, await rest.clone().text());
    assert.equal(rest.headers.get("upload-offset"), String(data.length));
    assert.equal(rest.headers.get("tus-resumable"), "1.0.0");

    const done = (await row(id))!;
    assert.ok(done.completed_at, "completed_at is set");
    assert.equal(Number(done.received), data.length);
    const opened = await openUpload(id);
    assert.equal(opened.size, data.length);
    assert.deepEqual(await buffer(opened.stream), data);

    const list = await route.GET(
      new Request("http://test/api/v1/uploads", { headers: { Authorization: `Bearer ${token}` } }),
      {
        params: Promise.resolve({}),
      },
    );
    const { uploads } = (await list.json()) as { uploads: UploadDto[] };
    const listed = uploads.find((u) => u.id === id)!;
    assert.equal(listed.complete, true);
    assert.equal(listed.size, data.length);
    assert.equal(listed.contentType, "text/csv");
    assert.equal(listed.url, `/api/v1/uploads/${id}`);
  });

  test("tus-js-client uploads in chunks over HTTP, resolving the relative Location", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "tus-js");
    const server = await serveRoute();
    try {
      const { port } = server.address() as { port: number };
      const data = randomBytes(700_000);
      const url = await new Promise<string>((resolve, reject) => {
        const upload = new tus.Upload(data, {
          endpoint: `http://127.0.0.1:${port}/api/v1/uploads`,
          chunkSize: 256 * 1024,
          retryDelays: [],
          headers: { Authorization: `Bearer ${token}` },
          metadata: { filename: "client.bin", filetype: "application/octet-stream" },
          onError: reject,
          onSuccess: () => resolve(upload.url!),
        });
        upload.start();
      });
      const id = url.split("/").pop()!;
      assert.equal(url, `http://127.0.0.1:${port}/api/v1/uploads/${id}`);
      assert.deepEqual(await buffer((await openUpload(id)).stream), data);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("termination removes the bytes and the upload; it answers 404 after", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "terminate");
    const id = await create(token, 1000);
    assert.equal((await patch(token, id, 0, randomBytes(400))).status, 204);
    assert.ok(existsSync(path.join(uploadStorageDir(), id)));
    const del = await call("DELETE", { token, id });
    assert.equal(del.status, 204);
    assert.ok((await row(id))!.deleted_at, "marked deleted");
    assert.ok(!existsSync(path.join(uploadStorageDir(), id)), "the bytes are gone");
    assert.equal((await call("HEAD", { token, id })).status, 404);
    assert.equal((await call("DELETE", { token, id })).status, 404);
    await assert.rejects(openUpload(id), isCode("not_found"));
  });

  test("another tenant's upload answers 404 to HEAD, PATCH, DELETE and GET; no credentials 401", async () => {
    const ada = await createApiTokenForEmail("ada@acme.test", "mine");
    const gus = await createApiTokenForEmail("gus@globex.test", "theirs");
    const id = await create(ada, 100);
    assert.equal((await patch(ada, id, 0, randomBytes(50))).status, 204);
    for (const res of [
      await call("HEAD", { token: gus, id }),
      await patch(gus, id, 50, randomBytes(50)),
      await call("DELETE", { token: gus, id }),
      await call("GET", { token: gus, id }),
      await call("HEAD", { token: ada, id: "x".repeat(32) }),
      await call("HEAD", { token: ada, id: "../../etc/passwd" }),
    ]) {
      assert.equal(res.status, 404);
      assert.equal(res.headers.get("tus-resumable") ?? "1.0.0", "1.0.0");
    }
    await assert.rejects(findUpload(fx.p.gus, id), isCode("not_found"));
    assert.equal(await offsetOf(ada, id), 50, "untouched");
    assert.equal((await call("GET", { token: ada, id })).status, 200);

    // (A request with no credentials at all reads the session cookie through Next.js's request
    // scope, which an in-process call does not have; the same 401 answers then, tried on `npm start`.)
    const unknown = await call("POST", {
      token: "cvy_nope",
      headers: { "Upload-Length": "10", "Upload-Metadata": `filename ${b64("a")}` },
    });
    assert.equal(unknown.status, 401);
    assert.equal(unknown.headers.get("tus-resumable"), "1.0.0");
    assert.equal((await errorOf(unknown)).code, "unauthorized");
    assert.equal((await call("HEAD", { token: "cvy_nope", id })).status, 401);
    assert.equal((await call("PATCH", { id, headers: { Authorization: "Basic eDp5" } })).status, 401);
  });

  test("bad input answers the protocol's 4xx with a message, never a 500", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "bad");
    process.env.UPLOAD_MAX_BYTES = "1000";
    resetEnvCache();
    const tooBig = await call("POST", {
      token,
      headers: { "Upload-Length": "1001", "Upload-Metadata": `filename ${b64("big.bin")}` },
    });
    assert.equal(tooBig.status, 413);
    const e = await errorOf(tooBig);
    assert.equal(e.code, "payload_too_large");
    assert.match(e.message, /at most 1000 bytes \(UPLOAD_MAX_BYTES\)/);
    const options = await call("OPTIONS", { tus: false });
    assert.equal(options.status, 204);
    assert.equal(options.headers.get("tus-max-size"), "1000");
    assert.equal(options.headers.get("tus-version"), "1.0.0");
    assert.doesNotMatch(options.headers.get("tus-extension")!, /creation-defer-length|expiration/);

    const cases: { name: string; res: Response; status: number; says: RegExp }[] = [];
    const add = async (name: string, res: Promise<Response>, status: number, says: RegExp) =>
      cases.push({ name, res: await res, status, says });
    await add("no filename", call("POST", { token, headers: { "Upload-Length": "10" } }), 400, /filename/);
    await add(
      "no Upload-Length",
      call("POST", { token, headers: { "Upload-Metadata": `filename ${b64("a")}` } }),
      400,
      /Upload-Length/,
    );
    await add(
      "deferred length",
      call("POST", { token, headers: { "Upload-Defer-Length": "1", "Upload-Metadata": `filename ${b64("a")}` } }),
      400,
      /Upload-Length/,
    );
    await add(
      "bad metadata",
      call("POST", { token, headers: { "Upload-Length": "10", "Upload-Metadata": "filename !!!,," } }),
      400,
      /Upload-Metadata/i,
    );
    await add(
      "no Tus-Resumable",
      call("POST", {
        token,
        tus: false,
        headers: { "Upload-Length": "10", "Upload-Metadata": `filename ${b64("a")}` },
      }),
      412,
      /Tus-Resumable/,
    );
    await add(
      "an old Tus-Resumable",
      call("POST", { token, headers: { "Tus-Resumable": "0.2.2", "Upload-Length": "10" } }),
      412,
      /0\.2\.2 is not supported/,
    );
    const id = await create(token, 10);
    await add("an offset that is no number", patch(token, id, 0, "x", { "Upload-Offset": "abc" }), 400, /offset/i);
    await add(
      "no Upload-Offset",
      call("PATCH", { token, id, body: "x", headers: { "Content-Type": "application/offset+octet-stream" } }),
      400,
      /Upload-Offset/,
    );
    await add("a wrong Content-Type", patch(token, id, 0, "x", { "Content-Type": "text/plain" }), 415, /Content-Type/);
    await add("more bytes than declared", patch(token, id, 0, "x".repeat(11)), 413, /size/i);
    await add("an offset past what arrived", patch(token, id, 5, "x"), 409, /Upload-Offset/);
    for (const c of cases) {
      assert.equal(c.res.status, c.status, `${c.name}: ${c.res.status}`);
      assert.equal(c.res.headers.get("tus-resumable"), "1.0.0", c.name);
      assert.match((await errorOf(c.res)).message, c.says, c.name);
    }
    assert.equal(cases[4]!.res.headers.get("tus-version"), "1.0.0", "412 names the versions spoken");
    const live = await pool().query(
      "SELECT count(*)::int AS n FROM uploads WHERE deleted_at IS NULL AND filename = 'big.bin'",
    );
    assert.equal(live.rows[0].n, 0, "a refused creation records nothing");
  });

  test("uploads count against the tenant's stored bytes: a creation past the quota answers 429", async () => {
    const gina = await createApiTokenForEmail("gina@globex.test", "quota");
    await pool().query("UPDATE uploads SET deleted_at = now() WHERE tenant_id = $1", [fx.p.globexId]);
    await pool().query("UPDATE tenants SET quota_export_bytes = 5000 WHERE id = $1", [fx.p.globexId]);
    try {
      const first = await create(gina, 4000);
      const over = await call("POST", {
        token: gina,
        headers: { "Upload-Length": "2000", "Upload-Metadata": `filename ${b64("more.csv")}` },
      });
      assert.equal(over.status, 429);
      assert.equal(over.headers.get("tus-resumable"), "1.0.0");
      const e = await errorOf(over);
      assert.equal(e.code, "quota_exceeded");
      assert.deepEqual(e.details, { quota: "export_bytes", limit: 5000, used: 4000 });
      await create(gina, 1000); // exactly up to the quota is fine
      // checkQuotas (a new export) sees the uploads too.
      await assert.rejects(checkQuotas(fx.p.globexId, null, { exportBytes: true }), isCode("quota_exceeded"));
      await removeUpload(first);
      await checkQuotas(fx.p.globexId, null, { exportBytes: true });
    } finally {
      await pool().query("UPDATE tenants SET quota_export_bytes = NULL WHERE id = $1", [fx.p.globexId]);
    }
  });

  test("an import claims a complete upload once; claimed, it can no longer be changed or deleted", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "claim");
    const id = await create(token, 20);
    assert.equal((await patch(token, id, 0, "0123456789")).status, 204);
    const { job: first } = await requestExport(fx.p.ada, { dataset: "customers" });
    const { job: second } = await requestExport(fx.p.ada, { dataset: "orders" });
    const claim = (jobId: string, tenantId = fx.p.acmeId, uploadId = id) =>
      inTransaction((tx) => claimUploadForImport(tx, tenantId, uploadId, jobId));

    await assert.rejects(claim(first.id), (e: unknown) => {
      assert.ok(isCode("conflict")(e));
      assert.match((e as Error).message, /not complete \(10 of 20 bytes\)/);
      return true;
    });
    assert.equal((await patch(token, id, 10, "0123456789")).status, 204);
    await assert.rejects(claim(first.id, fx.p.globexId), isCode("not_found"), "another tenant's");
    await assert.rejects(claim(first.id, fx.p.acmeId, "nope"), isCode("not_found"));
    const claimed = await claim(first.id);
    assert.equal(claimed.importJobId, first.id);
    assert.ok(claimed.completedAt);
    await claim(first.id); // again, the same job: fine
    await assert.rejects(claim(second.id), isCode("conflict"), "another import while the first is open");

    for (const res of [await patch(token, id, 20, "x"), await call("DELETE", { token, id })]) {
      assert.equal(res.status, 409);
      assert.match((await errorOf(res)).message, /import job .* took it/);
    }
    assert.equal((await call("HEAD", { token, id })).status, 200, "it can still be looked at");

    await pool().query("UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE id = $1", [first.id]);
    assert.equal((await claim(second.id)).importJobId, second.id, "the first import ended: the next may take it");
  });

  test("the cleanup removes uploads unused for UPLOAD_UNUSED_HOURS and those of ended imports, and keeps fresh ones", async () => {
    const token = await createApiTokenForEmail("oscar@acme.test", "cleanup");
    const stale = await create(token, 10);
    const fresh = await create(token, 10);
    const imported = await create(token, 3);
    assert.equal((await patch(token, imported, 0, "abc")).status, 204);
    const { job } = await requestExport(fx.p.oscar, { dataset: "customers" });
    await inTransaction((tx) => claimUploadForImport(tx, fx.p.acmeId, imported, job.id));
    await pool().query("UPDATE uploads SET last_used_at = now() - interval '25 hours' WHERE id = $1", [stale]);
    await pool().query("UPDATE uploads SET last_used_at = now() - interval '23 hours' WHERE id = $1", [fresh]);
    await touchUpload(fresh); // an import reading it keeps it

    const removedIds = async () => {
      const { removed } = await cleanupUploads();
      assert.ok(removed >= 1);
      return (await pool().query<{ id: string }>("SELECT id FROM uploads WHERE deleted_at IS NOT NULL")).rows.map(
        (r) => r.id,
      );
    };
    let removed = await removedIds();
    assert.ok(removed.includes(stale), "unused for 25 hours: removed");
    assert.ok(!removed.includes(fresh), "used just now: kept");
    assert.ok(!removed.includes(imported), "its import is still open: kept");
    assert.ok(!existsSync(path.join(uploadStorageDir(), stale)), "with its bytes");
    assert.ok(existsSync(path.join(uploadStorageDir(), fresh)));

    await pool().query("UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE id = $1", [job.id]);
    removed = await removedIds();
    assert.ok(removed.includes(imported), "its import ended: removed");
    assert.ok(!existsSync(path.join(uploadStorageDir(), imported)));
    await removeUpload(imported); // idempotent
    assert.equal((await cleanupUploads()).removed, 0);
  });
});

/** The uploads route behind a real HTTP server, for an HTTP client (tus-js-client). */
function serveRoute(): Promise<Server> {
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url!, `http://${req.headers.host}`);
      const id = url.pathname.split("/")[4];
      const method = req.method as Method;
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
      const hasBody = method === "POST" || method === "PATCH";
      const request = new Request(url, {
        method,
        headers,
        body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
        duplex: "half",
      } as RequestInit);
      const response = await route[method](request, { params: Promise.resolve(id ? { path: [id] } : {}) });
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    })().catch((err: Error) => {
      res.writeHead(500);
      res.end(err.message);
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}
