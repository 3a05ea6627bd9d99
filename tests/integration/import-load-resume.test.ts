/**
 * An import's chunk load in committed pieces (lib/imports/load-chunk.ts),
 * driven attempt by attempt in this process: the first attempt commits pieces,
 * one more after its last checkpoint, and dies; the next continues from the
 * checkpoint's byte offset, and every line is in the staging table exactly once.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { inTransaction, pool } from "@/lib/db";
import { resetEnvCache } from "@/lib/env";
import { importDatasets } from "@/lib/imports/columns";
import { importLoadChunkTask, LOAD_CHECKPOINT_VERSION } from "@/lib/imports/load-chunk";
import { stagingTableOf } from "@/lib/imports/stage-input";
import type { JobContext } from "@/lib/jobs/task";
import { storage } from "@/lib/storage";
import { useTestDatabase } from "../helpers/db";

const PIECE = 100;
process.env.IMPORT_LOAD_PIECE_ROWS = String(PIECE);
resetEnvCache();

const fx = useTestDatabase();
type Input = Parameters<typeof importLoadChunkTask.handler>[0]["input"];

/** A staging table and a clean file of `lines` lines (from line 2, as after a header), as one chunk. */
async function chunkOf(lines: number): Promise<Input> {
  const importId = randomUUID();
  const spec = importDatasets.events;
  const table = stagingTableOf(importId);
  await pool().query("CREATE SCHEMA IF NOT EXISTS import_staging");
  await pool().query(
    `CREATE UNLOGGED TABLE ${table} (line bigint NOT NULL, ${spec.columns.map((c) => `"${c.name}" ${c.pg}`).join(", ")})`,
  );
  const row = (line: number) => `${line}${spec.columns.map(() => "\t\\N").join("")}\n`;
  const text = Array.from({ length: lines }, (_, i) => row(i + 2)).join("");
  const key = `${fx.p.acmeId}/imports/${importId}/clean.tsv`;
  await storage().write(key, Readable.from([Buffer.from(text)]), []);
  const end = Buffer.byteLength(text) - 1;
  return {
    importId,
    dataset: "events",
    chunk: { n: 1, key, start: 0, end, rows: lines, fromLine: 2, toLine: lines + 1 },
    chunks: 1,
  };
}

function attempt(input: Input, lastCheckpoint: unknown, dieAtCheckpoint?: number) {
  const saved: unknown[] = [];
  let calls = 0;
  const ctx = {
    job: {
      id: randomUUID(),
      tenantId: fx.p.acmeId,
      type: "import_load_chunk",
      attempt: 1,
      resume: 0,
      maxAttempts: 5,
      createdById: null,
    },
    input,
    signal: new AbortController().signal,
    progress() {},
    lastCheckpoint,
    // The piece is committed before its checkpoint: dying here leaves it in the table, unrecorded.
    async checkpoint(value: unknown) {
      if (++calls === dieAtCheckpoint) throw new Error("killed before its checkpoint");
      saved.push(value);
    },
    fenced: <T>(fn: (tx: import("@/lib/db").SqlClient) => Promise<T>) => inTransaction(fn),
  } as unknown as JobContext<Input>;
  return { ctx, saved };
}

async function staged(input: Input) {
  const { rows } = await pool().query<{ n: number; lines: number }>(
    `SELECT count(*)::int AS n, count(DISTINCT line)::int AS lines FROM ${stagingTableOf(input.importId)}`,
  );
  return rows[0]!;
}

describe("an import's chunk load resumes after its last piece", () => {
  test("killed with a piece committed past its checkpoint: the next attempt starts at the checkpoint, and every line is loaded once", async () => {
    const input = await chunkOf(1_050);
    const first = attempt(input, null, 4);
    await assert.rejects(importLoadChunkTask.handler(first.ctx), /killed/);
    assert.equal((await staged(input)).n, 4 * PIECE, "four pieces committed, three checkpointed");
    const cp = first.saved.at(-1) as { rows: number; offset: number; version: number };
    assert.deepEqual([cp.rows, cp.version], [3 * PIECE, LOAD_CHECKPOINT_VERSION]);

    const second = attempt(input, cp);
    const done = await importLoadChunkTask.handler(second.ctx);
    assert.deepEqual(done, { n: 1, rows: 1_050, resumedFrom: 3 * PIECE });
    assert.deepEqual(await staged(input), { n: 1_050, lines: 1_050 }, "every line once");
    assert.equal(second.saved.length, 8, "pieces 4 to 11 (the last one short)");
  });

  test("a checkpoint of another version loads the chunk from its start, still once", async () => {
    const input = await chunkOf(350);
    const first = attempt(input, null, 2);
    await assert.rejects(importLoadChunkTask.handler(first.ctx), /killed/);
    const cp = first.saved[0] as Record<string, unknown>;
    const second = attempt(input, { ...cp, version: LOAD_CHECKPOINT_VERSION + 1 });
    const done = await importLoadChunkTask.handler(second.ctx);
    assert.deepEqual(done, { n: 1, rows: 350, resumedFrom: 0 });
    assert.deepEqual(await staged(input), { n: 350, lines: 350 });
  });
});
