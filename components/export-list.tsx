"use client";

import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useSearchParams } from "next/navigation";
import { fetchJobs, jobKeys, type JobDto } from "@/lib/client/api";
import { formatBytes, formatCount, formatWindowEdge, isHeld, zoneLabel } from "@/lib/client/format";
import { useDisplayZone } from "@/lib/client/time-zone";
import { useTenantJobEvents } from "@/lib/client/live";
import { fetchSchedules, scheduleKeys, type ScheduleDto } from "@/lib/client/schedules";
import { ExportFilterBar, exportJobFilters, hasFilters, parseExportFilters } from "./export-filters";
import { FailureText } from "./failure-notice";
import { JobActions } from "./job-actions";
import { JobProgress } from "./job-progress";
import { Alert } from "./ui/alert";
import { LoadMore } from "./ui/load-more";
import { PriorityBadge } from "./ui/priority-badge";
import { StatusBadge } from "./ui/status-badge";
import { PauseBadge } from "./pause-notice";
import { Time } from "./ui/time";

type ExportInput = {
  dataset?: string;
  format?: string;
  compression?: string;
  filter?: { from?: string; to?: string };
};

function describe(job: JobDto): string {
  const input = job.input as ExportInput;
  return `${input.dataset ?? "?"} · ${input.format ?? "csv"}${input.compression === "gzip" ? ".gz" : ""}`;
}

/**
 * An export's window in the reader's zone, the zone named once: "from 1 Jun 2026 until 1 Jul 2026
 * (UTC-7)" for days picked in Los Angeles; an edge that is not that zone's midnight with its time.
 */
function windowText(job: JobDto, zone: string): string | null {
  const f = (job.input as ExportInput).filter;
  if (!f?.from && !f?.to) return null;
  const edges = [
    f.from ? `from ${formatWindowEdge(f.from, zone)}` : null,
    f.to ? `until ${formatWindowEdge(f.to, zone)}` : null,
  ];
  return `${edges.filter(Boolean).join(" ")} (${zoneLabel(zone, f.from ?? f.to)})`;
}

/** How many days its file was to be kept: its expiry less when the export finished, when that is whole days. */
function keptDays(job: JobDto, expiresAt: string): number | null {
  if (!job.finishedAt) return null;
  const days = (Date.parse(expiresAt) - Date.parse(job.finishedAt)) / 86_400_000;
  const n = Math.round(days);
  return n >= 1 && Math.abs(days - n) < 0.05 ? n : null;
}

/** Why an export has nothing to download any more: when its files expired (and how long they are kept), or that they were deleted. */
function ExpiryNote({ job }: { job: JobDto }) {
  const file = job.result?.files[0];
  if (!file) return job.status === "expired" ? <p data-testid="expiry-note">Its files expired.</p> : null;
  if (!file.expired) return null;
  const n = keptDays(job, file.expiresAt);
  return (
    <p data-testid="expiry-note" className="text-sm text-slate-700">
      {Date.parse(file.expiresAt) <= Date.now() ? (
        <>
          Its files expired on <Time iso={file.expiresAt} mode="absolute" />
          {n ? ` (files are kept ${n} ${n === 1 ? "day" : "days"})` : ""}.
        </>
      ) : (
        <>
          Its files were deleted before they expired (they were to be kept until{" "}
          <Time iso={file.expiresAt} mode="absolute" />
          ).
        </>
      )}
    </p>
  );
}

/**
 * Where an export came from: a schedule's run names its schedule (linked), anything else who asked.
 * `schedules`: the tenant's, by id (a run of a deleted schedule has no id any more).
 */
function ExportSource({ job, schedules }: { job: JobDto; schedules: Map<string, ScheduleDto> | null }) {
  if (job.scheduledFor) {
    const s = job.scheduleId ? schedules?.get(job.scheduleId) : undefined;
    return (
      <span data-testid="export-source" className="block text-xs break-words text-slate-600">
        {job.scheduleId ? (
          <>
            schedule:{" "}
            <Link href={`/schedules/${job.scheduleId}`} className="text-indigo-700 underline">
              {s?.name ?? (schedules ? "a schedule" : "…")}
            </Link>
          </>
        ) : (
          "schedule: deleted since"
        )}
      </span>
    );
  }
  return (
    <span data-testid="export-source" className="block text-xs break-words text-slate-600">
      {job.requestedBy ? `by ${job.requestedBy}` : "by a user since removed"}
    </span>
  );
}

