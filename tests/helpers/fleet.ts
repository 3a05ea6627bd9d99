/**
 * The fleet test's body (tests/integration/fleet.test.ts runs it on a direct connection,
 * fleet-pgbouncer.test.ts through PgBouncer), on the file's database (`fx`, seeded):
 * Several hosts on one Postgres: two real app servers (scripts/serve.ts, the
 * web server `npm start` runs) and three real worker processes, each a
 * process of its own as on separate machines.
 *  - A job created through app A is followed live through app B's SSE.
 *  - A queue's cap, set through app A's API, holds across the three workers,
 *    whatever their own QUEUE_* environment says (it only seeds a new database).
 *  - An upload begun at app A goes on at app B while A's request still holds
 *    it (tus's lock is in Postgres: B asks A to let go).
 *  - A principal's open event streams are counted across both servers.
 *  - SIGKILL of a worker mid-job and SIGTERM of app A lose nothing: every job
 *    ends succeeded exactly once, and a client of A carries on at B from its
 *    Last-Event-ID.
 * Builds the app first when the build is missing or stale (as `npm start` does).
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import type { JobEventWire } from "@/lib/sse/streams";
import { needsBuild, runNextBuild } from "../../scripts/next-build";
import type { TestFixture } from "./db";
import { freePort, waitFor } from "./net";
import { workerArgs } from "./worker";

const PROBES = 8;
const CAP = 2;
const PROBE_SLEEP_MS = 1_000;

type Proc = ChildProcess & { name: string; output: () => string };

/** `args` are node's: the app servers run scripts/serve.ts through tsx, the workers the bundle (as `npm start` runs both). */
function startProcess(name: string, args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe", "ipc"] });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return Object.assign(child, { name, output: () => out });
}

async function stop(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, "exit") as Promise<[number | null]>;
  child.kill(signal);
  const [code] = await exited;
  return code;
}

/** A client of `GET /api/v1/events` (the tenant's job events), collecting frames until it ends. */
function followEvents(base: string, token: string, lastEventId?: string) {
  const ac = new AbortController();
  const state = { events: [] as JobEventWire[], lastId: lastEventId, status: 0, ended: false };
  const done = (async () => {
    const res = await fetch(`${base}/api/v1/events`, {
      headers: { Authorization: `Bearer ${token}`, ...(lastEventId ? { "Last-Event-ID": lastEventId } : {}) },
      signal: ac.signal,
    });
    state.status = res.status;
    if (!res.ok || !res.body) return;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (let i = buffer.indexOf("\n\n"); i >= 0; i = buffer.indexOf("\n\n")) {
        const frame = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const field = (name: string) =>
          frame
            .split("\n")
            .find((l) => l.startsWith(`${name}: `))
            ?.slice(name.length + 2);
        if (field("id")) state.lastId = field("id");
        if (field("event") === "job") state.events.push(JSON.parse(field("data")!) as JobEventWire);
      }
    }
  })()
    .catch(() => {}) // the server went away, or we aborted: the events so far stay
    .finally(() => (state.ended = true));
  return Object.assign(state, { close: () => ac.abort(), done });
}

const reached = (events: JobEventWire[], jobId: string, status: string) =>
  events.some((e) => e.jobId === jobId && e.status === status);

/**
 * The fleet, its DATABASE_URL `databaseUrl` and, when given, DATABASE_DIRECT_URL `directUrl`; `expectLine`
 * is what every process's start-up probe (lib/pooler.ts) must have logged about it.
 */
