"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import type { FormEvent } from "react";
import { formatBytes, formatCount, pauseText } from "@/lib/client/format";
import {
  currentStage,
  fetchImports,
  IMPORT_STATUS_OPTIONS,
  importKeys,
  importName,
  type ImportDto,
  type ImportListStatus,
} from "@/lib/client/imports";
import { childNoun } from "@/lib/client/kinds/lookup";
import { useJobEventsWhere } from "@/lib/client/live";
import { isTerminal } from "@/lib/jobs/dto";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { PauseBadge } from "./pause-notice";
import { PriorityBadge } from "./ui/priority-badge";
import { Select } from "./ui/select";
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
    c.rejected !== null ? `${formatCount(c.rejected)} rejected` : null,
    c.duplicates ? `${formatCount(c.duplicates)} duplicates` : null,
  ].filter(Boolean);
  return parts.length ? parts.join(" · ") : "—";
}

/** What holds an import, in a line: who paused what, why, and since when. */
function HeldBy({ job }: { job: ImportDto["job"] }) {
  if (!job.pause) return null;
  return (
    <span className="block text-xs text-amber-900" data-testid="import-held">
      {pauseText(job.pause, childNoun(job.type))}
      {job.pause.since && (
        <>
          {" · since "}
          <Time iso={job.pause.since} />
        </>
      )}
      . It goes on when the pause is resumed.
    </span>
  );
}

/**
 * The tenant's recent imports, each opening its timeline (`?id=`); live while any is open.
 * `status` (from the URL's `?status=`) keeps only those in it; the filter's Apply sets it.
 */
export function ImportList({ selected, status }: { selected?: string; status?: ImportListStatus }) {
  const qc = useQueryClient();
  const router = useRouter();
  const pathname = usePathname();
  const query = useQuery({
    queryKey: importKeys.list(status),
    queryFn: () => fetchImports(LIMIT, status),
    refetchInterval: (q) => (q.state.data?.imports.some((i) => !isTerminal(i.job.status)) ? 5_000 : false),
  });
  // A new import or one that moved on (not its stages' every step): read the list again, at most once a second.
  useJobEventsWhere(
    (e) => e.type === "import",
    () => void qc.invalidateQueries({ queryKey: importKeys.all }),
    { minGapMs: 1_000 },
  );
  const onFilter = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const next = String(new FormData(e.currentTarget).get("status") ?? "");
    router.push(next ? `${pathname}?status=${next}` : pathname, { scroll: false });
  };

  return (
    <section aria-labelledby="recent-imports" className="space-y-3">
      <div className="flex flex-wrap items-end justify-between gap-3">
        <h2 id="recent-imports" className="text-lg font-semibold">
          Recent imports
        </h2>
        <form
          key={status ?? ""}
          onSubmit={onFilter}
          aria-label="Filter imports"
          className="flex flex-wrap items-end gap-2"
        >
          <Select label="Status" name="status" options={IMPORT_STATUS_OPTIONS} any="any" defaultValue={status ?? ""} />
          <Button type="submit">Apply</Button>
          {status && (
            <Link href={pathname} scroll={false} className="px-2 py-1 text-sm text-indigo-700 underline">
              Clear
            </Link>
          )}
        </form>
      </div>
      {query.isPending ? (
        <p role="status" className="text-sm text-slate-500" data-testid="import-list-loading">
          Loading imports…
        </p>
      ) : query.isError ? (
        <Alert tone="error" testId="import-list-error">
          Could not load imports: {query.error.message}{" "}
          <Button variant="link" onClick={() => void query.refetch()}>
            Try again
          </Button>
        </Alert>
      ) : query.data.imports.length === 0 ? (
        <p
          className="rounded-lg border border-slate-200 bg-white px-5 py-6 text-sm text-slate-600 shadow-sm"
          data-testid="import-list-empty"
        >
          {status ? `No ${status} imports. ` : "No imports yet. "}
          <Link href="/imports?new=1" className="text-indigo-700 underline">
            Import a file
          </Link>
          {status && (
            <>
              {" or "}
              <Link href={pathname} className="text-indigo-700 underline">
                see every import
              </Link>
            </>
          )}
          .
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
                Rows
              </th>
              <th scope="col" className={th}>
                File
              </th>
            </tr>
          </thead>
          <tbody>
            {query.data.imports.map((imp) => {
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
                    <span>
                      <Link
                        href={`/imports?id=${imp.job.id}${status ? `&status=${status}` : ""}`}
                        scroll={false}
                        aria-current={isSelected ? "true" : undefined}
                        className="text-indigo-700 underline"
                      >
                        <Time iso={imp.job.createdAt} />
                      </Link>
                      {imp.job.requestedBy && (
                        <span className="block text-xs text-slate-600">by {imp.job.requestedBy}</span>
                      )}
                    </span>
                  </td>
                  <td className={td}>
                    <span>
                      {importName(imp.request)}
                      {imp.fileName ? (
                        <span className="block text-xs break-all text-slate-600">{imp.fileName}</span>
                      ) : null}
                    </span>
                  </td>
                  <td className={td}>
                    <span>
                      <span className="inline-flex flex-wrap items-center gap-1">
                        <StatusBadge status={imp.job.status} /> <PriorityBadge priority={imp.job.priority} />{" "}
                        <PauseBadge pause={imp.job.pause} type={imp.job.type} />
                      </span>
                      <HeldBy job={imp.job} />
                      {!isTerminal(imp.job.status) && (
                        <span className="block text-xs text-slate-600" data-testid="import-row-stage">
                          stage {at.index} of {at.of}: {at.stage.name}
                          {imp.job.pause ? " (held)" : ""}
                        </span>
                      )}
                      {imp.job.status === "failed" && (
                        <span className="block text-xs text-red-700">in {at.stage.name}</span>
                      )}
                      {imp.job.status === "cancelled" && imp.job.cancelRequested?.by && (
                        <span className="block text-xs text-slate-600">by {imp.job.cancelRequested.by}</span>
                      )}
                    </span>
                  </td>
                  <td className={td} data-testid="import-row-counts">
                    {countsText(imp)}
                  </td>
                  <td className={td}>{imp.file ? formatBytes(imp.file.size) : "—"}</td>
                </tr>
              );
            })}
          </tbody>
        </TableBox>
      )}
    </section>
  );
}
