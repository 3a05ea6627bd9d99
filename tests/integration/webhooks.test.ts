process.env.WEBHOOK_ALLOW_PRIVATE = "1";
// The whole retry schedule (almost 38 hours) in under 3 seconds.
process.env.WEBHOOK_RETRY_SCALE = "0.00002";
process.env.WEBHOOK_CIRCUIT_OPEN_MS = "1500";

import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { Webhook } from "standardwebhooks";
import { POST as createEndpointRoute } from "@/app/api/v1/webhooks/endpoints/route";
import { GET as endpointRoute } from "@/app/api/v1/webhooks/endpoints/[id]/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { forgetDownstream } from "@/lib/downstream";
import { replayJob } from "@/lib/jobs/actions";
import { listDeadLetters } from "@/lib/jobs/dead-letters";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { openLinkDownload } from "@/lib/exports/links";
import { requestExport } from "@/lib/exports/service";
import { judgeAddress } from "@/lib/webhooks/address";
import { send } from "@/lib/webhooks/http";
import { urlProblem } from "@/lib/webhooks/schema";
import {
  createEndpoint,
  deleteEndpoint,
  getDelivery,
  getEndpoint,
  listDeliveries,
  listJobDeliveries,
  recoverEndpoint,
  replayDelivery,
  rotateSecret,
  sendTestEvent,
  updateEndpoint,
} from "@/lib/webhooks/service";
import { useTestDatabase } from "../helpers/db";
import { isCode } from "../helpers/fixtures";
import { workerArgs } from "../helpers/worker";

let worker: ChildProcess | undefined;
let workerLog = "";
const fx = useTestDatabase({
  // A real worker process, as npm start runs it (every queue).
  setup: async () => {
    worker = spawn(process.execPath, workerArgs("--concurrency", "8"), {
      env: { ...process.env, DATABASE_URL: fx.database.url, ADMISSION_SWEEP_MS: "100" },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    worker.stdout!.on("data", (d: Buffer) => (workerLog += d.toString()));
    worker.stderr!.on("data", (d: Buffer) => (workerLog += d.toString()));
  },
});
after(() => {
  worker?.kill("SIGKILL");
});

type Received = { at: number; headers: http.IncomingHttpHeaders; body: string };
/** A receiver on the loopback whose answer each test decides. */
class Receiver {
  received: Received[] = [];
  answer: (r: Received, n: number) => { status: number; headers?: Record<string, string> } = () => ({ status: 200 });
  private server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const r = { at: Date.now(), headers: req.headers, body };
      this.received.push(r);
      const a = this.answer(r, this.received.length);
      res.writeHead(a.status, a.headers);
      res.end("ok");
    });
  });
  async start(): Promise<string> {
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }
  close() {
    this.server.close();
  }
}

async function waitFor<T>(fn: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error("timed out");
    await sleep(25);
  }
}

async function deliveriesOf(endpointId: string) {
  return (await listDeliveries(fx.p.ada, endpointId, { limit: "100" })).deliveries;
}

