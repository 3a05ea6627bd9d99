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
import { db, pool, prepared } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { settleStatements } from "@/lib/pooler";
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

test("the token lookup is a prepared statement: a kept plan still sees a revocation; DATABASE_PREPARED_STATEMENTS=0 prepares nothing", async () => {
  // DATABASE_PREPARED_STATEMENTS=auto (the default) names them once the start-up probe found a direct connection.
  assert.equal((await settleStatements()).named, true);
  // One connection's prepared statements (pg_prepared_statements is per session).
  const client = await pool().connect();
  try {
    const text = "SELECT $1::int + 1 AS n";
    const named = prepared(text);
    assert.match(named.name ?? "", /^cvy_[0-9a-f]{20}$/);
    assert.equal(prepared(text).name, named.name, "one name per text");
    assert.notEqual(prepared("SELECT $1::int + 2 AS n").name, named.name);
    for (let i = 0; i < 7; i++) assert.equal((await client.query({ ...named, values: [i] })).rows[0].n, i + 1);
    const runs = async (name: string) =>
      (
        await client.query<{ runs: string }>(
          "SELECT (generic_plans + custom_plans)::text AS runs FROM pg_prepared_statements WHERE name = $1",
          [name],
        )
      ).rows[0]?.runs;
    assert.equal(await runs(named.name!), "7", "parsed once, run seven times on this connection");

    process.env.DATABASE_PREPARED_STATEMENTS = "0";
    resetEnvCache();
    const unnamed = prepared("SELECT $1::int + 3 AS n");
    assert.equal(unnamed.name, undefined);
    await client.query({ ...unnamed, values: [1] });
    const { rows } = await client.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM pg_prepared_statements WHERE statement LIKE '%+ 3 AS n%'",
    );
    assert.equal(rows[0]!.n, "0");
  } finally {
    delete process.env.DATABASE_PREPARED_STATEMENTS;
    resetEnvCache();
    client.release();
  }

  // Past the five runs after which Postgres may keep a generic plan, the lookup still reads the row
  // as it is now: a revoked token is unknown at once.
  const { token, record } = await createApiToken(fx.p.ada, { name: "many requests" });
  for (let i = 0; i < 12; i++) assert.equal((await principalFromToken(token))?.tokenId, record.id);
  await revokeApiToken(fx.p.ada, record.id);
  assert.equal(await principalFromToken(token), null);
});
