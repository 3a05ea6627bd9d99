/**
 * `npm run cli -- …` as an operator runs it: the real CLI in a child process on
 * this file's database, each command group at least once, as a named user
 * (--as): its --json output parsed, its text and --help read, its errors (one
 * line, an exit code by kind) and its audit rows checked in the database.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { principalFromToken } from "@/lib/auth/tokens";
import { db, pool } from "@/lib/db";
import { enqueueJob } from "@/lib/jobs/enqueue";
import type { JobDto } from "@/lib/jobs/dto";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: 0.001 });

type Run = { code: number | null; stdout: string; stderr: string };

/** `node --import tsx scripts/cli.ts …`, as `npm run cli -- …` runs it, on this file's database. */
async function cli(...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: fx.database.url };
  for (const key of ["NODE_TEST_CONTEXT", "TEST_SERVER_URL", "TEST_TEMPLATE_DB"]) delete env[key];
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/cli.ts", ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, stdout, stderr };
}

const explain = (r: Run) => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

/** Runs and expects exit 0; the parsed stdout with --json. */
async function ok<T = string>(...args: string[]): Promise<T> {
  const r = await cli(...args);
  assert.equal(r.code, 0, explain(r));
  return (args.includes("--json") ? JSON.parse(r.stdout) : r.stdout) as T;
}

/** Runs and expects exit `code` with one line on stderr matching `message`, and nothing on stdout. */
async function fails(code: number, message: RegExp, ...args: string[]): Promise<void> {
  const r = await cli(...args);
  assert.equal(r.code, code, explain(r));
  assert.equal(r.stderr.trim().split("\n").length, 1, `one line: ${explain(r)}`);
  assert.match(r.stderr, /^error: /, explain(r));
  assert.match(r.stderr, message, explain(r));
  assert.equal(r.stdout, "", explain(r));
}

const ADA = "ada@acme.test"; // acme member
const OSCAR = "oscar@acme.test"; // acme operator
const GINA = "gina@globex.test"; // globex operator
const ROOT = "root@conveyor.test"; // platform admin

const probe = async (tenantId: string) => (await enqueueJob({ tenantId, type: "probe", input: { sleepMs: 0 } })).job.id;

/** Moves a job to failed, as a last attempt that failed would. */
async function fail(id: string): Promise<void> {
  await pool().query(`UPDATE jobs SET status = 'running', attempts = 1 WHERE id = $1`, [id]);
  await pool().query(
    `UPDATE jobs SET status = 'failed', error_class = 'permanent', error_message = 'upstream said no',
            admitted_at = NULL, finished_at = now() WHERE id = $1`,
    [id],
  );
}

const userId = async (email: string) => (await db().user.findUniqueOrThrow({ where: { email } })).id;

/** The newest audit entry of an action. */
const lastAudit = (action: string) => db().auditLog.findFirst({ where: { action }, orderBy: { id: "desc" } });

