/**
 * kill -9 of a worker process mid-parse: the import's parse stage continues
 * from its last checkpoint (a byte offset of the upload at a record boundary),
 * parses again at most one piece, and the import ends as an uninterrupted run
 * of the same file does: the same counts, the same bad rows with the same line
 * numbers (errors.csv byte for byte), the same clean file, the same rows loaded.
 * The file has quoted fields with newlines in them, so records and lines differ.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { db, pool } from "@/lib/db";
import { exportStorageDir, resetEnvCache } from "@/lib/env";
import { createApiTokenForEmail } from "@/lib/auth/tokens";
import type { ParseCheckpoint } from "@/lib/imports/parse";
import { requestImport } from "@/lib/imports/service";
import type { ParseOutput } from "@/lib/imports/stage-input";
import type { ImportResult } from "@/lib/imports/task";
import { recordWorkerExit } from "@/lib/jobs/workers";
import { resetStorage, storage } from "@/lib/storage";
import { resetUploadServer } from "@/lib/uploads/tus";
import { upload } from "../chaos/imports-harness";
import { useTestDatabase } from "../helpers/db";
import { drainJobs } from "../helpers/fixtures";
import { workerArgs } from "../helpers/worker";

const PIECE = 1_000;
const ROWS = 120_000;
// This process (uploads, the uninterrupted run) and the workers share one data directory and piece size.
const dataDir = mkdtempSync(path.join(tmpdir(), "conveyor-parse-kill-"));
process.env.CONVEYOR_DATA_DIR = dataDir;
process.env.IMPORT_PARSE_PIECE_ROWS = String(PIECE);
// The stage files stay until the test has compared them.
process.env.IMPORT_CLEANUP_MS = "3600000";
resetEnvCache();
resetStorage();
resetUploadServer();
after(() => rmSync(dataDir, { recursive: true, force: true }));

const fx = useTestDatabase({ seed: 0.001 });

/**
 * Events tagged `pk row <i>`: every 7th message is quoted and holds a newline (one record, two
 * lines), every 97th row has a time that is not one, every 211th an extra field.
 */
function file(): Buffer {
  const lines = ["type,source,message,occurred_at"];
  for (let i = 1; i <= ROWS; i++) {
    const message = i % 7 === 0 ? `"pk row ${i}\nits ""second"" line"` : `pk row ${i}`;
    const extra = i % 211 === 0 ? ",extra" : "";
    lines.push(`parse,test,${message},${i % 97 === 0 ? "soon" : "2026-11-30T12:00:00Z"}${extra}`);
  }
  return Buffer.from(lines.join("\n") + "\n");
}

