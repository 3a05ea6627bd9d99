/**
 * npm run bench:cancel [-- --jobs 30]
 * How long a running job takes to end once a cancel is asked for, through the product as
 * `npm start` runs it (a scratch database): a `probe` job that would sleep a minute is enqueued,
 * and once it runs, `POST /api/v1/jobs/{id}/cancel` is sent with an operator's token; the time is
 * from that request to the job's row reading `cancelled` (polled every 2 ms on a connection of
 * this script). The signal reaches the worker over its notifier (LISTEN), so this is the path a
 * user's Cancel button takes. Beside it, in the same run, `GET /api/health` and the cancel
 * request's own answer time, so the figure can be read as a ratio to a request.
 */
import { parseArgs } from "node:util";
import { closeDb, pool } from "@/lib/db";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { percentile, startProduct, stopProduct } from "./harness";
import "@/lib/workloads";

const { values } = parseArgs({ options: { jobs: { type: "string", default: "30" } } });
const JOBS = Number(values.jobs);
const ms = (x: number) => `${x.toFixed(1)} ms`;
const line = (name: string, xs: number[]) =>
  `${name.padEnd(40)} p50 ${ms(percentile(xs, 50)).padStart(9)}  p99 ${ms(percentile(xs, 99)).padStart(9)}`;

async function statusOf(id: string): Promise<string> {
  return (await pool().query<{ status: string }>("SELECT status FROM jobs WHERE id = $1", [id])).rows[0]!.status;
}

async function until(id: string, status: string, limitMs: number): Promise<void> {
  const end = performance.now() + limitMs;
  while ((await statusOf(id)) !== status) {
    if (performance.now() > end) throw new Error(`job ${id} not ${status} within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function main() {
  await withScratchDatabase("conveyor_bench_cancel", async ({ url }) => {
    const tenants = await seed(0.001);
    const acme = tenants.get("acme")!;
    const token = await createApiTokenForEmail("oscar@acme.test", "bench:cancel");
    const { base, child } = await startProduct(url, { LOG_LEVEL: "warn" });
    const health: number[] = [];
    const answer: number[] = [];
    const ended: number[] = [];
    try {
      for (let i = 0; i < JOBS + 3; i++) {
        const { job } = await enqueueJob({ tenantId: acme, type: "probe", input: { sleepMs: 60_000 } });
        await until(job.id, "running", 30_000);
        await new Promise((r) => setTimeout(r, 50)); // the attempt is under way, not just claimed
        let t = performance.now();
        await (await fetch(`${base}/api/health`)).arrayBuffer();
        const h = performance.now() - t;
        t = performance.now();
        const r = await fetch(`${base}/api/v1/jobs/${job.id}/cancel`, {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify({ reason: "bench:cancel" }),
        });
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`cancel answered ${r.status}`);
        const a = performance.now() - t;
        await until(job.id, "cancelled", 30_000);
        const e = performance.now() - t;
        if (i >= 3) {
          // the first three warm the routes and the plans
          health.push(h);
          answer.push(a);
          ended.push(e);
        }
      }
    } finally {
      await stopProduct(child);
    }
    console.log(`bench:cancel — ${new Date().toISOString()}, ${JOBS} running probe jobs cancelled one at a time`);
    console.log(line("GET /api/health", health));
    console.log(line("POST …/cancel answered", answer));
    console.log(line("POST …/cancel → row cancelled", ended));
    console.log(
      `cancel → cancelled p50 ${(percentile(ended, 50) / percentile(health, 50)).toFixed(1)}× a health request's p50`,
    );
  });
  await closeDb();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
