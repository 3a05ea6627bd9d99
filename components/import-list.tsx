"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { formatBytes, formatCount } from "@/lib/client/format";
import { currentStage, fetchImports, importKeys, importName, type ImportDto } from "@/lib/client/imports";
import { useJobEventsWhere } from "@/lib/client/live";
import { isTerminal } from "@/lib/jobs/dto";
import { Alert } from "./ui/alert";
import { PauseBadge } from "./pause-notice";
import { PriorityBadge } from "./ui/priority-badge";
import { StatusBadge } from "./ui/status-badge";
import { TableBox, td, th, theadClass } from "./ui/table";
import { Time } from "./ui/time";

const LIMIT = 20;

/** "1,000 read · 990 inserted · 10 rejected", as far as the import got. */
function countsText(imp: ImportDto): string {
  const c = imp.counts;
  const parts = [
    c.rowsRead !== null ? `${formatCount(c.rowsRead)} read` : null,
    c.inserted ? `${formatCount(c.inserted)} inserted` : null,
    c.updated ? `${formatCount(c.updated)} updated` : null,
    c.rejected ? `${formatCount(c.rejected)} rejected` : null,
    c.duplicates ? `${formatCount(c.duplicates)} duplicates` : null,
  ].filter(Boolean);
  return parts.length ? parts.join(" · ") : "—";
}

/** The tenant's recent imports, each opening its timeline above (`?id=`); live while any is open. */
export function ImportList({ selected }: { selected?: string }) {
  const qc = useQueryClient();
  const query = useQuery({
    queryKey: importKeys.list(),
    queryFn: () => fetchImports(LIMIT),
    refetchInterval: (q) => (q.state.data?.imports.some((i) => !isTerminal(i.job.status)) ? 5_000 : false),
  });
  // A new import or one that moved on (not its stages' every step): read the list again, at most once a second.
  useJobEventsWhere(
    (e) => e.type === "import",
    () => void qc.invalidateQueries({ queryKey: importKeys.list() }),
    { minGapMs: 1_000 },
  );

  if (query.isPending) return <p className="text-sm text-slate-500">Loading imports…</p>;
  if (query.isError) return <Alert tone="error">Could not load imports: {query.error.message}</Alert>;
  const imports = query.data.imports;

  return (
    <section aria-labelledby="recent-imports" className="space-y-3">
      <h2 id="recent-imports" className="text-lg font-semibold">
        Recent imports
      </h2>
      {imports.length === 0 ? (
        <p className="rounded-lg border border-slate-200 bg-white px-5 py-6 text-sm text-slate-500 shadow-sm">
          No imports yet. Import a file above.
        </p>
      ) : (
        <TableBox label="Recent imports, newest first" testId="import-list">
          <thead className={theadClass}>
            <tr>
              <th scope="col" className={th}>
                Requested
              </th>
              <th scope="col" className={th}>
                Import
              </th>
              <th scope="col" className={th}>
                Status
              </th>
              <th scope="col" className={th}>
                File
              </th>
              <th scope="col" className={th}>
                Rows
              </th>
            </tr>
          </thead>
          <tbody>
            {imports.map((imp) => {
              const at = currentStage(imp);
              const isSelected = imp.job.id === selected;
              return (
                <tr
                  key={imp.job.id}
                  data-testid="import-row"
                  data-job-id={imp.job.id}
                  className={`border-t border-slate-100 ${isSelected ? "bg-indigo-50" : ""}`}
                >
                  <td className={td}>
                    <Link
                      href={`/imports?id=${imp.job.id}`}
                      scroll={false}
                      aria-current={isSelected ? "true" : undefined}
                      className="text-indigo-700 underline"
                    >
                      <Time iso={imp.job.createdAt} />
                    </Link>
                    {imp.job.requestedBy && (
                      <span className="block text-xs text-slate-600">by {imp.job.requestedBy}</span>
                    )}
                  </td>
                  <td className={`${td} whitespace-nowrap`}>
                    {importName(imp.request)}
                    {imp.fileName ? <span className="block text-xs text-slate-600">{imp.fileName}</span> : null}
                  </td>
                  <td className={`${td} whitespace-nowrap`}>
                    <StatusBadge status={imp.job.status} /> <PriorityBadge priority={imp.job.priority} />{" "}
                    <PauseBadge pause={imp.job.pause} type={imp.job.type} />
                    {imp.job.pause && (
                      <span className="block text-xs text-amber-800" data-testid="import-held">
                        held by a pause: starts when it is resumed
                      </span>
                    )}
                    {!isTerminal(imp.job.status) && (
                      <span className="block text-xs text-slate-600">
                        stage {at.index} of {at.of}: {at.stage.name}
                      </span>
                    )}
                    {imp.job.status === "failed" && (
                      <span className="block text-xs text-red-700">in {at.stage.name}</span>
                    )}
                  </td>
                  <td className={`${td} whitespace-nowrap`}>{imp.file ? formatBytes(imp.file.size) : "—"}</td>
                  <td className={`${td} min-w-40`}>{countsText(imp)}</td>
                </tr>
              );
            })}
          </tbody>
        </TableBox>
      )}
    </section>
  );
}
