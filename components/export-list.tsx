"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { fetchJobs, jobKeys, type JobDto } from "@/lib/client/api";
import { isHeld } from "@/lib/client/format";
import { formatBytes, formatTime } from "@/lib/client/format";
import { useTenantJobEvents } from "@/lib/client/live";
import { JobActions } from "./job-actions";
import { JobProgress } from "./job-progress";
import { StatusBadge } from "./ui/status-badge";
import { Alert } from "./ui/alert";

function describe(job: JobDto): string {
  const input = job.input as { dataset?: string; format?: string; compression?: string };
  return `${input.dataset ?? "?"} · ${input.format ?? "csv"}${input.compression === "gzip" ? ".gz" : ""}`;
}

export function ExportList() {
  const filters = { type: "export", limit: 25 };
  const query = useQuery({
    queryKey: jobKeys.list(filters),
    queryFn: () => fetchJobs(filters),
    // A pause or resume changes no job row: while something waits, look again now and then.
    refetchInterval: (q) => (q.state.data?.jobs.some(isHeld) ? 5_000 : false),
  });
  useTenantJobEvents();

  if (query.isPending) return <p className="text-sm text-slate-500">Loading exports…</p>;
  if (query.isError) return <Alert tone="error">Could not load exports: {query.error.message}</Alert>;
  const jobs = query.data.jobs;

  return (
    <section aria-labelledby="recent-exports" className="rounded-lg border border-slate-200 bg-white shadow-sm">
      <h2 id="recent-exports" className="border-b border-slate-200 px-5 py-3 text-lg font-semibold">
        Recent exports
      </h2>
      {jobs.length === 0 ? (
        <p className="px-5 py-6 text-sm text-slate-500">No exports yet. Request one above.</p>
      ) : (
        <table className="w-full text-sm">
          <thead className="bg-slate-50 text-left text-xs uppercase text-slate-500">
            <tr>
              <th className="px-5 py-2">Requested</th>
              <th className="px-5 py-2">Export</th>
              <th className="px-5 py-2">Status</th>
              <th className="px-5 py-2">Progress</th>
              <th className="px-5 py-2">Result</th>
            </tr>
          </thead>
          <tbody>
            {jobs.map((job) => {
              const file = job.result?.files[0];
              return (
                <tr
                  key={job.id}
                  data-testid="export-row"
                  data-job-id={job.id}
                  className="border-t border-slate-100 align-top"
                >
                  <td className="px-5 py-3 whitespace-nowrap">
                    <Link href={`/jobs/${job.id}`} className="text-indigo-700 underline">
                      {formatTime(job.createdAt)}
                    </Link>
                  </td>
                  <td className="px-5 py-3">{describe(job)}</td>
                  <td className="px-5 py-3">
                    <StatusBadge status={job.status} />
                  </td>
                  <td className="px-5 py-3">
                    <JobProgress job={job} label={`Progress of export ${describe(job)}`} />
                  </td>
                  <td className="px-5 py-3">
                    {file && !file.expired && (
                      <a
                        href={file.downloadUrl}
                        className="rounded bg-emerald-700 px-3 py-1 text-xs font-medium text-white hover:bg-emerald-800"
                        download
                      >
                        Download ({formatBytes(file.size)})
                      </a>
                    )}
                    {file?.expired && <span className="text-xs text-slate-500">Expired</span>}
                    {/* Anyone of the tenant may stop an export they no longer need. */}
                    <JobActions job={job} canOperate={false} />
                    {job.error && (
                      <span role="alert" className="block max-w-xs text-xs break-words text-red-700">
                        {job.error.message}
                      </span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
