/**
 * npm run bench:import [-- --rows 1000000 --runs 3]
 * Imports a generated events CSV the way a user does, through the product as
 * `npm start` runs it (a scratch database, default settings): a tus upload
 * (tus-js-client, 64 MiB chunks) to /api/v1/uploads, POST /api/v1/imports, then
 * GET /api/v1/imports/{id} until it ended. In the same run, the baseline:
 * `psql \copy events (…) FROM` the same file into the same table. Prints the
 * seconds of each, the ratio (baseline ÷ ours: 1.0 is psql's speed), each
 * stage's share, and the peak RSS (VmHWM) of every worker process.
 */
import { execFile } from "node:child_process";
import { createReadStream, createWriteStream, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { once } from "node:events";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs, promisify } from "node:util";
import * as tus from "tus-js-client";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { databaseUrl } from "@/lib/env";
import type { ImportDto } from "@/lib/imports/service";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { q, startProduct, stopProduct, workerPeaks } from "./harness";
import "@/lib/workloads";

const run = promisify(execFile);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const COLUMNS = "customer_id,type,source,payload,message,occurred_at";

/** A CSV of `rows` events (about 100 bytes a row), quoted JSON and commas included. */
async function generate(file: string, rows: number): Promise<void> {
  const out = createWriteStream(file);
  out.write(COLUMNS + "\n");
  let buf = "";
  for (let i = 1; i <= rows; i++) {
    const minute = String(i % 60).padStart(2, "0");
    // No customer: the scratch tenant's customer ids are not known here (and the commit checks them).
    buf += `,page_view,web,"{""path"": ""/p/${i}"", ""ms"": ${i % 500}}","Viewed page ${i}, ok",2026-11-30 12:${minute}:00.123+00\n`;
    if (buf.length > 1 << 20) {
      if (!out.write(buf)) await once(out, "drain");
      buf = "";
    }
  }
  out.end(buf);
  await once(out, "finish");
}

async function upload(base: string, token: string, file: string): Promise<string> {
  const size = statSync(file).size;
  return new Promise((resolve, reject) => {
    const u = new tus.Upload(createReadStream(file), {
      endpoint: `${base}/api/v1/uploads`,
      uploadSize: size,
      chunkSize: 64 * 1024 * 1024,
      headers: { Authorization: `Bearer ${token}` },
      metadata: { filename: path.basename(file), filetype: "text/csv" },
      retryDelays: [0, 1000, 3000],
      onError: reject,
      onSuccess: () => resolve(u.url!.split("/").pop()!),
    });
    u.start();
  });
}

async function importOnce(base: string, token: string, file: string, tenantId: string) {
  const before = Number(
    (await q<{ n: string }>("SELECT count(*) AS n FROM events WHERE tenant_id = $1", [tenantId]))[0]!.n,
  );
  const t0 = performance.now();
  const uploadId = await upload(base, token, file);
  const uploaded = performance.now();
  const res = await fetch(`${base}/api/v1/imports`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ uploadId, dataset: "events", format: "csv", mode: "insert" }),
  });
  if (res.status !== 202) throw new Error(`POST /api/v1/imports answered ${res.status}: ${await res.text()}`);
  const { id } = (await res.json()) as { id: string };
  let imp: ImportDto;
  for (;;) {
    const r = await fetch(`${base}/api/v1/imports/${id}`, { headers: { Authorization: `Bearer ${token}` } });
    if (!r.ok) {
      // A busy shared database can refuse a connection now and then: ask again.
      console.error(`[bench:import] GET /api/v1/imports/${id} answered ${r.status}; asking again`);
      await sleep(500);
      continue;
    }
    imp = (await r.json()) as ImportDto;
    if (["succeeded", "failed", "cancelled"].includes(imp.job.status)) break;
    await sleep(100);
  }
  const seconds = (performance.now() - t0) / 1000;
  if (imp.job.status !== "succeeded")
    throw new Error(`import ${id} ended ${imp.job.status}: ${imp.job.error?.message}`);
  const after = Number(
    (await q<{ n: string }>("SELECT count(*) AS n FROM events WHERE tenant_id = $1", [tenantId]))[0]!.n,
  );
  const stages = imp.stages.map((s) => ({
    name: s.name,
    seconds: s.startedAt && s.finishedAt ? (Date.parse(s.finishedAt) - Date.parse(s.startedAt)) / 1000 : NaN,
  }));
  return { seconds, uploadSeconds: (uploaded - t0) / 1000, inserted: after - before, stages, counts: imp.counts };
}

