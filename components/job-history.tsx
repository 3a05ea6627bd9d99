"use client";

/**
 * A person's own history of every kind (exports, imports, reports, their schedules' runs, the
 * deliveries to their webhooks) on one page. The filters live in the URL:
 *   /jobs?kind=&status=&source=&from=&to=
 * `kind` is a job kind's name (lib/client/kinds: its types are asked for), `source` manual or
 * schedule, `from`/`to` dates (YYYY-MM-DD) in the viewer's zone, `to` included.
 */
import { useInfiniteQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import type { FormEvent } from "react";
import { fetchJobs, jobKeys, type JobDto, type JobFilters } from "@/lib/client/api";
import { localMidnight } from "@/lib/client/format";
import { KINDS } from "@/lib/client/kinds";
import { jobTitle } from "@/lib/client/kinds/lookup";
import { capitalize } from "@/lib/client/kinds/words";
import { useTenantJobEvents } from "@/lib/client/live";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { LoadMore } from "./ui/load-more";
import { PriorityBadge } from "./ui/priority-badge";
import { fieldClass, Select } from "./ui/select";
import { StatusBadge } from "./ui/status-badge";
import { Time } from "./ui/time";

const PAGE = 25;
const STATUSES = ["scheduled", "queued", "running", "retrying", "succeeded", "failed", "cancelled", "expired"];
const SOURCES = [
  ["manual", "requested"],
  ["schedule", "a schedule"],
] as const;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const KEYS = ["kind", "status", "source", "from", "to"] as const;
type UrlFilters = Partial<Record<(typeof KEYS)[number], string>>;

/** The kinds that have jobs, as the filter offers them: [name, label]. */
const kindOptions = KINDS.filter((k) => Object.keys(k.types).length > 0).map(
  (k) => [k.name, k.list?.label ?? capitalize(k.name)] as const,
);

function urlFilters(params: URLSearchParams): UrlFilters {
  const out: UrlFilters = {};
  for (const k of KEYS) {
    const v = params.get(k)?.trim();
    if (v) out[k] = v;
  }
  return out;
}

/** The URL's filters as GET /api/v1/jobs takes them: only the caller's own jobs, no parts or stages. */
function apiFilters(f: UrlFilters): JobFilters {
  const kind = KINDS.find((k) => k.name === f.kind);
  const day = (v: string | undefined, add: number) =>
    v && DATE.test(v) ? localMidnight(v, add)?.toISOString() : undefined;
  const out: JobFilters = { mine: "1", roots: "1", limit: PAGE };
  if (kind) out.type = Object.keys(kind.types).join(",");
  if (f.status) out.status = f.status;
  if (f.source === "manual" || f.source === "schedule") out.source = f.source;
  const from = day(f.from, 0);
  const to = day(f.to, 1);
  if (from) out.from = from;
  if (to) out.to = to;
  return out;
}

/** What made it: the person (or a replay), or a schedule. */
function sourceOf(job: JobDto): string {
  if (job.scheduleId || job.scheduledFor) return "a schedule";
  if (job.replayOfId) return "a replay";
  return job.requestedBy ?? "—";
}

export function JobHistory() {
  const router = useRouter();
  const pathname = usePathname();
  const search = useSearchParams().toString();
  const f = urlFilters(new URLSearchParams(search));
  const filters = apiFilters(f);
  const rangeWrong = Boolean(filters.from && filters.to && filters.to <= filters.from);
  const query = useInfiniteQuery({
    queryKey: jobKeys.pages(filters),
    queryFn: ({ pageParam }) => fetchJobs(filters, pageParam || undefined),
    initialPageParam: "",
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    enabled: !rangeWrong,
  });
  useTenantJobEvents();

  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const next = new URLSearchParams();
    for (const k of KEYS) {
      const v = String(form.get(k) ?? "").trim();
      if (v) next.set(k, v);
    }
    const q = next.toString();
    router.push(q ? `${pathname}?${q}` : pathname);
  };
  const jobs = query.data?.pages.flatMap((p) => p.jobs) ?? [];

  return (
    <div className="space-y-4">
      <form
        key={search}
        onSubmit={onSubmit}
        aria-label="Filter your jobs"
        className="grid grid-cols-1 gap-3 rounded-lg border border-slate-200 bg-white p-4 shadow-sm sm:grid-cols-2 lg:grid-cols-6"
      >
        <Select label="Kind" name="kind" options={kindOptions} any="any" defaultValue={f.kind ?? ""} />
        <Select label="Status" name="status" options={STATUSES} any="any" defaultValue={f.status ?? ""} />
        <Select label="Made by" name="source" options={SOURCES} any="anyone" defaultValue={f.source ?? ""} />
        <label className="text-sm font-medium">
          Created from
          <input type="date" name="from" defaultValue={f.from ?? ""} className={fieldClass} />
        </label>
        <label className="text-sm font-medium">
          Created to
          <input type="date" name="to" defaultValue={f.to ?? ""} className={fieldClass} />
        </label>
        <div className="flex items-end gap-2">
          <Button type="submit" variant="primary">
            Apply
          </Button>
          {search && (
            <Link href={pathname} className="px-2 py-1 text-sm text-indigo-700 underline">
              Clear
            </Link>
          )}
        </div>
      </form>
      {rangeWrong ? (
        <Alert tone="error">&lsquo;Created to&rsquo; must be on or after &lsquo;Created from&rsquo;.</Alert>
      ) : query.isPending ? (
        <p className="text-sm text-slate-500">Loading your jobs…</p>
      ) : query.isError ? (
        <Alert tone="error">Could not load your jobs: {query.error.message}</Alert>
      ) : jobs.length === 0 ? (
        <p
          className="rounded-lg border border-slate-200 bg-white px-5 py-6 text-sm text-slate-500"
          data-testid="history-empty"
        >
          {search
            ? "None of your jobs match these filters."
            : "No jobs yet: your exports, imports and schedules' runs will show here."}
        </p>
      ) : (
        <ul aria-label="Your jobs, newest first" className="rounded-lg border border-slate-200 bg-white shadow-sm">
          {jobs.map((job) => (
            <li
              key={job.id}
              data-testid="history-row"
              data-job-id={job.id}
              className="flex min-w-0 flex-col gap-1 border-t border-slate-100 px-4 py-3 text-sm first:border-t-0 sm:flex-row sm:items-center sm:gap-4 sm:px-5"
            >
              <Link
                href={`/jobs/${job.id}`}
                className="min-w-0 flex-1 font-medium break-words sm:truncate text-indigo-700 underline"
              >
                {jobTitle(job)}
              </Link>
              <span className="flex flex-wrap items-center gap-2">
                <StatusBadge status={job.status} /> <PriorityBadge priority={job.priority} />
              </span>
              <span className="text-slate-600 sm:w-40 sm:truncate" data-testid="history-source">
                {sourceOf(job)}
              </span>
              <span className="text-slate-600 sm:w-36">
                <Time iso={job.createdAt} />
              </span>
            </li>
          ))}
        </ul>
      )}
      <LoadMore query={query} />
    </div>
  );
}
