import { test } from "node:test";
import assert from "node:assert/strict";
import type pg from "pg";
import { pool } from "@/lib/db";
import { sqlObjectFiles } from "../../scripts/sql-objects";
import { useTestDatabase } from "../helpers/db";

useTestDatabase({ seed: false });

const NOT_FROM_EXTENSION = `NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid
  AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e')`;

type Client = Pick<pg.PoolClient, "query">;

async function definitions(c: Client): Promise<Map<string, string>> {
  const functions = await c.query<{ key: string; def: string }>(
    `SELECT 'function ' || p.proname AS key, pg_get_functiondef(p.oid) AS def
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'public' AND ${NOT_FROM_EXTENSION}`,
  );
  const triggers = await c.query<{ key: string; def: string }>(
    `SELECT 'trigger ' || t.tgname AS key, pg_get_triggerdef(t.oid) AS def
       FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid JOIN pg_namespace n ON n.oid = r.relnamespace
      WHERE n.nspname = 'public' AND NOT t.tgisinternal`,
  );
  return new Map([...functions.rows, ...triggers.rows].map((r) => [r.key, r.def]));
}

test("every function and trigger of the migrated database has one current file (prisma/sql), and nothing else does", async () => {
  const c = await pool().connect();
  try {
    const live = [...(await definitions(c)).keys()].sort();
    const files = sqlObjectFiles()
      .map((o) => `${o.kind} ${o.name}`)
      .sort();
    assert.deepEqual(
      files,
      live,
      "prisma/sql/functions and prisma/sql/triggers must hold exactly the database's functions and triggers " +
        "(a new one: add its file; a dropped one: delete its file)",
    );
  } finally {
    c.release();
  }
});

test("each function and trigger file is what the database has after migrate (applying it again changes nothing)", async () => {
  const c = await pool().connect();
  try {
    const before = await definitions(c);
    await c.query("BEGIN");
    try {
      for (const o of sqlObjectFiles()) {
        await c.query(o.sql);
        const after = await definitions(c);
        assert.equal(
          after.get(`${o.kind} ${o.name}`),
          before.get(`${o.kind} ${o.name}`),
          `${o.file} differs from the database's ${o.kind} ${o.name}`,
        );
      }
    } finally {
      await c.query("ROLLBACK");
    }
    // The check itself can fail: a changed body is seen.
    await c.query("BEGIN");
    try {
      const fn = sqlObjectFiles().find((o) => o.name === "conveyor_job_bump_seq")!;
      await c.query(fn.sql.replace("BEGIN", "BEGIN\n  -- changed"));
      assert.notEqual(
        (await definitions(c)).get("function conveyor_job_bump_seq"),
        before.get("function conveyor_job_bump_seq"),
      );
    } finally {
      await c.query("ROLLBACK");
    }
  } finally {
    c.release();
  }
});
