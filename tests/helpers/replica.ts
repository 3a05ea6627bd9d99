/**
 * A primary and a streaming replica of our own, for the read replica's test (docs/DEPLOY.md#read-replica):
 * both from one Postgres version's binaries — Debian's Postgres 15 (/usr/lib/postgresql/15/bin, or
 * REPLICA_PG_BIN) — in a temporary directory, each on a free port of 127.0.0.1: `initdb` and `pg_ctl`
 * make and start the primary, `pg_basebackup -R -X stream` copies it into a standby that streams
 * from it. (The suite's embedded Postgres is 18, and Debian's 15 tools cannot copy an 18 server.)
 *
 * As root, every server runs as the `postgres` system user (Postgres refuses root), from a directory
 * that user owns. `replicaPairMissing()` says why the pair cannot be made here (no binaries), for the
 * test to skip with that reason; `stop()` ends both servers and removes the directory, and a
 * process exit that skips it stops them too (`pg_ctl stop -m immediate`).
 */
import { execFile, spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { appendFile, chmod, chown, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { ensurePostgresUser, runningAsRoot } from "../../scripts/postgres-as-root";
import { freePort } from "./net";

const run = promisify(execFile);

export const REPLICA_PG_BIN = process.env.REPLICA_PG_BIN ?? "/usr/lib/postgresql/15/bin";
const TOOLS = ["initdb", "pg_ctl", "pg_basebackup", "postgres"] as const;

/** Why the pair cannot be made here, or null when it can. */
export function replicaPairMissing(): string | null {
  for (const tool of TOOLS) {
    try {
      accessSync(path.join(REPLICA_PG_BIN, tool), constants.X_OK);
    } catch {
      return `no ${tool} in ${REPLICA_PG_BIN} (apt-get install postgresql-15, or set REPLICA_PG_BIN to one version's bin directory)`;
    }
  }
  return null;
}

export type ReplicaPair = {
  /** postgresql:// URLs of `database` on the primary and on the replica. */
  primaryUrl: string;
  replicaUrl: string;
  /** Stops the replica (pg_ctl stop -m fast) and starts it again. */
  stopReplica(): Promise<void>;
  startReplica(): Promise<void>;
  /** Stops both servers (immediate) and removes their directory. */
  stop(): Promise<void>;
};

/** Makes the primary, `prepare`s it (migrations, data), copies it into a streaming replica and starts that. */
export async function startReplicaPair(
  database: string,
  prepare: (primaryUrl: string) => Promise<void>,
): Promise<ReplicaPair> {
  const missing = replicaPairMissing();
  if (missing) throw new Error(missing);
  const user = runningAsRoot() ? ensurePostgresUser() : null;
  const dir = await mkdtemp(path.join(tmpdir(), "conveyor-replica-"));
  await chmod(dir, 0o755);
  if (user) await chown(dir, user.uid, user.gid);
  const primaryDir = path.join(dir, "primary");
  const replicaDir = path.join(dir, "replica");
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const as = user ? { uid: user.uid, gid: user.gid } : {};
  const tool = (name: (typeof TOOLS)[number], args: string[]) =>
    run(path.join(REPLICA_PG_BIN, name), args, { ...as, cwd: dir, env: { ...process.env, LC_ALL: "C" } });
  const started = new Set<string>();
  const pgCtl = async (dataDir: string, action: "start" | "stop", mode = "fast") => {
    if (action === "start") {
      await tool("pg_ctl", ["-D", dataDir, "-l", `${dataDir}.log`, "-w", "-t", "60", "start"]);
      started.add(dataDir);
    } else {
      await tool("pg_ctl", ["-D", dataDir, "-m", mode, "-w", "-t", "60", "stop"]);
      started.delete(dataDir);
    }
  };
  // A test process that dies without stop() must not leave servers behind.
  const onExit = () => {
    for (const d of started)
      spawnSync(path.join(REPLICA_PG_BIN, "pg_ctl"), ["-D", d, "-m", "immediate", "-w", "stop"], {
        ...as,
        stdio: "ignore",
      });
  };
  process.on("exit", onExit);
  const stop = async () => {
    for (const d of [...started].reverse()) await pgCtl(d, "stop", "immediate").catch(() => {});
    process.off("exit", onExit);
    await rm(dir, { recursive: true, force: true });
  };
  const url = (port: number) => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  try {
    await tool("initdb", ["-D", primaryDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
    await appendFile(
      path.join(primaryDir, "postgresql.conf"),
      [
        "",
        `port = ${primaryPort}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${dir}'`,
        "wal_level = replica",
        "max_wal_senders = 4",
        // A scratch server: durability is not what is tested.
        "fsync = off",
        "",
      ].join("\n"),
    );
    await pgCtl(primaryDir, "start");
    const admin = new pg.Client({ connectionString: url(primaryPort).replace(/\/[^/]+$/, "/postgres") });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)}`);
    await admin.end();
    await prepare(url(primaryPort));
    // The standby: a copy streaming from the primary (-R writes primary_conninfo and standby.signal).
    await tool("pg_basebackup", [
      "-h",
      "127.0.0.1",
      "-p",
      String(primaryPort),
      "-U",
      "postgres",
      "-D",
      replicaDir,
      "-R",
      "-X",
      "stream",
      "-c",
      "fast",
      "--no-sync",
    ]);
    await appendFile(path.join(replicaDir, "postgresql.conf"), `\nport = ${replicaPort}\nhot_standby = on\n`);
    await pgCtl(replicaDir, "start");
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    primaryUrl: url(primaryPort),
    replicaUrl: url(replicaPort),
    stopReplica: () => pgCtl(replicaDir, "stop"),
    startReplica: () => pgCtl(replicaDir, "start"),
    stop,
  };
}