describe("npm run cli --", { timeout: 900_000 }, () => {
  test("--help at every level is generated from the commands", async () => {
    const [top, jobs, list, setCap] = await Promise.all([
      cli("--help"),
      cli("jobs", "--help"),
      cli("jobs", "list", "--help"),
      cli("queues", "set-cap", "--help"),
    ]);
    for (const r of [top, jobs, list, setCap]) assert.equal(r.code, 0, explain(r));
    for (const group of [
      "jobs",
      "dead-letters",
      "pauses",
      "queues",
      "tokens",
      "tenants",
      "users",
      "schedules",
      "webhooks",
      "imports",
    ]) {
      assert.match(top.stdout, new RegExp(`^  ${group}\\b`, "m"), `--help lists ${group}`);
    }
    assert.match(top.stdout, /Exit codes:/);
    for (const sub of ["list", "get", "cancel", "replay"]) assert.match(jobs.stdout, new RegExp(`^  ${sub}\\b`, "m"));
    for (const option of ["--status <status>", "--limit <n>", "--as <e-mail>", "--tenant <slug>", "--json"]) {
      assert.ok(list.stdout.includes(option), `jobs list --help shows ${option}\n${list.stdout}`);
    }
    assert.match(setCap.stdout, /Usage: npm run cli -- queues set-cap \[options\] <queue> <cap>/);
  });

  test("usage mistakes exit 2 with one line naming what is wrong", async () => {
    await Promise.all([
      fails(2, /unknown command 'frob'/, "frob"),
      fails(2, /unknown command 'lst'.*Did you mean list/, "jobs", "lst"),
      fails(2, /missing required argument 'id'/, "jobs", "get", "--as", ADA),
    ]);
    await Promise.all([
      fails(2, /--as is required/, "jobs", "list"),
      fails(2, /--limit <n>.*'x' is invalid/, "jobs", "list", "--as", ADA, "--limit", "x"),
      fails(2, /--status: must be one of/, "jobs", "list", "--as", ADA, "--status", "nope"),
    ]);
    // A group without its command: its help, on stderr, and a usage exit.
    const bare = await cli("jobs");
    assert.equal(bare.code, 2, explain(bare));
    assert.match(bare.stderr, /Usage: npm run cli -- jobs/);
    await fails(3, /no user with e-mail nobody@acme\.test/, "jobs", "list", "--as", "nobody@acme.test");
  });

  test("jobs list, get, cancel and replay act as the named user: scoped, authorized and audited", async () => {
    const mine = await probe(fx.p.acmeId);
    const failed = await probe(fx.p.acmeId);
    await fail(failed);
    const theirs = await probe(fx.p.globexId);
    await fail(theirs);

    // (Reads in parallel: each is a process of its own.)
    const [list, text, globex] = await Promise.all([
      ok<{ jobs: JobDto[] }>("jobs", "list", "--as", ADA, "--json"),
      ok("jobs", "list", "--as", ADA, "--status", "failed"),
      // A platform admin acts on one tenant with --tenant.
      ok<{ jobs: JobDto[] }>("jobs", "list", "--as", ROOT, "--tenant", "globex", "--json"),
    ]);
    const ids = list.jobs.map((j) => j.id);
    assert.ok(ids.includes(mine) && ids.includes(failed), "ada sees acme's jobs");
    assert.ok(!ids.includes(theirs), "and not globex's");
    assert.match(text, /^ID\s+TYPE\s+STATUS/);
    assert.ok(text.includes(failed) && !text.includes(mine), text);
    assert.deepEqual(
      globex.jobs.map((j) => j.id),
      [theirs],
    );

    const [got] = await Promise.all([
      ok<JobDto>("jobs", "get", mine, "--as", ADA, "--json"),
      fails(3, /Job not found: [0-9a-f-]{36}$/m, "jobs", "get", theirs, "--as", ADA),
    ]);
    assert.equal(got.id, mine);
    assert.equal(got.type, "probe");

    // A member cancels their tenant's job; the audit log names them.
    const cancelled = await ok<JobDto>("jobs", "cancel", mine, "--as", ADA, "--reason", "from the cli", "--json");
    assert.equal(cancelled.status, "cancelled");
    const cancel = await lastAudit("job.cancel");
    assert.equal(cancel?.actorUserId, await userId(ADA));
    assert.equal(cancel?.actorTokenId, null);
    assert.deepEqual(cancel?.targetIds, [mine]);
    assert.equal((cancel?.details as { reason?: string }).reason, "from the cli");
    await fails(5, /already cancelled/, "jobs", "cancel", mine, "--as", ADA);

    // A member cannot cancel another tenant's job: it is not found, and stays as it was.
    await fails(3, /Job not found: [0-9a-f-]{36}$/m, "jobs", "cancel", theirs, "--as", ADA);
    assert.equal((await db().job.findUniqueOrThrow({ where: { id: theirs } })).status, "failed");
    assert.equal(await db().auditLog.count({ where: { action: "job.cancel", targetIds: { has: theirs } } }), 0);

    // Another tenant's job is not found; a member may not replay (the API's 403); an operator replays their own.
    await Promise.all([
      fails(3, /Job not found: [0-9a-f-]{36}$/m, "jobs", "replay", theirs, "--as", OSCAR),
      fails(4, /operator role/, "jobs", "replay", failed, "--as", ADA),
    ]);
    const replay = await ok<JobDto>("jobs", "replay", failed, "--as", OSCAR, "--json");
    assert.equal(replay.replayOfId, failed);
    const audit = await lastAudit("job.replay");
    assert.equal(audit?.actorUserId, await userId(OSCAR));
    assert.deepEqual(audit?.targetIds, [failed]);
    const theirsNow = await db().job.findUniqueOrThrow({ where: { id: theirs } });
    assert.equal(theirsNow.discardedAt, null, "globex's dead job untouched");
  });

  test("dead-letters list, replay and discard", async () => {
    const a = await probe(fx.p.acmeId);
    const b = await probe(fx.p.acmeId);
    const g = await probe(fx.p.globexId);
    for (const id of [a, b, g]) await fail(id);

    const [list] = await Promise.all([
      ok<{ jobs: JobDto[] }>("dead-letters", "list", "--as", OSCAR, "--json"),
      fails(4, /operator role/, "dead-letters", "list", "--as", ADA),
      fails(2, /give the ids of the jobs to replay, a filter/, "dead-letters", "replay", "--as", OSCAR),
    ]);
    const dead = list.jobs.map((j) => j.id);
    assert.ok(dead.includes(a) && dead.includes(b) && !dead.includes(g), JSON.stringify(dead));

    const replayed = await ok<{ matched: number; replayed: number; jobIds: string[] }>(
      "dead-letters",
      "replay",
      a,
      "--as",
      OSCAR,
      "--json",
    );
    assert.equal(replayed.replayed, 1);
    // A filter: every acme dead probe left (b), never globex's.
    const discarded = await ok("dead-letters", "discard", "--type", "probe", "--as", OSCAR);
    assert.match(discarded, /^\d+ matched, \d+ discarded$/m);
    assert.notEqual((await db().job.findUniqueOrThrow({ where: { id: b } })).discardedAt, null);
    assert.equal((await db().job.findUniqueOrThrow({ where: { id: g } })).discardedAt, null);
    const audit = await lastAudit("dead_letters.discard");
    assert.equal(audit?.actorUserId, await userId(OSCAR));
    // A platform admin's filter would span every tenant: with --tenant it is refused.
    await fails(
      2,
      /--tenant: a platform admin's filter/,
      "dead-letters",
      "discard",
      "--all",
      "--as",
      ROOT,
      "--tenant",
      "globex",
    );
  });

  test("pauses add, list and remove", async () => {
    const pause = await ok<{ id: string; queue: string; tenant: { slug: string } }>(
      "pauses",
      "add",
      "--queue",
      "bulk",
      "--reason",
      "maintenance",
      "--as",
      OSCAR,
      "--json",
    );
    assert.equal(pause.queue, "bulk");
    assert.equal(pause.tenant.slug, "acme", "an operator's pause is their tenant's");
    const audit = await lastAudit("queue.pause");
    assert.equal(audit?.actorUserId, await userId(OSCAR));
    const [listed] = await Promise.all([
      ok<{ pauses: { id: string }[] }>("pauses", "list", "--as", OSCAR, "--json"),
      fails(3, /Pause not found: [0-9a-f-]{36}$/m, "pauses", "remove", pause.id, "--as", GINA),
    ]);
    assert.ok(listed.pauses.some((p) => p.id === pause.id));
    assert.match(await ok("pauses", "remove", pause.id, "--as", OSCAR), /resumed \(queue bulk, tenant acme\)/);
    await fails(5, /already resumed/, "pauses", "remove", pause.id, "--as", OSCAR);
  });

  test("queues list and set-cap (platform admins)", async () => {
    const [out] = await Promise.all([
      ok<{ queues: { name: string }[] }>("queues", "list", "--as", OSCAR, "--json"),
      fails(4, /platform admins/, "queues", "set-cap", "bulk", "2", "--tenant", "acme", "--as", OSCAR),
      fails(
        2,
        /'-1' is invalid for argument 'cap'/,
        "queues",
        "set-cap",
        "bulk",
        "-1",
        "--tenant",
        "acme",
        "--as",
        ROOT,
      ),
      fails(2, /`default` needs --tenant/, "queues", "set-cap", "bulk", "default", "--as", ROOT),
      fails(
        2,
        /--window is the queue's/,
        "queues",
        "set-cap",
        "bulk",
        "2",
        "--window",
        "9",
        "--tenant",
        "acme",
        "--as",
        ROOT,
      ),
      fails(4, /platform admins/, "queues", "set-cap", "bulk", "2", "--as", OSCAR),
    ]);
    assert.deepEqual(out.queues.map((q) => q.name).sort(), ["bulk", "interactive", "webhooks"]);
    assert.match(
      await ok("queues", "set-cap", "bulk", "2", "--weight", "3", "--tenant", "acme", "--as", ROOT),
      /acme in bulk: cap 2, weight 3/,
    );
    const limit = await db().tenantQueueLimit.findUniqueOrThrow({
      where: { tenantId_queue: { tenantId: fx.p.acmeId, queue: "bulk" } },
    });
    assert.deepEqual([limit.maxRunning, limit.weight], [2, 3]);
    assert.equal((await lastAudit("queue.limit"))?.actorUserId, await userId(ROOT));
    await ok("queues", "set-cap", "bulk", "default", "--tenant", "acme", "--as", ROOT);
    assert.equal(await db().tenantQueueLimit.count({ where: { tenantId: fx.p.acmeId } }), 0);
    // Without --tenant: the queue's own default cap and window, for the whole fleet.
    assert.match(
      await ok("queues", "set-cap", "bulk", "5", "--window", "40", "--as", ROOT),
      /bulk: default tenant cap 5, window 40/,
    );
    const bulk = await db().queueSetting.findUniqueOrThrow({ where: { name: "bulk" } });
    assert.deepEqual([bulk.tenantCap, bulk.window], [5, 40]);
    assert.equal((await lastAudit("queue.settings"))?.actorUserId, await userId(ROOT));
  });

  test("tokens create, list and revoke; `token create --email` as before", async () => {
    const created = await ok<{ token: string; record: { id: string; scopes: string[] } }>(
      "tokens",
      "create",
      "--name",
      "ci",
      "--read-only",
      "--as",
      ADA,
      "--json",
    );
    assert.deepEqual(created.record.scopes, ["read"]);
    const principal = await principalFromToken(created.token);
    assert.equal(principal?.email, ADA);
    const [listed] = await Promise.all([
      ok<{ tokens: { id: string; name: string }[] }>("tokens", "list", "--as", ADA, "--json"),
      fails(3, /Token not found: [0-9a-f-]{36}$/m, "tokens", "revoke", created.record.id, "--as", OSCAR),
    ]);
    assert.ok(listed.tokens.some((t) => t.id === created.record.id && t.name === "ci"));
    assert.ok(!JSON.stringify(listed).includes(created.token), "never the secret");
    await ok("tokens", "revoke", created.record.id, "--as", ADA);
    assert.equal(await principalFromToken(created.token), null, "revoked");
    assert.equal((await lastAudit("token.revoke"))?.actorUserId, await userId(ADA));
    // The old spelling, which tests/e2e/helpers.ts uses: the token alone on stdout's last line.
    const legacy = await ok("token", "create", "--email", GINA, "--name", "e2e");
    assert.equal((await principalFromToken(legacy.trim().split("\n").at(-1)!))?.email, GINA);
  });

  test("tenants list and create (platform admins)", async () => {
    const created = await ok<{ id: string; slug: string }>(
      "tenants",
      "create",
      "--slug",
      "initech",
      "--name",
      "Initech",
      "--as",
      ROOT,
      "--json",
    );
    assert.equal(created.slug, "initech");
    assert.equal((await lastAudit("tenant.create"))?.actorUserId, await userId(ROOT));
    const [listed] = await Promise.all([
      ok<{ tenants: { slug: string }[] }>("tenants", "list", "--as", ROOT, "--json"),
      fails(4, /platform admins/, "tenants", "list", "--as", OSCAR),
      fails(5, /already exists/, "tenants", "create", "--slug", "initech", "--name", "Again", "--as", ROOT),
      fails(2, /--slug: must be 3 to 40/, "tenants", "create", "--slug", "X!", "--name", "Bad", "--as", ROOT),
    ]);
    assert.deepEqual(
      listed.tenants.map((t) => t.slug),
      ["acme", "globex", "initech"],
    );
  });

  test("users list, invite and create; --tenant picks one of several memberships", async () => {
    const [members] = await Promise.all([
      ok<{ members: { email: string; role: string }[] }>("users", "list", "--as", OSCAR, "--json"),
      fails(2, /--tenant: name the tenant/, "users", "list", "--as", ROOT),
    ]);
    assert.deepEqual(members.members.map((m) => `${m.email}:${m.role}`).sort(), [`${ADA}:member`, `${OSCAR}:operator`]);

    const invite = await ok<{ link: string; email: string; role: string }>(
      "users",
      "invite",
      "--email",
      "Newcomer@Acme.test",
      "--role",
      "operator",
      "--as",
      OSCAR,
      "--json",
    );
    assert.match(invite.link, /\/invite\/inv_/);
    assert.deepEqual([invite.email, invite.role], ["newcomer@acme.test", "operator"]);
    const audit = await lastAudit("user.invite");
    assert.equal(audit?.actorUserId, await userId(OSCAR));
    assert.equal(audit?.tenantId, fx.p.acmeId);
    await Promise.all([
      fails(4, /platform admin/, "users", "invite", "--email", "boss@acme.test", "--admin", "--as", OSCAR),
      fails(5, /already has an account/, "users", "create", "--email", ADA, "--tenant", "acme"),
    ]);

    // Ada joins globex too: she must say which tenant she acts in.
    await pool().query(`INSERT INTO memberships (user_id, tenant_id, role) VALUES ($1, $2, 'member')`, [
      await userId(ADA),
      fx.p.globexId,
    ]);
    const g = await probe(fx.p.globexId);
    const [inGlobex] = await Promise.all([
      ok<{ jobs: JobDto[] }>("jobs", "list", "--as", ADA, "--tenant", "globex", "--json"),
      fails(2, /--tenant is required: ada@acme\.test is a member of acme, globex/, "jobs", "list", "--as", ADA),
      fails(3, /not a member of initech/, "jobs", "list", "--as", OSCAR, "--tenant", "initech"),
    ]);
    assert.ok(inGlobex.jobs.some((j) => j.id === g));
    assert.ok(inGlobex.jobs.every((j) => j.tenantId === fx.p.globexId));
  });

  test("schedules and webhooks list as the named user", async () => {
    const [schedules, webhooks] = await Promise.all([
      ok<{ schedules: unknown[] }>("schedules", "list", "--as", OSCAR, "--json"),
      ok<{ endpoints: unknown[] }>("webhooks", "list", "--as", OSCAR, "--json"),
      fails(
        3,
        /Schedule not found: 0{8}-/,
        "schedules",
        "pause",
        "00000000-0000-0000-0000-000000000000",
        "--as",
        OSCAR,
      ),
    ]);
    assert.ok(Array.isArray(schedules.schedules));
    assert.ok(Array.isArray(webhooks.endpoints));
  });
});
