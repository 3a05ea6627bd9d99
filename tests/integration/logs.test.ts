/**
 * Logs: JSON lines with the fields that apply (requestId from the API's route
 * wrapper, jobId/tenantId/attempt/workerId from the runner, traceId from the
 * active span), and no secret or sensitive input, whichever path logged it.
 * The records are read from the logger's own output (lib/log.ts redirectLogs),
 * and from a real worker process's stdout.
 */
import { after, afterEach, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { Writable } from "node:stream";
import { context, trace, TraceFlags } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { z } from "zod";
import { POST as changePasswordRoute } from "@/app/api/v1/account/password/route";
import { POST as createExportRoute } from "@/app/api/v1/exports/route";
import { GET as listJobsRoute } from "@/app/api/v1/jobs/route";
import { GET as downloadLinkRoute } from "@/app/d/[token]/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { databaseUrl } from "@/lib/env";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { defineTask } from "@/lib/jobs/task";
import { logger, redirectLogs, scrubSecrets } from "@/lib/log";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";
import { dispatchToRunner } from "../../worker/dispatch";
import { workerArgs } from "../helpers/worker";

type LogRecord = Record<string, unknown> & { level: string; time: string; msg: string };

/** A secret that must never be logged, whatever carried it. */
const SECRET = "hunter2-do-not-log-7f3a";

const leakyTask = defineTask({
  type: "log_probe",
  queue: "bulk",
  inputSchema: z.object({ apiKey: z.string(), fail: z.boolean() }),
  retry: { maxAttempts: 1, initialBackoffMs: 0, maxBackoffMs: 0, multiplier: 1, jitter: "none" },
  timeoutMs: 5_000,
  leaseMs: 5_000,
  async handler(ctx) {
    // Code under the runner logs without passing the job's fields along.
    logger.info({ input: ctx.input }, "[log_probe] inside the handler");
    if (ctx.input.fail)
      throw new Error(`could not reach postgresql://app:${SECRET}@db.internal/x with ${ctx.input.apiKey}`);
    return { ok: true };
  },
});

const fx = useTestDatabase({ seed: 0.001, tasks: [leakyTask] });
const ctx = { params: Promise.resolve({}) };

let lines: string[] = [];
let restore: () => void = () => {};
before(() => {
  restore = redirectLogs(
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split("\n").filter(Boolean));
        done();
      },
    }) as unknown as Parameters<typeof redirectLogs>[0],
  );
  logger.level = "debug"; // refusals (4xx) are logged at debug
});
after(() => restore());
afterEach(() => (lines = []));

const records = (): LogRecord[] => lines.map((l) => JSON.parse(l) as LogRecord);
const output = () => lines.join("\n");

