/**
 * npm run bench:limits [-- --requests 300 --flood 100000 --flood-concurrency 20 --others 20]
 * What the limits cost and whom they protect, through the server `npm start`
 * runs (scripts/serve.ts over a scratch database with the demo tenants):
 *  1. the rate limiter's added latency: the same route (GET /api/v1/jobs?limit=1,
 *     sequential) on a server with limits on (the defaults) and one with them
 *     off (RATE_LIMIT_*=0), p50 and p99;
 *  2. floods: one member (ada) sends requests 20 at a time, as fast as they are answered, from a
 *     thread of its own, while another tenant's member (gus) measures, one request after the other:
 *     a. ada creates (POST /api/v1/exports); gus creates `--others`;
 *     b. ada creates and lists jobs in turn; gus lists jobs (GET /api/v1/jobs?limit=20) 3 × `--others`;
 *     the flood lasts as long as gus's requests (at most `--flood` requests). Gus's p50 and p99
 *     against the same requests without the flood (goal ≤ 1.5×), and how many of his were refused
 *     (goal: none).
 * Both tenants' queues are paused meanwhile: no worker competes for the cores.
 */
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
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

/**
 * The flooding member's client, on a worker thread: `concurrency` loops sending requests (creates,
 * or creates and list reads in turn when `mixed`) as fast as they are answered, until told to stop
 * (the measurement is over) or `total` are sent.
 */
const FLOOD = `
const { parentPort, workerData: o } = require("node:worker_threads");
const statuses = {};
let sent = 0;
let stop = false;
parentPort.on("message", () => (stop = true));
const headers = { Authorization: "Bearer " + o.token, "content-type": "application/json" };
(async () => {
  await Promise.all(Array.from({ length: o.concurrency }, async () => {
    while (!stop && sent < o.total) {
      const read = o.mixed && sent % 2 === 1;
      sent++;
      const res = read
        ? await fetch(o.base + "/api/v1/jobs?limit=20", { headers })
        : await fetch(o.base + "/api/v1/exports", { method: "POST", headers, body: JSON.stringify({ dataset: "customers" }) });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] || 0) + 1;
      if (sent === o.concurrency) parentPort.postMessage("started");
    }
  }));
  parentPort.postMessage(statuses);
})();
`;

/** Runs `measure` while a flood runs on a thread of its own; its answers and the flood's statuses. */
async function whileFlooding<T>(
  flood: { base: string; token: string; total: number; concurrency: number; mixed: boolean },
  measure: () => Promise<T>,
): Promise<[T, Record<number, number>]> {
  const worker = new Worker(FLOOD, { eval: true, workerData: flood });
  const done = new Promise<Record<number, number>>((resolve, reject) => {
    worker.on("message", (m: unknown) => m !== "started" && resolve(m as Record<number, number>));
    worker.on("error", reject);
  });
  await new Promise((r) => worker.once("message", r)); // the flood is under way
  const measured = await measure();
  worker.postMessage("stop");
  const statuses = await done;
  await worker.terminate();
  return [measured, statuses];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: "string", default: "300" },
      flood: { type: "string", default: "100000" },
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

    // 2. The floods, limits on. The flooding member's client runs on a thread of its own: its
    // answers, however fast they come, never wait in the measured member's event loop.
    const { base, child } = await startProduct(url, {});
    const alone: number[] = [];
    const readsAlone: number[] = [];
    let during: { ms: number; status: number }[];
    let readsDuring: { ms: number; status: number }[];
    let floodStatuses: Record<number, number>;
    let mixedStatuses: Record<number, number>;
    const others = Number(values.others);
    try {
      const create = (token: string) =>
        timed(() =>
          fetch(`${base}/api/v1/exports`, {
            method: "POST",
            headers: auth(token),
            body: JSON.stringify({ dataset: "customers" }),
          }),
        );
      const list = (token: string) => timed(() => fetch(`${base}/api/v1/jobs?limit=20`, { headers: auth(token) }));
      for (let i = 0; i < 5; i++) await create(gus); // warm-up
      for (let i = 0; i < others; i++) alone.push((await create(gus)).ms);
      for (let i = 0; i < 10; i++) await list(gus); // warm-up
      for (let i = 0; i < others * 3; i++) readsAlone.push((await list(gus)).ms);
      await pool().query(
        "DELETE FROM jobs WHERE created_by_id = (SELECT id FROM users WHERE email = 'gus@globex.test')",
      );
      const floodOpts = {
        base,
        token: ada,
        total: Number(values.flood),
        concurrency: Number(values["flood-concurrency"]),
      };
      // 2a. creates, against another member's creates.
      [during, floodStatuses] = await whileFlooding({ ...floodOpts, mixed: false }, async () => {
        const out: { ms: number; status: number }[] = [];
        for (let i = 0; i < others; i++) out.push(await create(gus));
        return out;
      });
      await pool().query("DELETE FROM rate_limits");
      // 2b. creates and list reads, against another member's list reads.
      [readsDuring, mixedStatuses] = await whileFlooding({ ...floodOpts, mixed: true }, async () => {
        const out: { ms: number; status: number }[] = [];
        for (let i = 0; i < others * 3; i++) out.push(await list(gus));
        return out;
      });
    } finally {
      await stopProduct(child);
    }

    const on = latency["limits on"]!;
    const off = latency["limits off"]!;
    const refused = during.filter((r) => r.status === 429).length + readsDuring.filter((r) => r.status === 429).length;
    const duringMs = during.map((r) => r.ms);
    const readsDuringMs = readsDuring.map((r) => r.ms);
    const ratio = (a: number[], b: number[], p: number) => (percentile(a, p) / percentile(b, p)).toFixed(2);
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
      `| the same during a flood of creates by one member | ${fmt(percentile(duringMs, 50))} ms | ${fmt(percentile(duringMs, 99))} ms |`,
    );
    console.log(
      `| another tenant's member listing jobs alone (${readsAlone.length}) | ${fmt(percentile(readsAlone, 50))} ms | ${fmt(percentile(readsAlone, 99))} ms |`,
    );
    console.log(
      `| the same during a flood of creates and list reads by one member | ${fmt(percentile(readsDuringMs, 50))} ms | ${fmt(percentile(readsDuringMs, 99))} ms |`,
    );
    console.log(
      `\nadded by the limiter: p50 +${fmt(percentile(on, 50) - percentile(off, 50))} ms, p99 +${fmt(percentile(on, 99) - percentile(off, 99))} ms`,
    );
    const statuses = (m: Record<number, number>) =>
      Object.entries(m)
        .map(([s, n]) => `${n} × ${s}`)
        .join(", ");
    console.log(
      `the create flood's answers: ${statuses(floodStatuses)}; the mixed flood's: ${statuses(mixedStatuses)}`,
    );
    console.log(`the other member: ${refused} refused (goal 0)`);
    console.log(
      `  creates during ÷ alone: p50 ${ratio(duringMs, alone, 50)}×, p99 ${ratio(duringMs, alone, 99)}× (goal ≤ 1.5×)`,
    );
    console.log(
      `  list reads during ÷ alone: p50 ${ratio(readsDuringMs, readsAlone, 50)}×, p99 ${ratio(readsDuringMs, readsAlone, 99)}× (goal ≤ 1.5×)`,
    );
  });
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
