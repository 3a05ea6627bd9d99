/**
 * The `job_report` task: counts a tenant's jobs created in a window by type and status,
 * and stores the counts as one small JSON or CSV file (lib/storage), downloadable like an
 * export's (lib/files) once the job succeeded.
 */
import { Readable } from "node:stream";
import { pool } from "../db";
import { attemptRun, recordFile } from "../files/record";
import { defineTask } from "../jobs/task";
import { storage } from "../storage";
import { reportRequestSchema, type ReportResult, type ReportRow } from "./schema";

function render(format: "json" | "csv", from: string, to: string, rows: ReportRow[]): string {
  if (format === "json") return `${JSON.stringify({ from, to, rows }, null, 2)}\n`;
  return ["type,status,count", ...rows.map((r) => `${r.type},${r.status},${r.count}`)].join("\n") + "\n";
}

export const reportTask = defineTask({
  type: "job_report",
  queue: "bulk",
  inputSchema: reportRequestSchema,
  retry: { maxAttempts: 3, initialBackoffMs: 1_000, maxBackoffMs: 30_000, multiplier: 4, jitter: "full" },
  timeoutMs: 5 * 60_000,
  leaseMs: 30_000,
  fileUrl: (jobId) => `/api/v1/reports/${jobId}/download`,
  async handler(ctx): Promise<ReportResult> {
    const { job, input } = ctx;
    ctx.progress({ stage: "counting" });
    // Along jobs_tenant_id_created_at_id_idx: the tenant's jobs of the window (this report's own included).
    const { rows } = await pool().query<ReportRow>(
      `SELECT type, status::text AS status, count(*)::int AS count FROM jobs
        WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3
        GROUP BY 1, 2 ORDER BY 1, 2`,
      [job.tenantId, input.from, input.to],
    );
    const name = `report-${job.id}.${input.format}`;
    const key = `${job.tenantId}/${job.id}/${attemptRun(job)}/${name}`;
    const body = render(input.format, input.from, input.to, rows);
    const stored = await storage().write(key, Readable.from([Buffer.from(body)]), [], ctx.signal);
    const total = rows.reduce((n, r) => n + r.count, 0);
    ctx.progress({ done: rows.length, total: rows.length, unit: "rows", stage: "done", detail: { jobs: total } });
    return {
      from: input.from,
      to: input.to,
      total,
      rows,
      file: {
        name,
        key,
        ...stored,
        rows: rows.length,
        contentType: input.format === "json" ? "application/json" : "text/csv; charset=utf-8",
      },
    };
  },
  // The file becomes downloadable in the same transaction that marks the job succeeded.
  async commit(tx, job, result) {
    await recordFile(tx, job, result.file);
  },
});