function startWorker(): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, workerArgs("--queues", "interactive,bulk", "--concurrency", "2"), {
    env: {
      ...process.env,
      DATABASE_URL: fx.database.url,
      ADMISSION_SWEEP_MS: "200",
      REAPER_INTERVAL_MS: "200",
      WORKER_DEAD_AFTER_MS: "1000",
    },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on("data", (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  return Object.assign(child, { output: () => out });
}

type Killed = { parseJobId: string; checkpoint: ParseCheckpoint; written: number };

/**
 * Runs import `id` on a worker, SIGKILLs it once its parse has checkpointed at least `pieces`
 * pieces, and finishes the import on a second worker. Returns the parse's checkpoint at the kill
 * and the last line the killed attempt had written to its clean file past it (read from the
 * staging file it left): pieces appended but not checkpointed show there, and the current piece's
 * rows up to its writer's last 64 KB flush; what it held in memory since does not. A lower bound
 * of what the next attempt parses again, which catches a piece committed without its checkpoint.
 */
async function killMidParse(id: string, pieces: number): Promise<Killed> {
  const first = startWorker();
  let second: ReturnType<typeof startWorker> | null = null;
  try {
    const deadline = Date.now() + 90_000;
    let parseJobId: string | null = null;
    while (Date.now() < deadline && !parseJobId) {
      const { rows } = await pool().query<{ id: string }>(
        `SELECT id FROM jobs WHERE parent_id = $1 AND type = 'import_parse' AND status = 'running'
           AND checkpoint->>'phase' = 'parse' AND (checkpoint->>'pieces')::int >= $2`,
        [id, pieces],
      );
      parseJobId = rows[0]?.id ?? null;
      if (!parseJobId) await sleep(5);
    }
    assert.ok(parseJobId, `the parse checkpointed ${pieces} pieces while running:\n${first.output()}`);
    first.kill("SIGKILL");
    await once(first, "exit");
    await recordWorkerExit(first.pid!, "SIGKILL");
    const { rows } = await pool().query<{ checkpoint: ParseCheckpoint; status: string }>(
      "SELECT checkpoint, status::text AS status FROM jobs WHERE id = $1",
      [parseJobId],
    );
    const checkpoint = rows[0]!.checkpoint;
    assert.notEqual(rows[0]!.status, "succeeded", "killed before its parse ended");
    // What the killed attempt had appended to its clean file after the checkpoint's segments.
    assert.equal(checkpoint.clean.driver, "local");
    const staged = readFileSync(path.join(exportStorageDir(), checkpoint.clean.key)).subarray(checkpoint.clean.size);
    const lines = staged.toString("utf8").split("\n").slice(0, -1);
    const written = lines.length ? Number(lines.at(-1)!.split("\t")[0]) : checkpoint.at.line;

    second = startWorker();
    const until = Date.now() + 120_000;
    for (;;) {
      const j = await db().job.findUniqueOrThrow({ where: { id } });
      if (j.status === "succeeded" || j.status === "failed") break;
      assert.ok(Date.now() < until, `the import finished after the kill:\n${second.output()}`);
      await sleep(50);
    }
    return { parseJobId, checkpoint, written };
  } finally {
    for (const w of [first, second]) {
      if (w && w.exitCode === null && w.signalCode === null) {
        w.kill("SIGTERM");
        await once(w, "exit");
      }
    }
  }
}

async function outcome(importJobId: string) {
  const job = await db().job.findUniqueOrThrow({ where: { id: importJobId } });
  assert.equal(job.status, "succeeded", job.errorMessage ?? "");
  const parseJob = await db().job.findFirstOrThrow({
    where: { parentId: importJobId, type: "import_parse" },
    include: { attemptsHistory: true },
  });
  const parse = parseJob.result as ParseOutput;
  const { rows } = await pool().query<{ rows_read: number; rejected: number; bad_rows: unknown }>(
    "SELECT rows_read, rejected, bad_rows FROM imports WHERE id = $1",
    [importJobId],
  );
  const read = async (key: string) => {
    const opened = await storage().open(key);
    assert.ok(opened, `${key} is stored`);
    const chunks: Buffer[] = [];
    for await (const c of opened.stream) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  };
  const result = job.result as ImportResult;
  return {
    attempts: parseJob.attemptsHistory.length,
    parse,
    result: { ...result, importId: undefined },
    row: rows[0]!,
    errors: await read(parse.errorsKey),
    clean: await read(parse.cleanKey),
  };
}

describe("kill -9 mid-parse", () => {
  test("the parse continues from its last checkpoint, and the import equals an uninterrupted run's", async () => {
    const token = await createApiTokenForEmail("ada@acme.test", "parse-kill");
    const data = file();
    const body = { dataset: "events", maxBadRows: ROWS } as const;
    const { job } = await requestImport(fx.p.ada, { ...body, uploadId: await upload(token, data) });
    const killed = await killMidParse(job.id, 3);
    const k = await outcome(job.id);
    const reparsed = killed.written - killed.checkpoint.at.line;
    console.log(
      `[test] parse killed after ${killed.checkpoint.pieces} pieces (${killed.checkpoint.rowsRead} rows, byte ${killed.checkpoint.at.offset}); ` +
        `it had written up to line ${killed.written}: ${reparsed} records past its checkpoint in its clean file (piece: ${PIECE})`,
    );
    assert.equal(k.attempts, 2, "the killed attempt and the one that continued");
    assert.ok(killed.checkpoint.rowsRead >= 3 * PIECE - 1, "the checkpoint is past its third piece");
    assert.ok(killed.checkpoint.rowsRead < ROWS, "killed mid-file");
    assert.equal(k.parse.resumedFrom, killed.checkpoint.rowsRead, "the next attempt started at the checkpoint, not 0");
    assert.ok(
      reparsed >= 0 && reparsed <= PIECE,
      `${reparsed} records written past the checkpoint: at most one piece (${PIECE})`,
    );

    // The same file, uninterrupted, in this process.
    const { job: again } = await requestImport(fx.p.ada, { ...body, uploadId: await upload(token, data) });
    await drainJobs();
    const u = await outcome(again.id);
    assert.equal(u.attempts, 1);
    assert.equal(u.parse.resumedFrom, 0);
    assert.deepEqual(k.result, u.result, "the same counts");
    assert.deepEqual(
      [k.parse.rowsRead, k.parse.good, k.parse.rejected],
      [u.parse.rowsRead, u.parse.good, u.parse.rejected],
    );
    assert.equal(k.parse.rowsRead, ROWS);
    assert.deepEqual(k.row, u.row, "the same bad rows shown, with their line numbers");
    assert.ok(k.errors.equals(u.errors), "errors.csv: the same bad rows, lines and reasons, byte for byte");
    assert.equal(k.errors.toString().split("\n").length - 2, k.parse.rejected);
    assert.ok(k.clean.equals(u.clean), "the same clean file, line numbers included");

    // Both imports loaded the same rows: each message exactly twice, once per import.
    const { rows } = await pool().query<{ n: number; distinct: number; not_twice: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT message)::int AS distinct,
              (SELECT count(*)::int FROM (SELECT 1 FROM events WHERE message LIKE 'pk row %'
                 GROUP BY message HAVING count(*) <> 2) x) AS not_twice
       FROM events WHERE message LIKE 'pk row %'`,
    );
    assert.deepEqual(rows[0], { n: 2 * k.parse.good, distinct: k.parse.good, not_twice: 0 });
  });
});