describe("webhooks", () => {
  test("a finished job is delivered signed (Standard Webhooks), and the delivery and its attempt are on record", async () => {
    const rx = new Receiver();
    const url = await rx.start();
    try {
      const { endpoint, secret } = await createEndpoint(fx.p.ada, { url, events: ["job.succeeded"] });
      assert.match(secret, /^whsec_/);
      const { job } = await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: 0 } });
      await waitFor(async () => rx.received.length >= 1);
      const r = rx.received[0]!;
      const payload = new Webhook(secret).verify(r.body, {
        "webhook-id": r.headers["webhook-id"] as string,
        "webhook-timestamp": r.headers["webhook-timestamp"] as string,
        "webhook-signature": r.headers["webhook-signature"] as string,
      }) as { type: string; data: { jobId: string; status: string } };
      assert.equal(payload.type, "job.succeeded");
      assert.equal(payload.data.jobId, job.id);
      const [d] = await waitFor(async () => {
        const list = await deliveriesOf(endpoint.id);
        return list[0]?.status === "delivered" && list;
      });
      const detail = await getDelivery(fx.p.ada, d!.id);
      assert.equal(detail.attempts.length, 1);
      assert.equal(detail.attempts[0]!.statusCode, 200);
      assert.equal(detail.attempts[0]!.responseBody, "ok");
      assert.equal(detail.messageId, r.headers["webhook-id"]);
    } finally {
      rx.close();
    }
  });
  test("failures retry on the schedule with the same webhook-id; Retry-After is honoured; 410 disables the endpoint", async () => {
    const rx = new Receiver();
    const url = await rx.start();
    try {
      rx.answer = (_r, n) =>
        n === 1 ? { status: 500 } : n === 2 ? { status: 503, headers: { "Retry-After": "1" } } : { status: 200 };
      const { endpoint } = await createEndpoint(fx.p.ada, { url, events: ["job.succeeded"] });
      const { deliveryId } = await sendTestEvent(fx.p.ada, endpoint.id);
      await waitFor(async () => (await getDelivery(fx.p.ada, deliveryId)).status === "delivered");
      assert.equal(rx.received.length, 3);
      assert.equal(new Set(rx.received.map((r) => r.headers["webhook-id"])).size, 1, "one webhook-id on every retry");
      assert.ok(rx.received[2]!.at - rx.received[1]!.at >= 950, "no request before the Retry-After");
      const d = await getDelivery(fx.p.ada, deliveryId);
      // In the order they were sent.
      assert.deepEqual(
        d.attempts.map((a) => a.statusCode),
        [500, 503, 200],
      );
      assert.deepEqual([d.requests, d.roundRequests, d.maxRequests], [3, 3, 8]);
      // The job that carries it lists it (a job's page); another tenant's principal sees none.
      assert.deepEqual(
        (await listJobDeliveries(fx.p.ada, { job: d.jobId })).deliveries.map((x) => x.id),
        [deliveryId],
      );
      assert.deepEqual((await listJobDeliveries(fx.p.gus, { job: d.jobId })).deliveries, []);
      assert.deepEqual(
        (await listDeliveries(fx.p.ada, endpoint.id, { job: d.jobId })).deliveries,
        [],
        "a ping is about no job",
      );
      assert.equal(d.attempts[1]!.responseHeaders?.["retry-after"], "1");

      rx.answer = () => ({ status: 410 });
      const gone = await sendTestEvent(fx.p.ada, endpoint.id);
      await waitFor(async () => (await getDelivery(fx.p.ada, gone.deliveryId)).status === "failed");
      const after = await getEndpoint(fx.p.ada, endpoint.id);
      assert.equal(after.disabled, true);
      assert.match(after.disabledReason ?? "", /410/);
      await assert.rejects(sendTestEvent(fx.p.ada, endpoint.id), isCode("conflict"));
    } finally {
      rx.close();
    }
  });

  test("the circuit opens after 5 consecutive failures: no request while open, one probe when half-open, waiting deliveries keep their attempts", async () => {
    const rx = new Receiver();
    const url = await rx.start();
    try {
      let failing = true;
      rx.answer = () => ({ status: failing ? 500 : 200 });
      const { endpoint } = await createEndpoint(fx.p.ada, { url, events: ["job.succeeded"], rateLimitPerSecond: 100 });
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push((await sendTestEvent(fx.p.ada, endpoint.id)).deliveryId);
      await waitFor(async () => (await getEndpoint(fx.p.ada, endpoint.id)).health.circuit === "open");
      const openedAt = Date.now();
      // Requests whose permits were granted before the circuit opened may still be landing (in flight).
      await sleep(250);
      const before = rx.received.length;
      assert.ok(before >= 5 && before <= 8 + 5, `requests before the circuit opened: ${before}`);
      await sleep(700);
      assert.equal(rx.received.length, before, "no request reaches the endpoint while its circuit is open");
      failing = false;
      await waitFor(async () => (await getEndpoint(fx.p.ada, endpoint.id)).health.circuit === "closed");
      assert.ok(rx.received[before]!.at - openedAt >= 1_300, "the probe came after the open period");
      for (const id of ids) await waitFor(async () => (await getDelivery(fx.p.ada, id)).status === "delivered");
      // Deferred runs spent no attempt: each delivery's job counts only requests and crashes.
      const { rows } = await pool().query<{ deferred: number }>(
        `SELECT count(*)::int AS deferred FROM job_attempts a JOIN webhook_deliveries d ON d.job_id = a.job_id
          WHERE d.endpoint_id = $1 AND a.error_class = 'deferred'`,
        [endpoint.id],
      );
      assert.ok(rows[0]!.deferred > 0, "some deliveries waited for the circuit");
      const { rows: jobs } = await pool().query<{ attempts: number; max: number; requests: number }>(
        `SELECT j.attempts, j.max_attempts AS max, d.attempts AS requests FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id
          WHERE d.endpoint_id = $1`,
        [endpoint.id],
      );
      for (const j of jobs)
        assert.equal(j.max - 1000, j.attempts - j.requests, "each deferral raised the budget by one");
    } finally {
      rx.close();
    }
  });

  test("the rate limit spaces requests; a rotated secret signs alongside the new one for 24 hours", async () => {
    const rx = new Receiver();
    const url = await rx.start();
    try {
      const { endpoint, secret: old } = await createEndpoint(fx.p.ada, {
        url,
        events: ["job.succeeded"],
        rateLimitPerSecond: 2,
      });
      const { secret, previousSecretExpiresAt } = await rotateSecret(fx.p.ada, endpoint.id);
      assert.ok(Date.parse(previousSecretExpiresAt) - Date.now() > 23.9 * 3600_000);
      for (let i = 0; i < 6; i++) await sendTestEvent(fx.p.ada, endpoint.id);
      await waitFor(async () => rx.received.length >= 6);
      const span = rx.received[5]!.at - rx.received[0]!.at;
      assert.ok(span >= 1_400, `6 requests at 2/s (burst 2) take at least 2 s less jitter, took ${span} ms`);
      for (const r of rx.received) {
        const h = {
          "webhook-id": r.headers["webhook-id"] as string,
          "webhook-timestamp": r.headers["webhook-timestamp"] as string,
          "webhook-signature": r.headers["webhook-signature"] as string,
        };
        assert.equal((h["webhook-signature"].match(/v1,/g) ?? []).length, 2);
        new Webhook(secret).verify(r.body, h);
        new Webhook(old).verify(r.body, h);
      }
    } finally {
      rx.close();
    }
  });

  test("replay keeps the webhook-id; recover replays every failed delivery since a time", async () => {
    const rx = new Receiver();
    const url = await rx.start();
    try {
      let ok = false;
      rx.answer = () => ({ status: ok ? 200 : 400 });
      const { endpoint } = await createEndpoint(fx.p.ada, { url, events: ["job.succeeded"], rateLimitPerSecond: 100 });
      const since = new Date().toISOString();
      const a = await sendTestEvent(fx.p.ada, endpoint.id);
      const b = await sendTestEvent(fx.p.ada, endpoint.id);
      for (const id of [a.deliveryId, b.deliveryId])
        await waitFor(async () => (await getDelivery(fx.p.ada, id)).status === "failed", 30_000);
      assert.equal((await getDelivery(fx.p.ada, a.deliveryId)).requests, 8, "8 requests, then the dead-letter queue");
      const { rows: gaveUp } = await pool().query<{ error_class: string; error_message: string }>(
        `SELECT j.error_class, j.error_message FROM jobs j JOIN webhook_deliveries d ON d.job_id = j.id WHERE d.id = $1`,
        [a.deliveryId],
      );
      assert.deepEqual(
        gaveUp[0],
        {
          error_class: "exhausted",
          error_message: "HTTP 400; gave up after 8 requests",
        },
        "the receiver's failures, not the message: exhausted, not permanent",
      );
      ok = true;
      const replayed = await replayDelivery(fx.p.ada, a.deliveryId);
      assert.equal(replayed.status, "pending");
      await assert.rejects(replayDelivery(fx.p.ada, a.deliveryId), isCode("conflict"));
      await waitFor(async () => (await getDelivery(fx.p.ada, a.deliveryId)).status === "delivered");
      assert.equal(rx.received.at(-1)!.headers["webhook-id"], a.messageId);
      assert.deepEqual(await recoverEndpoint(fx.p.ada, endpoint.id, { since }), { replayed: 1 });
      await waitFor(async () => (await getDelivery(fx.p.ada, b.deliveryId)).status === "delivered");
      assert.equal(rx.received.at(-1)!.headers["webhook-id"], b.messageId);
      await assert.rejects(recoverEndpoint(fx.p.ada, endpoint.id, { since: "yesterday" }), isCode("invalid_input"));
    } finally {
      rx.close();
    }
  });

  test("a dead delivery replayed from the dead-letter queue is delivered, on the webhooks queue, with its webhook-id", async () => {
    const rx = new Receiver();
    const url = await rx.start();
    try {
      let ok = false;
      rx.answer = () => ({ status: ok ? 200 : 500 });
      const { endpoint } = await createEndpoint(fx.p.ada, { url, events: ["job.succeeded"], rateLimitPerSecond: 100 });
      const { deliveryId, messageId } = await sendTestEvent(fx.p.ada, endpoint.id);
      const dead = await waitFor(async () => {
        const d = await getDelivery(fx.p.ada, deliveryId);
        return d.status === "failed" && d;
      }, 30_000);
      const listed = await listDeadLetters(fx.p.oscar, { type: "webhook_delivery" });
      assert.ok(
        listed.jobs.some((j) => j.id === dead.jobId),
        "the dead delivery is in the dead-letter view",
      );
      ok = true;
      await forgetDownstream(`webhook:${endpoint.id}`); // its open circuit would hold the replay back ~1.5 s
      const replay = await replayJob(fx.p.oscar, dead.jobId);
      assert.equal(replay.queue, "webhooks");
      await waitFor(async () => (await getDelivery(fx.p.ada, deliveryId)).status === "delivered");
      const after = await getDelivery(fx.p.ada, deliveryId);
      assert.equal(after.jobId, replay.id, "the replay carries the delivery now");
      assert.equal(rx.received.at(-1)!.headers["webhook-id"], messageId);
    } finally {
      rx.close();
    }
  });

  test("an export that is ready is announced with a download link that needs no sign-in", async () => {
    const rx = new Receiver();
    const url = await rx.start();
    try {
      await createEndpoint(fx.p.ada, { url, events: ["export.ready"] });
      const { job } = await requestExport(fx.p.ada, { dataset: "orders", format: "csv" });
      await waitFor(async () => rx.received.find((r) => JSON.parse(r.body).type === "export.ready"), 30_000);
      const body = JSON.parse(rx.received.find((r) => JSON.parse(r.body).type === "export.ready")!.body);
      assert.equal(body.data.jobId, job.id);
      assert.match(body.data.downloadUrl, /\/d\/dl_[\w-]+$/);
      assert.ok(body.data.files[0].rows > 0);
      const token = body.data.downloadUrl.split("/d/")[1];
      const { rows } = await pool().query(`SELECT 1 FROM export_links WHERE tenant_id = $1 AND expires_at > now()`, [
        fx.p.acmeId,
      ]);
      assert.ok(rows.length >= 1 && token.length > 20);
      assert.equal(body.data.files[0].downloadUrl, body.data.downloadUrl);
      assert.ok(Date.parse(body.data.files[0].expiresAt) > Date.now());
      // The link works, and the signature covers the body as sent (with its link).
      const download = await openLinkDownload(token);
      download.stream.destroy();
      assert.equal(download.name, body.data.files[0].name);
      const sent = rx.received.find((r) => JSON.parse(r.body).type === "export.ready")!;
      const { rows: stored } = await pool().query<{ id: string; body: string }>(
        `SELECT id, body FROM webhook_messages WHERE event_type = 'export.ready' AND job_id = $1`,
        [job.id],
      );
      const { rows: secret } = await pool().query<{ secret: string }>(
        `SELECT e.secret FROM webhook_endpoints e JOIN webhook_deliveries d ON d.endpoint_id = e.id
          WHERE d.message_id = $1`,
        [stored[0]!.id],
      );
      new Webhook(secret[0]!.secret).verify(sent.body, sent.headers as Record<string, string>);
      // The stored message names the files, and holds no link that would open them.
      assert.doesNotMatch(stored[0]!.body, /dl_/);
      assert.equal(JSON.parse(stored[0]!.body).data.files[0].fileId.length, 36);
    } finally {
      rx.close();
    }
  });

  test("bad input is a 400 naming the field; another tenant's endpoint and delivery are 404", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "webhooks");
    const post = (body: unknown) =>
      createEndpointRoute(
        new Request("http://test/api/v1/webhooks/endpoints", {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify(body),
        }),
        { params: Promise.resolve({}) },
      );
    for (const [body, field] of [
      [{ url: "ftp://x.example/hook", events: ["job.failed"] }, "url"],
      [{ url: "http://169.254.169.254/latest", events: ["job.failed"] }, "url"],
      [{ url: "https://hooks.example.com/x", events: ["job.exploded"] }, "events"],
      [{ url: "https://hooks.example.com/x", events: [] }, "events"],
      [{ url: "https://hooks.example.com/x", events: ["job.failed"], rateLimitPerSecond: 0 }, "rateLimitPerSecond"],
      [{ url: "https://hooks.example.com/x", events: ["job.failed"], secret: "mine" }, "secret"],
    ] as const) {
      const res = await post(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(JSON.stringify(await res.json()), new RegExp(field));
    }
    const res = await post({ url: "https://hooks.example.com/x", events: ["job.failed"] });
    assert.equal(res.status, 201);
    const { endpoint } = (await res.json()) as { endpoint: { id: string } };
    const gusToken = await createApiTokenForEmail("gus@globex.test", "webhooks");
    const other = await endpointRoute(
      new Request(`http://test/api/v1/webhooks/endpoints/${endpoint.id}`, {
        headers: { Authorization: `Bearer ${gusToken}` },
      }),
      { params: Promise.resolve({ id: endpoint.id }) },
    );
    assert.equal(other.status, 404);
    await assert.rejects(updateEndpoint(fx.p.gus, endpoint.id, { disabled: true }), isCode("not_found"));
    await assert.rejects(sendTestEvent(fx.p.gus, endpoint.id), isCode("not_found"));
    await assert.rejects(deleteEndpoint(fx.p.gus, endpoint.id), isCode("not_found"));
    await assert.rejects(listDeliveries(fx.p.gus, endpoint.id, {}), isCode("not_found"));
    const { deliveryId } = await sendTestEvent(fx.p.ada, endpoint.id);
    await assert.rejects(getDelivery(fx.p.gus, deliveryId), isCode("not_found"));
    await assert.rejects(replayDelivery(fx.p.gus, deliveryId), isCode("not_found"));
    await deleteEndpoint(fx.p.ada, endpoint.id);
    await assert.rejects(getEndpoint(fx.p.ada, endpoint.id), isCode("not_found"));
  });
});

