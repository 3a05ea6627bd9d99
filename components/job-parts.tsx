"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { fetchJobParts, type JobDto } from "@/lib/client/api";
import { isTerminal } from "@/lib/jobs/dto";
import { formatBytes, formatCount, percentDone } from "@/lib/client/format";
import { childNoun, tileLabel } from "@/lib/client/kinds/lookup";
import { StatusBadge } from "./ui/status-badge";
import { PauseBadge } from "./pause-notice";

/** What a child did: a finished one its whole total (an import's load stage counts its chunks' rows late). */
function shownDone(part: JobDto): number {
  const { done, total } = part.progress;
  return part.status === "succeeded" ? Math.max(done, total ?? 0) : done;
}

/**
 * A job's child jobs, one tile each with its state and progress: a split
 * export's parts, an import's stages, its load stage's chunks (`type`: the
 * parent's). Fetched again each time the parent changes status, and every
 * 1.5 s while it runs (an export's own progress moves live with every part's). `total`: how
 * many children it will have when that is known before they exist (a pipeline makes its stages
 * one at a time: five stages, not "1 of 2" while the second runs); else those there are.
 */
export function JobParts({
  jobId,
  type,
  status,
  total = null,
}: {
  jobId: string;
  type: string;
  status: JobDto["status"];
  total?: number | null;
}) {
  const { data } = useQuery({
    queryKey: ["jobs", "parts", jobId, status],
    queryFn: () => fetchJobParts(jobId),
    placeholderData: (previous) => previous,
    refetchInterval: isTerminal(status) ? false : 1_500,
  });
  const parts = data?.parts ?? [];
  if (parts.length === 0) return null;
  const done = parts.filter((p) => p.status === "succeeded").length;
  const noun = childNoun(type);
  const title = noun.charAt(0).toUpperCase() + noun.slice(1);
  const of = Math.max(total ?? 0, parts.length);
  return (
    <section aria-label={title} className="rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
      <h2 className="mb-3 font-semibold">
        {title} <span className="text-sm font-normal text-slate-500">{`${done} of ${of} done`}</span>
      </h2>
      <ol className="grid grid-cols-2 gap-2 text-sm sm:grid-cols-4 lg:grid-cols-6">
        {parts.map((part, i) => {
          const percent = percentDone(part) ?? 0;
          return (
            <li
              key={part.id}
              data-testid="job-part"
              data-status={part.status}
              className="space-y-1 rounded border border-slate-100 p-2"
            >
              <div className="flex items-center justify-between gap-1">
                <Link href={`/jobs/${part.id}`} className="text-indigo-700 underline">
                  {tileLabel(type, part, i)}
                </Link>
                {part.pause ? (
                  <PauseBadge pause={part.pause} />
                ) : (
                  <StatusBadge status={part.status} testId="part-status" />
                )}
              </div>
              <div className="h-1.5 rounded bg-slate-100" aria-hidden>
                <div className="h-1.5 rounded bg-sky-500" style={{ width: `${percent}%` }} />
              </div>
              <p className="text-xs text-slate-500">
                {part.progress.unit === "bytes"
                  ? formatBytes(shownDone(part))
                  : `${formatCount(shownDone(part))} ${part.progress.unit ?? "rows"}`}
                {part.attempts > 1 ? ` · attempt ${part.attempts}` : ""}
              </p>
            </li>
          );
        })}
      </ol>
    </section>
  );
}
