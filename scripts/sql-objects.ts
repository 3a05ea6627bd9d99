/**
 * The database's functions and triggers, one current file each:
 *   prisma/sql/functions/<name>.sql   CREATE OR REPLACE FUNCTION …;
 *   prisma/sql/triggers/<name>.sql    DROP TRIGGER IF EXISTS … ; CREATE TRIGGER …;
 * Re-applied by every migrate (scripts/database.ts `migrate()`), after `prisma migrate deploy`
 * and graphile-worker's migrations, in this order: every function file by name, then every
 * trigger file by name, in one transaction. So a function changes by editing its file, never
 * by a migration that redefines it. A migration still creates, drops or renames one (a changed
 * signature, a function no longer used: drop it in a migration and delete its file).
 * tests/integration/sql-objects.test.ts checks each file is what the migrated database has.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type pg from "pg";

export const SQL_OBJECTS_DIR = path.join(__dirname, "..", "prisma", "sql");

export type SqlObjectFile = { kind: "function" | "trigger"; name: string; file: string; sql: string };

const KINDS = [
  { kind: "function", dir: "functions" },
  { kind: "trigger", dir: "triggers" },
] as const;

/** The files in the order they are applied: functions by name, then triggers by name. */
export function sqlObjectFiles(root: string = SQL_OBJECTS_DIR): SqlObjectFile[] {
  return KINDS.flatMap(({ kind, dir }) =>
    readdirSync(path.join(root, dir))
      .filter((f) => f.endsWith(".sql"))
      .sort()
      .map((f) => {
        const file = path.join(root, dir, f);
        return { kind, name: f.slice(0, -".sql".length), file, sql: readFileSync(file, "utf8") };
      }),
  );
}

/** Applies every function and trigger file to the database of `client`, in one transaction. */
export async function applySqlObjects(client: Pick<pg.Client, "query">): Promise<void> {
  await client.query("BEGIN");
  try {
    for (const o of sqlObjectFiles()) {
      try {
        await client.query(o.sql);
      } catch (err) {
        throw new Error(`applying ${path.relative(process.cwd(), o.file)} failed: ${(err as Error).message}`, {
          cause: err,
        });
      }
    }
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  }
}
