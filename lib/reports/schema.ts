/** A job-outcome report's request, and what it finds. */
import { z } from "zod";
import { isoInstant } from "../validation";
import { reportSettings } from "./settings";

const DAY_MS = 86_400_000;

export const reportFormats = ["json", "csv"] as const;

/** POST /api/v1/reports: the tenant's jobs created in [from, to), counted by type and status. */
export const reportRequestSchema = z
  .object({
    from: isoInstant,
    to: isoInstant,
    format: z.enum(reportFormats, { error: `must be one of ${reportFormats.join(", ")}` }).default("json"),
  })
  .strict()
  .superRefine((v, ctx) => {
    const span = new Date(v.to).getTime() - new Date(v.from).getTime();
    if (span <= 0) ctx.addIssue({ code: "custom", path: ["to"], message: "must be after from" });
    const maxDays = reportSettings().REPORT_MAX_WINDOW_DAYS;
    if (span > maxDays * DAY_MS) {
      ctx.addIssue({ code: "custom", path: ["to"], message: `must be at most ${maxDays} days after from` });
    }
  });

export type ReportRequest = z.infer<typeof reportRequestSchema>;

/** One line of a report: how many jobs of a type ended (or stand) in a status. */
export type ReportRow = { type: string; status: string; count: number };

/** A report job's result. */
export type ReportResult = {
  from: string;
  to: string;
  total: number;
  rows: ReportRow[];
  file: { name: string; key: string; size: number; sha256: string; rows: number; contentType: string };
};
