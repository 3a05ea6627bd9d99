/**
 * The chunk and load stages: the clean file cut into byte ranges, then an
 * unlogged staging table filled by one `import_load_chunk` job per chunk
 * (./load-chunk.ts).
 */
import { pool } from "../db";
import { importSettings } from "./settings";
import { PermanentError } from "../jobs/errors";
import { defineTask, type JobContext } from "../jobs/task";
import { storage } from "../storage";
import { importDatasets } from "./columns";
import { importLoadChunkTask } from "./load-chunk";
import {
  type Chunk,
  type ChunkOutput,
  IMPORT_RETRY,
  type LoadOutput,
  type ParseOutput,
  type StageInput,
  follow,
  stageInputSchema,
  stagingTableOf,
} from "./stage-input";

// ── chunk ───────────────────────────────────────────────────────────────────

export const importChunkTask = defineTask({
  type: "import_chunk",
  queue: "bulk",
  inputSchema: stageInputSchema,
  retry: IMPORT_RETRY,
  timeoutMs: 60 * 60_000,
  leaseMs: 15_000,
  async handler(ctx): Promise<ChunkOutput> {
    const { input } = ctx;
    await follow(input);
    const parse = input.outputs.parse as ParseOutput;
    const perChunk = importSettings().IMPORT_CHUNK_ROWS;
    const opened = await storage().open(parse.cleanKey);
    if (!opened) throw new PermanentError("The parsed file is gone; replay the import");
    // A chunk is a byte range of the clean file (its rows end at a newline): nothing is copied,
    // each load job reads its range. Lines start with their line number.
    const chunks: Chunk[] = [];
    let offset = 0; // of `b` in the file
    let rows = 0; // in the chunk being measured
    let start = 0; // its first byte
    let fromLine = 0;
    let lastLine = 0;
    let carry: Buffer = Buffer.alloc(0);
    const lineNumberAt = (b: Buffer, at: number) => Number(b.subarray(at, b.indexOf(0x09, at)).toString("latin1"));
    const close = (end: number) => {
      chunks.push({ n: chunks.length + 1, key: parse.cleanKey, start, end, rows, fromLine, toLine: lastLine });
      rows = 0;
      start = end + 1;
    };
    try {
      for await (const piece of opened.stream as AsyncIterable<Buffer>) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        const b = carry.length ? Buffer.concat([carry, piece]) : piece;
        let lineStart = 0;
        for (let nl = b.indexOf(0x0a); nl >= 0; nl = b.indexOf(0x0a, nl + 1)) {
          lastLine = lineNumberAt(b, lineStart);
          if (rows === 0) fromLine = lastLine;
          rows++;
          if (rows === perChunk) close(offset + nl);
          lineStart = nl + 1;
        }
        carry = Buffer.from(b.subarray(lineStart));
        offset += lineStart;
        ctx.progress({
          done: chunks.length * perChunk + rows,
          total: parse.good,
          unit: "rows",
          stage: "chunk",
          detail: { chunks: chunks.length },
        });
      }
    } catch (err) {
      opened.stream.destroy();
      throw err;
    }
    if (rows > 0) close(offset - 1);
    const total = chunks.reduce((n, c) => n + c.rows, 0);
    if (total !== parse.good)
      throw new PermanentError(`The parsed file holds ${total} rows, not ${parse.good}; replay the import`);
    ctx.progress({ done: total, total, unit: "rows", stage: "chunk", detail: { chunks: chunks.length } });
    return { chunks, rows: total };
  },
});

// ── load ────────────────────────────────────────────────────────────────────

export const importLoadTask = defineTask({
  type: "import_load",
  queue: "bulk",
  inputSchema: stageInputSchema,
  retry: IMPORT_RETRY,
  timeoutMs: 4 * 60 * 60_000,
  leaseMs: 15_000,
  async handler(ctx: JobContext<StageInput>): Promise<LoadOutput> {
    const { input, job } = ctx;
    const chunked = input.outputs.chunk as ChunkOutput;
    const table = stagingTableOf(input.importId);
    if (job.resume === 0) {
      await follow(input);
      const spec = importDatasets[input.request.dataset];
      await pool().query(
        `CREATE UNLOGGED TABLE IF NOT EXISTS ${table} (line bigint NOT NULL, ${spec.columns.map((c) => `"${c.name}" ${c.pg}`).join(", ")})`,
      );
      // Recorded (again, for a replay that loads anew), so the cleanup drops it when the import ends.
      await pool().query("UPDATE imports SET staging_table = $2 WHERE id = $1", [input.importId, table]);
      if (chunked.chunks.length === 0) return { stagingTable: table, rows: 0, chunks: 0 };
      ctx.progress({
        done: 0,
        total: chunked.rows,
        unit: "rows",
        stage: "load",
        detail: { chunks: chunked.chunks.length },
      });
      return ctx.waitForChildren(
        chunked.chunks.map((chunk) => ({
          type: importLoadChunkTask.type,
          input: { importId: input.importId, dataset: input.request.dataset, chunk, chunks: chunked.chunks.length },
        })),
        { chunks: chunked.chunks.length },
      );
    }
    const { rows } = await pool().query<{ status: string; n: number; error: string | null; rows: number | null }>(
      `SELECT status::text AS status, (input->'chunk'->>'n')::int AS n, error_message AS error, (result->>'rows')::int AS rows
       FROM jobs WHERE parent_id = $1 ORDER BY child_index`,
      [job.id],
    );
    const failed = rows.find((r) => r.status !== "succeeded");
    if (failed)
      throw new PermanentError(`Chunk ${failed.n} ${failed.status}${failed.error ? `: ${failed.error}` : ""}`);
    const loaded = rows.reduce((s, r) => s + (r.rows ?? 0), 0);
    ctx.progress({
      done: loaded,
      total: loaded,
      unit: "rows",
      stage: "load",
      detail: { loaded: rows.length },
    });
    return { stagingTable: table, rows: loaded, chunks: rows.length };
  },
});
