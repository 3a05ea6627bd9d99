import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { access, mkdtemp, readFile, rm, stat, chmod } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { z } from "zod";
import { db, pool } from "@/lib/db";
import { verifyCredentials } from "@/lib/auth/login";
import { embeddedDatabaseUrl, env, resetEnvCache } from "@/lib/env";
import { requestExport } from "@/lib/exports/service";
import { storage } from "@/lib/storage";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { getJobHistory } from "@/lib/jobs/history";
import { replayDeadLetters } from "@/lib/jobs/dead-letters";
import { getJob } from "@/lib/jobs/queries";
import { listOpsJobs } from "@/lib/ops/jobs";
import { defineTask } from "@/lib/jobs/task";
import {
  demoPassword,
  demoPasswordFile,
  demoWanted,
  DOCUMENTED_DEMO_PASSWORD,
  retireDocumentedDemoPassword,
} from "../../prisma/seed";
import { startEmbeddedPostgres } from "../../scripts/database";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";
import { freePort } from "../helpers/net";

// A task whose secret sits deep inside its input.
const nested = defineTask({
  type: "nested_secret",
  queue: "bulk",
  inputSchema: z.object({ target: z.object({ url: z.string(), auth: z.array(z.object({ token: z.string() })) }) }),
  sensitive: ["token"],
  retry: { maxAttempts: 1, initialBackoffMs: 0, maxBackoffMs: 0, multiplier: 1, jitter: "none" },
  timeoutMs: 5_000,
  leaseMs: 5_000,
  handler: async () => {
    throw new Error("downstream refused");
  },
});

const fx = useTestDatabase({ tasks: [nested] });

describe("least privilege", () => {
  test("members see no stack traces and no worker hosts in a job's history; operators do", async () => {
    const { job } = await enqueueJob({
      tenantId: fx.p.acmeId,
      type: "nested_secret",
      input: { target: { url: "https://x.test", auth: [{ token: "s3cret-token-42" }] } },
    });
    await drainJobs();
    const forMember = await getJobHistory(fx.p.ada, job.id);
    assert.equal(forMember.attempts[0]!.error?.message, "downstream refused");
    assert.equal(forMember.attempts[0]!.error?.stack, null);
    assert.equal(forMember.attempts[0]!.workerId, null);
    const forOperator = await getJobHistory(fx.p.oscar, job.id);
    assert.match(forOperator.attempts[0]!.error?.stack ?? "", /downstream refused/);
    assert.ok(forOperator.attempts[0]!.workerId);
  });

  test("a field a task marks sensitive is redacted at any depth, and never searched", async () => {
    const [row] = await db().job.findMany({ where: { type: "nested_secret" } });
    const dto = await getJob(fx.p.oscar, row!.id);
    assert.deepEqual(dto.input, { target: { url: "https://x.test", auth: [{ token: "[redacted]" }] } });
    assert.ok(!JSON.stringify(dto).includes("s3cret-token-42"));
    const found = await listOpsJobs(fx.p.oscar, { q: "s3cret-token" });
    assert.equal(found.jobs.length, 0, "a search never looks inside the secret");
    assert.equal((await listOpsJobs(fx.p.oscar, { q: "x.test" })).jobs.length, 1, "the rest of the input is searched");
  });

  test("a platform admin's dead-letter replay across tenants is audited under each tenant it touched", async () => {
    for (const tenantId of [fx.p.acmeId, fx.p.globexId]) {
      await enqueueJob({ tenantId, type: "nested_secret", input: { target: { url: "u", auth: [] } } });
    }
    await drainJobs();
    const r = await replayDeadLetters(fx.p.root, { filter: { type: "nested_secret" } });
    assert.ok(r.replayed >= 2);
    const entries = await db().auditLog.findMany({ where: { action: "dead_letters.replay" } });
    assert.deepEqual(new Set(entries.map((e) => e.tenantId)), new Set([fx.p.acmeId, fx.p.globexId]));
    for (const e of entries) {
      const owners = await db().job.findMany({ where: { id: { in: e.targetIds } }, select: { tenantId: true } });
      assert.deepEqual(
        new Set(owners.map((o) => o.tenantId)),
        new Set([e.tenantId]),
        "each entry names its own tenant's jobs",
      );
    }
  });
});

