import { z } from "zod";
import { isoInstant } from "../validation";

import { datasetNames } from "../tenants/datasets";

export { datasetNames, type DatasetName } from "../tenants/datasets";

const exportFields = {
  dataset: z.enum(datasetNames, { error: `must be one of ${datasetNames.join(", ")}` }),
  format: z.enum(["csv", "jsonl"], { error: "must be csv or jsonl" }).default("csv"),
  compression: z.enum(["gzip", "none"], { error: "must be gzip or none" }).default("none"),
  /**
   * CSV only: prefix free-text cells that a spreadsheet would run as a formula
   * (starting with = + - @, a tab or a carriage return) with an apostrophe.
   * The export form turns it on; the API leaves it off unless asked.
   */
  csvSafe: z.boolean({ error: "must be true or false" }).optional(),
  filter: z.object({ from: isoInstant.optional(), to: isoInstant.optional() }).strict().optional(),
  /** Rows per part when the export is split (default EXPORT_PART_ROWS); a smaller export stays one file. */
  partRows: z
    .number({ error: "must be a whole number" })
    .int("must be a whole number")
    .min(1_000, "must be at least 1,000")
    .max(100_000_000, "must be at most 100,000,000")
    .optional(),
};

function fromBeforeTo(v: { filter?: { from?: string; to?: string } }, ctx: z.RefinementCtx): void {
  const from = v.filter?.from;
  const to = v.filter?.to;
  if (from && to && new Date(from) >= new Date(to)) {
    ctx.addIssue({ code: "custom", path: ["filter", "to"], message: "must be after filter.from" });
  }
}

/** The body of POST /api/v1/exports (less `runAt`), and an export job's input. */
export const exportRequestSchema = z.object(exportFields).strict().superRefine(fromBeforeTo);

export type ExportRequest = z.infer<typeof exportRequestSchema>;

/**
 * The input a schedule keeps for its export runs: an export request whose
 * filter may say `since: "lastRun"` — each run then exports the rows from the
 * previous run's occurrence (inclusive) to its own (exclusive), so a nightly
 * schedule yields every row once.
 */
export const scheduledExportSchema = z
  .object({
    ...exportFields,
    filter: z
      .object({
        from: isoInstant.optional(),
        to: isoInstant.optional(),
        since: z.literal("lastRun", { error: 'must be "lastRun"' }).optional(),
      })
      .strict()
      .superRefine((f, ctx) => {
        if (f.since && (f.from || f.to)) {
          ctx.addIssue({
            code: "custom",
            path: ["since"],
            message: "takes the place of from and to: give one or the other",
          });
        }
      })
      .optional(),
  })
  .strict()
  .superRefine(fromBeforeTo);

export type ScheduledExport = z.infer<typeof scheduledExportSchema>;

/** A scheduled export's input for one run: `since: "lastRun"` becomes that run's window. */
export function exportRunInput(input: ScheduledExport, run: { scheduledFor: Date; previousScheduledFor: Date | null }) {
  if (input.filter?.since !== "lastRun") return input;
  return {
    ...input,
    filter: {
      ...(run.previousScheduledFor ? { from: run.previousScheduledFor.toISOString() } : {}),
      to: run.scheduledFor.toISOString(),
    },
  };
}
