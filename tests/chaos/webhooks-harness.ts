/**
 * Webhook chaos: messages for one endpoint delivered by worker processes that
 * are SIGKILLed and restarted while they send. Checks, from the receiver's own
 * record and the database: every message arrived at least once, every
 * duplicate carried the same webhook-id as its original (the receiver can
 * dedupe), nothing arrived that was never recorded, every delivery ended
 * delivered, and the endpoint's guard was left with no slot held.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { newSecret } from "@/lib/webhooks/signing";
import { workerArgs } from "../helpers/worker";

export type WebhookChaosOptions = {
  databaseUrl: string;
  tenantId: string;
  messages: number;
  workers: number;
  concurrency: number;
  killEveryMs: number;
  /** Give up waiting for every delivery after this long. */
  timeoutMs: number;
  log: (line: string) => void;
};

export type WebhookChaosReport = {
  messages: number;
  received: number;
  distinct: number;
  duplicates: number;
  kills: number;
  seconds: number;
  checks: { name: string; ok: boolean; detail: string }[];
  ok: boolean;
};

export async function runWebhookChaos(o: WebhookChaosOptions): Promise<WebhookChaosReport> {
  const got: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      got.push(String(req.headers["webhook-id"]));
      // Answer after a little while, so kills land while requests are in flight.
      setTimeout(() => res.end("ok"), Math.random() * 40);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/chaos`;
  const db = new pg.Client({ connectionString: o.databaseUrl });
  await db.connect();
  const env = {
    ...process.env,
    DATABASE_URL: o.databaseUrl,
    WEBHOOK_ALLOW_PRIVATE: "1",
    WORKER_DEAD_AFTER_MS: "3000",
    WORKER_HEARTBEAT_MS: "500",
    ADMISSION_SWEEP_MS: "200",
  };
  const procs: (ChildProcess | null)[] = [];
  const spawnWorker = (i: number) => {
    procs[i] = spawn(process.execPath, workerArgs("--concurrency", String(o.concurrency)), {
      env,
      stdio: ["ignore", "ignore", "ignore", "ipc"],
    });
  };
  let kills = 0;
  const t0 = Date.now();
  try {
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO webhook_endpoints (id, tenant_id, url, events, secret, rate_limit_per_second)
       VALUES (gen_random_uuid(), $1, $2, '{job.succeeded}', $3, 1000)
       RETURNING id`,
      [o.tenantId, url, newSecret()],
    );
    const endpointId = rows[0]!.id;
    for (let i = 0; i < o.workers; i++) spawnWorker(i);
    // The messages arrive over the first half of the kill period.
    for (let k = 0; k < o.messages; k += 50) {
      await db.query(
        `SELECT conveyor_webhook_emit($1, 'job.succeeded', jsonb_build_object('n', g), NULL)
           FROM generate_series($2::int, $3::int) g`,
        [o.tenantId, k, Math.min(o.messages, k + 50) - 1],
      );
      await sleep(100);
    }
    const deadline = Date.now() + o.timeoutMs;
    let lastKill = Date.now();
    for (;;) {
      const { rows: s } = await db.query<{ open: number }>(
        `SELECT count(*) FILTER (WHERE j.status <> 'succeeded')::int AS open
           FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id WHERE d.endpoint_id = $1`,
        [endpointId],
      );
      if (s[0]!.open === 0 || Date.now() > deadline) break;
      if (Date.now() - lastKill > o.killEveryMs && Date.now() - t0 < o.timeoutMs / 2) {
        const i = Math.floor(Math.random() * o.workers);
        procs[i]?.kill("SIGKILL");
        kills++;
        lastKill = Date.now();
        o.log(`[chaos:webhooks] SIGKILLed worker ${i}; ${s[0]!.open} deliveries open`);
        await sleep(300);
        spawnWorker(i);
      }
      await sleep(200);
    }
    const { rows: msgs } = await db.query<{ id: string; status: string; sent: number }>(
      `SELECT m.id, j.status::text AS status, d.attempts AS sent FROM webhook_messages m
         JOIN webhook_deliveries d ON d.message_id = m.id JOIN jobs j ON j.id = d.job_id WHERE d.endpoint_id = $1`,
      [endpointId],
    );
    const { rows: slots } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM downstream_slots WHERE key = $1 AND expires_at > now()
          AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = holder AND j.status = 'running')`,
      [`webhook:${endpointId}`],
    );
    const recorded = new Set(msgs.map((m) => m.id));
    const seen = new Set(got);
    const missing = msgs.filter((m) => !seen.has(m.id));
    const strangers = [...seen].filter((id) => !recorded.has(id));
    const notDelivered = msgs.filter((m) => m.status !== "succeeded");
    const checks = [
      { name: "every message recorded", ok: msgs.length === o.messages, detail: `${msgs.length} of ${o.messages}` },
      { name: "every message arrived at least once", ok: missing.length === 0, detail: `${missing.length} missing` },
      {
        name: "duplicates carry a recorded webhook-id",
        ok: strangers.length === 0,
        detail: `${got.length - seen.size} duplicates, ${strangers.length} unknown ids`,
      },
      {
        name: "every delivery ended delivered",
        ok: notDelivered.length === 0,
        detail: `${notDelivered.length} not delivered`,
      },
      { name: "no slot left held", ok: slots[0]!.n === 0, detail: `${slots[0]!.n} held` },
    ];
    return {
      messages: o.messages,
      received: got.length,
      distinct: seen.size,
      duplicates: got.length - seen.size,
      kills,
      seconds: (Date.now() - t0) / 1000,
      checks,
      ok: checks.every((c) => c.ok),
    };
  } finally {
    for (const p of procs) p?.kill("SIGKILL");
    server.close();
    await db.end();
  }
}

export function formatWebhookReport(r: WebhookChaosReport): string {
  return [
    `webhook chaos: ${r.messages} messages, ${r.kills} SIGKILLs, ${r.seconds.toFixed(0)} s; ` +
      `${r.received} requests received (${r.distinct} distinct webhook-ids, ${r.duplicates} duplicates)`,
    ...r.checks.map((c) => `  ${c.ok ? "ok  " : "FAIL"} ${c.name}: ${c.detail}`),
  ].join("\n");
}
