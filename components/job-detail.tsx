"use client";

import { useQuery } from "@tanstack/react-query";
import type { ComponentType } from "react";
import Link from "next/link";
import { fetchJob, jobKeys, type JobDto } from "@/lib/client/api";
import { cancelText, formatBytes, formatCount, isHeld, progressText } from "@/lib/client/format";
import { attemptsText, childNoun, jobTitle, kindOf } from "@/lib/client/kinds/lookup";
import type { JobFileDto, JobRelations } from "@/lib/jobs/dto";
import { useJobEvents } from "@/lib/client/live";
import { isTerminal } from "@/lib/jobs/dto";
import { JobActions } from "./job-actions";
import { JobAttempts } from "./job-attempts";
import { JobOpsPanel } from "./job-ops-panel";
import { JobParts } from "./job-parts";
import { JobWebhookDeliveries } from "./webhook-job-deliveries";
import { ExportLinks } from "./export-links";
import { JobProgress } from "./job-progress";
import { Alert } from "./ui/alert";
import { PriorityBadge } from "./ui/priority-badge";
import { StatusBadge } from "./ui/status-badge";
import { Time } from "./ui/time";
import { FailureText } from "./failure-notice";
import { PauseBadge, PauseNotice } from "./pause-notice";
import { ImportJobResult } from "./import-job-result";

/**
 * What a kind's jobs lead with on their page, by the kind's name (lib/client/kinds): an
 * import's result (its counts, bad rows and errors file) comes before its machinery.
 */
const RESULT_PANELS: Record<string, ComponentType<{ job: JobDto }> | undefined> = {
  imports: ImportJobResult,
};

function Row({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div className="grid gap-1 py-2 sm:grid-cols-3 sm:gap-4">
      <dt className="text-sm text-slate-500">{label}</dt>
      <dd className="min-w-0 text-sm sm:col-span-2">{children}</dd>
    </div>
  );
}

function JobLink({ job, testId }: { job: JobDto; testId?: string }) {
  return (
    <span className="inline-flex flex-wrap items-center gap-2">
      <Link href={`/jobs/${job.id}`} className="text-indigo-700 underline" data-testid={testId}>
        {jobTitle(job)}
      </Link>
      <StatusBadge status={job.status} testId={testId ? `${testId}-status` : "related-status"} />
    </span>
  );
}

const NO_RELATIONS: JobRelations = { parent: null, replayOf: null, replays: [] };

/** What a finished export's file is: complete, partial (N of M parts), or empty (no rows matched). */
function fileLabel(job: JobDto, f: JobFileDto) {
  if (f.partial) {
    const c = job.progress.children;
    return c ? `Download partial (${c.done} of ${c.total} parts)` : "Download partial";
  }
  return "Download";
}

