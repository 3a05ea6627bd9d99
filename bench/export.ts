/**
 * npm run bench:export [-- --runs 3]
 * Exports Acme's events (1,000,000 rows at the default seed) through the real
 * job path (enqueue → claim → COPY stream → storage → succeeded) as CSV and as
 * CSV+gzip, and in the same run times the baselines:
 *   CSV:  psql \copy (the same query) to /dev/null
 *   gzip: bare Node gzip (level 1) over the same CSV bytes
 * Prints rows/s and the ratios (medians of --runs). No absolute number is a goal.
 */
import { execFile } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseArgs, promisify } from "node:util";
import { createGzip } from "node:zlib";
import path from "node:path";
import { db, pool } from "@/lib/db";
import { env, exportStorageDir } from "@/lib/env";
import { buildCopyStatement, buildExportQuery } from "@/lib/exports/datasets";
import { createExportTransforms } from "@/lib/exports/stream";
import { storage } from "@/lib/storage";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { runJob } from "@/lib/jobs/runner";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import "@/lib/workloads";

const run = promisify(execFile);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function timeIt(fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function exportThroughJob(
  tenantId: string,
  compression: "none" | "gzip",
  opts: { format?: "csv" | "jsonl"; partRows?: number } = {},
): Promise<{ seconds: number; rows: number; file: string; parts: number }> {
  const { job } = await enqueueJob({
    tenantId,
    type: "export",
    // One part unless partRows says otherwise.
    input: { dataset: "events", format: opts.format ?? "csv", compression, partRows: opts.partRows ?? 100_000_000 },
  });
  // Run it in this process. The graphile job enqueue added becomes a no-op:
  // a worker that picks it up later finds the job succeeded and skips it.
  let parts = 0;
  const seconds = await timeIt(async () => {
    const first = await runJob(job.id, { workerId: "bench", log: () => {} });
    if (first === "waiting") {
      // Fanned out: run every part at once (a worker pool as large as the parts), then gather.
      const children = await db().job.findMany({ where: { parentId: job.id }, select: { id: true } });
      parts = children.length;
      // No admitter runs here: admit them as it would (the window has room for them all).
      await db().job.updateMany({ where: { parentId: job.id }, data: { admittedAt: new Date() } });
      const outcomes = await Promise.all(children.map((c) => runJob(c.id, { workerId: "bench", log: () => {} })));
      if (outcomes.some((o) => o !== "succeeded")) throw new Error(`parts of ${job.id} ended ${outcomes.join(", ")}`);
      await db().job.update({ where: { id: job.id }, data: { admittedAt: new Date() } });
      const last = await runJob(job.id, { workerId: "bench", log: () => {} });
      if (last !== "succeeded") throw new Error(`export ${job.id} ended ${last}`);
    } else if (first !== "succeeded") throw new Error(`export ${job.id} ended ${first}`);
  });
  const file = await db().exportFile.findFirstOrThrow({ where: { jobId: job.id } });
  return { seconds, rows: Number(file.rowCount), file: path.join(exportStorageDir(), file.storageKey), parts };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { runs: { type: "string", default: "3" }, rows: { type: "string", default: "1000000" } },
  });
  const runs = Math.max(1, Number(values.runs));
  // Acme's events are a million per seed scale unit.
  const scale = Number(values.rows) / 1_000_000;
  if (!(scale > 0 && scale <= 100)) throw new Error("--rows: from 1 to 100,000,000");
  // A scratch database with the full seed, and scratch storage: the benchmark
  // leaves no jobs or files in anyone's data.
  const storageDir = await mkdtemp(path.join(tmpdir(), "conveyor-bench-export-"));
  process.env.EXPORT_STORAGE_DIR = storageDir;
  try {
    await withScratchDatabase("conveyor_bench_export", async ({ url }) => {
      await seed(scale);
      await measure(url, runs);
    });
  } finally {
    await rm(storageDir, { recursive: true, force: true });
  }
}

