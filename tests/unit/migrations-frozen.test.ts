import { test } from "node:test";
import assert from "node:assert/strict";
import { cp, mkdtemp, appendFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { committedChecksums, migrationChecksums, MIGRATIONS_DIR } from "../../scripts/migration-checksums";

/** The complaints about `actual` against the committed list (empty: all is well). */
function problems(actual: Map<string, string>, committed: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [folder, sha] of committed) {
    const now = actual.get(folder);
    if (now === undefined) out.push(`${folder} was committed and is gone: committed migrations are never removed`);
    else if (now !== sha)
      out.push(
        `${folder} changed after it was committed: a database that applied it never sees the change. ` +
          "Restore it and add a new migration instead (prisma/migrations/<timestamp>_<name>)",
      );
  }
  for (const folder of actual.keys())
    if (!committed.has(folder))
      out.push(`${folder} is not in prisma/migration-checksums.txt: run \`npm run db:freeze\``);
  return out;
}

test("committed migrations are frozen (prisma/migration-checksums.txt)", () => {
  assert.deepEqual(problems(migrationChecksums(), committedChecksums()), []);
});

test("an edited migration is caught, with the advice to add a new one", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "conveyor-migrations-"));
  await cp(MIGRATIONS_DIR, dir, { recursive: true });
  const first = [...migrationChecksums(dir).keys()][0]!;
  await appendFile(path.join(dir, first, "migration.sql"), "\n-- an afterthought\n");
  const found = problems(migrationChecksums(dir), committedChecksums());
  assert.equal(found.length, 1);
  assert.match(found[0]!, new RegExp(`^${first} changed after it was committed.*add a new migration instead`));
});
