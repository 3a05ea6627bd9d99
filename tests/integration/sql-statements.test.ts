/**
 * The typed statements committed beside each lib/**\/sql/*.sql file are what the migrated
 * database says of them today: regenerated here (scripts/sql-statements.ts, what
 * `npm run sql:generate` runs) and compared with the committed files.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { generateStatements } from "../../scripts/sql-statements";
import { UPLOAD_LOCKS_CHANNEL } from "@/lib/uploads/locker";
import { unlock } from "@/lib/uploads/sql/statements";
import { useTestDatabase } from "../helpers/db";

useTestDatabase({ seed: false });

function committedStatementFiles(): string[] {
  return readdirSync("lib", { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name === "statements.ts" && path.basename(e.parentPath) === "sql")
    .map((e) => path.relative(".", path.join(e.parentPath, e.name)).split(path.sep).join("/"))
    .sort();
}

test("each sql/ folder's statements.ts is generated from its .sql files (run `npm run sql:generate` after changing one)", async () => {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  let generated: Map<string, string>;
  try {
    generated = await generateStatements(client, process.cwd());
  } finally {
    await client.end();
  }
  // The generated files are there: the engine's statements and the auth ones at least.
  assert.ok(generated.has("lib/jobs/sql/statements.ts") && generated.has("lib/auth/sql/statements.ts"));
  assert.match(generated.get("lib/jobs/sql/statements.ts")!, /export const requestCancel: Statement</);
  assert.deepEqual(
    committedStatementFiles(),
    [...generated.keys()].sort(),
    "a statements.ts without .sql files, or one missing",
  );
  for (const [file, text] of generated) {
    assert.equal(readFileSync(file, "utf8"), text, `${file} is stale: run \`npm run sql:generate\` and commit it`);
  }
});

test("the generator types a statement from the database, and names the file of one it refuses", async () => {
  const { mkdtemp, mkdir, writeFile, rm } = await import("node:fs/promises");
  const { tmpdir } = await import("node:os");
  const root = await mkdtemp(path.join(tmpdir(), "conveyor-sql-"));
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    await mkdir(path.join(root, "lib", "x", "sql"), { recursive: true });
    await writeFile(
      path.join(root, "lib", "x", "sql", "ok.sql"),
      "-- One.\nSELECT id, status FROM jobs WHERE id = $1\n",
    );
    const out = await generateStatements(client, root);
    const text = out.get("lib/x/sql/statements.ts")!;
    // Types from the database: the parameter a uuid (string), status its enum, both columns not null.
    assert.match(
      text,
      /export const ok: Statement<\s*\[string \| null\],\s*\{\s*"id": string;\s*"status": "scheduled" \| "queued"/,
    );
    await writeFile(path.join(root, "lib", "x", "sql", "bad.sql"), "SELECT no_such_column FROM jobs\n");
    await assert.rejects(
      generateStatements(client, root),
      /lib\/x\/sql\/bad\.sql: column "no_such_column" does not exist/,
    );
  } finally {
    await client.end();
    await rm(root, { recursive: true, force: true });
  }
});

test("an upload's unlock notifies on the channel its waiters listen to", () => {
  assert.match(unlock.text, new RegExp(`pg_notify\\('${UPLOAD_LOCKS_CHANNEL}'`));
});
