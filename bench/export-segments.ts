/**
 * npm run bench:export-segments [-- --rows 1000000 --runs 5]
 * What checkpointed segments cost an export that is never killed. Two products run side by
 * side as `npm start` runs them, each on its own copy of one seeded database: one with the
 * default `EXPORT_SEGMENT_ROWS` (a boundary query, an fsync'd gzip member and a checkpoint every
 * 100,000 rows), the other with one segment for the whole file. The same export is requested
 * from each in turn (the order alternating run by run), one at a time, through the public API
 * (POST /api/v1/exports, then its event stream to the terminal status), so both sides of a pair
 * meet the same load on the machine. The figure is each pair's ratio, one segment ÷ segmented
 * (1.0: segments cost nothing; below 1.0: segmented is slower), and its median.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { closeDb, db } from "@/lib/db";
import { exportSettings } from "@/lib/exports/settings";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { startProduct, stopProduct } from "./harness";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const TERMINAL = new Set(["succeeded", "failed", "cancelled", "expired"]);

type Side = { name: string; base: string; segments: number };
type Request = { format: "csv" | "jsonl"; compression: "none" | "gzip" };

/** POST → terminal status over the job's event stream: the seconds, and the file's rows. */
async function exportOnce(side: Side, token: string, req: Request): Promise<{ seconds: number; rows: number }> {
  const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
  const t0 = performance.now();
  const res = await fetch(`${side.base}/api/v1/exports`, {
    method: "POST",
    headers,
    body: JSON.stringify({ dataset: "events", ...req }),
  });
  if (res.status !== 202) throw new Error(`${side.name}: POST /api/v1/exports answered ${res.status}`);
  const { id } = (await res.json()) as { id: string };
  const stream = await fetch(`${side.base}/api/v1/jobs/${id}/events`, { headers });
  if (!stream.body) throw new Error(`${side.name}: no event stream`);
  const reader = stream.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  let seconds = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    const statuses = [...buffered.matchAll(/^data: (.*)$/gm)].map(
      (m) => (JSON.parse(m[1]!) as { status?: string }).status,
    );
    buffered = buffered.slice(buffered.lastIndexOf("\n\n") + 2);
    if (statuses.some((s) => s && TERMINAL.has(s))) {
      seconds = (performance.now() - t0) / 1000;
      await reader.cancel().catch(() => {});
      break;
    }
  }
  const job = (await (await fetch(`${side.base}/api/v1/jobs/${id}`, { headers })).json()) as {
    status: string;
    result?: { files?: { rows: number }[] };
  };
  if (job.status !== "succeeded") throw new Error(`${side.name}: export ${id} ended ${job.status}`);
  const rows = (job.result?.files ?? []).reduce((a, f) => a + f.rows, 0);
  const del = await fetch(`${side.base}/api/v1/exports/${id}`, { method: "DELETE", headers });
  if (del.status !== 204) throw new Error(`${side.name}: DELETE answered ${del.status}`);
  return { seconds, rows };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { rows: { type: "string", default: "1000000" }, runs: { type: "string", default: "5" } },
  });
  const rows = Number(values.rows);
  const runs = Math.max(1, Number(values.runs));
  if (!(rows >= 100_000 && rows <= 10_000_000)) throw new Error("--rows: from 100,000 to 10,000,000");
  const segmentRows = exportSettings().EXPORT_SEGMENT_ROWS;
  const dir = await mkdtemp(path.join(tmpdir(), "conveyor-bench-segments-"));
  const requests: Request[] = [
    { format: "csv", compression: "none" },
    { format: "jsonl", compression: "gzip" },
  ];
  const ratios = new Map<string, number[]>(requests.map((r) => [`${r.format}+${r.compression}`, []]));
  const times = new Map<string, number[]>();
  try {
    await withScratchDatabase("conveyor_bench_segments", async ({ url, name, admin }) => {
      await seed(rows / 1_000_000); // Acme's events: a million per seed scale unit
      const token = await createApiTokenForEmail("ada@acme.test", "bench:export-segments");
      const acme = await db().tenant.findUniqueOrThrow({ where: { slug: "acme" } });
      const events = await db().event.count({ where: { tenantId: acme.id } });
      await closeDb();
      // The second side: a copy of the first, token included.
      const copy = `${name}_one`;
      await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(copy)} TEMPLATE ${admin.escapeIdentifier(name)}`);
      const copyUrl = Object.assign(new URL(url), { pathname: `/${copy}` }).toString();
      const started: { side: Side; child: Awaited<ReturnType<typeof startProduct>>["child"] }[] = [];
      try {
        for (const [label, dbUrl, segRows] of [
          ["segmented", url, String(segmentRows)],
          ["one segment", copyUrl, "100000000"],
        ] as const) {
          const { base, child } = await startProduct(dbUrl, {
            CONVEYOR_DATA_DIR: path.join(dir, label.replace(" ", "-")),
            EXPORT_SEGMENT_ROWS: segRows,
          });
          started.push({ side: { name: label, base, segments: Math.ceil(events / Number(segRows)) }, child });
        }
        const [seg, one] = [started[0]!.side, started[1]!.side];
        // One warm-up each: the cache, hint bits, the server's first compile of each route.
        for (const s of [seg, one]) await exportOnce(s, token, requests[0]!);
        for (let run = 1; run <= runs; run++) {
          for (const req of requests) {
            const key = `${req.format}+${req.compression}`;
            const order = run % 2 ? [seg, one] : [one, seg];
            const t = new Map<string, number>();
            for (const s of order) {
              const r = await exportOnce(s, token, req);
              if (r.rows !== events) throw new Error(`${s.name}: ${r.rows} rows, expected ${events}`);
              t.set(s.name, r.seconds);
              times.set(`${key} ${s.name}`, [...(times.get(`${key} ${s.name}`) ?? []), r.seconds]);
            }
            const ratio = t.get(one.name)! / t.get(seg.name)!;
            ratios.get(key)!.push(ratio);
            console.log(
              `[bench:export-segments] run ${run} ${key}: segmented ${t.get(seg.name)!.toFixed(2)} s, one segment ${t.get(one.name)!.toFixed(2)} s, ratio ${ratio.toFixed(2)}`,
            );
          }
        }
        console.log(
          `\nSegments' cost to an export never killed: ${events.toLocaleString("en-US")} rows of Acme's events, ` +
            `${seg.segments} segments of ${segmentRows.toLocaleString("en-US")} rows vs one segment; ` +
            `ratio = one segment's seconds ÷ segmented's, per pair, median of ${runs}\n`,
        );
        console.log("| export | segmented, median s | one segment, median s | ratio (median of pairs) | pairs |");
        console.log("|---|---|---|---|---|");
        for (const [key, rs] of ratios)
          console.log(
            `| ${key} | ${median(times.get(`${key} segmented`)!).toFixed(2)} | ${median(times.get(`${key} one segment`)!).toFixed(2)} | ${median(rs).toFixed(2)}× | ${rs.map((r) => r.toFixed(2)).join(", ")} |`,
          );
      } finally {
        for (const s of started) await stopProduct(s.child);
        await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(copy)} WITH (FORCE)`).catch(() => {});
      }
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