describe("hardening", () => {
  test("a spreadsheet-safe CSV prefixes cells a spreadsheet would run, and leaves numbers alone", async () => {
    await pool().query(
      `INSERT INTO customers (tenant_id, name, email, country, plan, notes, metadata, created_at)
       VALUES ($1, '=HYPERLINK("http://evil")', '+1@acme.test', 'DE', '-plan', '@cmd', '{}', now())`,
      [fx.p.acmeId],
    );
    const { job } = await requestExport(fx.p.ada, { dataset: "customers", format: "csv", csvSafe: true });
    await drainJobs();
    const file = await db().exportFile.findFirstOrThrow({ where: { jobId: job.id } });
    const opened = await storage().open(file.storageKey);
    let text = "";
    for await (const chunk of opened!.stream) text += (chunk as Buffer).toString();
    const line = text.split("\n").find((l) => l.includes("HYPERLINK"))!;
    assert.match(line, /^\d+,"'=HYPERLINK\(""http:\/\/evil""\)",'\+1@acme\.test,DE,'-plan,'@cmd,/);
    // Off by default on the API: the same cell as it is.
    const plain = await requestExport(fx.p.ada, { dataset: "customers", format: "csv" });
    await drainJobs();
    const plainFile = await db().exportFile.findFirstOrThrow({ where: { jobId: plain.job.id } });
    let plainText = "";
    for await (const chunk of (await storage().open(plainFile.storageKey))!.stream)
      plainText += (chunk as Buffer).toString();
    assert.ok(plainText.includes(`"=HYPERLINK(""http://evil"")",+1@acme.test`));
  });

  test("an embedded Postgres gets a random password, kept beside its data for its owner only", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "conveyor-pw-"));
    await chmod(dir, 0o755);
    // A port the OS says is free: a random one once met an outgoing connection's port.
    const cluster = await startEmbeddedPostgres(path.join(dir, "pg"), await freePort());
    try {
      const file = path.join(dir, "pg-password");
      await access(file);
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      const password = (await readFile(file, "utf8")).trim();
      assert.equal(password, cluster.password);
      assert.ok(password.length >= 24 && password !== "conveyor");
      const port = cluster.port;
      const good = new pg.Client({ connectionString: embeddedDatabaseUrl("postgres", port, password) });
      await good.connect();
      await good.end();
      const bad = new pg.Client({ connectionString: embeddedDatabaseUrl("postgres", port, "conveyor") });
      await assert.rejects(bad.connect(), /password authentication failed/);
    } finally {
      await cluster.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("demo data only into the embedded database or when asked, and only into an empty one", () => {
    assert.equal(demoWanted({ givenDatabase: false, demoEnv: false, demoFlag: false, empty: true }), true);
    assert.equal(demoWanted({ givenDatabase: true, demoEnv: false, demoFlag: false, empty: true }), false);
    assert.equal(demoWanted({ givenDatabase: true, demoEnv: true, demoFlag: false, empty: true }), true);
    assert.equal(demoWanted({ givenDatabase: true, demoEnv: false, demoFlag: true, empty: true }), true);
    assert.equal(demoWanted({ givenDatabase: false, demoEnv: true, demoFlag: true, empty: false }), false);
  });

  test("`npm start` listens on 127.0.0.1 unless HOST says otherwise", () => {
    assert.equal(env().HOST, "127.0.0.1");
  });

  test("the demo accounts' password is random and kept for the owner, unless the documented one is asked for", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "conveyor-demo-pw-"));
    const saved = { dir: process.env.CONVEYOR_DATA_DIR, pw: process.env.CONVEYOR_DEMO_PASSWORD };
    process.env.CONVEYOR_DATA_DIR = dir;
    delete process.env.CONVEYOR_DEMO_PASSWORD;
    resetEnvCache();
    try {
      // Accounts an older release made with the documented password (as this file's seed did) get a random one.
      assert.equal(await retireDocumentedDemoPassword(), 5);
      const file = demoPasswordFile();
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      const password = (await readFile(file, "utf8")).trim();
      assert.ok(password.length >= 16 && password !== DOCUMENTED_DEMO_PASSWORD);
      assert.ok(await verifyCredentials("root@conveyor.test", password));
      assert.equal(await verifyCredentials("root@conveyor.test", DOCUMENTED_DEMO_PASSWORD), null);
      assert.equal(await demoPassword(), password, "kept: the same at the next start");
      assert.equal(await retireDocumentedDemoPassword(), 0);
      process.env.CONVEYOR_DEMO_PASSWORD = DOCUMENTED_DEMO_PASSWORD;
      resetEnvCache();
      assert.equal(await demoPassword(), DOCUMENTED_DEMO_PASSWORD, "asked for");
    } finally {
      for (const [k, v] of [
        ["CONVEYOR_DATA_DIR", saved.dir],
        ["CONVEYOR_DEMO_PASSWORD", saved.pw],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      resetEnvCache();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