export function JobDetail({
  initial,
  canOperate,
  relations = NO_RELATIONS,
}: {
  initial: JobDto;
  canOperate: boolean;
  relations?: JobRelations;
}) {
  const { data: job } = useQuery({
    queryKey: jobKeys.detail(initial.id),
    queryFn: () => fetchJob(initial.id),
    initialData: initial,
    // A pause or resume changes no job row: while it waits, look again now and then.
    refetchInterval: (q) => (q.state.data && isHeld(q.state.data) ? 5_000 : false),
  });
  useJobEvents(initial.id, !isTerminal(initial.status));
  const kind = kindOf(job.type);
  const entry = kind?.entry;
  const list = kind?.kind.list ?? { href: "/exports", label: "Exports" };
  // The replay that completed it, when it is the direct one (a repair of a repair links from the first).
  const repairedBy = relations.replays.find((r) => r.status === "succeeded") ?? null;
  // Only the kind's top job leads with its result (an import, not its stages).
  const ResultPanel = kind && entry?.children && !job.parentId ? RESULT_PANELS[kind.kind.name] : undefined;
  const noun = childNoun(job.type);

  return (
    <div className="space-y-6">
      <nav aria-label="Breadcrumb" className="text-sm text-slate-600">
        <ol className="flex flex-wrap items-center gap-1">
          <li>
            {canOperate ? (
              <Link href="/ops/jobs" className="underline">
                Jobs
              </Link>
            ) : (
              <Link href={list.href} className="underline">
                {list.label}
              </Link>
            )}
          </li>
          {relations.parent && (
            <li>
              <span aria-hidden="true">› </span>
              <Link href={`/jobs/${relations.parent.id}`} className="underline" data-testid="breadcrumb-parent">
                {jobTitle(relations.parent)}
              </Link>
            </li>
          )}
          <li aria-current="page">
            <span aria-hidden="true">› </span>
            {jobTitle(job)}
          </li>
        </ol>
      </nav>
      <div className="flex flex-wrap items-center gap-3">
        <h1 className="text-2xl font-semibold" data-testid="job-title">
          {jobTitle(job)}
        </h1>
        <StatusBadge status={job.status} />
        <PriorityBadge priority={job.priority} />
        <PauseBadge pause={job.pause} type={job.type} />
        <div className="flex w-full flex-wrap items-center gap-3 sm:ml-auto sm:w-auto">
          {entry?.links?.(job).map((l) => (
            <Link
              key={l.href}
              href={l.href}
              className="rounded border border-slate-300 px-3 py-1.5 text-sm text-slate-800 hover:bg-slate-50"
            >
              {l.label}
            </Link>
          ))}
          <JobActions job={job} canOperate={canOperate} />
        </div>
      </div>
      <p className="-mt-4 text-sm text-slate-600" data-testid="job-requester">
        {job.requestedBy
          ? `Requested by ${job.requestedBy}`
          : job.scheduleId
            ? "Made by its schedule"
            : job.parentId
              ? (entry?.childOf ?? "Part of another job")
              : job.replayOfId
                ? "A replay"
                : "Requested by a deleted user or the system"}{" "}
        · <Time iso={job.createdAt} /> · <span data-testid="job-priority-text">{job.priority} priority</span>
      </p>
      <PauseNotice pause={job.pause} canOperate={canOperate} type={job.type} />
      {ResultPanel && <ResultPanel job={job} />}
      <section aria-label="Progress" className="rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
        <JobProgress job={job} label="Job progress" />
        {progressText(job, childNoun(job.type)) && (
          <p className="mt-2 text-sm text-slate-600" data-testid="job-progress-message">
            {progressText(job, childNoun(job.type))}
          </p>
        )}
        {cancelText(job) && <p className="mt-2 text-sm text-slate-700">{cancelText(job)}</p>}
      </section>
      {job.result?.files.some((f) => f.replacedBy) && (
        // Its partial file was replaced by a repair's complete archive (the download gives that one).
        <Alert tone="success" title="Repaired" testId="job-repaired">
          Its dead parts were run again and the complete archive replaces the partial one
          {repairedBy && (
            <>
              {" "}
              (<JobLink job={repairedBy} testId="repaired-by-link" />)
            </>
          )}
          . Its download and its links now give the complete archive.
        </Alert>
      )}
      {job.status === "cancelled" ? (
        // A cancel somebody asked for is no failure: neutral, and it says who.
        <Alert
          tone="neutral"
          title={job.cancelRequested?.by ? `Cancelled by ${job.cancelRequested.by}` : "Cancelled"}
          testId="job-outcome"
        >
          {job.cancelRequested?.reason ?? job.error?.message ?? ""}
        </Alert>
      ) : job.status === "expired" ? (
        <Alert tone="neutral" title="Expired" testId="job-outcome">
          {job.result?.files[0] ? (
            <>
              Its files were deleted <Time iso={job.result.files[0].expiresAt} />, when the time they are kept ran out.
              Request it again for a fresh file.
            </>
          ) : (
            "It waited longer than it may and never ran. Request it again."
          )}
        </Alert>
      ) : job.error ? (
        <Alert
          tone={job.status === "failed" ? "error" : "warning"}
          title={job.status === "failed" ? "Failed" : "The last attempt failed"}
          testId="job-outcome"
        >
          <FailureText error={job.error} final={job.status === "failed"} canOperate={canOperate} />
        </Alert>
      ) : null}
      {job.result && job.result.files.length > 0 && (
        <section aria-label="Files" className="rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
          <h2 className="mb-3 font-semibold">Files</h2>
          {job.result.rows === 0 && (
            <p className="mb-3 text-sm text-slate-700" data-testid="no-rows">
              No rows matched: the file holds only the header. Check the filters and request it again.
            </p>
          )}
          <ul className="space-y-3">
            {job.result.files.map((f) => (
              <li key={f.id} className="flex flex-wrap items-center gap-4 text-sm">
                <span className="break-all font-mono">{f.name}</span>
                {f.partial && !f.replacedBy && (
                  <span className="rounded bg-amber-100 px-2 py-0.5 text-xs text-amber-800">
                    partial: only the finished parts
                  </span>
                )}
                {f.replacedBy && (
                  <span className="rounded bg-emerald-100 px-2 py-0.5 text-xs text-emerald-900">
                    replaced by the repaired, complete archive
                  </span>
                )}
                <span>{formatBytes(f.size)}</span>
                <span>{formatCount(f.rows)} rows</span>
                <span className="font-mono text-xs text-slate-500" title="SHA-256">
                  sha256 {f.sha256.slice(0, 16)}…
                </span>
                <span className="text-slate-500">
                  {f.replacedBy ? "replaced " : f.expired ? "expired " : "expires "}
                  <Time iso={f.expiresAt} /> · downloaded {f.downloadCount}×
                </span>
                {f.replacedBy && (
                  <a
                    href={f.downloadUrl}
                    download
                    data-testid="download"
                    className="rounded bg-emerald-700 px-3 py-1 text-xs font-medium text-white hover:bg-emerald-800"
                  >
                    Download the complete archive
                  </a>
                )}
                {!f.expired && (
                  <a
                    href={entry?.fileHref?.(job, f) ?? f.downloadUrl}
                    download
                    data-testid="download"
                    className={
                      f.partial
                        ? "rounded border border-amber-400 bg-amber-50 px-3 py-1 text-xs font-medium text-amber-900 hover:bg-amber-100"
                        : "rounded bg-emerald-700 px-3 py-1 text-xs font-medium text-white hover:bg-emerald-800"
                    }
                  >
                    {fileLabel(job, f)}
                  </a>
                )}
              </li>
            ))}
          </ul>
          {entry?.shareLinks && job.result.files.some((f) => !f.expired) && <ExportLinks jobId={job.id} />}
        </section>
      )}
      {entry?.children && (
        <JobParts
          jobId={job.id}
          type={job.type}
          status={job.status}
          // A job whose own progress counts its children (a pipeline's stages) knows how many there will be.
          total={job.progress.unit === noun ? job.progress.total : null}
        />
      )}
      <JobAttempts job={job} noun={noun} canOperate={canOperate} />
      <JobWebhookDeliveries jobId={job.id} />
      {canOperate && (
        <JobOpsPanel jobId={job.id} status={job.status} attempts={job.attempts} replayOfId={job.replayOfId} />
      )}
      <section aria-label="Details" className="rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
        <dl className="divide-y divide-slate-100">
          <Row label="Job id">
            <span className="break-all font-mono">{job.id}</span>
          </Row>
          {job.requestedBy && <Row label="Requested by">{job.requestedBy}</Row>}
          {relations.parent && (
            <Row label="Part of">
              <JobLink job={relations.parent} testId="parent-link" />
            </Row>
          )}
          {relations.replayOf && (
            <Row label="Replay of">
              <JobLink job={relations.replayOf} testId="replay-of-link" />
            </Row>
          )}
          {relations.replays.length > 0 && (
            <Row label="Replays">
              <ul className="space-y-1">
                {relations.replays.map((r) => (
                  <li key={r.id}>
                    <JobLink job={r} testId="replay-link" />{" "}
                    <span className="text-xs text-slate-500">
                      {r.requestedBy ? `by ${r.requestedBy}, ` : ""}
                      <Time iso={r.createdAt} />
                    </span>
                  </li>
                ))}
              </ul>
            </Row>
          )}
          <Row label="Queue">{job.queue}</Row>
          <Row label="Attempts">{attemptsText(job)}</Row>
          {job.scheduleId && (
            <Row label="Schedule">
              <Link href={`/schedules/${job.scheduleId}`} className="text-indigo-700 underline">
                The run for <Time iso={job.scheduledFor} mode="absolute" />
              </Link>
            </Row>
          )}
          <Row label="Requested">
            <Time iso={job.createdAt} mode="absolute" testId="job-requested-at" />
          </Row>
          {job.status === "scheduled" && (
            <Row label="Starts at">
              <Time iso={job.runAt} mode="absolute" />
            </Row>
          )}
          <Row label="Started">
            <Time iso={job.startedAt} mode="absolute" />
          </Row>
          <Row label="Finished">
            <Time iso={job.finishedAt} mode="absolute" />
          </Row>
          <Row label="Input">
            <pre className="overflow-x-auto text-xs whitespace-pre-wrap break-all">
              {JSON.stringify(job.input, null, 2)}
            </pre>
          </Row>
        </dl>
      </section>
    </div>
  );
}
