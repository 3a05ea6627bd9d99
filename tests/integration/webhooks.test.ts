process.env.WEBHOOK_ALLOW_PRIVATE = "1";
process.env.WEBHOOK_RETRY_SCALE = "0.001";
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
import { enqueueJob } from "@/lib/jobs/enqueue";
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
  recoverEndpoint,
  replayDelivery,
  rotateSecret,
  sendTestEvent,
  updateEndpoint,
} from "@/lib/webhooks/service";
import { useTestDatabase } from "../helpers/db";
import { isCode } from "../helpers/fixtures";

let worker: ChildProcess | undefined;
let workerLog = "";
const fx = useTestDatabase({
  // A real worker process, as npm start runs it (every queue).
  setup: async () => {
    worker = spawn(process.execPath, ["--import", "tsx", "worker/index.ts", "--concurrency", "8"], {
      env: { ...process.env, DATABASE_URL: fx.database.url, ADMISSION_SWEEP_MS: "100" },
      stdio: ["ignore", "pipe", "pipe"],
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
});
