/**
 * npm run bench:export [-- --sizes 1000000,10000000 --runs 3 --large-runs 3 --split]
 * Exports Acme's events the way a user does, through the product as `npm start`
 * runs it (a scratch database, default settings): POST /api/v1/exports, then
 * GET /api/v1/jobs/{id} every 25 ms until it ended. The clock runs from the
 * request to `succeeded`. In the same run, for each size, the baselines:
 *   CSV, JSONL:         psql \copy of the same statement to /dev/null, and (a second line: the
 *                       same work, a file written) to a file beside the export's, then deleted
 *   CSV+gzip, JSONL+gzip: psql \copy … to stdout | gzip -1 > /dev/null
 *   gzip stage:         bare Node gzip (level 1) over the CSV export's bytes, against
 *                       our stage (gzip → sha256 → file) over the same bytes
 * One line per size, so the growth from 1M to 10M rows is visible, and the peak
 * RSS (VmHWM) of each worker process, started afresh for each size.
 * `--split` also times an export asked to split into 4 parts (`partRows`).
 */
import { execFile } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseArgs, promisify } from "node:util";
import { createGzip } from "node:zlib";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { db, pool } from "@/lib/db";
import { exportSettings } from "@/lib/exports/settings";
import { buildCopyStatement, buildExportQuery } from "@/lib/exports/datasets";
import { createExportTransforms } from "@/lib/exports/stream";
import { resetStorage, storage } from "@/lib/storage";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { q, startProduct, stopProduct, workerPeaks } from "./harness";
import "@/lib/workloads";

const run = promisify(execFile);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

async function timeIt(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

type Request = { format: "csv" | "jsonl"; compression: "none" | "gzip"; partRows?: number };

/** POST → succeeded through the API; returns the seconds, the file's storage key and its rows. */
async function exportThroughApi(base: string, token: string, req: Request) {
  const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
  const t0 = performance.now();
  const res = await fetch(`${base}/api/v1/exports`, {
    method: "POST",
    headers,
    body: JSON.stringify({ dataset: "events", ...req }),
  });
  if (res.status !== 202) throw new Error(`POST /api/v1/exports answered ${res.status}: ${await res.text()}`);
  const { id } = (await res.json()) as { id: string };
  // Followed as the console follows it: the job's event stream, which ends after its terminal snapshot.
  const seconds = await followToEnd(base, headers, id, t0);
  const { status } = (await (await fetch(`${base}/api/v1/jobs/${id}`, { headers })).json()) as { status: string };
  if (status !== "succeeded") throw new Error(`export ${id} ended ${status}`);
  const file = await db().exportFile.findFirstOrThrow({ where: { jobId: id } });
  const parts = await db().job.count({ where: { parentId: id } });
  // Where the time went: created → first claim, and the attempt's run (the rest is the request and the polling).
  const job = await db().job.findUniqueOrThrow({ where: { id }, select: { createdAt: true } });
  const attempts = await db().jobAttempt.findMany({ where: { jobId: id }, orderBy: { startedAt: "asc" } });
  const claim = (attempts[0]!.startedAt.getTime() - job.createdAt.getTime()) / 1000;
  const ran = attempts.reduce((a, t) => a + (t.durationMs ?? 0), 0) / 1000;
  return { id, seconds, key: file.storageKey, rows: Number(file.rowCount), parts, claim, ran };
}

const TERMINAL = new Set(["succeeded", "failed", "cancelled", "expired"]);

/**
 * Reads GET /api/v1/jobs/{id}/events until the job's status is terminal (or the stream ends):
 * the seconds since `t0` when that frame arrived. (Polling every 25 ms instead cost the server
 * a request per poll, on the cores the export and Postgres share; a user's page does not poll.)
 */
async function followToEnd(base: string, headers: Record<string, string>, id: string, t0: number): Promise<number> {
  const res = await fetch(`${base}/api/v1/jobs/${id}/events`, { headers });
  if (res.status !== 200 || !res.body) throw new Error(`GET /api/v1/jobs/${id}/events answered ${res.status}`);
  const decoder = new TextDecoder();
  let buffered = "";
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffered.indexOf("\n\n")) >= 0) {
      const frame = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = frame.split("\n").find((l) => l.startsWith("data: "));
      const status = data && (JSON.parse(data.slice(6)) as { status?: string }).status;
      if (status && TERMINAL.has(status)) {
        const seconds = (performance.now() - t0) / 1000;
        await reader.cancel().catch(() => {});
        return seconds;
      }
    }
  }
  return (performance.now() - t0) / 1000;
}

async function deleteExport(base: string, token: string, id: string) {
  const r = await fetch(`${base}/api/v1/exports/${id}`, {
    method: "DELETE",
    headers: { Authorization: `Bearer ${token}` },
  });
  if (r.status !== 204) throw new Error(`DELETE /api/v1/exports/${id} answered ${r.status}`);
}

