import { z } from "zod";
import { isoInstant } from "../validation";

export const datasetNames = ["customers", "orders", "events"] as const;
export type DatasetName = (typeof datasetNames)[number];

/** The body of POST /api/v1/exports. */
export const exportRequestSchema = z
  .object({
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
  })
  .strict()
  .superRefine((v, ctx) => {
    const from = v.filter?.from;
    const to = v.filter?.to;
    if (from && to && new Date(from) >= new Date(to)) {
      ctx.addIssue({ code: "custom", path: ["filter", "to"], message: "must be after filter.from" });
    }
  });

export type ExportRequest = z.infer<typeof exportRequestSchema>;
