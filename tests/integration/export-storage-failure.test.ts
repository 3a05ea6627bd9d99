/**
 * A failing storage write ends the export's attempt at once, with its cause
 * recorded, and releases the COPY and its connection — under each driver. It
 * used to leave pg's "Connection terminated" to the COPY stream after the write
 * had failed, with no listener: an uncaught exception that killed the worker
 * (and, in `npm start`, the attempt then waited out its lease). Here the worker
 * is this process (graphile's runOnce): an uncaught exception fails the file.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { db, pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { requestExport } from "@/lib/exports/service";
import { resetStorage } from "@/lib/storage";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";

const fx = useTestDatabase({ seed: 0.05 });
const VARS = [
  "EXPORT_STORAGE_DIR",
  "STORAGE_DRIVER",
  "S3_BUCKET",
  "S3_ENDPOINT",
  "S3_ACCESS_KEY_ID",
  "S3_SECRET_ACCESS_KEY",
];
const temps: string[] = [];
const servers: Server[] = [];

function configure(vars: Record<string, string>): void {
  for (const v of VARS) delete process.env[v];
  Object.assign(process.env, vars);
  resetEnvCache();
  resetStorage();
}

after(async () => {
  configure({});
  for (const s of servers) s.close();
  for (const t of temps) await rm(t, { recursive: true, force: true });
});

/**
 * Every attempt ended `failed` with the storage error as its cause. Usually there is one; under load
 * the retry's short backoff can pass while the drain still runs, and a second attempt fails the same way.
 */
function assertEachAttemptFailed(
  history: { outcome: string; errorMessage: string | null }[],
  cause: RegExp,
  message: string,
): void {
  assert.ok(history.length >= 1, "an attempt ran");
  assert.deepEqual(
    history.map((a) => [a.outcome, cause.test(a.errorMessage ?? "")]),
    history.map(() => ["failed", true]),
    message,
  );
}

/** Runs one events export (large enough that its COPY is still streaming when the write fails) to its first attempt's end. */
async function exportOnce() {
  const { job } = await requestExport(fx.p.ada, { dataset: "events", format: "jsonl", compression: "none" });
  await drainJobs();
  const after = await db().job.findUniqueOrThrow({ where: { id: job.id }, include: { attemptsHistory: true } });
  // Nothing of the attempt is left on the server: no COPY still running, no session still in its transaction.
  const { rows } = await pool().query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid()
       AND (query ILIKE 'COPY%' AND state <> 'idle' OR state LIKE 'idle in transaction%')`,
  );
  return { job: after, leftOnServer: rows[0]!.n };
}

describe("a failing storage write ends the export's attempt at once", () => {
  test("local disk: the export directory is a file (ENOTDIR)", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "conveyor-enotdir-"));
    temps.push(dir);
    const file = path.join(dir, "exports");
    await writeFile(file, "not a directory\n");
    configure({ EXPORT_STORAGE_DIR: file });

    const { job, leftOnServer } = await exportOnce();
    assert.equal(job.status, "retrying", "a disk error may pass: the export is retried");
    assert.equal(job.errorClass, "retryable");
    assert.match(job.errorMessage ?? "", /ENOTDIR/);
    assertEachAttemptFailed(job.attemptsHistory, /ENOTDIR/, "the attempt ended failed, its cause recorded");
    assert.equal(leftOnServer, 0, "the COPY and its connection were released");
  });

  test("S3: the server answers 503 to every request", async () => {
    let requests = 0;
    const server = createServer((req, res) => {
      requests++;
      req.resume();
      res.writeHead(503, { "content-type": "application/xml" });
      res.end(
        `<?xml version="1.0" encoding="UTF-8"?><Error><Code>ServiceUnavailable</Code><Message>injected failure</Message></Error>`,
      );
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    configure({
      STORAGE_DRIVER: "s3",
      S3_BUCKET: "conveyor-test",
      S3_ENDPOINT: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      S3_ACCESS_KEY_ID: "test",
      S3_SECRET_ACCESS_KEY: "test",
    });

    const { job, leftOnServer } = await exportOnce();
    assert.ok(requests > 0, "the upload reached the failing server");
    assert.equal(job.status, "retrying");
    assert.equal(job.errorClass, "retryable");
    assertEachAttemptFailed(
      job.attemptsHistory,
      /injected failure|ServiceUnavailable|503/,
      `the attempt ended failed, its cause recorded (${job.errorMessage})`,
    );
    assert.equal(leftOnServer, 0, "the COPY and its connection were released");
  });
});
