/**
 * npm run bench:limits [-- --requests 300 --flood 1000 --flood-concurrency 20 --others 20]
 * What the limits cost and whom they protect, through the server `npm start`
 * runs (scripts/serve.ts over a scratch database with the demo tenants):
 *  1. the rate limiter's added latency: the same route (GET /api/v1/jobs?limit=1,
 *     sequential) on a server with limits on (the defaults) and one with them
 *     off (RATE_LIMIT_*=0), p50 and p99;
 *  2. a flood: one member sends `--flood` creates (POST /api/v1/exports, 20 at
 *     a time) while another tenant's member creates `--others` one after the
 *     other; that member's latency against the same creates without the flood,
 *     and how many of them were refused (goal: none, and at most 1.2× slower).
 * Both tenants' queues are paused meanwhile: no worker competes for the cores.
 */
import { parseArgs } from "node:util";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import "@/lib/workloads";
import { seed } from "../prisma/seed";
import { withScratchDatabase } from "../scripts/database";
import { percentile, startProduct, stopProduct } from "./harness";

async function timed(fn: () => Promise<Response>): Promise<{ ms: number; status: number }> {
  const t0 = performance.now();
  const res = await fn();
  await res.arrayBuffer();
  return { ms: performance.now() - t0, status: res.status };
}

const fmt = (n: number) => n.toFixed(2);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: "string", default: "300" },
      flood: { type: "string", default: "1000" },
      "flood-concurrency": { type: "string", default: "20" },
      others: { type: "string", default: "20" },
    },
  });
  const requests = Number(values.requests);
  await withScratchDatabase("conveyor_limits", async ({ url }) => {
    await seed(0.001);
    await pool().query(
      `INSERT INTO queue_pauses (id, queue, reason) VALUES (gen_random_uuid(), 'interactive', 'bench:limits'),
                                                        (gen_random_uuid(), 'bulk', 'bench:limits')`,
    );
    const ada = await createApiTokenForEmail("ada@acme.test", "bench");
    const gus = await createApiTokenForEmail("gus@globex.test", "bench");
    const auth = (t: string) => ({ Authorization: `Bearer ${t}`, "content-type": "application/json" });

    // 1. Added latency: limits on, then off, the same route.
    const latency: Record<string, number[]> = {};
    for (const [label, env] of [
      ["limits on", {}],
      ["limits off", { RATE_LIMIT_READS_PER_MINUTE: "0", RATE_LIMIT_WRITES_PER_MINUTE: "0" }],
    ] as const) {
      const { base, child } = await startProduct(url, env);
      try {
        const times: number[] = [];
        for (let i = 0; i < 30; i++) await timed(() => fetch(`${base}/api/v1/jobs?limit=1`, { headers: auth(ada) }));
        for (let i = 0; i < requests; i++) {
          times.push((await timed(() => fetch(`${base}/api/v1/jobs?limit=1`, { headers: auth(ada) }))).ms);
        }
        latency[label] = times;
      } finally {
        await stopProduct(child);
      }
      await pool().query("DELETE FROM rate_limits");
    }

    // 2. The flood, limits on.
    const { base, child } = await startProduct(url, {});
    const alone: number[] = [];
    let during: { ms: number; status: number }[];
    const floodStatuses = new Map<number, number>();
    try {
      const create = (token: string) =>
        timed(() =>
          fetch(`${base}/api/v1/exports`, {
            method: "POST",
            headers: auth(token),
            body: JSON.stringify({ dataset: "customers" }),
          }),
        );
      for (let i = 0; i < 5; i++) await create(gus); // warm-up
      for (let i = 0; i < Number(values.others); i++) alone.push((await create(gus)).ms);
      await pool().query(
        "DELETE FROM jobs WHERE created_by_id = (SELECT id FROM users WHERE email = 'gus@globex.test')",
      );
      let sent = 0;
      const flood = Array.from({ length: Number(values["flood-concurrency"]) }, async () => {
        while (sent < Number(values.flood)) {
          sent++;
          const r = await create(ada);
          floodStatuses.set(r.status, (floodStatuses.get(r.status) ?? 0) + 1);
        }
      });
      const other = (async () => {
        await new Promise((r) => setTimeout(r, 200)); // the flood is under way
        const out: { ms: number; status: number }[] = [];
        for (let i = 0; i < Number(values.others); i++) out.push(await create(gus));
        return out;
      })();
      [during] = await Promise.all([other, Promise.all(flood)]);
    } finally {
      await stopProduct(child);
    }

    const on = latency["limits on"]!;
    const off = latency["limits off"]!;
    const refused = during.filter((r) => r.status === 429).length;
    const duringMs = during.map((r) => r.ms);
    console.log(`\nRate limiter and quotas, through npm start's server (scratch database, queues paused)\n`);
    console.log("| case | p50 | p99 |");
    console.log("|---|---|---|");
    console.log(
      `| GET /api/v1/jobs?limit=1, limits off (${requests} sequential) | ${fmt(percentile(off, 50))} ms | ${fmt(percentile(off, 99))} ms |`,
    );
    console.log(`| the same, limits on | ${fmt(percentile(on, 50))} ms | ${fmt(percentile(on, 99))} ms |`);
    console.log(
      `| another tenant's member creating alone (${alone.length}) | ${fmt(percentile(alone, 50))} ms | ${fmt(percentile(alone, 99))} ms |`,
    );
    console.log(
      `| the same during a flood of ${values.flood} creates by one member | ${fmt(percentile(duringMs, 50))} ms | ${fmt(percentile(duringMs, 99))} ms |`,
    );
    console.log(
      `\nadded by the limiter: p50 +${fmt(percentile(on, 50) - percentile(off, 50))} ms, p99 +${fmt(percentile(on, 99) - percentile(off, 99))} ms`,
    );
    console.log(`the flood's answers: ${[...floodStatuses].map(([s, n]) => `${n} × ${s}`).join(", ")}`);
    console.log(
      `the other member: ${refused} refused (goal 0); p50 ${(percentile(duringMs, 50) / percentile(alone, 50)).toFixed(2)}× alone (goal ≤ 1.2×)`,
    );
  });
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