export async function runFleet(
  fx: TestFixture,
  databaseUrl: string,
  directUrl: string | undefined,
  expectLine: RegExp,
): Promise<void> {
  {
    // The build serve.ts runs: made once, reused (a fresh one takes minutes; the fleet then ~60 s).
    const buildEnv: NodeJS.ProcessEnv = { ...process.env, NEXT_TELEMETRY_DISABLED: "1" };
    for (const key of ["NODE_ENV"]) delete buildEnv[key]; // next build sets its own
    if (needsBuild()) await runNextBuild(buildEnv);

    const dataDir = await mkdtemp(path.join(tmpdir(), "conveyor-fleet-test-"));
    const common: NodeJS.ProcessEnv = { ...process.env };
    for (const key of ["NODE_ENV", "TEST_SERVER_URL", "TEST_TEMPLATE_DB", "TEST_ONLY", "NODE_TEST_CONTEXT"]) {
      delete common[key];
    }
    delete common.DATABASE_DIRECT_URL;
    delete common.DATABASE_PREPARED_STATEMENTS;
    Object.assign(common, {
      DATABASE_URL: databaseUrl,
      ...(directUrl ? { DATABASE_DIRECT_URL: directUrl } : {}),
      AUTH_SECRET: "fleet-test-secret-not-for-production",
      // One machine stands in for several: the app servers and workers share the local storage.
      CONVEYOR_DATA_DIR: dataDir,
      RATE_LIMIT_READS_PER_MINUTE: "0",
      RATE_LIMIT_WRITES_PER_MINUTE: "0",
      NEXT_TELEMETRY_DISABLED: "1",
      // A dead worker is noticed in seconds (the probe's lease is 3 s).
      WORKER_HEARTBEAT_MS: "500",
      WORKER_DEAD_AFTER_MS: "3000",
      REAPER_INTERVAL_MS: "250",
      ADMISSION_SWEEP_MS: "250",
      WORKER_SHUTDOWN_GRACE_MS: "3000",
      SSE_MAX_STREAMS: "3",
    });
    const [portA, portB] = [await freePort(), await freePort()];
    const [appA, appB] = [portA, portB].map((port, i) =>
      startProcess(`app ${"AB"[i]}`, ["--import", "tsx", "scripts/serve.ts"], {
        ...common,
        NODE_ENV: "production",
        PORT: String(port),
      }),
    );
    const [a, b] = [`http://127.0.0.1:${portA}`, `http://127.0.0.1:${portB}`];
    // Each worker's own QUEUE_BULK_TENANT_CAP, all above the cap set below: the database's value must win.
    const workers = [20, 30, 40].map((envCap, i) =>
      startProcess(`worker ${i + 1}`, workerArgs("--queues", "interactive,bulk", "--concurrency", "2"), {
        ...common,
        QUEUE_BULK_TENANT_CAP: String(envCap),
      }),
    );
    const everyone = [appA!, appB!, ...workers];
    const outputs = () =>
      everyone.map((p) => `\n--- ${p.name} (last 3000 characters) ---\n${p.output().slice(-3000)}`).join("");
    const clients: { close(): void; done: Promise<void> }[] = [];
    const t0 = Date.now();
    const phases: string[] = [];
    const phase = (name: string) => phases.push(`${name} at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    try {
      for (const [app, base] of [
        [appA!, a],
        [appB!, b],
      ] as const) {
        await waitFor(
          `${app.name} to answer /api/health`,
          async () => {
            if (app.exitCode !== null) throw new Error(`${app.name} exited (${app.exitCode})${outputs()}`);
            return fetch(`${base}/api/health`).then(
              (r) => r.ok,
              () => false,
            );
          },
          // Next.js's prepare alone took over 2 minutes for each of two servers on a 2-core box at load 20.
          300_000,
          outputs,
        );
      }
      await waitFor(
        "three workers started",
        async () => workers.every((w) => /\[worker\] .* started: queues/.test(w.output())),
        120_000,
        outputs,
      );
      phase("fleet up");
      for (const p of everyone) assert.match(p.output(), expectLine, `${p.name}'s start-up probe${outputs()}`);
      const ada = await createApiTokenForEmail("ada@acme.test", "fleet test");
      const root = await createApiTokenForEmail("root@conveyor.test", "fleet test");
      const call = (base: string, token: string, method: string, url: string, body?: unknown) =>
        fetch(`${base}${url}`, {
          method,
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });

      // ── A job created through app A, followed live through app B's SSE ─────
      const atB = followEvents(b, ada);
      clients.push(atB);
      await waitFor("app B's stream to open", async () => atB.status === 200 || atB.ended, 10_000);
      assert.equal(atB.status, 200);
      const created = await call(a, ada, "POST", "/api/v1/exports", { dataset: "customers", format: "csv" });
      assert.equal(created.status, 202, await created.clone().text());
      const { id: exportId } = (await created.json()) as { id: string };
      await waitFor(
        "app B's stream to show the export succeeded",
        async () => reached(atB.events, exportId, "succeeded"),
        30_000,
        outputs,
      );
      assert.ok(reached(atB.events, exportId, "running"), "B's client saw it run, live, not only its end");

      phase("export followed across apps");
      // ── An upload begun at A goes on at B, while A's request still holds it ──
      const data = randomBytes(256 * 1024);
      const tus = (base: string, method: string, url: string, headers: Record<string, string>, body?: BodyInit) =>
        fetch(`${base}${url}`, {
          method,
          headers: { Authorization: `Bearer ${ada}`, "Tus-Resumable": "1.0.0", ...headers },
          body,
          ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
        } as RequestInit);
      const made = await tus(a, "POST", "/api/v1/uploads", {
        "Upload-Length": String(data.length),
        "Upload-Metadata": `filename ${Buffer.from("fleet.csv").toString("base64")}`,
      });
      assert.equal(made.status, 201, await made.clone().text());
      const uploadUrl = made.headers.get("location")!;
      // A PATCH at A that sends a first part and then hangs, as a half-open connection does.
      let hang!: ReadableStreamDefaultController<Uint8Array>;
      const hanging = tus(
        a,
        "PATCH",
        uploadUrl,
        { "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream" },
        new ReadableStream<Uint8Array>({
          start(controller) {
            hang = controller;
            controller.enqueue(new Uint8Array(data.subarray(0, 64 * 1024)));
          },
        }),
      ).catch(() => null);
      await waitFor(
        "A's PATCH to hold the upload's lock",
        async () => (await pool().query(`SELECT 1 FROM upload_locks`)).rowCount === 1,
        10_000,
      );
      await sleep(300); // the first part written
      // B's HEAD asks A's request, in another process, to let go; it answers with what arrived.
      const head = await tus(b, "HEAD", uploadUrl, {});
      assert.equal(head.status, 200, `B's HEAD got the lock from A${outputs()}`);
      const offset = Number(head.headers.get("upload-offset"));
      assert.ok(offset > 0 && offset <= 64 * 1024, `what reached A is kept (${offset})`);
      const rest = await tus(
        b,
        "PATCH",
        uploadUrl,
        { "Upload-Offset": String(offset), "Content-Type": "application/offset+octet-stream" },
        new Uint8Array(data.subarray(offset)),
      );
      assert.equal(rest.status, 204, await rest.clone().text());
      assert.equal(rest.headers.get("upload-offset"), String(data.length));
      try {
        hang.close();
      } catch {
        /* A already let go of it */
      }
      await hanging;

      phase("upload moved from A to B");
      // ── The bulk queue's cap, set through app A's API: 2 for the whole fleet ───
      const capped = await call(a, root, "PATCH", "/api/v1/ops/queues/bulk", { tenantCap: CAP });
      assert.equal(capped.status, 200, await capped.clone().text());
      // The first worker to start seeded the queue from its environment; the others kept its values
      // and said why (their QUEUE_BULK_TENANT_CAP differ), and PATCH replaced them for everyone.
      const seeders = workers.filter((w) => /queue bulk: seeded cap/.test(w.output()));
      assert.equal(seeders.length, 1, `one worker seeded the bulk queue${outputs()}`);
      for (const w of workers.filter((x) => x !== seeders[0])) {
        assert.match(w.output(), /queue bulk: cap \d+, window \d+ from the database; .*only seed/, w.name);
      }

      // ── Slow jobs; a client on app A too ───────────────────────────────────
      const atA = followEvents(a, ada);
      clients.push(atA);
      await waitFor("app A's stream to open", async () => atA.status === 200 || atA.ended, 10_000);
      // SSE_MAX_STREAMS (3 here) counts a principal's streams on every server together.
      const third = followEvents(b, ada);
      clients.push(third);
      await waitFor("a third stream to open", async () => third.status !== 0 || third.ended, 10_000);
      assert.equal(third.status, 200);
      const fourth = await fetch(`${a}/api/v1/events`, { headers: { Authorization: `Bearer ${ada}` } });
      assert.equal(fourth.status, 429, "one at A and two at B: A refuses a fourth");
      await fourth.body?.cancel();
      third.close();
      await waitFor(
        "the third stream's slot to be given back",
        async () => (await pool().query(`SELECT count(*)::int AS n FROM sse_streams`)).rows[0].n === 2,
        10_000,
      );
      const probes: string[] = [];
      for (let i = 0; i < PROBES; i++) {
        probes.push(
          (await enqueueJob({ tenantId: fx.p.acmeId, type: "probe", input: { sleepMs: PROBE_SLEEP_MS } })).job.id,
        );
      }
      // Running bulk jobs of Acme, sampled across the fleet until every probe ended.
      let peak = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const { rows } = await pool().query<{ n: number }>(
            `SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND queue = 'bulk' AND status = 'running'`,
            [fx.p.acmeId],
          );
          peak = Math.max(peak, rows[0]!.n);
          await sleep(25);
        }
      })();

      // ── SIGKILL a worker in the middle of a probe ────────────────────────────
      const victim = await waitFor(
        "a probe running",
        async () =>
          (
            await pool().query<{ pid: number; jobId: string }>(
              `SELECT w.pid, a.job_id::text AS "jobId" FROM job_attempts a JOIN workers w ON w.id = a.worker_id
                WHERE a.outcome = 'running' AND a.job_id = ANY($1::uuid[]) LIMIT 1`,
              [probes],
            )
          ).rows[0],
        30_000,
        outputs,
      );
      const killed = workers.find((w) => w.pid === victim.pid);
      assert.ok(killed, `the worker running ${victim.jobId} is one of ours (pid ${victim.pid})`);
      killed.kill("SIGKILL");
      await once(killed, "exit");

      // ── SIGTERM app A while its client moves to app B ────────────────────────
      const appAExit = await stop(appA!);
      assert.equal(appAExit, 0, `app A stopped cleanly${outputs()}`);
      await atA.done;
      assert.ok(atA.lastId, "app A's client had its place in the stream");
      const movedToB = followEvents(b, ada, atA.lastId);
      clients.push(movedToB);
      // B keeps serving while A is gone: a second export through B, followed there.
      const second = await call(b, ada, "POST", "/api/v1/exports", { dataset: "orders", format: "jsonl" });
      assert.equal(second.status, 202, await second.clone().text());
      const { id: secondId } = (await second.json()) as { id: string };

      await waitFor(
        "every probe and the second export to succeed",
        async () =>
          (
            await pool().query<{ n: number }>(
              `SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'succeeded'`,
              [[...probes, secondId]],
            )
          ).rows[0]!.n ===
          PROBES + 1,
        90_000,
        async () =>
          `\njobs: ${JSON.stringify(
            (
              await pool().query(`SELECT id, status, attempts FROM jobs WHERE id = ANY($1::uuid[])`, [
                [...probes, secondId],
              ])
            ).rows,
          )}${outputs()}`,
      );
      sampling = false;
      await sampler;
      phase("every job ended");

      // Caps held across the fleet, and were reached (so the check could fail).
      assert.ok(peak <= CAP, `at most ${CAP} of Acme's bulk jobs ran at once across three workers (peak ${peak})`);
      assert.equal(peak, CAP, "the cap was reached");
      const [cap] = (await pool().query(`SELECT tenant_cap FROM queues WHERE name = 'bulk'`)).rows;
      assert.equal(cap.tenant_cap, CAP, "no worker's environment overwrote the database's cap");

      // Nothing lost, nothing run twice: one success and one side effect per probe.
      const perJob = await pool().query<{ id: string; succeeded: number; lost: number; effects: number | null }>(
        `SELECT j.id::text, count(*) FILTER (WHERE a.outcome = 'succeeded')::int AS succeeded,
                count(*) FILTER (WHERE a.outcome = 'lost')::int AS lost,
                (SELECT executions FROM probe_effects e WHERE e.job_id = j.id) AS effects
           FROM jobs j JOIN job_attempts a ON a.job_id = j.id WHERE j.id = ANY($1::uuid[]) GROUP BY j.id`,
        [probes],
      );
      assert.equal(perJob.rowCount, PROBES);
      for (const row of perJob.rows) {
        assert.deepEqual({ succeeded: row.succeeded, effects: row.effects }, { succeeded: 1, effects: 1 }, row.id);
      }
      const victimRow = perJob.rows.find((r) => r.id === victim.jobId)!;
      assert.equal(victimRow.lost, 1, "the killed worker's attempt was reaped as lost, then retried elsewhere");
      const workersAfter = await pool().query<{ pid: number; state: string }>(`SELECT pid, state FROM workers`);
      assert.equal(workersAfter.rows.find((w) => w.pid === victim.pid)?.state, "dead");

      // The clients missed nothing: A's, carried on at B from its Last-Event-ID, ends with every
      // probe succeeded; B's own saw the export made through B succeed.
      await waitFor(
        "the clients to see every end",
        async () =>
          probes.every((id) => reached([...atA.events, ...movedToB.events], id, "succeeded")) &&
          reached(atB.events, secondId, "succeeded"),
        15_000,
      );
      phase("checked");
    } finally {
      console.log(`[fleet] ${phases.join(", ")}`);
      for (const c of clients) c.close();
      await Promise.all(everyone.map((p) => stop(p)));
      await rm(dataDir, { recursive: true, force: true });
    }
  }
}
