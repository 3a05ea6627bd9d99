/**
 * `npm run cli -- imports …` as a user runs it: the real CLI in a child process,
 * talking HTTP to a server. The server is the API's route handlers (uploads and
 * imports, the same functions Next.js calls) behind a small node:http adapter in
 * this process, and a real worker process (`npm run worker`) runs the imports.
 * (Starting Next itself needs a build: tests/integration/supervisor-crash.test.ts
 * pays for that once; the CLI only needs the routes.)
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import * as uploadsRoute from "@/app/api/v1/uploads/[[...path]]/route";
import * as importsRoute from "@/app/api/v1/imports/route";
import * as importRoute from "@/app/api/v1/imports/[id]/route";
import * as errorsRoute from "@/app/api/v1/imports/[id]/errors/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import type { ImportDto } from "@/lib/imports/service";
import { resetStorage } from "@/lib/storage";
import { resetUploadServer } from "@/lib/uploads/tus";
import { useTestDatabase } from "../helpers/db";
import { workerArgs } from "../helpers/worker";

// Uploads and the files imports make go to a directory of this file's own, shared with the worker.
const dataDir = mkdtempSync(path.join(tmpdir(), "conveyor-cli-imports-test-"));
process.env.CONVEYOR_DATA_DIR = dataDir;
process.env.IMPORT_CHUNK_ROWS = "100";
resetEnvCache();
resetStorage();
resetUploadServer();

let server: Server | undefined;
let worker: ChildProcess | undefined;
let workerLog = "";
// Registered before the database's own hook, so it runs first: the worker stops before its database goes.
after(async () => {
  if (worker && worker.exitCode === null) {
    worker.kill("SIGTERM");
    await once(worker, "exit");
  }
  server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const fx = useTestDatabase({
  seed: 0.001,
  setup: async () => {
    server = await serveApi();
    worker = spawn(process.execPath, workerArgs("--concurrency", "2"), {
      env: {
        ...process.env,
        DATABASE_URL: fx.database.url,
        CONVEYOR_DATA_DIR: dataDir,
        IMPORT_CHUNK_ROWS: "100",
        ADMISSION_SWEEP_MS: "100",
      },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    worker.stdout!.on("data", (d: Buffer) => (workerLog += d.toString()));
    worker.stderr!.on("data", (d: Buffer) => (workerLog += d.toString()));
  },
});

type Handler = (req: Request, ctx: { params: Promise<Record<string, unknown>> }) => Promise<Response>;

/** The route module and params of an API path, as Next.js's file-system router would find them. */
function routeOf(pathname: string): { mod: Record<string, unknown>; params: Record<string, unknown> } | null {
  const p = pathname.split("/").filter(Boolean);
  if (p[0] !== "api" || p[1] !== "v1") return null;
  if (p[2] === "uploads") return { mod: uploadsRoute, params: p.length > 3 ? { path: p.slice(3) } : {} };
  if (p[2] !== "imports") return null;
  if (p.length === 3) return { mod: importsRoute, params: {} };
  if (p.length === 4) return { mod: importRoute, params: { id: p[3] } };
  if (p.length === 5 && p[4] === "errors") return { mod: errorsRoute, params: { id: p[3] } };
  return null;
}

/** The uploads and imports routes behind a real HTTP server on the loopback: bodies stream both ways. */
function serveApi(): Promise<Server> {
  const srv = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url!, `http://${req.headers.host}`);
      const found = routeOf(url.pathname);
      const handler = found?.mod[req.method!] as Handler | undefined;
      if (!found || !handler) {
        res.writeHead(found ? 405 : 404, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ error: { code: "not_found", message: `No route ${req.method} ${url.pathname}` } }));
        return;
      }
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
      const hasBody = req.method === "POST" || req.method === "PATCH";
      const request = new Request(url, {
        method: req.method,
        headers,
        body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
        duplex: "half",
      } as RequestInit);
      const response = await handler(request, { params: Promise.resolve(found.params) });
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body && req.method !== "HEAD") {
        Readable.fromWeb(response.body as import("node:stream/web").ReadableStream).pipe(res);
      } else {
        res.end();
      }
    })().catch((err: Error) => {
      res.writeHead(500);
      res.end(err.message);
    });
  });
  return new Promise((resolve) => srv.listen(0, "127.0.0.1", () => resolve(srv)));
}

