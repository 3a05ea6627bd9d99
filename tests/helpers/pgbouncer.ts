/**
 * A real PgBouncer (Debian's, /usr/sbin/pgbouncer: 1.18 on bookworm) in transaction pooling mode in
 * front of the test Postgres, for the tests and scripts that run Conveyor through it
 * (docs/DEPLOY.md#pgbouncer). Its configuration and user list go in a temporary directory; it
 * listens on a free port of 127.0.0.1 and serves every database of the server it stands before
 * (`* =`), so a test's scratch database is reached by the same name through it.
 *
 * PgBouncer refuses to run as root: when we are root it is started with `-u postgres` (it drops to
 * that user after reading its files, which are made readable to it).
 *
 * `pgbouncerMissing()` says why it cannot run here (no binary), for a test to skip with that reason:
 * `.ci/run` installs it (apt-get install pgbouncer), README.md says how.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { accessSync, constants } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, waitFor } from "./net";

export const PGBOUNCER_BINARY = process.env.PGBOUNCER_PATH ?? "/usr/sbin/pgbouncer";

/** Why PgBouncer cannot be started here, or null when it can. */
export function pgbouncerMissing(): string | null {
  try {
    accessSync(PGBOUNCER_BINARY, constants.X_OK);
    return null;
  } catch {
    return `PgBouncer is not installed (${PGBOUNCER_BINARY} not found; apt-get install pgbouncer, or set PGBOUNCER_PATH — see README.md)`;
  }
}

export type PgBouncer = {
  port: number;
  /** `databaseUrl` (a direct postgresql:// URL) with its host and port replaced by PgBouncer's. */
  urlFor(databaseUrl: string): string;
  /** What PgBouncer printed (its log goes to stderr). */
  output(): string;
  stop(): Promise<void>;
};

export type PgBouncerOptions = {
  /** Server connections per database and user: sized like a deployment's (PgBouncer's default is 20). */
  poolSize?: number;
};

/**
 * Starts a PgBouncer in transaction pooling mode before the Postgres server that `databaseUrl` names
 * (its host and port: the suite's embedded Postgres, or the one DATABASE_URL gives); resolves once it
 * accepts connections.
 */
export async function startPgBouncer(databaseUrl: string, opts: PgBouncerOptions = {}): Promise<PgBouncer> {
  const missing = pgbouncerMissing();
  if (missing) throw new Error(missing);
  const server = new URL(databaseUrl);
  const host = server.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1";
  const serverPort = server.port || "5432";
  const dir = await mkdtemp(path.join(tmpdir(), "conveyor-pgbouncer-"));
  const port = await freePort();
  const ini = [
    "[databases]",
    `* = host=${host} port=${serverPort}`,
    "",
    "[pgbouncer]",
    "listen_addr = 127.0.0.1",
    `listen_port = ${port}`,
    "unix_socket_dir =",
    // Trust as the test Postgres does; PgBouncer still wants the user in auth_file.
    "auth_type = trust",
    `auth_file = ${path.join(dir, "userlist.txt")}`,
    "pool_mode = transaction",
    "max_client_conn = 2000",
    `default_pool_size = ${opts.poolSize ?? 20}`,
    // A Postgres-side error (a test dropping its scratch database) should not keep the pool wedged.
    "server_login_retry = 1",
    "log_connections = 0",
    "log_disconnections = 0",
    "",
  ].join("\n");
  await writeFile(path.join(dir, "pgbouncer.ini"), ini);
  // Clients are trusted; PgBouncer logs in to the server as the URL's user with its password (the
  // embedded Postgres has a random one: an empty password is refused there).
  const quoted = (v: string) => `"${v.replaceAll('"', '""')}"`;
  const user = decodeURIComponent(server.username) || "postgres";
  await writeFile(path.join(dir, "userlist.txt"), `${quoted(user)} ${quoted(decodeURIComponent(server.password))}\n`);
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    await chmod(dir, 0o755);
    await chmod(path.join(dir, "pgbouncer.ini"), 0o644);
    await chmod(path.join(dir, "userlist.txt"), 0o644);
  }
  const args = [...(asRoot ? ["-u", "postgres"] : []), path.join(dir, "pgbouncer.ini")];
  const child: ChildProcess = spawn(PGBOUNCER_BINARY, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const output = () => out;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      "PgBouncer to listen",
      async () => {
        if (child.exitCode !== null) throw new Error(`PgBouncer exited (${child.exitCode}): ${out}`);
        return accepts(port);
      },
      10_000,
      () => `\n${out}`,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    port,
    urlFor(databaseUrl: string) {
      const u = new URL(databaseUrl);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.toString();
    },
    output,
    stop,
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