describe("SSRF", () => {
  test("only public addresses, unless WEBHOOK_ALLOW_PRIVATE=1 allows loopback and private ones; link-local and metadata never", async () => {
    for (const a of ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "::1", "fd12::1", "::ffff:10.0.0.1"]) {
      assert.equal(judgeAddress(a, false).ok, false, a);
      assert.equal(judgeAddress(a, true).ok, true, a);
    }
    for (const a of ["169.254.169.254", "fe80::1", "0.0.0.0", "::ffff:169.254.169.254", "224.0.0.1"]) {
      assert.equal(judgeAddress(a, true).ok, false, a);
    }
    for (const a of ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
      assert.equal(judgeAddress(a, false).ok, true, a);
    assert.match(urlProblem("http://hooks.example.com/x", false)!, /https/);
    assert.match(urlProblem("https://localhost/x", false)!, /public host/);
    assert.match(urlProblem("https://10.0.0.1/x", false)!, /private/);
    assert.match(urlProblem("https://[fd00::1]/x", false)!, /private/);
    assert.equal(urlProblem("https://hooks.example.com/x", false), null);
    assert.equal(urlProblem("http://127.0.0.1:9/x", true), null);
    // The client refuses before connecting, whatever the URL checks said.
    const r = await send({
      url: "http://169.254.169.254/latest/meta-data",
      headers: {},
      body: "{}",
      timeoutMs: 2_000,
      allowPrivate: true,
    });
    assert.equal(r.statusCode, null);
    assert.match(r.error!, /link-local/);
    const local = await send({
      url: "http://127.0.0.1:9/x",
      headers: {},
      body: "{}",
      timeoutMs: 2_000,
      allowPrivate: false,
    });
    assert.match(local.error!, /loopback or private/);
  });
});
