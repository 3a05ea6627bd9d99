import { test } from "node:test";
import assert from "node:assert/strict";
import {
  createApiToken,
  createApiTokenForEmail,
  listApiTokens,
  principalFromToken,
  revokeApiToken,
} from "@/lib/auth/tokens";
import { verifyCredentials } from "@/lib/auth/login";
import { db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { useTestDatabase } from "../helpers/db";

const fx = useTestDatabase({ seed: 0.001 });

test("a token is shown once, stored hashed, acts as its user in its tenant, and dies when revoked", async () => {
  const { token, record } = await createApiToken(fx.p.ada, { name: "laptop" });
  assert.match(token, /^cvy_[A-Za-z0-9_-]{43}$/);
  const row = await db().apiToken.findUniqueOrThrow({ where: { id: record.id } });
  assert.notEqual(row.tokenHash, token);
  assert.ok(!JSON.stringify(row).includes(token.slice(4)), "the secret is not stored");
  const principal = await principalFromToken(token);
  assert.deepEqual(
    [principal?.userId, principal?.tenantId, principal?.role, principal?.tokenId],
    [fx.p.ada.userId, fx.p.acmeId, "member", record.id],
  );
  assert.equal(await principalFromToken(token + "x"), null);
  assert.equal(await principalFromToken("not-a-token"), null);

  await assert.rejects(
    revokeApiToken(fx.p.gus, record.id),
    (e: unknown) => e instanceof AppError && e.code === "not_found",
  );
  await revokeApiToken(fx.p.ada, record.id);
  assert.equal(await principalFromToken(token), null);
  assert.deepEqual(await listApiTokens(fx.p.ada), []);
  const audit = await db().auditLog.findMany({ where: { targetIds: { has: record.id } }, orderBy: { id: "asc" } });
  assert.deepEqual(
    audit.map((a) => [a.action, a.actorUserId, a.tenantId]),
    [
      ["token.create", fx.p.ada.userId, fx.p.acmeId],
      ["token.revoke", fx.p.ada.userId, fx.p.acmeId],
    ],
  );
});

test("token names are validated; the CLI path names unknown users", async () => {
  await assert.rejects(
    createApiToken(fx.p.ada, { name: "  " }),
    (e: unknown) => e instanceof AppError && e.fields?.[0]?.path === "name",
  );
  await assert.rejects(createApiTokenForEmail("nobody@acme.test", "cli"), /No user with e-mail nobody@acme.test/);
  const token = await createApiTokenForEmail("gus@globex.test", "cli");
  assert.equal((await principalFromToken(token))?.tenantId, fx.p.globexId);
});

test("credentials: the demo password signs in; anything else does not", async () => {
  assert.equal((await verifyCredentials("ADA@acme.test ", "conveyor-demo"))?.email, "ada@acme.test");
  assert.equal(await verifyCredentials("ada@acme.test", "wrong"), null);
  assert.equal(await verifyCredentials("ghost@acme.test", "conveyor-demo"), null);
});
