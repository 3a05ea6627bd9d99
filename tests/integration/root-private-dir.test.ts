/**
 * `npm start` and `npm test` run by root from a directory other users cannot
 * enter (issue 16, point 8): the embedded Postgres runs as the `postgres`
 * system user, which can reach neither node_modules nor .data there. The
 * cluster is started exactly as `npm start` starts it (startEmbeddedPostgres)
 * with its data directory inside a mode-700 directory.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { lstat, mkdir, mkdtemp, readFile, readlink, realpath, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { embeddedDatabaseUrl } from "@/lib/env";
import { startEmbeddedPostgres } from "../../scripts/database";
import { ensurePostgresUser, reachableBy, ROOT_POSTGRES_BASE } from "../../scripts/postgres-as-root";
import { freePort } from "../helpers/net";

const asRoot = process.getuid?.() === 0 && process.platform === "linux";

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe(
  "the embedded Postgres, run by root from a private directory",
  { skip: asRoot ? false : "only root on Linux runs Postgres as another user (this run is not root)" },
  () => {
    test("starts, keeps its data across restarts, and lives where the postgres user can reach", async () => {
      const privateDir = await mkdtemp(path.join(tmpdir(), "conveyor-private-"));
      const project = path.join(privateDir, "conveyor");
      await mkdir(path.join(project, ".data"), { recursive: true });
      // mkdtemp makes it 0700, like root's home: the postgres user cannot enter it.
      assert.equal((await stat(privateDir)).mode & 0o777, 0o700);
      const user = ensurePostgresUser();
      assert.equal(reachableBy(user, project), false);
      const pgDir = path.join(project, ".data", "pg");
      let target: string | null = null;
      try {
        const port = await freePort();
        const first = await startEmbeddedPostgres(pgDir, port);
        try {
          // `.data/pg` links to a directory the postgres user owns, under ROOT_POSTGRES_BASE.
          assert.ok((await lstat(pgDir)).isSymbolicLink());
          target = await realpath(await readlink(pgDir));
          assert.equal(path.dirname(target), ROOT_POSTGRES_BASE);
          const owned = await stat(target);
          assert.equal(owned.uid, user.uid);
          assert.equal(owned.mode & 0o777, 0o700);
          const url = embeddedDatabaseUrl("postgres", port, first.password);
          const [where] = await query<{ setting: string }>(url, "SELECT current_setting('data_directory') AS setting");
          assert.equal(where!.setting, target);
          // The server runs as the postgres user, from a copy of the binaries every user can reach
          // (the ones under node_modules are in the private directory too, in a real checkout).
          const postmaster = path.join(target, "postmaster.pid");
          assert.equal((await stat(postmaster)).uid, user.uid);
          const pid = (await readFile(postmaster, "utf8")).split("\n")[0];
          const exe = await readlink(`/proc/${pid}/exe`);
          assert.ok(exe.startsWith(`${ROOT_POSTGRES_BASE}/embedded-pg-`), exe);
          await query(url, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)");
        } finally {
          await first.stop();
        }
        // A second start (as a second `npm start` would) finds the same cluster through the link.
        const again = await startEmbeddedPostgres(pgDir, port);
        try {
          assert.equal(again.password, first.password);
          const rows = await query<{ v: number }>(
            embeddedDatabaseUrl("postgres", port, again.password),
            "SELECT v FROM kept",
          );
          assert.deepEqual(rows, [{ v: 42 }]);
        } finally {
          await again.stop();
        }
        assert.equal((await stat(ROOT_POSTGRES_BASE)).mode & 0o777, 0o755);
      } finally {
        if (target) await rm(target, { recursive: true, force: true });
        await rm(privateDir, { recursive: true, force: true });
      }
    });
  },
);
