"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { fetchJob, jobKeys, type JobDto } from "@/lib/client/api";
import { cancelText, formatBytes, formatCount, formatTime, isHeld, progressText } from "@/lib/client/format";
import { useJobEvents } from "@/lib/client/live";
import { isTerminal } from "@/lib/jobs/dto";
import { JobActions } from "./job-actions";
import { JobAttempts } from "./job-attempts";
import { JobOpsPanel } from "./job-ops-panel";
import { JobParts } from "./job-parts";
import { ExportLinks } from "./export-links";
import { JobProgress } from "./job-progress";
import { Alert } from "./ui/alert";
import { StatusBadge } from "./ui/status-badge";

function Row({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div className="grid grid-cols-3 gap-4 py-2">
      <dt className="text-sm text-slate-500">{label}</dt>
      <dd className="col-span-2 text-sm">{children}</dd>
    </div>
  );
}

export function JobDetail({ initial, canOperate }: { initial: JobDto; canOperate: boolean }) {
  const { data: job } = useQuery({
    queryKey: jobKeys.detail(initial.id),
    queryFn: () => fetchJob(initial.id),
    initialData: initial,
    // A pause or resume changes no job row: while it waits, look again now and then.
    refetchInterval: (q) => (q.state.data && isHeld(q.state.data) ? 5_000 : false),
  });
  useJobEvents(initial.id, !isTerminal(initial.status));

  return (
    <div className="space-y-6">
      <div className="flex items-center gap-3">
        <h1 className="text-2xl font-semibold">Job {job.type}</h1>
        <StatusBadge status={job.status} />
        <div className="ml-auto">
          <JobActions job={job} canOperate={canOperate} />
        </div>
      </div>
      <section aria-label="Progress" className="rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
        <JobProgress job={job} label="Job progress" />
        {progressText(job) && <p className="mt-2 text-sm text-slate-600">{progressText(job)}</p>}
        {cancelText(job) && <p className="mt-2 text-sm text-slate-700">{cancelText(job)}</p>}
      </section>
      {job.status === "cancelled" ? (
        <Alert tone="neutral" title="Cancelled" testId="job-outcome">
          {job.cancelRequested?.by ? `By ${job.cancelRequested.by}. ` : ""}
          {job.cancelRequested?.reason ?? job.error?.message ?? ""}
        </Alert>
      ) : job.error ? (
        <Alert
          tone={job.status === "failed" ? "error" : "warning"}
          title={`${job.status === "failed" ? "Failed" : "The last attempt failed"}${job.error.class ? ` (${job.error.class})` : ""}`}
          testId="job-outcome"
        >
          <pre className="mt-1 text-sm whitespace-pre-wrap">{job.error.message}</pre>
        </Alert>
      ) : null}
      {job.result && job.result.files.length > 0 && (
        <section aria-label="Files" className="rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
          <h2 className="mb-3 font-semibold">Files</h2>
          <ul className="space-y-3">
            {job.result.files.map((f) => (
              <li key={f.id} className="flex flex-wrap items-center gap-4 text-sm">
                <span className="font-mono">{f.name}</span>
                {f.partial && (
                  <span className="rounded bg-amber-100 px-2 py-0.5 text-xs text-amber-800">
                    partial: only the finished parts
                  </span>
                )}
                <span>{formatBytes(f.size)}</span>
                <span>{formatCount(f.rows)} rows</span>
                <span className="font-mono text-xs text-slate-500" title="SHA-256">
                  sha256 {f.sha256.slice(0, 16)}…
                </span>
                <span className="text-slate-500">
                  {f.expired ? "expired" : `expires ${formatTime(f.expiresAt)}`} · downloaded {f.downloadCount}×
                </span>
                {!f.expired && (
                  <a
                    href={f.downloadUrl}
                    download
                    className="rounded bg-emerald-700 px-3 py-1 text-xs font-medium text-white hover:bg-emerald-800"
                  >
                    Download
                  </a>
                )}
              </li>
            ))}
          </ul>
          {job.type === "export" && job.result.files.some((f) => !f.expired) && <ExportLinks jobId={job.id} />}
        </section>
      )}
      {job.type === "export" && <JobParts jobId={job.id} status={job.status} />}
      <JobAttempts jobId={job.id} seq={job.seq} />
      {canOperate && <JobOpsPanel jobId={job.id} status={job.status} attempts={job.attempts} />}
      <section aria-label="Details" className="rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
        <dl className="divide-y divide-slate-100">
          <Row label="Job id">
            <span className="font-mono">{job.id}</span>
          </Row>
          <Row label="Queue">{job.queue}</Row>
          <Row label="Attempts">
            {job.attempts} of {job.maxAttempts}
          </Row>
          {job.scheduleId && (
            <Row label="Schedule">
              <Link href={`/schedules/${job.scheduleId}`} className="text-indigo-700 underline">
                The run for {formatTime(job.scheduledFor)}
              </Link>
            </Row>
          )}
          <Row label="Requested">{formatTime(job.createdAt)}</Row>
          {job.status === "scheduled" && <Row label="Starts at">{formatTime(job.runAt)}</Row>}
          <Row label="Started">{formatTime(job.startedAt)}</Row>
          <Row label="Finished">{formatTime(job.finishedAt)}</Row>
          <Row label="Input">
            <pre className="text-xs whitespace-pre-wrap">{JSON.stringify(job.input, null, 2)}</pre>
          </Row>
        </dl>
      </section>
    </div>
  );
}