describe("logs", () => {
  test("an API request's records carry its request id, which the response returns; no token or body in them", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "logs");
    const res = await createExportRoute(
      new Request("http://test/api/v1/exports", {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "X-Request-Id": "req-logs-1" },
        body: JSON.stringify({ dataset: "orders", format: "csv" }),
      }),
      ctx,
    );
    assert.equal(res.status, 202);
    assert.equal(res.headers.get("x-request-id"), "req-logs-1");
    const access = records().find((r) => r.msg.includes("POST /api/v1/exports 202"));
    assert.ok(access, output());
    assert.equal(access.requestId, "req-logs-1");
    assert.equal(access.level, "info");
    assert.equal(access.status, 202);
    assert.match(access.time, /^\d{4}-\d\d-\d\dT/);

    // A request id that is not a plain token is replaced by a fresh one.
    const odd = await listJobsRoute(
      new Request("http://test/api/v1/jobs", {
        headers: { Authorization: `Bearer ${token}`, "X-Request-Id": "a b\u0001" + "x".repeat(200) },
      }),
      ctx,
    );
    assert.equal(odd.status, 200);
    const fresh = odd.headers.get("x-request-id");
    assert.match(fresh ?? "", /^[0-9a-f-]{36}$/);
    assert.ok(records().some((r) => r.requestId === fresh));

    // A refused token and a password change: neither the token nor the passwords reach the log.
    const refused = await listJobsRoute(
      new Request("http://test/api/v1/jobs", { headers: { Authorization: `Bearer cvy_${SECRET}` } }),
      ctx,
    );
    assert.equal(refused.status, 401);
    const pw = await changePasswordRoute(
      new Request("http://test/api/v1/account/password", {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: JSON.stringify({ currentPassword: SECRET, newPassword: `${SECRET}-new` }),
      }),
      ctx,
    );
    assert.ok(pw.status >= 200 && pw.status < 500, `status ${pw.status}`);
    // A download link's token is its path: logged scrubbed.
    const link = await downloadLinkRoute(new Request(`http://test/d/dl_${SECRET}`), {
      params: Promise.resolve({ token: `dl_${SECRET}` }),
    });
    assert.equal(link.status, 404);
    assert.ok(
      records().some((r) => r.path === "/d/dl_[Redacted]" && r.status === 404),
      output(),
    );
    assert.ok(records().length >= 4, output());
    assert.ok(!output().includes(token), "the API token is not in the log");
    assert.ok(!output().includes(SECRET), "neither a refused token nor a password is in the log");
  });

  test("a job's records carry jobId, tenantId, attempt and workerId, down to its handler; its input and secrets stay out", async () => {
    const { job: ok } = await enqueueJob({
      tenantId: fx.p.acmeId,
      type: "log_probe",
      input: { apiKey: `cvy_${SECRET}`, fail: false },
    });
    const { job: bad } = await enqueueJob({
      tenantId: fx.p.globexId,
      type: "log_probe",
      input: { apiKey: `Bearer ${SECRET}`, fail: true },
    });
    await drainJobs({ "bulk:log_probe": dispatchToRunner("log_probe") });

    for (const [job, tenantId, outcome, level] of [
      [ok, fx.p.acmeId, "succeeded", "info"],
      [bad, fx.p.globexId, "failed", "error"],
    ] as const) {
      const mine = records().filter((r) => r.jobId === job.id);
      const inside = mine.find((r) => r.msg === "[log_probe] inside the handler");
      assert.ok(inside, output());
      assert.equal(inside.tenantId, tenantId);
      assert.equal(inside.attempt, 1);
      assert.equal(typeof inside.workerId, "string");
      assert.equal(inside.input, "[Redacted]", "a job's input is not logged even when passed");
      const closing = mine.find((r) => r.outcome === outcome);
      assert.ok(closing, output());
      assert.equal(closing.level, level);
      assert.match(closing.msg, new RegExp(`^\\[task:log_probe\\] job ${job.id} attempt 1 ${outcome}`));
      assert.deepEqual([closing.tenantId, closing.attempt, closing.workerId], [tenantId, 1, inside.workerId]);
    }
    assert.match(output(), /postgresql:\/\/app:\[Redacted\]@db\.internal/, "the failure is logged, scrubbed");
    assert.ok(!output().includes(SECRET), output());
  });

  test("traceId comes from the active span; secrets in fields, errors and messages are redacted", () => {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
      const span = trace.wrapSpanContext({ traceId, spanId: "00f067aa0ba902b7", traceFlags: TraceFlags.SAMPLED });
      context.with(trace.setSpan(context.active(), span), () => logger.info("[test] inside a span"));
      logger.info("[test] outside any span");
      const inside = records().find((r) => r.msg === "[test] inside a span");
      const outside = records().find((r) => r.msg === "[test] outside any span");
      assert.equal(inside?.traceId, traceId, output());
      assert.ok(outside && outside.traceId === undefined, output());
    } finally {
      context.disable();
    }

    const pgError = Object.assign(new Error("duplicate key value violates unique constraint"), {
      code: "23505",
      detail: `Key (email)=(${SECRET}@acme.test) already exists.`,
    });
    logger.error(
      {
        err: pgError,
        headers: { authorization: `Bearer ${SECRET}`, cookie: `authjs.session-token=${SECRET}` },
        password: SECRET,
        token: SECRET,
        user: { password: SECRET, secret: SECRET },
        connectionString: `postgresql://u:${SECRET}@h/db`,
        body: { anything: SECRET },
        rows: [{ email: SECRET }],
      },
      `[test] connecting to ${databaseUrl().replace(/\/\/([^:@/]+)@/, `//$1:${SECRET}@`)} as Bearer ${SECRET}, webhook whsec_${SECRET}`,
    );
    const rec = records().at(-1)!;
    assert.equal((rec.err as { code: string }).code, "23505");
    assert.equal((rec.err as { detail?: string }).detail, undefined, "a database error's detail may quote a row");
    assert.ok(!output().includes(SECRET), output());
    assert.equal(scrubSecrets("https://user:pw@example.com/x"), "https://user:[Redacted]@example.com/x");
  });
});

test("a worker process writes JSON lines with its workerId, graphile-worker's own lines included", async () => {
  const worker = spawn(process.execPath, workerArgs("--concurrency", "1"), {
    env: { ...process.env, DATABASE_URL: fx.database.url, LOG_FORMAT: "json", LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let out = "";
  let err = "";
  worker.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  worker.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  try {
    const deadline = Date.now() + 60_000;
    // Its own "started" line, and graphile-worker's first (it connects and says so after `run` resolves).
    while (!/\[worker\] \S+ started/.test(out) || !out.includes('"component":"graphile-worker"')) {
      if (worker.exitCode !== null || Date.now() > deadline) assert.fail(`the worker did not start:\n${out}\n${err}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    worker.kill("SIGTERM");
    const [code] = (await once(worker, "exit")) as [number | null];
    assert.equal(code, 0, `${out}\n${err}`);
    const recs = out
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as LogRecord); // every line is JSON
    const started = recs.find((r) => /\[worker\] \S+ started/.test(r.msg))!;
    assert.equal(started.level, "info");
    assert.equal(typeof started.workerId, "string");
    assert.ok(
      recs.some((r) => r.component === "graphile-worker" && r.workerId === started.workerId),
      out,
    );
    assert.ok(recs.some((r) => r.msg === "[worker] stopped"));
    assert.ok(!out.includes(new URL(databaseUrl()).password || "\u0000"), "no database password");
  } finally {
    if (worker.exitCode === null) worker.kill("SIGKILL");
  }
});
