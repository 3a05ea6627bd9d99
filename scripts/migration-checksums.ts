/**
 * Committed migrations are frozen: prisma/migration-checksums.txt lists each migration folder
 * with the sha256 of its files, and tests/unit/migrations-frozen.test.ts fails when a listed
 * migration changed (a database that already applied it would never see the change: add a new
 * migration instead) or when a migration is not listed yet.
 *   npm run db:freeze    appends the migrations not listed yet (never rewrites a listed one)
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import path from "node:path";

const ROOT = path.join(__dirname, "..", "prisma");
export const MIGRATIONS_DIR = path.join(ROOT, "migrations");
export const CHECKSUMS_FILE = path.join(ROOT, "migration-checksums.txt");

/** Each migration folder's sha256 (of its files, by name), in folder order. */
export function migrationChecksums(dir: string = MIGRATIONS_DIR): Map<string, string> {
  const out = new Map<string, string>();
  for (const folder of readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()) {
    const hash = createHash("sha256");
    for (const file of readdirSync(path.join(dir, folder)).sort()) {
      hash.update(`${file}\0`);
      hash.update(readFileSync(path.join(dir, folder, file)));
      hash.update("\0");
    }
    out.set(folder, hash.digest("hex"));
  }
  return out;
}

/** The committed list: folder → sha256 (lines `<sha256>  <folder>`). */
export function committedChecksums(file: string = CHECKSUMS_FILE): Map<string, string> {
  if (!existsSync(file)) return new Map();
  const out = new Map<string, string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^([0-9a-f]{64}) {2}(\S+)$/.exec(line.trim());
    if (m) out.set(m[2]!, m[1]!);
  }
  return out;
}

function freeze(): void {
  const committed = committedChecksums();
  const lines = [...committed].map(([folder, sha]) => `${sha}  ${folder}`);
  const added: string[] = [];
  for (const [folder, sha] of migrationChecksums()) {
    if (committed.has(folder)) continue;
    lines.push(`${sha}  ${folder}`);
    added.push(folder);
  }
  writeFileSync(CHECKSUMS_FILE, `${lines.join("\n")}\n`);
  console.log(added.length ? `[db:freeze] recorded ${added.join(", ")}` : "[db:freeze] nothing new");
}

if (require.main === module) freeze();
