/**
 * The parse stage: every row checked against the dataset; good rows go to a
 * clean file in COPY's text format, bad ones to errors.csv.
 */
import { PassThrough } from "node:stream";
import { inTransaction } from "../db";
import { attemptRun, recordFile } from "../files/record";
import { PermanentError } from "../jobs/errors";
import { defineTask } from "../jobs/task";
import { storage } from "../storage";
import { checkCell, copyText, importDatasets, isBad, type Cell } from "./columns";
import {
  IMPORT_RETRY,
  type ParseOutput,
  SHOWN_BAD_ROWS,
  type ScanOutput,
  filesOf,
  follow,
  stageInputSchema,
  upload,
} from "./stage-input";
import { BatchWriter, csvCell, eachRow, type Row } from "./rows";

export const importParseTask = defineTask({
  type: "import_parse",
  queue: "bulk",
  inputSchema: stageInputSchema,
  retry: IMPORT_RETRY,
  timeoutMs: 4 * 60 * 60_000,
  leaseMs: 15_000,
  async handler(ctx): Promise<ParseOutput> {
    const { input, job } = ctx;
    const req = input.request;
    await follow(input);
    const scan = input.outputs.scan as ScanOutput;
    const spec = importDatasets[req.dataset];
    const base = filesOf(job.tenantId, input.importId);
    const run = attemptRun(job);
    const cleanKey = `${base}/parse/${job.id}/${run}/clean.tsv`;
    const errorsKey = `${base}/parse/${job.id}/${run}/errors.csv`;

    const clean = new BatchWriter(new PassThrough({ highWaterMark: 1 << 20 }));
    const errors = new BatchWriter(new PassThrough());
    const cleanDone = storage().write(cleanKey, clean.stream, [], ctx.signal);
    const errorsDone = storage().write(errorsKey, errors.stream, [], ctx.signal);
    // Whichever fails first stops the rest; the other promise must not go unhandled.
    cleanDone.catch(() => {});
    errorsDone.catch(() => {});
    errors.push("line,column,reason,value\n");

    // Where each file column goes; every dataset column has a place in the clean row.
    const positions = spec.columns.map((c) => scan.columns.indexOf(c.name));
    const shown: { line: number; column: string; reason: string }[] = [];
    let rowsRead = 0;
    let good = 0;
    let rejected = 0;
    const file = await upload(req.uploadId);
    const fail = (line: number, column: string, reason: string, value: unknown) => {
      rejected++;
      if (shown.length < SHOWN_BAD_ROWS) shown.push({ line, column, reason });
      const v = value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value);
      errors.push(`${line},${csvCell(column)},${csvCell(reason)},${csvCell(v.slice(0, 200))}\n`);
    };
    try {
      const onRow = (row: Row) => {
        rowsRead++;
        if (row.problem) {
          fail(row.line, "(row)", row.problem, null);
          return;
        }
        if (row.cells && row.cells.length !== scan.columns.length) {
          fail(row.line, "(row)", `has ${row.cells.length} fields; the header has ${scan.columns.length}`, null);
          return;
        }
        let out = String(row.line);
        if (row.object) {
          const unknown = Object.keys(row.object).find((k) => !spec.columns.some((c) => c.name === k));
          if (unknown) return fail(row.line, unknown, "is not a column of " + req.dataset, null);
        }
        for (let i = 0; i < spec.columns.length; i++) {
          const col = spec.columns[i]!;
          const at = positions[i]!;
          if (!row.object && at < 0) {
            out += "\t\\N";
            continue;
          }
          const cell: Cell = row.object ? row.object[col.name] : row.cells![at];
          const checked = checkCell(col, cell, !row.object);
          if (isBad(checked)) return fail(row.line, col.name, checked.reason, cell);
          out += "\t" + copyText(checked);
        }
        good++;
        clean.push(out + "\n");
      };
      await eachRow(file.stream, req.format, onRow, async () => {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        await clean.drained();
        await errors.drained();
        ctx.progress({
          done: rowsRead,
          total: Math.max(scan.rows, rowsRead),
          unit: "rows",
          stage: "parse",
          detail: { good, bad: rejected },
        });
      });
      clean.flush();
      errors.flush();
      clean.stream.end();
      errors.stream.end();
    } catch (err) {
      clean.stream.destroy(err as Error);
      errors.stream.destroy(err as Error);
      file.stream.destroy();
      throw err;
    }
    const [, stored] = await Promise.all([cleanDone, errorsDone]);
    // The errors file is the import's to download (like an export's file), and the first bad rows are shown inline.
    await inTransaction(async (tx) => {
      await recordFile(
        tx,
        { id: input.importId, tenantId: job.tenantId },
        {
          name: "errors.csv",
          key: errorsKey,
          size: stored.size,
          sha256: stored.sha256,
          rows: rejected,
          contentType: "text/csv",
        },
      );
      await tx.query(
        "UPDATE imports SET rows_read = $2, rejected = $3, bad_rows = $4, files = files || $5::jsonb WHERE id = $1",
        [input.importId, rowsRead, rejected, JSON.stringify(shown), JSON.stringify([cleanKey])],
      );
    });
    ctx.progress({
      done: rowsRead,
      total: rowsRead,
      unit: "rows",
      stage: "parse",
      detail: { good, bad: rejected },
    });
    if (rejected > req.maxBadRows) {
      throw new PermanentError(
        `${rejected} bad row${rejected === 1 ? "" : "s"}, more than maxBadRows (${req.maxBadRows}); the first: line ${shown[0]!.line}, ${shown[0]!.column} ${shown[0]!.reason}. See the errors file`,
      );
    }
    return { cleanKey, rowsRead, good, rejected, errorsKey };
  },
});
