/** The reports workload's job kind: a tenant's job outcomes over a window, as one JSON or CSV file. */
import type { JobKind } from "./types";

type ReportInput = { from?: string; to?: string; format?: string };

export const reportKind: JobKind = {
  name: "reports",
  types: {
    job_report: {
      title: (job) => `Jobs report · ${((job.input ?? {}) as ReportInput).format ?? "json"}`,
      fileHref: (job) => `/api/v1/reports/${job.id}/download`,
      summary: (job) => {
        const i = (job.input ?? {}) as ReportInput;
        return i.from && i.to ? `${i.from.slice(0, 10)} – ${i.to.slice(0, 10)}` : null;
      },
      progress: (p) =>
        p.stage === "counting"
          ? "Counting jobs"
          : typeof p.detail?.jobs === "number"
            ? `${p.detail.jobs.toLocaleString("en")} jobs counted`
            : null,
    },
  },
};
