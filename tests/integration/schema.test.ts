import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { pool } from "@/lib/db";
import { dumpSchema } from "../../scripts/schema-dump";
import { useTestDatabase } from "../helpers/db";

useTestDatabase({ seed: false });

test("prisma/schema.sql is the migrated database's schema (run `npm run db:schema` after changing a migration)", async () => {
  const client = await pool().connect();
  try {
    const live = await dumpSchema(client);
    const committed = await readFile("prisma/schema.sql", "utf8");
    assert.equal(committed, live, "prisma/schema.sql is stale: run `npm run db:schema` and commit it");
    // It is the schema, not an empty file: the job table and its triggers are there.
    assert.match(live, /CREATE TABLE jobs \(/);
    assert.match(live, /CREATE TRIGGER jobs_child_changed/);
  } finally {
    client.release();
  }
});