async function measure(databaseUrl: string, runs: number): Promise<void> {
  const acme = await db().tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  const client = await pool().connect();
  const select = buildExportQuery(acme.id, { dataset: "events" }, (v) => client.escapeLiteral(v));
  client.release();

  const psql = async () => {
    await run(
      "psql",
      [databaseUrl, "-X", "-q", "-c", `\\copy (${select}) to '/dev/null' with (format csv, header true)`],
      {
        env: { ...process.env, PGTZ: "UTC", PGDATESTYLE: "ISO, YMD" },
      },
    );
  };
  // The same JSONL statement the export runs, through psql.
  const jsonlCopy = buildCopyStatement(select, "jsonl")
    .replace(/^COPY /, "\\copy ")
    .replace(" TO STDOUT ", " TO '/dev/null' ");
  const psqlJsonl = async () => {
    await run("psql", [databaseUrl, "-X", "-q", "-c", jsonlCopy], {
      env: { ...process.env, PGTZ: "UTC", PGDATESTYLE: "ISO, YMD" },
    });
  };
  const gzipBare = (file: string) =>
    pipeline(
      createReadStream(file, { highWaterMark: 256 * 1024 }),
      createGzip({ level: 1 }),
      new Writable({ write: (_c, _e, cb) => cb() }),
    );

  // Warm the cache once so no run pays for the first read from disk.
  await psql();
  // Our compression stage alone: the export's own transforms (row counter → gzip)
  // and storage write (sha256 → file) over the same bytes as the bare gzip.
  const gzipStage = (file: string) => {
    const { transforms } = createExportTransforms({ format: "csv", compression: "gzip" });
    return storage().write(
      `bench/stage-${process.pid}.csv.gz`,
      createReadStream(file, { highWaterMark: 256 * 1024 }),
      transforms,
    );
  };

  const r = {
    psql: [] as number[],
    csv: [] as number[],
    gzipBare: [] as number[],
    gzipStage: [] as number[],
    csvGzip: [] as number[],
    jsonl: [] as number[],
    psqlJsonl: [] as number[],
    jsonlGzip: [] as number[],
    fanned: [] as number[],
    fannedGzip: [] as number[],
  };
  let parts = 0;
  let rows = 0;
  for (let i = 0; i < runs; i++) {
    r.psql.push(await timeIt(psql));
    const csv = await exportThroughJob(acme.id, "none");
    rows = csv.rows;
    r.csv.push(csv.seconds);
    r.gzipBare.push(await timeIt(() => gzipBare(csv.file)));
    r.gzipStage.push(await timeIt(() => gzipStage(csv.file)));
    r.csvGzip.push((await exportThroughJob(acme.id, "gzip")).seconds);
    r.psqlJsonl.push(await timeIt(psqlJsonl));
    r.jsonl.push((await exportThroughJob(acme.id, "none", { format: "jsonl" })).seconds);
    r.jsonlGzip.push((await exportThroughJob(acme.id, "gzip", { format: "jsonl" })).seconds);
    // Fanned out into 4 parts (the machine has 2 cores: Postgres and the worker share them).
    const fanned = await exportThroughJob(acme.id, "none", { partRows: Math.ceil(rows / 4) + 1 });
    parts = fanned.parts;
    r.fanned.push(fanned.seconds);
    r.fannedGzip.push((await exportThroughJob(acme.id, "gzip", { partRows: Math.ceil(rows / 4) + 1 })).seconds);
  }
  const rate = (s: number[]) => rows / median(s);
  const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
  console.log(
    `\nExport benchmark: ${fmt(rows)} Acme events, median of ${runs} runs, gzip level ${env().EXPORT_GZIP_LEVEL}\n`,
  );
  console.log("| path | rows/s | baseline | baseline rows/s | ratio | goal |");
  console.log("|---|---|---|---|---|---|");
  console.log(
    `| CSV (job → COPY → disk) | ${fmt(rate(r.csv))} | psql \\copy to /dev/null | ${fmt(rate(r.psql))} | ${(rate(r.csv) / rate(r.psql)).toFixed(2)}× | ≥ 0.8× |`,
  );
  console.log(
    `| CSV+gzip (job → COPY → gzip → disk) | ${fmt(rate(r.csvGzip))} | Node gzip level 1, same bytes | ${fmt(rate(r.gzipBare))} | ${(rate(r.csvGzip) / rate(r.gzipBare)).toFixed(2)}× | ≥ 0.9× |`,
  );
  console.log(
    `| gzip stage alone (counter → gzip → sha256 → disk) | ${fmt(rate(r.gzipStage))} | Node gzip level 1, same bytes | ${fmt(rate(r.gzipBare))} | ${(rate(r.gzipStage) / rate(r.gzipBare)).toFixed(2)}× | ≥ 0.9× |`,
  );
  console.log(
    `| CSV+gzip vs CSV, both through the job | ${fmt(rate(r.csvGzip))} | CSV export | ${fmt(rate(r.csv))} | ${(rate(r.csvGzip) / rate(r.csv)).toFixed(2)}× | (cost of gzip) |`,
  );
  console.log(
    `| JSONL (job → COPY row_to_json → disk) | ${fmt(rate(r.jsonl))} | psql \\copy of the same JSONL to /dev/null | ${fmt(rate(r.psqlJsonl))} | ${(rate(r.jsonl) / rate(r.psqlJsonl)).toFixed(2)}× | ≥ 0.8× |`,
  );
  console.log(
    `| JSONL+gzip | ${fmt(rate(r.jsonlGzip))} | JSONL export | ${fmt(rate(r.jsonl))} | ${(rate(r.jsonlGzip) / rate(r.jsonl)).toFixed(2)}× | (cost of gzip) |`,
  );
  console.log(
    `| CSV fanned out (${parts} parts → zip) | ${fmt(rate(r.fanned))} | psql \\copy to /dev/null | ${fmt(rate(r.psql))} | ${(rate(r.fanned) / rate(r.psql)).toFixed(2)}× | > 1.0× where cores allow |`,
  );
  console.log(
    `| CSV+gzip fanned out (${parts} parts → zip) | ${fmt(rate(r.fannedGzip))} | psql \\copy to /dev/null | ${fmt(rate(r.psql))} | ${(rate(r.fannedGzip) / rate(r.psql)).toFixed(2)}× | > 1.0× where cores allow |`,
  );
  console.log(
    `\nWorker peak RSS (this process ran every export): ${Math.round(process.resourceUsage().maxRSS / 1024)} MB`,
  );
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
