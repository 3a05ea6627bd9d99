/**
 * No orphans: `npm start` (the real one: npm, its shell, tsx, scripts/start.ts)
 * on an embedded Postgres, its whole process group SIGKILLed as a CI runner or
 * a process manager that gives up does it. The supervisor, the web server, the
 * workers (each in a process group of its own) and the embedded Postgres must
 * all end by themselves, the port be free, and a second start on the same data
 * come up cleanly. Then that second start's supervisor alone is SIGKILLed:
 * npm start says so and ends, and nothing it started is left.
 *
 * start.ts builds the app first when the build is missing or older than the
 * sources (as the e2e suite's run of it does).
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readlink, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { freePort, isRunning, waitFor } from "../helpers/net";

type Proc = { pid: number; ppid: number; args: string };

function processTable(): Proc[] {
  return execFileSync("ps", ["-e", "-o", "pid=,ppid=,args="], { encoding: "utf8" })
    .split("\n")
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3]! }));
}

/** `root` and every process below it, whatever their process groups. */
function tree(root: number): Proc[] {
  const all = processTable();
  const found = all.filter((p) => p.pid === root);
  for (let i = 0; i < found.length; i++) found.push(...all.filter((p) => p.ppid === found[i]!.pid));
  return found;
}

/** Nothing listens on `port` (on any address): it can be bound again. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, () => srv.close(() => resolve(true)));
  });
}

const dirs: string[] = [];
const started: ChildProcess[] = [];
after(async () => {
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {
        /* gone */
      }
      await Promise.race([once(child, "exit"), sleep(60_000)]);
    }
  }
  for (const dir of dirs) {
    // As root, the cluster lives where the postgres user can reach it, and .data/pg links to it.
    const target = await readlink(path.join(dir, "pg")).catch(() => null);
    if (target) await rm(path.resolve(dir, target), { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  }
});

test(
  "a SIGKILL of npm start's process group leaves nothing running; the same data starts again; a killed supervisor leaves nothing either",
  { timeout: 20 * 60_000 },
  async () => {
    const port = await freePort();
    const pgPort = await freePort();
    const dataDir = await mkdtemp(path.join(tmpdir(), "conveyor-orphans-test-"));
    dirs.push(dataDir);
    const childEnv: NodeJS.ProcessEnv = { ...process.env };
    for (const key of ["NODE_ENV", "TEST_SERVER_URL", "TEST_TEMPLATE_DB", "TEST_ONLY", "NODE_TEST_CONTEXT"]) {
      delete childEnv[key];
    }
    // The embedded Postgres: it is part of what must not be left behind.
    delete childEnv.DATABASE_URL;
    delete childEnv.DIRECT_DATABASE_URL;
    Object.assign(childEnv, {
      PORT: String(port),
      EMBEDDED_PG_PORT: String(pgPort),
      CONVEYOR_DATA_DIR: dataDir,
      AUTH_SECRET: "orphans-test-secret-not-for-production",
      NEXT_TELEMETRY_DISABLED: "1",
      WORKER_CONCURRENCY: "2",
      WEBHOOK_CONCURRENCY: "2",
      WORKER_SHUTDOWN_GRACE_MS: "2000",
    });

    const npmStart = () => {
      // In a process group of its own, as a terminal, a CI runner or a process manager runs it.
      const child = spawn("npm", ["start"], { env: childEnv, stdio: ["ignore", "pipe", "pipe"], detached: true });
      started.push(child);
      let output = "";
      child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
      child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
      return { child, output: () => output, tail: () => `\n--- output ---\n${output.slice(-6000)}` };
    };
    const up = async (run: ReturnType<typeof npmStart>) => {
      await waitFor(
        "npm start to answer /api/health",
        async () => {
          if (run.child.exitCode !== null) throw new Error(`npm start exited (${run.child.exitCode})${run.tail()}`);
          return fetch(`http://127.0.0.1:${port}/api/health`).then(
            (r) => r.ok,
            () => false,
          );
        },
        15 * 60_000,
      );
      // Its three workers have started too.
      await waitFor("three workers", async () => run.output().match(/\[worker\] \S+ started/g)?.length === 3, 120_000);
      const procs = tree(run.child.pid!);
      const names = (re: RegExp) => procs.filter((p) => re.test(p.args));
      assert.equal(names(/scripts\/supervisor\.ts/).length, 1, "one supervisor");
      // One web server: its primary process, and the server processes it forks on the one port
      // (node:cluster, WEB_PROCESSES: one per core by default), each a child of the primary.
      const serve = names(/scripts\/serve\.ts/);
      const primaries = serve.filter((p) => !serve.some((q) => q.pid === p.ppid));
      assert.equal(primaries.length, 1, `one web server: ${JSON.stringify(serve)}`);
      const forks = serve.filter((p) => p.ppid === primaries[0]!.pid).length;
      const cores = availableParallelism();
      assert.equal(forks, cores > 1 ? cores : 0, "its server processes: one per core");
      assert.equal(names(/dist\/worker\.js/).length, 3, "three workers");
      assert.ok(names(/postgres/).length >= 1, "the embedded Postgres");
      return procs;
    };
    const allGone = async (what: string, procs: Proc[], explain: () => string) => {
      await waitFor(
        what,
        async () => procs.every((p) => !isRunning(p.pid)) && (await portIsFree(port)) && (await portIsFree(pgPort)),
        10_000,
        () => `\nstill running: ${JSON.stringify(procs.filter((p) => isRunning(p.pid)))}${explain()}`,
        200,
      );
    };

    // 1. npm start's own process group SIGKILLed: npm, its shell, tsx, start.ts.
    const first = npmStart();
    const firstProcs = await up(first);
    process.kill(-first.child.pid!, "SIGKILL");
    await allGone("every process of the first start to end and the ports to be free", firstProcs, first.tail);

    // 2. The same data again: a clean start (the previous Postgres stopped cleanly, no stale lock).
    const second = npmStart();
    const secondProcs = await up(second);
    assert.doesNotMatch(second.output(), /another Postgres|already answers/, second.tail());

    // 3. Its supervisor alone SIGKILLed: npm start says so and ends; nothing it started is left.
    const supervisor = secondProcs.find((p) => /scripts\/supervisor\.ts/.test(p.args))!;
    process.kill(supervisor.pid, "SIGKILL");
    await allGone("every process of the second start to end and the ports to be free", secondProcs, second.tail);
    assert.match(second.output(), /\[start\] the supervisor was killed \(SIGKILL\).*npm start ends/, second.tail());
    assert.match(second.output(), /\[guard\] stopping the embedded Postgres/, second.tail());
  },
);
