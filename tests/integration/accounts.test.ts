import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { SMTPServer } from "smtp-server";
import {
  acceptInvite,
  changeMemberRole,
  changePassword,
  getInviteInfo,
  inviteUser,
  listInvites,
  listMembers,
  removeMember,
  revokeInvite,
} from "@/lib/auth/accounts";
import { signInWithPassword, verifyCredentials } from "@/lib/auth/login";
import { loadSessionPrincipal, loadUserPrincipal } from "@/lib/auth/principal";
import { createApiTokenForEmail, principalFromToken } from "@/lib/auth/tokens";
import { db, pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { resetMailTransport } from "@/lib/mail";
import { createTenant } from "@/lib/tenants/settings";
import { useTestDatabase } from "../helpers/db";
import { isCode } from "../helpers/fixtures";

const fx = useTestDatabase({ seed: 0.001 });
const tokenOf = (link: string) => link.split("/invite/")[1]!;

describe("invitations", () => {
  test("an operator invites to their own tenant; the link sets a password once; the new member signs in", async () => {
    const invite = await inviteUser(fx.p.oscar, { email: "Nia@Acme.test", role: "member" });
    assert.equal(invite.email, "nia@acme.test");
    assert.equal(invite.tenant?.slug, "acme");
    assert.match(invite.link!, /\/invite\/inv_[A-Za-z0-9_-]{43}$/);
    const stored = await db().invite.findUniqueOrThrow({ where: { id: invite.id } });
    assert.ok(!JSON.stringify(stored).includes(tokenOf(invite.link!).slice(4)), "only the token's hash is kept");
    const info = await getInviteInfo(tokenOf(invite.link!));
    assert.deepEqual(
      [info.email, info.tenant, info.role, info.state],
      ["nia@acme.test", "Acme Corporation", "member", "pending"],
    );

    await assert.rejects(
      acceptInvite({ token: tokenOf(invite.link!), name: "Nia", password: "short" }),
      (e: unknown) =>
        isCode("invalid_input")(e) && (e as { fields: { path: string }[] }).fields[0]!.path === "password",
    );
    assert.deepEqual(
      await acceptInvite({ token: tokenOf(invite.link!), name: "Nia", password: "a long enough secret" }),
      {
        email: "nia@acme.test",
      },
    );
    await assert.rejects(
      acceptInvite({ token: tokenOf(invite.link!), name: "Nia", password: "a long enough secret" }),
      isCode("gone"),
      "one use",
    );
    const signedIn = await signInWithPassword("nia@acme.test", "a long enough secret", "10.0.0.1");
    assert.equal(signedIn.ok, true);
    const nia = await loadUserPrincipal((signedIn as { user: { id: string } }).user.id);
    assert.deepEqual([nia?.tenantSlug, nia?.role], ["acme", "member"]);
    assert.deepEqual(
      (await listInvites(fx.p.oscar)).filter((i) => i.email === "nia@acme.test").map((i) => i.state),
      ["accepted"],
    );
    const audit = await db().auditLog.findMany({
      where: { action: { startsWith: "user.invite" } },
      orderBy: { id: "asc" },
    });
    assert.deepEqual(
      audit.map((a) => a.action),
      ["user.invite", "user.invite_accept"],
    );
  });

  test("operators invite only into their tenant, never platform admins; another tenant's invitation is not found", async () => {
    await assert.rejects(inviteUser(fx.p.oscar, { email: "x@acme.test", tenant: "globex" }), isCode("not_found"));
    await assert.rejects(inviteUser(fx.p.oscar, { email: "x@acme.test", platformAdmin: true }), isCode("forbidden"));
    await assert.rejects(inviteUser(fx.p.ada, { email: "x@acme.test" }), isCode("forbidden"), "members may not invite");
    await assert.rejects(
      inviteUser(fx.p.oscar, { email: "not an address" }),
      (e: unknown) => isCode("invalid_input")(e) && (e as { fields: { path: string }[] }).fields[0]!.path === "email",
    );
    const globex = await inviteUser(fx.p.gina, { email: "g2@globex.test", role: "operator" });
    await assert.rejects(revokeInvite(fx.p.oscar, globex.id), isCode("not_found"));
    await revokeInvite(fx.p.gina, globex.id);
    await assert.rejects(getInviteInfo(tokenOf(globex.link!)), isCode("gone"));
  });

  test("an expired invitation answers 410; an unknown one 404", async () => {
    const invite = await inviteUser(fx.p.oscar, { email: "late@acme.test" });
    await pool().query("UPDATE invites SET expires_at = now() - interval '1 minute' WHERE id = $1", [invite.id]);
    await assert.rejects(getInviteInfo(tokenOf(invite.link!)), isCode("gone"));
    await assert.rejects(
      acceptInvite({ token: tokenOf(invite.link!), name: "L", password: "a long enough secret" }),
      isCode("gone"),
    );
    await assert.rejects(getInviteInfo("inv_nope"), isCode("not_found"));
  });

  test("a platform admin creates a tenant and invites its first operator, and another platform admin", async () => {
    await assert.rejects(createTenant(fx.p.oscar, { slug: "initech", name: "Initech" }), isCode("forbidden"));
    const tenant = await createTenant(fx.p.root, { slug: "initech", name: "Initech" });
    await assert.rejects(createTenant(fx.p.root, { slug: "initech", name: "Again" }), isCode("conflict"));
    await assert.rejects(
      createTenant(fx.p.root, { slug: "No Spaces", name: "x" }),
      (e: unknown) => isCode("invalid_input")(e) && (e as { fields: { path: string }[] }).fields[0]!.path === "slug",
    );
    const op = await inviteUser(fx.p.root, { email: "bill@initech.test", tenant: "initech", role: "operator" });
    await acceptInvite({ token: tokenOf(op.link!), name: "Bill", password: "initech operator one" });
    const bill = await db().user.findUniqueOrThrow({ where: { email: "bill@initech.test" } });
    assert.deepEqual((await loadUserPrincipal(bill.id))?.tenantId, tenant.id);
    const admin = await inviteUser(fx.p.root, { email: "second@conveyor.test", platformAdmin: true });
    await acceptInvite({ token: tokenOf(admin.link!), name: "Second", password: "second platform admin" });
    assert.equal(
      (await db().user.findUniqueOrThrow({ where: { email: "second@conveyor.test" } })).isPlatformAdmin,
      true,
    );
  });

  test("an existing account joins only signed in as its invitee; its used invitation shows as joined to it alone", async () => {
    const invite = await inviteUser(fx.p.gina, { email: "ada@acme.test", role: "member" });
    const token = tokenOf(invite.link!);
    await assert.rejects(acceptInvite({ token }, fx.p.oscar), isCode("forbidden"), "another account may not use it");
    const adaToken = await createApiTokenForEmail("ada@acme.test", "accept");
    await assert.rejects(acceptInvite({ token }, await principalFromToken(adaToken)), isCode("forbidden"), "no token");
    assert.deepEqual(await acceptInvite({ token }, fx.p.ada), { email: "ada@acme.test" });
    const memberships = await db().membership.findMany({ where: { userId: fx.p.ada.userId } });
    assert.equal(memberships.length, 2);
    assert.equal((await getInviteInfo(token, fx.p.ada)).state, "accepted");
    await assert.rejects(getInviteInfo(token), isCode("gone"));
    await assert.rejects(getInviteInfo(token, fx.p.oscar), isCode("gone"));
    await db().membership.delete({ where: { userId_tenantId: { userId: fx.p.ada.userId, tenantId: fx.p.globexId } } });
  });
});

/** A route handler called as Next.js calls it, with a Fetch API request. */
type Handler = (req: Request, ctx: { params: Promise<Record<string, string>> }) => Promise<Response>;
const call = (handler: Handler, method: string, path: string, init: { token?: string; body?: unknown } = {}) =>
  handler(
    new Request(`http://127.0.0.1${path}`, {
      method,
      headers: {
        "content-type": "application/json",
        ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    }),
    { params: Promise.resolve({ userId: path.split("/").at(-1)! }) },
  );

describe("over HTTP: the invitation link is no password oracle, and tokens mint no accounts", () => {
  test("POST /api/v1/invites/accept answers the same for any password of an existing account, and grants nothing", async () => {
    const accept = (await import("@/app/api/v1/invites/accept/route")).POST as unknown as Handler;
    const invite = await inviteUser(fx.p.root, { email: "root@conveyor.test", tenant: "acme", role: "operator" });
    const token = tokenOf(invite.link!);
    const answers = new Set<string>();
    for (const password of ["wrong password one", "wrong password two", "conveyor-demo-x", "conveyor-demo"]) {
      // (The documented demo password is 13 characters: long enough for a new account's.)
      const res = await call(accept, "POST", "/api/v1/invites/accept", { body: { token, name: "X", password } });
      answers.add(`${res.status} ${await res.text()}`);
    }
    assert.deepEqual([...answers], ['200 {"email":"root@conveyor.test"}'], "one answer for every password");
    const root = await db().user.findUniqueOrThrow({
      where: { email: "root@conveyor.test" },
      include: { memberships: true },
    });
    assert.deepEqual(root.memberships, [], "nothing granted without signing in");
    assert.equal(await verifyCredentials("root@conveyor.test", "conveyor-demo").then(Boolean), true, "password kept");
    assert.equal((await getInviteInfo(token)).state, "pending", "still usable by its owner, signed in");
    // The page's information says nothing about the account either.
    assert.ok(!("hasAccount" in (await getInviteInfo(token))));
    // A new e-mail gets the very same answer, and its account.
    const fresh = await inviteUser(fx.p.oscar, { email: "fresh@acme.test" });
    const res = await call(accept, "POST", "/api/v1/invites/accept", {
      body: { token: tokenOf(fresh.link!), name: "Fresh", password: "a fresh long password" },
    });
    assert.equal(`${res.status} ${await res.text()}`, '200 {"email":"fresh@acme.test"}');
    assert.ok(await verifyCredentials("fresh@acme.test", "a fresh long password"));
    // An API token is no way to accept.
    const bearer = await call(accept, "POST", "/api/v1/invites/accept", {
      token: await createApiTokenForEmail("root@conveyor.test", "accept"),
      body: { token },
    });
    assert.equal(bearer.status, 403);
  });

  test("inviting, changing a role and removing a member need a browser session: an API token gets 403", async () => {
    const invites = (await import("@/app/api/v1/invites/route")).POST as unknown as Handler;
    const member = await import("@/app/api/v1/members/[userId]/route");
    const operator = await createApiTokenForEmail("oscar@acme.test", "people");
    const admin = await createApiTokenForEmail("root@conveyor.test", "people");
    const before = await db().invite.count();
    for (const [token, body] of [
      [operator, { email: "minted@acme.test", role: "operator" }],
      [admin, { email: "minted@conveyor.test", platformAdmin: true }],
    ] as const) {
      const res = await call(invites, "POST", "/api/v1/invites", { token, body });
      const text = await res.text();
      assert.equal(res.status, 403, text);
      assert.match((JSON.parse(text) as { error: { message: string } }).error.message, /browser session/);
    }
    assert.equal(await db().invite.count(), before, "no invitation, no link");
    const patch = await call(member.PATCH as unknown as Handler, "PATCH", `/api/v1/members/${fx.p.ada.userId}`, {
      token: operator,
      body: { role: "operator" },
    });
    assert.equal(patch.status, 403);
    const del = await call(member.DELETE as unknown as Handler, "DELETE", `/api/v1/members/${fx.p.ada.userId}`, {
      token: operator,
    });
    assert.equal(del.status, 403);
    const ada = await db().membership.findFirstOrThrow({ where: { userId: fx.p.ada.userId, tenantId: fx.p.acmeId } });
    assert.equal(ada.role, "member");
  });
});

describe("members and passwords", () => {
  test("an operator changes roles and removes members of their tenant; never their own; every change audited", async () => {
    const members = await listMembers(fx.p.oscar);
    assert.ok(members.some((m) => m.email === "ada@acme.test" && m.role === "member"));
    const promoted = await changeMemberRole(fx.p.oscar, fx.p.ada.userId, { role: "operator" });
    assert.equal(promoted.role, "operator");
    await changeMemberRole(fx.p.oscar, fx.p.ada.userId, { role: "member" });
    await assert.rejects(changeMemberRole(fx.p.oscar, fx.p.oscar.userId, { role: "member" }), isCode("forbidden"));
    await assert.rejects(changeMemberRole(fx.p.oscar, fx.p.gus.userId, { role: "operator" }), isCode("not_found"));
    await assert.rejects(changeMemberRole(fx.p.ada, fx.p.oscar.userId, { role: "member" }), isCode("forbidden"));

    // Removing a member ends their access there: their token for it stops working.
    const invite = await inviteUser(fx.p.oscar, { email: "temp@acme.test" });
    await acceptInvite({ token: tokenOf(invite.link!), name: "Temp", password: "temporary member" });
    const temp = await db().user.findUniqueOrThrow({ where: { email: "temp@acme.test" } });
    const token = await createApiTokenForEmail("temp@acme.test", "temp");
    assert.ok(await principalFromToken(token));
    await removeMember(fx.p.oscar, temp.id);
    assert.equal(await principalFromToken(token), null);
    const actions = (await db().auditLog.findMany({ where: { action: { in: ["user.role", "user.remove"] } } })).map(
      (a) => a.action,
    );
    assert.deepEqual(actions.sort(), ["user.remove", "user.role", "user.role"]);
  });

  test("an operator demoted or removed loses the pending invitations they sent; others' stay", async () => {
    const join = async (email: string) => {
      const invite = await inviteUser(fx.p.oscar, { email, role: "operator" });
      await acceptInvite({ token: tokenOf(invite.link!), name: email, password: "an operator's secret" });
      const user = await db().user.findUniqueOrThrow({ where: { email } });
      return (await loadUserPrincipal(user.id))!;
    };
    const stateOf = (link: string) =>
      getInviteInfo(tokenOf(link)).then(
        () => "pending",
        (e: unknown) => (isCode("gone")(e) ? "gone" : String(e)),
      );
    const demoted = await join("demoted-op@acme.test");
    const removed = await join("removed-op@acme.test");
    const byDemoted = await inviteUser(demoted, { email: "friend-1@acme.test", role: "operator" });
    const byRemoved = await inviteUser(removed, { email: "friend-2@acme.test" });
    const byOscar = await inviteUser(fx.p.oscar, { email: "friend-3@acme.test" });

    await changeMemberRole(fx.p.oscar, demoted.userId, { role: "member" });
    assert.equal(await stateOf(byDemoted.link!), "gone", "a demoted operator's invitation no longer works");
    assert.equal(await stateOf(byRemoved.link!), "pending");
    await removeMember(fx.p.oscar, removed.userId);
    assert.equal(await stateOf(byRemoved.link!), "gone", "a removed operator's invitation no longer works");
    assert.equal(await stateOf(byOscar.link!), "pending", "another operator's invitation stays");
    const states = new Map((await listInvites(fx.p.oscar)).map((i) => [i.email, i.state]));
    assert.deepEqual(
      ["friend-1@acme.test", "friend-2@acme.test", "friend-3@acme.test"].map((e) => states.get(e)),
      ["revoked", "revoked", "pending"],
    );
  });

  test("a user changes their own password with the current one; older sessions end", async () => {
    const before = Date.now() - 1000;
    await assert.rejects(
      changePassword(fx.p.gus, { currentPassword: "wrong", newPassword: "gus new password" }),
      (e: unknown) =>
        isCode("invalid_input")(e) && (e as { fields: { path: string }[] }).fields[0]!.path === "currentPassword",
    );
    await changePassword(fx.p.gus, { currentPassword: "conveyor-demo", newPassword: "gus new password" });
    assert.equal(await loadSessionPrincipal(fx.p.gus.userId, before), null, "a session from before the change ends");
    assert.ok(await loadSessionPrincipal(fx.p.gus.userId, Date.now() + 1000));
    assert.equal((await signInWithPassword("gus@globex.test", "gus new password", "10.0.0.9")).ok, true);
    assert.equal((await signInWithPassword("gus@globex.test", "conveyor-demo", "10.0.0.9")).ok, false);
  });
});

describe("sign-in throttling", () => {
  test("past the threshold an account waits from that address only; a success clears it; old hashes are upgraded", async () => {
    const email = "oscar@acme.test";
    const outcomes: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await signInWithPassword(email, `guess ${i}`, "203.0.113.7");
      outcomes.push(r.ok ? "ok" : r.reason);
    }
    assert.deepEqual(outcomes, ["invalid", "invalid", "invalid", "invalid", "throttled"]);
    const locked = await signInWithPassword(email, "conveyor-demo", "203.0.113.7");
    assert.equal(locked.ok, false, "even the right password waits");
    assert.ok(!locked.ok && locked.reason === "throttled" && locked.waitSeconds > 0 && locked.waitSeconds <= 60);
    // Another address is not locked out.
    assert.equal((await signInWithPassword(email, "conveyor-demo", "198.51.100.2")).ok, true);
    await pool().query("UPDATE sign_in_throttle SET locked_until = now() - interval '1 second'");
    assert.equal((await signInWithPassword(email, "conveyor-demo", "203.0.113.7")).ok, true);
    const [left] = (
      await pool().query(
        "SELECT count(*)::int AS n FROM sign_in_throttle WHERE key LIKE 'acct:oscar% ip:203.0.113.7' AND failures > 0",
      )
    ).rows;
    assert.equal(left.n, 0, "a success clears the account's count from that address");

    // The demo accounts' hashes predate today's parameters when made by an older seed: a sign-in replaces them.
    await pool().query("UPDATE users SET password_hash = $2 WHERE email = $1", [
      "gina@globex.test",
      "scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
    ]);
    const { scryptSync, randomBytes } = await import("node:crypto");
    const salt = randomBytes(16);
    const old = [
      "scrypt",
      16384,
      8,
      1,
      salt.toString("base64"),
      scryptSync("conveyor-demo", salt, 32, { N: 16384, r: 8, p: 1 }).toString("base64"),
    ].join("$");
    await pool().query("UPDATE users SET password_hash = $2 WHERE email = $1", ["gina@globex.test", old]);
    assert.equal((await signInWithPassword("gina@globex.test", "conveyor-demo", "10.1.1.1")).ok, true);
    const [gina] = (await pool().query("SELECT password_hash FROM users WHERE email = 'gina@globex.test'")).rows;
    assert.match(gina.password_hash, /^scrypt\$32768\$8\$3\$/);
  });
});

describe("mail and the command line", () => {
  const received: { to: string; body: string }[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    onData(stream, session, cb) {
      let body = "";
      stream.on("data", (d: Buffer) => (body += d.toString()));
      stream.on("end", () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address).join(","), body });
        cb();
      });
    },
  });
  after(() => new Promise<void>((r) => smtp.close(() => r())));

  test("MAIL_TRANSPORT=smtp sends the invitation through the SMTP server", async () => {
    await new Promise<void>((r) => smtp.listen(0, "127.0.0.1", () => r()));
    const { port } = smtp.server.address() as { port: number };
    Object.assign(process.env, { MAIL_TRANSPORT: "smtp", SMTP_URL: `smtp://127.0.0.1:${port}` });
    resetEnvCache();
    resetMailTransport();
    try {
      const invite = await inviteUser(fx.p.oscar, { email: "mailed@acme.test" });
      assert.equal(invite.mailed, true);
      assert.equal(received.length, 1);
      assert.equal(received[0]!.to, "mailed@acme.test");
      assert.ok(received[0]!.body.replace(/=\r?\n/g, "").includes(tokenOf(invite.link!)), "the link is in the mail");
    } finally {
      delete process.env.MAIL_TRANSPORT;
      delete process.env.SMTP_URL;
      resetEnvCache();
      resetMailTransport();
    }
  });

  test("`npm run cli -- user create --email X --admin` prints a one-time link that makes a platform admin", async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "scripts/cli.ts", "user", "create", "--email", "first@example.com", "--admin"],
      { env: { ...process.env, DATABASE_URL: fx.database.url } },
    );
    const link = stdout.trim().split("\n").at(-1)!;
    assert.match(link, /\/invite\/inv_/);
    await acceptInvite({ token: tokenOf(link), name: "First", password: "the very first admin" });
    const first = await db().user.findUniqueOrThrow({ where: { email: "first@example.com" } });
    assert.equal(first.isPlatformAdmin, true);
    const bad = await promisify(execFile)(process.execPath, ["--import", "tsx", "scripts/cli.ts", "user", "create"], {
      env: { ...process.env, DATABASE_URL: fx.database.url },
    }).catch((e: { code: number; stderr: string }) => e);
    assert.equal((bad as { code: number }).code, 2);
    assert.match((bad as { stderr: string }).stderr, /--email is required/);
  });
});