const base = () => `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;

type Run = { code: number | null; stdout: string; stderr: string };

/** `node --import tsx scripts/cli.ts imports …`, as `npm run cli -- imports …` runs it. */
async function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, CONVEYOR_URL: base(), ...env };
  // The CLI acts over HTTP only: nothing of the test's database or runner reaches it.
  for (const key of ["DATABASE_URL", "NODE_TEST_CONTEXT", "TEST_SERVER_URL", "TEST_TEMPLATE_DB"]) delete childEnv[key];
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/cli.ts", "imports", ...args], {
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, stdout, stderr };
}

const explain = (r: Run) =>
  `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}\n--- worker (last 3000)\n${workerLog.slice(-3000)}`;

const events = async (tenantId: string) =>
  Number(
    (await pool().query<{ n: string }>("SELECT count(*)::text AS n FROM events WHERE tenant_id = $1", [tenantId]))
      .rows[0]!.n,
  );
/**
 * The tenant's live uploads, less those whose import ended succeeded or cancelled: the worker's
 * periodic cleanup removes those whenever it runs, during a test or not (an earlier test's import).
 */
const liveUploads = async (tenantId: string) =>
  Number(
    (
      await pool().query<{ n: string }>(
        `SELECT count(*)::text AS n FROM uploads u
          WHERE u.tenant_id = $1 AND u.deleted_at IS NULL
            AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = u.import_job_id AND j.status IN ('succeeded', 'cancelled'))`,
        [tenantId],
      )
    ).rows[0]!.n,
  );

let token = "";
const tokenEnv = async () => {
  token ||= await createApiTokenForEmail("ada@acme.test", "cli-imports test");
  return { CONVEYOR_TOKEN: token };
};

/** An events CSV of `good` rows and `bad` rows (lines 8, 58, 108…) whose occurred_at is no time. */
function eventsCsv(name: string, good: number, bad: number, header = "type,source,message,occurred_at"): string {
  const lines = [header];
  let badLeft = bad;
  for (let i = 1; i <= good + bad; i++) {
    const at = i % 50 === 7 && badLeft-- > 0 ? "not a time" : "2026-11-30T12:00:00Z";
    lines.push(`cli_test,cli,"row ${i}, from the CLI",${at}`);
  }
  const file = path.join(dataDir, name);
  writeFileSync(file, lines.join("\n") + "\n");
  return file;
}

describe("npm run cli -- imports", { timeout: 180_000 }, () => {
  test("create --wait --json uploads, imports and prints the import as it ended; get, list and errors read it", async () => {
    const file = eventsCsv("events.csv", 250, 2);
    const before = await events(fx.p.acmeId);
    const r = await cli(["create", "--file", file, "--dataset", "events", "--max-bad-rows", "5", "--wait", "--json"], {
      ...(await tokenEnv()),
    });
    assert.equal(r.code, 0, explain(r));
    const imp = JSON.parse(r.stdout) as ImportDto; // nothing but the JSON on stdout
    assert.equal(imp.job.status, "succeeded", explain(r));
    assert.equal(r.stderr, "", "--json: no progress either");
    const landed = (await events(fx.p.acmeId)) - before;
    assert.equal(landed, 250, JSON.stringify({ counts: imp.counts, stages: imp.stages, file: imp.file }, null, 1));
    assert.equal(imp.counts.inserted, landed, "the printed counts are the rows in the database");
    assert.equal(imp.counts.rejected, 2);
    assert.equal(imp.counts.rowsRead, 252);
    assert.deepEqual(
      imp.stages.map((s) => [s.name, s.status]),
      ["scan", "parse", "chunk", "load", "commit"].map((n) => [n, "succeeded"]),
    );
    assert.equal(imp.errorsFile?.rows, 2);
    const { rows } = await pool().query<{ n: string }>(
      "SELECT count(*)::text AS n FROM events WHERE tenant_id = $1 AND type = 'cli_test' AND source = 'cli'",
      [fx.p.acmeId],
    );
    assert.equal(Number(rows[0]!.n), 250);

    const got = await cli(["get", imp.job.id, "--json"], await tokenEnv());
    assert.equal(got.code, 0, explain(got));
    assert.deepEqual((JSON.parse(got.stdout) as ImportDto).counts, imp.counts);
    const human = await cli(["get", imp.job.id], await tokenEnv());
    assert.equal(human.code, 0, explain(human));
    assert.match(human.stdout, new RegExp(`Import ${imp.job.id}: succeeded`));
    assert.match(human.stdout, /252 rows read, 250 inserted, 0 updated, 2 rejected/);
    assert.match(human.stdout, /^\s+commit\s+succeeded\s+250 \/ 250 rows/m);

    const listed = await cli(["list", "--json"], await tokenEnv());
    assert.equal(listed.code, 0, explain(listed));
    assert.ok((JSON.parse(listed.stdout) as { imports: ImportDto[] }).imports.some((i) => i.job.id === imp.job.id));

    const out = path.join(dataDir, "errors.csv");
    const errs = await cli(["errors", imp.job.id, "--out", out], await tokenEnv());
    assert.equal(errs.code, 0, explain(errs));
    const csv = readFileSync(out, "utf8").trim().split("\n");
    assert.equal(csv[0], "line,column,reason,value");
    assert.equal(csv.length, 3, csv.join("\n"));
    assert.match(csv[1]!, /occurred_at/);
    const toStdout = await cli(["errors", imp.job.id], await tokenEnv());
    assert.equal(toStdout.stdout, readFileSync(out, "utf8"));
  });

  test("create --wait follows the stages and, for a failed import, exits 1 printing its error in one line", async () => {
    const file = eventsCsv("bad-header.csv", 10, 0, "type,source,mesage");
    const before = await events(fx.p.acmeId);
    const r = await cli(["create", "--file", file, "--dataset", "events", "--wait"], await tokenEnv());
    assert.equal(r.code, 1, explain(r));
    assert.match(
      r.stdout,
      /^Import [0-9a-f-]{36} queued: http:\/\/127\.0\.0\.1:\d+\/api\/v1\/imports\/[0-9a-f-]{36}$/m,
    );
    assert.match(r.stdout, /^Import [0-9a-f-]{36} failed/m);
    assert.match(r.stderr, /^Uploading bad-header\.csv: 100% /m, "not a TTY: progress in lines");
    assert.match(r.stderr, /^scan\s+(running|failed)/m, "the stages as they change");
    const errorLines = r.stderr.split("\n").filter((l) => l.startsWith("Stage "));
    assert.equal(errorLines.length, 1, explain(r));
    assert.match(errorLines[0]!, /^Stage scan failed: .*mesage/);
    assert.equal(await events(fx.p.acmeId), before);
  });

  test("refusals are one line on stderr and a non-zero exit; a refused import gives its upload back", async () => {
    const file = eventsCsv("few.csv", 3, 0);
    const uploads = await liveUploads(fx.p.acmeId);
    const tooMany = await cli(
      ["create", "--file", file, "--dataset", "events", "--max-bad-rows", "2000000000"],
      await tokenEnv(),
    );
    assert.equal(tooMany.code, 1, explain(tooMany));
    const lines = tooMany.stderr.trim().split("\n");
    assert.deepEqual(
      lines.filter((l) => !/^Upload(ing|ed) few\.csv/.test(l)).length,
      1,
      `the upload's progress, then the error in one line: ${explain(tooMany)}`,
    );
    assert.match(
      tooMany.stderr,
      /^The import was refused: Invalid input: maxBadRows: must be at most 1000000000 \(HTTP 400 invalid_input; fields: maxBadRows\)$/m,
    );
    assert.equal(await liveUploads(fx.p.acmeId), uploads, "the upload was terminated");

    const badToken = await cli(["create", "--file", file, "--dataset", "events"], { CONVEYOR_TOKEN: "cvy_nope" });
    assert.equal(badToken.code, 1, explain(badToken));
    assert.match(badToken.stderr.trim(), /^The upload of few\.csv failed: .*\(HTTP 401 unauthorized\)$/);

    const missing = await cli(["create", "--file", path.join(dataDir, "nope.csv"), "--dataset", "events"], {
      ...(await tokenEnv()),
    });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr.trim(), /^\S+nope\.csv: no such file$/);

    const noToken = await cli(["list"], { CONVEYOR_TOKEN: "" });
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr.trim(), /^no API token: pass --token or set CONVEYOR_TOKEN/);

    const unknown = await cli(["get", "00000000-0000-4000-8000-000000000000"], await tokenEnv());
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr.trim(), /^Cannot get the import: .*\(HTTP 404 not_found\)$/);

    const help = await cli(["create", "--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--max-bad-rows N/);
  });
});
