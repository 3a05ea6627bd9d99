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
import { buildExportQuery } from "@/lib/exports/datasets";
import { createExportTransforms } from "@/lib/exports/task";
import { storage } from "@/lib/storage";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { runJob } from "@/lib/jobs/runner";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";

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
): Promise<{ seconds: number; rows: number; file: string }> {
  const { job } = await enqueueJob({
    tenantId,
    type: "export",
    input: { dataset: "events", format: "csv", compression },
  });
  // Run it in this process. The graphile job enqueue added becomes a no-op:
  // a worker that picks it up later finds the job succeeded and skips it.
  const seconds = await timeIt(async () => {
    const outcome = await runJob(job.id, { workerId: "bench", log: () => {} });
    if (outcome !== "succeeded") throw new Error(`export ${job.id} ended ${outcome}`);
  });
  const file = await db().exportFile.findFirstOrThrow({ where: { jobId: job.id } });
  return { seconds, rows: Number(file.rowCount), file: path.join(exportStorageDir(), file.storageKey) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: "string", default: "3" } } });
  const runs = Math.max(1, Number(values.runs));
  // A scratch database with the full seed, and scratch storage: the benchmark
  // leaves no jobs or files in anyone's data.
  const storageDir = await mkdtemp(path.join(tmpdir(), "conveyor-bench-export-"));
  process.env.EXPORT_STORAGE_DIR = storageDir;
  try {
    await withScratchDatabase("conveyor_bench_export", async ({ url }) => {
      await seed();
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
  };
  let rows = 0;
  for (let i = 0; i < runs; i++) {
    r.psql.push(await timeIt(psql));
    const csv = await exportThroughJob(acme.id, "none");
    rows = csv.rows;
    r.csv.push(csv.seconds);
    r.gzipBare.push(await timeIt(() => gzipBare(csv.file)));
    r.gzipStage.push(await timeIt(() => gzipStage(csv.file)));
    r.csvGzip.push((await exportThroughJob(acme.id, "gzip")).seconds);
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
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