/** Grows Acme's events to `target` rows by copying its existing ones (same shapes, older times). */
async function growEvents(tenantId: string, target: number): Promise<void> {
  const n = (await q<{ n: number }>("SELECT count(*)::int AS n FROM events WHERE tenant_id = $1", [tenantId]))[0]!.n;
  if (n >= target) return;
  const copies = Math.ceil((target - n) / n);
  await q(
    `INSERT INTO events (tenant_id, customer_id, type, source, payload, message, occurred_at)
     SELECT e.tenant_id, e.customer_id, e.type, e.source, e.payload, e.message, e.occurred_at - make_interval(years => k)
     FROM generate_series(1, $2::int) k, LATERAL (SELECT * FROM events WHERE tenant_id = $1 ORDER BY id) e
     LIMIT $3`,
    [tenantId, copies, target - n],
  );
  await q("VACUUM (ANALYZE) events");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: "string", default: "3" },
      "large-runs": { type: "string" },
      sizes: { type: "string", default: "1000000,10000000" },
      split: { type: "boolean", default: false },
    },
  });
  const runs = Math.max(1, Number(values.runs));
  const largeRuns = Math.max(1, Number(values["large-runs"] ?? runs));
  const sizes = values.sizes
    .split(",")
    .map(Number)
    .sort((a, b) => a - b);
  if (!sizes.every((s) => s >= 10_000 && s <= 100_000_000)) throw new Error("--sizes: from 10,000 to 100,000,000");
  const dir = await mkdtemp(path.join(tmpdir(), "conveyor-bench-export-"));
  process.env.EXPORT_STORAGE_DIR = path.join(dir, "exports");
  resetStorage();
  const lines: string[] = [];
  try {
    await withScratchDatabase("conveyor_bench_export", async ({ url }) => {
      // Acme's events are a million per seed scale unit; larger sizes copy them.
      await seed(sizes[0]! / 1_000_000);
      const acme = await db().tenant.findUniqueOrThrow({ where: { slug: "acme" } });
      const token = await createApiTokenForEmail("ada@acme.test", "bench:export");
      for (const size of sizes) {
        await growEvents(acme.id, size);
        lines.push(
          ...(await measure(url, acme.id, token, size, size > sizes[0]! ? largeRuns : runs, values.split, dir)),
        );
      }
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  console.log(
    `\nExport benchmark: Acme's events through the API (npm start, default settings), gzip level ${exportSettings().EXPORT_GZIP_LEVEL}; ratio = baseline seconds ÷ ours (1.0: as fast)\n`,
  );
  console.log(
    "| rows | runs | CSV vs psql \\copy | JSONL vs psql \\copy | CSV+gzip vs psql \\| gzip -1 | JSONL+gzip vs psql \\| gzip -1 | gzip stage vs Node gzip -1 | worker peak RSS (VmHWM) | CSV / JSONL vs psql \\copy to a file |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const l of lines) console.log(l);
}

async function measure(
  url: string,
  tenantId: string,
  token: string,
  size: number,
  runs: number,
  split: boolean,
  dir: string,
): Promise<string[]> {
  const client = await pool().connect();
  const select = buildExportQuery(tenantId, { dataset: "events" }, (v) => client.escapeLiteral(v));
  client.release();
  const psqlEnv = { ...process.env, PGTZ: "UTC", PGDATESTYLE: "ISO, YMD" };
  const copyOf = (format: "csv" | "jsonl", target: string) =>
    buildCopyStatement(select, format)
      .replace(/^COPY /, "\\copy ")
      .replace(" TO STDOUT ", ` TO ${target} `);
  const psql = (format: "csv" | "jsonl") => () =>
    run("psql", [url, "-X", "-q", "-c", copyOf(format, "'/dev/null'")], { env: psqlEnv });
  const psqlFile = (format: "csv" | "jsonl") => async () => {
    const file = path.join(process.env.EXPORT_STORAGE_DIR!, `psql-baseline.${format}`);
    await run("psql", [url, "-X", "-q", "-c", copyOf(format, `'${file}'`)], { env: psqlEnv });
    await rm(file, { force: true });
  };
  const psqlGzip = (format: "csv" | "jsonl") => () =>
    run("sh", ["-c", `psql "$URL" -X -q -c "$STMT" | gzip -1 > /dev/null`], {
      env: { ...psqlEnv, URL: url, STMT: copyOf(format, "STDOUT") },
      maxBuffer: 1 << 20,
    });
  const storageDir = process.env.EXPORT_STORAGE_DIR!;
  const gzipBare = (file: string) =>
    pipeline(
      createReadStream(file, { highWaterMark: 256 * 1024 }),
      createGzip({ level: 1 }),
      new Writable({ write: (_c, _e, cb) => cb() }),
    );
  // Our compression stage alone: the export's transforms (gathering, gzip) and storage write (sha256 → file).
  const gzipStage = async (file: string) => {
    const { transforms } = createExportTransforms({ format: "csv", compression: "gzip" });
    await storage().write(
      `bench/stage-${process.pid}.csv.gz`,
      createReadStream(file, { highWaterMark: 256 * 1024 }),
      transforms,
    );
  };

  const { base, child } = await startProduct(url, { CONVEYOR_DATA_DIR: path.join(dir, "data") });
  const r = {
    psqlCsv: [] as number[],
    csv: [] as number[],
    psqlJsonl: [] as number[],
    jsonl: [] as number[],
    psqlCsvFile: [] as number[],
    psqlJsonlFile: [] as number[],
    psqlCsvGzip: [] as number[],
    csvGzip: [] as number[],
    psqlJsonlGzip: [] as number[],
    jsonlGzip: [] as number[],
    gzipBare: [] as number[],
    gzipStage: [] as number[],
    split: [] as number[],
  };
  let parts = 0;
  let peaks: Map<string, number>;
  try {
    // Warm the cache (and set hint bits) so no run pays for the first read.
    await psql("csv")();
    const ours = async (req: Request, into: number[], after?: (key: string) => Promise<void>) => {
      const e = await exportThroughApi(base, token, req);
      if (e.rows !== size) throw new Error(`export of ${size} rows gave ${e.rows}`);
      into.push(e.seconds);
      console.error(
        `[bench:export]   ${req.format}${req.compression === "gzip" ? "+gzip" : ""}${req.partRows ? ` in ${e.parts} parts` : ""}: ` +
          `${e.seconds.toFixed(2)} s = created→claimed ${e.claim.toFixed(2)} s + attempt runs ${e.ran.toFixed(2)} s + the rest`,
      );
      if (after) await after(path.join(storageDir, e.key));
      await deleteExport(base, token, e.id);
      return e;
    };
    for (let i = 1; i <= runs; i++) {
      r.psqlCsv.push(await timeIt(psql("csv")));
      await ours({ format: "csv", compression: "none" }, r.csv, async (file) => {
        r.gzipBare.push(await timeIt(() => gzipBare(file)));
        r.gzipStage.push(await timeIt(() => gzipStage(file)));
      });
      r.psqlJsonl.push(await timeIt(psql("jsonl")));
      await ours({ format: "jsonl", compression: "none" }, r.jsonl);
      r.psqlCsvFile.push(await timeIt(psqlFile("csv")));
      r.psqlJsonlFile.push(await timeIt(psqlFile("jsonl")));
      r.psqlCsvGzip.push(await timeIt(psqlGzip("csv")));
      await ours({ format: "csv", compression: "gzip" }, r.csvGzip);
      r.psqlJsonlGzip.push(await timeIt(psqlGzip("jsonl")));
      await ours({ format: "jsonl", compression: "gzip" }, r.jsonlGzip);
      if (split)
        parts = (await ours({ format: "csv", compression: "none", partRows: Math.ceil(size / 4) + 1 }, r.split)).parts;
      const last = (xs: number[]) => xs[xs.length - 1]!.toFixed(2);
      console.error(
        `[bench:export] ${fmt(size)} rows, run ${i}: CSV ${last(r.csv)} s (psql ${last(r.psqlCsv)}), JSONL ${last(r.jsonl)} s (psql ${last(r.psqlJsonl)}), ` +
          `CSV+gzip ${last(r.csvGzip)} s (psql|gzip ${last(r.psqlCsvGzip)}), JSONL+gzip ${last(r.jsonlGzip)} s (psql|gzip ${last(r.psqlJsonlGzip)}), ` +
          `gzip stage ${last(r.gzipStage)} s (bare ${last(r.gzipBare)}), psql to a file: CSV ${last(r.psqlCsvFile)} s, JSONL ${last(r.psqlJsonlFile)} s` +
          (split ? `, CSV split into ${parts} parts ${last(r.split)} s` : ""),
      );
    }
    await rm(path.join(storageDir, "bench"), { recursive: true, force: true });
  } finally {
    peaks = workerPeaks(child.pid!);
    await stopProduct(child);
  }
  // (An empty column once said nothing: the workers' command line had changed under the match.)
  if (!peaks.size) throw new Error("found no worker process under the product to read its peak RSS");
  const ratio = (baseline: number[], ours: number[]) =>
    `${(median(baseline) / median(ours)).toFixed(2)}× (${fmt(size / median(ours))} rows/s)`;
  const rss = [...peaks].map(([queues, mb]) => `${queues} ${mb.toFixed(0)} MB`).join(", ");
  const lines = [
    `| ${fmt(size)} | ${runs} | ${ratio(r.psqlCsv, r.csv)} | ${ratio(r.psqlJsonl, r.jsonl)} | ${ratio(r.psqlCsvGzip, r.csvGzip)} | ${ratio(r.psqlJsonlGzip, r.jsonlGzip)} | ${(median(r.gzipBare) / median(r.gzipStage)).toFixed(2)}× | ${rss} | ${(median(r.psqlCsvFile) / median(r.csv)).toFixed(2)}× / ${(median(r.psqlJsonlFile) / median(r.jsonl)).toFixed(2)}× |`,
  ];
  if (split) {
    lines.push(
      `| ${fmt(size)} | ${runs} | CSV split into ${parts} parts (partRows) → zip: ${ratio(r.psqlCsv, r.split)} | | | | | | |`,
    );
  }
  return lines;
}

main()
  .then(() => process.exit(0))
  .catch((err: Error) => {
    console.error(`[bench:export] failed: ${err.stack ?? err.message}`);
    process.exit(1);
  });