const PAGE = 25;
const columns = "md:grid-cols-[9rem_minmax(0,1fr)_7rem_minmax(12rem,14rem)_minmax(0,17rem)]";
const cellLabel = "text-xs font-medium uppercase tracking-wide text-slate-500 md:sr-only";

/** The tenant's exports, newest first, filtered as the URL says (components/export-filters.tsx). */
export function ExportList() {
  const params = useSearchParams();
  const picked = parseExportFilters(new URLSearchParams(params.toString()));
  const filters = exportJobFilters(picked, PAGE);
  const filtered = hasFilters(picked);
  const scheduleList = useQuery({ queryKey: scheduleKeys.list(null), queryFn: () => fetchSchedules(null) });
  const schedules = scheduleList.data ? new Map(scheduleList.data.schedules.map((s) => [s.id, s])) : null;
  const query = useInfiniteQuery({
    queryKey: jobKeys.pages(filters),
    queryFn: ({ pageParam }) => fetchJobs(filters, pageParam || undefined),
    initialPageParam: "",
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    // A pause or resume changes no job row: while something waits, look again now and then.
    refetchInterval: (q) => (q.state.data?.pages.some((p) => p.jobs.some(isHeld)) ? 5_000 : false),
  });
  useTenantJobEvents();
  const zone = useDisplayZone();

  const jobs = query.data?.pages.flatMap((p) => p.jobs) ?? [];

  return (
    <section aria-labelledby="recent-exports" className="rounded-lg border border-slate-200 bg-white shadow-sm">
      <h2 id="recent-exports" className="border-b border-slate-200 px-4 py-3 text-lg font-semibold sm:px-5">
        Recent exports
      </h2>
      <ExportFilterBar filters={picked} params={new URLSearchParams(params.toString())} />
      {query.isPending ? (
        <p role="status" className="px-5 py-6 text-sm text-slate-500">
          Loading exports…
        </p>
      ) : query.isError ? (
        <Alert tone="error" className="m-4">
          Could not load exports: {query.error.message}{" "}
          <button type="button" className="underline" onClick={() => void query.refetch()}>
            Try again
          </button>
        </Alert>
      ) : jobs.length === 0 ? (
        <p data-testid="exports-empty" className="px-5 py-6 text-sm text-slate-500">
          {filtered ? "No exports match these filters." : "No exports yet: use New export to request one."}
        </p>
      ) : (
        <>
          {/* On a phone each export is a card; from md on, the cards line up under these headings. */}
          <div
            aria-hidden="true"
            className={`hidden gap-x-4 bg-slate-50 px-5 py-2 text-xs font-medium uppercase tracking-wide text-slate-500 md:grid ${columns}`}
          >
            <span>Requested</span>
            <span>Export</span>
            <span>Status</span>
            <span>Progress</span>
            <span>Result</span>
          </div>
          <ul aria-label="Exports, newest first">
            {jobs.map((job) => {
              const file = job.result?.files[0];
              const range = zone ? windowText(job, zone) : null;
              return (
                <li
                  key={job.id}
                  data-testid="export-row"
                  data-job-id={job.id}
                  className={`grid min-w-0 grid-cols-1 gap-x-4 gap-y-2 border-t border-slate-100 px-4 py-3 text-sm first:border-t-0 sm:px-5 md:items-start ${columns}`}
                >
                  <div className="flex flex-wrap items-baseline gap-x-2 md:block">
                    <span className={cellLabel}>Requested</span>
                    <Link href={`/jobs/${job.id}`} className="text-indigo-700 underline">
                      <Time iso={job.createdAt} />
                    </Link>
                    <ExportSource job={job} schedules={schedules} />
                  </div>
                  <div className="min-w-0">
                    <span className={cellLabel}>Export</span>
                    <span className="block">{describe(job)}</span>
                    {range && <span className="block text-xs text-slate-500">{range}</span>}
                  </div>
                  <div>
                    <span className={cellLabel}>Status</span> <StatusBadge status={job.status} />{" "}
                    <PriorityBadge priority={job.priority} /> <PauseBadge pause={job.pause} />
                  </div>
                  <div className="min-w-0">
                    <span className={cellLabel}>Progress</span>
                    <JobProgress job={job} label={`Progress of export ${describe(job)}`} />
                  </div>
                  <div className="min-w-0 space-y-2">
                    <span className={cellLabel}>Result</span>
                    {file && !file.expired && (
                      <p className="flex flex-wrap items-center gap-x-2 gap-y-1">
                        <a
                          href={file.downloadUrl}
                          className={
                            file.partial
                              ? "inline-block whitespace-nowrap rounded border border-amber-400 bg-amber-50 px-3 py-1 text-xs font-medium text-amber-900 hover:bg-amber-100"
                              : "inline-block whitespace-nowrap rounded bg-emerald-700 px-3 py-1 text-xs font-medium text-white hover:bg-emerald-800"
                          }
                          download
                        >
                          {file.partial
                            ? `Download partial${job.progress.children ? ` (${job.progress.children.done} of ${job.progress.children.total} parts)` : ""}`
                            : `Download (${formatBytes(file.size)})`}
                        </a>
                        <span className="text-xs text-slate-500">
                          {file.rows === 0 ? "no rows matched" : `${formatCount(file.rows)} rows`} · expires{" "}
                          <Time iso={file.expiresAt} />
                        </span>
                      </p>
                    )}
                    {file?.replacedBy ? (
                      // A repair's complete archive replaced its partial file: the download gives that one.
                      <p className="flex flex-wrap items-center gap-x-2 gap-y-1" data-testid="export-repaired">
                        <a
                          href={file.downloadUrl}
                          className="inline-block whitespace-nowrap rounded bg-emerald-700 px-3 py-1 text-xs font-medium text-white hover:bg-emerald-800"
                          download
                        >
                          Download the complete archive
                        </a>
                        <span className="text-xs text-slate-600">Repaired: its dead parts were run again.</span>
                      </p>
                    ) : (
                      <ExpiryNote job={job} />
                    )}
                    {/* A cancel is what somebody asked for, not a failure: said plainly, not as an alert. */}
                    {job.error &&
                      !file?.replacedBy &&
                      (job.error.class === "cancelled" ? (
                        <span className="block text-xs break-words text-slate-600">{job.error.message}</span>
                      ) : (
                        // The plain reason and what to do first; the engine's words under Technical details.
                        <div data-testid="export-failure" className="text-xs text-red-800">
                          <FailureText error={job.error} final={job.status === "failed"} canOperate={false} />
                        </div>
                      ))}
                    <div className="flex flex-wrap items-center gap-3">
                      {/* The form, filled in as this one was (the job page links here too). */}
                      <Link
                        href={`/exports?again=${job.id}`}
                        aria-label={`Request again: export of ${describe(job)}`}
                        className="inline-block whitespace-nowrap rounded border border-slate-300 bg-white px-3 py-1 text-sm font-medium text-slate-800 hover:bg-slate-50"
                      >
                        Request again
                      </Link>
                      {/* Anyone of the tenant may stop an export they no longer need. */}
                      <JobActions job={job} canOperate={false} />
                    </div>
                  </div>
                </li>
              );
            })}
          </ul>
          <div className="flex flex-wrap items-center gap-3 border-t border-slate-100 px-4 py-3 text-sm text-slate-500 sm:px-5">
            <span data-testid="export-count">
              {query.hasNextPage
                ? `The newest ${formatCount(jobs.length)}${filtered ? " that match" : ""}; older ones come with Load more.`
                : `All ${jobs.length === 1 ? "1 export" : `${formatCount(jobs.length)} exports`}${filtered ? " that match" : ""}.`}
            </span>
            <LoadMore query={query} />
          </div>
        </>
      )}
    </section>
  );
}
