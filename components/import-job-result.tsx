"use client";

import { useQuery } from "@tanstack/react-query";
import type { JobDto } from "@/lib/client/api";
import { fetchImport, importKeys } from "@/lib/client/imports";
import { BadRows, Counts, ImportAgain } from "./import-outcome";

/**
 * What an import came to, at the head of its job page: the rows read, inserted, updated and
 * rejected, the first bad rows with the errors file, and — when it failed for more bad rows than
 * it allowed — "Import again allowing these N bad rows". Read again whenever the job moves on.
 */
export function ImportJobResult({ job }: { job: JobDto }) {
  const { data: imp } = useQuery({
    queryKey: [...importKeys.detail(job.id), job.status, job.progress.done],
    queryFn: () => fetchImport(job.id),
    placeholderData: (previous) => previous,
  });
  if (!imp) return null;
  const known = Object.values(imp.counts).some((n) => n !== null);
  if (!known && !imp.errorsFile && imp.badRows.length === 0 && job.status !== "failed") return null;
  return (
    <section
      aria-labelledby="import-result-title"
      data-testid="import-result"
      className="space-y-4 rounded-lg border border-slate-200 bg-white p-5 shadow-sm"
    >
      <h2 id="import-result-title" className="font-semibold">
        {job.status === "succeeded" ? "Result" : "So far"}
      </h2>
      {known && <Counts counts={imp.counts} mode={imp.request.mode} />}
      <ImportAgain imp={imp} hrefOf={(id) => `/jobs/${id}`} />
      <BadRows imp={imp} />
    </section>
  );
}
