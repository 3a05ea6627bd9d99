/**
 * Notifications (issue 35), through the public API and a real SMTP server: a member's job that
 * ends leaves a notification in the bell's list and, per their preferences, one e-mail with the
 * job's link and an unsubscribe link; a mail server that refuses never fails the job (the mail
 * retries on its own); no mail for a job its owner cancelled; the unsubscribe link works without
 * a sign-in; operators get one digest per window of new dead letters, never one mail per job;
 * notifications go with their job when retention prunes it.
 */
process.env.MAIL_TRANSPORT = "smtp";
process.env.SMTP_URL = "smtp://127.0.0.1:1"; // replaced by the server's port before the first test
process.env.NOTIFY_RETRY_SCALE = "0.0001";
process.env.NOTIFY_DIGEST_WINDOW_MS = "500";

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { SMTPServer } from "smtp-server";
import { z } from "zod";
import { POST as createExportRoute } from "@/app/api/v1/exports/route";
import { POST as cancelRoute } from "@/app/api/v1/jobs/[id]/cancel/route";
import { GET as listRoute } from "@/app/api/v1/notifications/route";
import { GET as getPrefsRoute, PUT as putPrefsRoute } from "@/app/api/v1/notifications/preferences/route";
import { POST as readRoute } from "@/app/api/v1/notifications/read/route";
import { POST as unsubscribeRoute } from "@/app/api/v1/notifications/unsubscribe/route";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import { pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { enqueueJob } from "@/lib/jobs/enqueue";
import { PermanentError } from "@/lib/jobs/errors";
import { defineTask } from "@/lib/jobs/task";
import { resetMailTransport } from "@/lib/mail";
import { sendDueDigests } from "@/lib/notifications/digest";
import type { NotificationListDto, PreferenceDto } from "@/lib/notifications/service";
import { pruneOnce } from "@/lib/retention/prune";
import { createSchedule } from "@/lib/schedules/service";
import { triggerSchedule } from "@/lib/schedules/runs";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";

/** A job type of this file's own that tells its owner (a row in notification_kinds, as a workload's migration adds). */
const chimeTask = defineTask({
  type: "notify_chime",
  queue: "interactive",
  inputSchema: z.object({ fail: z.boolean().default(false) }).strict(),
  retry: { maxAttempts: 1, initialBackoffMs: 0, maxBackoffMs: 0, multiplier: 2, jitter: "none" },
  timeoutMs: 10_000,
  leaseMs: 2_000,
  async handler(ctx) {
    if (ctx.input.fail) throw new PermanentError("the chime is broken");
    return { ok: true };
  },
});

type Mail = { to: string; body: string };
const mails: Mail[] = [];
/** While set, the server refuses every message (a mail server that is down for mail). */
let refusing = false;
let refused = 0;
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS"],
  onData(stream, session, cb) {
    let body = "";
    stream.on("data", (d: Buffer) => (body += d.toString()));
    stream.on("end", () => {
      if (refusing) {
        refused++;
        const err = Object.assign(new Error("try again later"), { responseCode: 451 });
        return cb(err);
      }
      // Quoted-printable soft line breaks joined, so links read whole.
      mails.push({ to: session.envelope.rcptTo.map((r) => r.address).join(","), body: body.replace(/=\r?\n/g, "") });
      cb();
    });
  },
});

before(async () => {
  await new Promise<void>((r) => smtp.listen(0, "127.0.0.1", () => r()));
  process.env.SMTP_URL = `smtp://127.0.0.1:${(smtp.server.address() as { port: number }).port}`;
  resetEnvCache();
  resetMailTransport();
});
after(() => new Promise<void>((r) => smtp.close(() => r())));

const fx = useTestDatabase({
  seed: 0.001,
  tasks: [chimeTask],
  setup: async () => {
    await pool().query(
      `INSERT INTO notification_kinds (kind, label, audience, email_default) VALUES ('notify_chime', 'chime', 'members', true)`,
    );
  },
});

