/**
 * Every change of a job's status goes through lib/jobs/transitions.ts and the
 * statements of lib/jobs/sql (issue 33): no other file of lib/, scripts/ or
 * worker/ writes `jobs.status` or a cancel request, in SQL or through Prisma.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const HOME = [/^lib\/jobs\/transitions\.ts$/, /^lib\/jobs\/sql\//];

/**
 * Files still writing a status on their own, each with the reason and who removes it. Empty
 * is the goal: an entry here is a debt, named.
 */
const KNOWN: Record<string, string> = {};

/** The status writes in a file's text: what each one looks like, for the message. */
export function statusWrites(text: string): string[] {
  const found: string[] = [];
  // SQL: UPDATE jobs [alias] SET … up to its WHERE/FROM/RETURNING (or the end of the literal).
  for (const m of text.matchAll(
    /UPDATE\s+jobs(?:\s+(?!SET\b)\w+)?\s+SET\b([\s\S]*?)(?:\bWHERE\b|\bFROM\b|\bRETURNING\b|`|$)/gi,
  )) {
    if (/(^|[\s,(.])(status|cancel_requested_at)\s*=/i.test(m[1]!)) found.push(m[0].slice(0, 80));
  }
  // Prisma: db().job.update / updateMany / upsert with a status or a cancel request in its data.
  for (const m of text.matchAll(/\.job\.(?:update|updateMany|updateManyAndReturn|upsert)\(([\s\S]*?)\);/g)) {
    if (/\b(status|cancelRequestedAt)\s*:/.test(m[1]!)) found.push(m[0].slice(0, 80));
  }
  return found;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|tsx|mts|cjs|mjs|js)$/.test(e.name))
    .map((e) => path.relative(".", path.join(e.parentPath, e.name)).split(path.sep).join("/"))
    .filter((f) => !f.startsWith("lib/generated/"));
}

test("the detector finds a status write in SQL and through Prisma, and passes other writes", () => {
  assert.equal(statusWrites("UPDATE jobs SET status = 'queued', updated_at = now() WHERE id = $1").length, 1);
  assert.equal(statusWrites("UPDATE jobs j SET updated_at = now(), cancel_requested_at = now() WHERE").length, 1);
  assert.equal(statusWrites('await db().job.updateMany({ where: { id }, data: { status: "expired" } });').length, 1);
  assert.equal(statusWrites("UPDATE jobs SET discarded_at = now() WHERE status = 'failed'").length, 0);
  assert.equal(statusWrites("UPDATE jobs SET checkpoint = $3::jsonb WHERE id = $1 AND status = 'running'").length, 0);
  assert.equal(statusWrites("UPDATE workers SET state = 'dead', status = 1").length, 0);
});

test("only lib/jobs/transitions.ts and lib/jobs/sql write jobs.status or a cancel request", () => {
  const offenders: string[] = [];
  for (const file of [...sources("lib"), ...sources("scripts"), ...sources("worker")]) {
    if (HOME.some((re) => re.test(file)) || file in KNOWN) continue;
    for (const w of statusWrites(readFileSync(file, "utf8"))) offenders.push(`${file}: ${w}`);
  }
  assert.deepEqual(offenders, [], "change a job's status through lib/jobs/transitions.ts");
});

test("each known exception still writes a status (else its entry goes)", () => {
  for (const file of Object.keys(KNOWN)) {
    assert.ok(
      statusWrites(readFileSync(file, "utf8")).length > 0,
      `${file} no longer writes a status: remove it from KNOWN`,
    );
  }
});

test("the statements of lib/jobs/sql that change a status are reached through lib/jobs/transitions.ts", () => {
  // Outside lib/jobs/sql and the transitions module, nothing imports a status-changing statement's file.
  const changing = ["cancel", "claim", "fail", "reject", "release", "succeed", "wait-for-children"];
  const offenders: string[] = [];
  for (const file of [...sources("lib"), ...sources("scripts"), ...sources("worker"), ...sources("app")]) {
    if (HOME.some((re) => re.test(file)) || file in KNOWN) continue;
    const text = readFileSync(file, "utf8");
    for (const name of changing) {
      const re = new RegExp(`from "[^"]*jobs/sql/${name}"`);
      if (re.test(text)) offenders.push(`${file} imports lib/jobs/sql/${name}`);
    }
  }
  assert.deepEqual(offenders, []);
});