async function psqlCopy(url: string, file: string, tenantId: string): Promise<{ seconds: number }> {
  // The same table, the same rows: the tenant comes from a column default for the baseline's load.
  await q(`ALTER TABLE events ALTER COLUMN tenant_id SET DEFAULT '${tenantId}'::uuid`);
  try {
    const t0 = performance.now();
    await run("psql", [
      url,
      "-v",
      "ON_ERROR_STOP=1",
      "-c",
      `\\copy events (${COLUMNS}) FROM '${file}' WITH (FORMAT csv, HEADER true)`,
    ]);
    return { seconds: (performance.now() - t0) / 1000 };
  } finally {
    await q("ALTER TABLE events ALTER COLUMN tenant_id DROP DEFAULT");
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { runs: { type: "string", default: "3" }, rows: { type: "string", default: "1000000" } },
  });
  const runs = Math.max(1, Number(values.runs));
  const rows = Number(values.rows);
  const dir = await mkdtemp(path.join(tmpdir(), "conveyor-bench-import-"));
  const file = path.join(dir, `events-${rows}.csv`);
  await generate(file, rows);
  const size = statSync(file).size;
  console.log(`[bench:import] ${rows.toLocaleString("en")} rows, ${(size / 1e6).toFixed(0)} MB CSV`);
  try {
    await withScratchDatabase("conveyor_bench_import", async ({ url }) => {
      await seed(0.001);
      const tenantId = (await q<{ id: string }>("SELECT id FROM tenants WHERE slug = 'acme'"))[0]!.id;
      const token = await createApiTokenForEmail("ada@acme.test", "bench:import");
      const { base, child } = await startProduct(url, { CONVEYOR_DATA_DIR: path.join(dir, "data") });
      const ours: number[] = [];
      const copies: number[] = [];
      try {
        for (let i = 1; i <= runs; i++) {
          const c = await psqlCopy(databaseUrl(), file, tenantId);
          copies.push(c.seconds);
          const r = await importOnce(base, token, file, tenantId);
          ours.push(r.seconds);
          if (r.inserted !== rows) throw new Error(`run ${i}: ${r.inserted} rows landed, not ${rows}`);
          console.log(
            `[bench:import] run ${i}: import ${r.seconds.toFixed(2)} s (upload ${r.uploadSeconds.toFixed(2)} s; ` +
              r.stages.map((s) => `${s.name} ${s.seconds.toFixed(2)} s`).join(", ") +
              `), psql \\copy ${c.seconds.toFixed(2)} s, ratio ${(c.seconds / r.seconds).toFixed(2)}×`,
          );
        }
        const peaks = workerPeaks(child.pid!);
        const m = median(ours);
        const b = median(copies);
        console.log(
          `[bench:import] ${rows.toLocaleString("en")} rows: upload→committed ${m.toFixed(2)} s (${Math.round(rows / m).toLocaleString("en")} rows/s), ` +
            `psql \\copy ${b.toFixed(2)} s: ratio ${(b / m).toFixed(2)}× (goal ≥ 0.5×), medians of ${runs}`,
        );
        console.log(
          `[bench:import] worker peak RSS (VmHWM): ${[...peaks].map(([pool, v]) => `${pool} ${v.toFixed(0)} MB`).join(", ")} (goal ≤ 256 MB)`,
        );
      } finally {
        await stopProduct(child);
      }
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main()
  .then(() => process.exit(0))
  .catch((err: Error) => {
    console.error(`[bench:import] failed: ${err.stack ?? err.message}`);
    process.exit(1);
  });