const tokens = new Map<string, string>();
async function tokenOf(email: string): Promise<string> {
  if (!tokens.has(email)) tokens.set(email, await createApiTokenForEmail(email, `notify-${email}`));
  return tokens.get(email)!;
}
const params = <P>(p: P) => ({ params: Promise.resolve(p) });
async function call(
  route: (req: Request, ctx: { params: Promise<never> }) => Promise<Response>,
  opts: { as?: string; method?: string; path: string; body?: unknown; params?: unknown },
): Promise<Response> {
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  if (opts.as) headers.Authorization = `Bearer ${await tokenOf(opts.as)}`;
  const req = new Request(`http://test${opts.path}`, {
    method: opts.method ?? (opts.body === undefined ? "GET" : "POST"),
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  return route(req, params((opts.params ?? {}) as never));
}
async function bell(as: string, query = ""): Promise<NotificationListDto> {
  const res = await call(listRoute, { as, path: `/api/v1/notifications${query}` });
  assert.equal(res.status, 200);
  return (await res.json()) as NotificationListDto;
}
/** Runs what is due, again until the mail jobs made by the jobs that ended have run too. */
async function settle(): Promise<void> {
  await drainJobs();
  await drainJobs();
}
async function waitFor<T>(fn: () => Promise<T | null | undefined | false>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error("timed out");
    await sleep(50);
  }
}
const mailsTo = (email: string) => mails.filter((m) => m.to === email);
async function chime(owner: "ada" | "oscar", fail = false): Promise<string> {
  const { job } = await enqueueJob({
    tenantId: fx.p.acmeId,
    type: "notify_chime",
    input: { fail },
    createdById: fx.p[owner].userId,
  });
  return job.id;
}
async function statusOf(jobId: string): Promise<string> {
  const { rows } = await pool().query<{ status: string }>(`SELECT status::text FROM jobs WHERE id = $1`, [jobId]);
  return rows[0]!.status;
}

describe("notifications", () => {
  test("an export that finishes: one notification in its owner's bell, one e-mail with its link and an unsubscribe link", async () => {
    const res = await call(createExportRoute, {
      as: "ada@acme.test",
      path: "/api/v1/exports",
      body: { dataset: "customers" },
    });
    assert.equal(res.status, 202);
    const job = (await res.json()) as { id: string };
    await settle();
    assert.equal(await statusOf(job.id), "succeeded");

    const list = await bell("ada@acme.test");
    const n = list.notifications.find((x) => x.job.id === job.id);
    assert.ok(n, "the export's notification is in the bell");
    assert.deepEqual(
      [n.kind, n.kindLabel, n.outcome, n.job.url, n.readAt],
      ["export", "export", "succeeded", `/jobs/${job.id}`, null],
    );
    assert.ok(list.unread >= 1);

    const mine = await waitFor(async () => {
      await drainJobs();
      const got = mailsTo("ada@acme.test").filter((m) => m.body.includes(job.id));
      return got.length > 0 && got;
    });
    assert.equal(mine.length, 1, "one mail for the job");
    assert.match(mine[0]!.body, /Subject: Your export finished/);
    // The same Message-ID on any second send of it (a retry after a crash between send and record).
    assert.match(mine[0]!.body, new RegExp(`^Message-ID: <notification\\.${n.id}@[^>]+>`, "mi"));
    assert.ok(mine[0]!.body.includes(`/jobs/${job.id}`), "the job's link is in the mail");
    assert.match(
      mine[0]!.body,
      /\/unsubscribe\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}/,
      "an unsubscribe link is in the mail",
    );

    // Nothing more for it, however often the workers run.
    await settle();
    assert.equal(mailsTo("ada@acme.test").filter((m) => m.body.includes(job.id)).length, 1);

    // Another tenant's member neither sees it nor can mark it read.
    assert.ok(!(await bell("gus@globex.test")).notifications.some((x) => x.id === n.id));
    const theirs = await call(readRoute, {
      as: "gus@globex.test",
      path: "/api/v1/notifications/read",
      body: { ids: [n.id] },
    });
    assert.equal(((await theirs.json()) as { marked: number }).marked, 0);

    const read = await call(readRoute, {
      as: "ada@acme.test",
      path: "/api/v1/notifications/read",
      body: { ids: [n.id] },
    });
    assert.equal(read.status, 200);
    const marked = (await read.json()) as { marked: number; unread: number };
    assert.equal(marked.marked, 1);
    assert.equal(marked.unread, list.unread - 1);
    assert.ok((await bell("ada@acme.test")).notifications.find((x) => x.id === n.id)?.readAt);
  });

  test("a job that fails tells its error; the bell pages newest first; marking all read empties the count", async () => {
    const ok = await chime("ada");
    const bad = await chime("ada", true);
    await settle();
    assert.equal(await statusOf(bad), "failed");
    const first = await bell("ada@acme.test", "?limit=1");
    assert.equal(first.notifications.length, 1);
    assert.equal(first.notifications[0]!.job.id, bad, "newest first");
    assert.deepEqual(
      [first.notifications[0]!.outcome, first.notifications[0]!.error],
      ["failed", "the chime is broken"],
    );
    assert.ok(first.nextCursor);
    const next = await bell("ada@acme.test", `?limit=1&cursor=${first.nextCursor}`);
    assert.equal(next.notifications[0]!.job.id, ok);

    const failedMail = await waitFor(async () => {
      await drainJobs();
      return mailsTo("ada@acme.test").find((m) => m.body.includes(bad));
    });
    assert.match(failedMail.body, /Subject: Your chime failed/);
    assert.match(failedMail.body, /Error: the chime is broken/);

    const all = await call(readRoute, { as: "ada@acme.test", path: "/api/v1/notifications/read", body: { all: true } });
    assert.equal(((await all.json()) as { unread: number }).unread, 0);
    assert.equal((await bell("ada@acme.test")).unread, 0);
  });

  test("bad input answers 400 naming the field", async () => {
    for (const [route, path, body, field] of [
      [readRoute, "/api/v1/notifications/read", {}, "ids"],
      [readRoute, "/api/v1/notifications/read", { ids: ["nope"] }, "ids.0"],
      [putPrefsRoute, "/api/v1/notifications/preferences", { kind: "export", email: "yes" }, "email"],
      [putPrefsRoute, "/api/v1/notifications/preferences", { kind: "dead_letters", email: true }, "kind"],
      [putPrefsRoute, "/api/v1/notifications/preferences", { kind: "nothing", email: true }, "kind"],
    ] as const) {
      const res = await call(route, {
        as: "ada@acme.test",
        method: route === putPrefsRoute ? "PUT" : "POST",
        path,
        body,
      });
      assert.equal(res.status, 400, JSON.stringify(body));
      const err = (await res.json()) as { error: { fields?: { path: string }[] } };
      assert.equal(err.error.fields?.[0]?.path, field, JSON.stringify(body));
    }
    const res = await call(listRoute, { as: "ada@acme.test", path: "/api/v1/notifications?limit=1000" });
    assert.equal(res.status, 400);
    const bad = await call(listRoute, { as: "ada@acme.test", path: "/api/v1/notifications?cursor=zzz" });
    assert.equal(((await bad.json()) as { error: { fields: { path: string }[] } }).error.fields[0]!.path, "cursor");
  });

  test("a mail server that refuses never fails the job: the mail retries on its own and arrives once", async () => {
    refusing = true;
    const id = await chime("ada");
    try {
      await drainJobs();
      assert.equal(await statusOf(id), "succeeded", "the job succeeded whatever the mail server says");
      await waitFor(async () => {
        await drainJobs();
        return refused >= 2;
      });
    } finally {
      refusing = false;
    }
    const { rows } = await pool().query<{ status: string; attempts: number }>(
      `SELECT j.status::text, j.attempts FROM notifications n JOIN jobs j ON j.id = n.mail_job_id WHERE n.job_id = $1`,
      [id],
    );
    assert.notEqual(rows[0]!.status, "failed", "the mail is retrying, not dead");
    await waitFor(async () => {
      await drainJobs();
      return mailsTo("ada@acme.test").some((m) => m.body.includes(id));
    });
    assert.equal(mailsTo("ada@acme.test").filter((m) => m.body.includes(id)).length, 1);
    assert.equal(await statusOf(id), "succeeded");
  });

  test("no notification nor e-mail for a job its owner cancelled; one when someone else cancelled it", async () => {
    const before = mails.length;
    const mine = await chime("ada");
    const res = await call(cancelRoute, {
      as: "ada@acme.test",
      path: `/api/v1/jobs/${mine}/cancel`,
      body: {},
      params: { id: mine },
    });
    assert.equal(res.status, 200);
    const other = await chime("ada");
    const byOscar = await call(cancelRoute, {
      as: "oscar@acme.test",
      path: `/api/v1/jobs/${other}/cancel`,
      body: { reason: "maintenance" },
      params: { id: other },
    });
    assert.equal(byOscar.status, 200);
    await settle();
    assert.equal(await statusOf(mine), "cancelled");
    assert.equal(await statusOf(other), "cancelled");
    const list = (await bell("ada@acme.test", "?limit=100")).notifications;
    assert.ok(!list.some((n) => n.job.id === mine), "none for the job she cancelled");
    assert.equal(list.find((n) => n.job.id === other)?.outcome, "cancelled");
    await waitFor(async () => {
      await drainJobs();
      return mails.slice(before).some((m) => m.body.includes(other));
    });
    await settle();
    assert.ok(!mails.slice(before).some((m) => m.body.includes(mine)), "no mail for the job she cancelled");
  });

  test("e-mail per kind: off, the bell still tells and no mail goes; the unsubscribe link turns it off without a sign-in", async () => {
    const prefs = async (as: string) =>
      (
        (await (await call(getPrefsRoute, { as, path: "/api/v1/notifications/preferences" })).json()) as {
          preferences: PreferenceDto[];
        }
      ).preferences;
    const kinds = (await prefs("ada@acme.test")).map((p) => p.kind);
    assert.ok(kinds.includes("export") && kinds.includes("import") && kinds.includes("schedule"));
    assert.ok(!kinds.includes("dead_letters"), "the digest is offered to operators only");
    assert.ok(
      (await prefs("oscar@acme.test")).some((p) => p.kind === "dead_letters" && !p.email),
      "off by default",
    );

    const off = await call(putPrefsRoute, {
      as: "ada@acme.test",
      method: "PUT",
      path: "/api/v1/notifications/preferences",
      body: { kind: "notify_chime", email: false },
    });
    assert.equal(off.status, 200);
    const quiet = await chime("ada");
    await settle();
    assert.ok(
      (await bell("ada@acme.test")).notifications.some((n) => n.job.id === quiet),
      "the bell still tells",
    );
    assert.ok(!mails.some((m) => m.body.includes(quiet)), "no mail");

    // On again; the next mail's unsubscribe link turns it off, no sign-in, and a forged one is refused.
    await call(putPrefsRoute, {
      as: "ada@acme.test",
      method: "PUT",
      path: "/api/v1/notifications/preferences",
      body: { kind: "notify_chime", email: true },
    });
    const loud = await chime("ada");
    const mail = await waitFor(async () => {
      await drainJobs();
      return mails.find((m) => m.body.includes(loud));
    });
    const token = /\/unsubscribe\/([A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43})/.exec(mail.body)![1]!;
    const forged = `${token.slice(0, -4)}AAAA`;
    assert.equal(
      (await call(unsubscribeRoute, { path: "/api/v1/notifications/unsubscribe", body: { token: forged } })).status,
      404,
    );
    const res = await call(unsubscribeRoute, { path: "/api/v1/notifications/unsubscribe", body: { token } });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { kind: "notify_chime", label: "chime", email: false });
    assert.equal((await prefs("ada@acme.test")).find((p) => p.kind === "notify_chime")?.email, false);
    const after = await chime("ada");
    await settle();
    assert.ok(!mails.some((m) => m.body.includes(after)), "unsubscribed: no mail");
  });

  test("a scheduled run is kind `schedule`", async () => {
    const s = await createSchedule(fx.p.ada, {
      name: "nightly customers",
      cron: "0 3 * * *",
      task: "export",
      input: { dataset: "customers" },
    });
    const made = await triggerSchedule(fx.p.ada, s.id);
    assert.equal(made.runs.length, 1);
    await settle();
    const n = await waitFor(async () =>
      (await bell("ada@acme.test", "?limit=100")).notifications.find((x) => x.job.id === made.runs[0]),
    );
    assert.equal(n.kind, "schedule");
    assert.deepEqual([n.kindLabel, n.job.type, n.outcome], ["scheduled run", "export", "succeeded"]);
    const mail = await waitFor(async () => {
      await drainJobs();
      return mails.find((m) => m.body.includes(n.job.id));
    });
    assert.match(mail.body, /Subject: Your scheduled run finished/);
  });

  test("operators who ask get one digest per window of new dead letters, never one mail per job", async () => {
    const on = await call(putPrefsRoute, {
      as: "oscar@acme.test",
      method: "PUT",
      path: "/api/v1/notifications/preferences",
      body: { kind: "dead_letters", email: true },
    });
    assert.equal(on.status, 200);
    await sendDueDigests(); // the tenant's first window starts now
    const dead = [await chime("ada", true), await chime("ada", true), await chime("oscar", true)];
    await drainJobs();
    for (const id of dead) assert.equal(await statusOf(id), "failed");
    const before = mailsTo("oscar@acme.test").filter((m) => /dead letter/.test(m.body)).length;
    await sleep(1_700); // a window (500 ms) and the second that lets late commits in
    const r = await sendDueDigests();
    assert.equal(r.tenants, 1);
    assert.ok(r.deadLetters >= 3);
    assert.deepEqual(await sendDueDigests(), { tenants: 0, deadLetters: 0 }, "one digest per window");
    const digest = await waitFor(async () => {
      await drainJobs();
      const got = mailsTo("oscar@acme.test").filter((m) => /dead letter/.test(m.body));
      return got.length > before && got;
    });
    assert.equal(digest.length, before + 1, "one mail for all of them");
    const body = digest.at(-1)!.body;
    for (const id of dead) assert.ok(body.includes(`/jobs/${id}`), `the digest lists ${id}`);
    assert.match(body, /Subject: \d+ new dead letters in Acme/);
    assert.match(body, /\/unsubscribe\//);
    assert.ok(!mailsTo("ada@acme.test").some((m) => /new dead letter/.test(m.body)), "members get no digest");
  });

  test("notifications go with their job when retention prunes it", async () => {
    const id = await chime("ada");
    await settle();
    const { rows } = await pool().query(`SELECT id FROM notifications WHERE job_id = $1`, [id]);
    assert.equal(rows.length, 1);
    await pool().query(`UPDATE jobs SET finished_at = now() - interval '400 days' WHERE id = $1`, [id]);
    await pruneOnce();
    assert.equal((await pool().query(`SELECT 1 FROM jobs WHERE id = $1`, [id])).rows.length, 0, "the job was pruned");
    assert.equal((await pool().query(`SELECT 1 FROM notifications WHERE job_id = $1`, [id])).rows.length, 0);
  });
});
