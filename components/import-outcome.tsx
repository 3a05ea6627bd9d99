"use client";

/**
 * What an import came to, under its timeline: the row counts, the first bad
 * rows, the errors file (with a link to share it), the cancel button, and for an import
 * that found more bad rows than it allowed, "Import again allowing these N bad rows".
 */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import { useRouter } from "next/navigation";
import { useRef, useState } from "react";
import { ApiError, cancelJob, jobKeys } from "@/lib/client/api";
import { formatBytes, formatCount } from "@/lib/client/format";
import { createImportErrorsLink, importAgain, importKeys, rejectedTooMany, type ImportDto } from "@/lib/client/imports";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";
import { CopyButton } from "./ui/copy-button";
import { TableBox, td, th, theadClass } from "./ui/table";
import { Time } from "./ui/time";

export function Counts({ counts, mode }: { counts: ImportDto["counts"]; mode: string }) {
  const items: [string, number | null][] = [
    ["Rows read", counts.rowsRead],
    ["Inserted", counts.inserted],
    ["Updated", counts.updated],
    ["Rejected", counts.rejected],
    ...(mode === "upsert" ? ([["Duplicates", counts.duplicates]] as [string, number | null][]) : []),
  ];
  return (
    <dl
      aria-label="Result"
      data-testid="import-counts"
      className="grid grid-cols-2 gap-3 rounded border border-emerald-200 bg-emerald-50 p-3 text-sm min-[480px]:grid-cols-3 md:grid-cols-5"
    >
      {items.map(([label, n]) => (
        <div key={label}>
          <dt className="text-xs text-emerald-900">{label}</dt>
          <dd
            className="text-lg font-semibold text-emerald-950"
            data-testid={`count-${label.toLowerCase().replace(" ", "-")}`}
          >
            {n === null ? "—" : formatCount(n)}
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** The first bad rows, and the errors file with all of them: download it, or copy a link to it. */
export function BadRows({ imp }: { imp: ImportDto }) {
  const { badRows, errorsFile } = imp;
  if (badRows.length === 0 && !errorsFile) return null;
  const rejected = imp.counts.rejected;
  return (
    <section aria-labelledby="bad-rows-title" className="space-y-3">
      <h3 id="bad-rows-title" className="font-semibold">
        Bad rows
        {rejected !== null && (
          <span className="ml-2 text-sm font-normal text-slate-500">
            {rejected === 0
              ? "none"
              : rejected > badRows.length
                ? `the first ${formatCount(badRows.length)} of ${formatCount(rejected)}`
                : formatCount(rejected)}
          </span>
        )}
      </h3>
      {badRows.length > 0 && (
        <TableBox label="First bad rows" testId="bad-rows">
          <thead className={theadClass}>
            <tr>
              <th scope="col" className={th}>
                Line
              </th>
              <th scope="col" className={th}>
                Column
              </th>
              <th scope="col" className={th}>
                Reason
              </th>
            </tr>
          </thead>
          <tbody>
            {badRows.map((r, i) => (
              <tr key={`${r.line}-${r.column}-${i}`} className="border-t border-slate-100" data-testid="bad-row">
                <td className={`${td} tabular-nums`}>{formatCount(r.line)}</td>
                <td className={`${td} font-mono text-xs`}>{r.column}</td>
                <td className={`${td} sm:min-w-48`}>{r.reason}</td>
              </tr>
            ))}
          </tbody>
        </TableBox>
      )}
      {errorsFile && <ErrorsFile importJobId={imp.job.id} file={errorsFile} />}
    </section>
  );
}

function ErrorsFile({ importJobId, file }: { importJobId: string; file: NonNullable<ImportDto["errorsFile"]> }) {
  const [link, setLink] = useState<{ url: string; expiresAt: string; copied: boolean } | null>(null);
  const create = useMutation({
    mutationFn: () => createImportErrorsLink(importJobId),
    onSuccess: async (l) => {
      const url = `${window.location.origin}${l.url ?? ""}`;
      const copied = await navigator.clipboard.writeText(url).then(
        () => true,
        () => false,
      );
      setLink({ url, expiresAt: l.expiresAt, copied });
    },
  });
  return (
    <div className="space-y-2 text-sm">
      <div className="flex flex-wrap items-center gap-3">
        <a
          href={file.url}
          download
          data-testid="errors-download"
          className="inline-block whitespace-nowrap rounded bg-emerald-700 px-3 py-1 text-sm font-medium text-white hover:bg-emerald-800"
        >
          Download the errors file
        </a>
        <Button onClick={() => create.mutate()} disabled={create.isPending}>
          {create.isPending ? "Making a link…" : "Copy link"}
        </Button>
        <span className="text-xs text-slate-500">
          CSV (line, column, reason, value) · {formatCount(file.rows)} {file.rows === 1 ? "row" : "rows"} ·{" "}
          {formatBytes(file.size)} · kept until <Time iso={file.expiresAt} mode="absolute" />
        </span>
      </div>
      {create.error && (
        <Alert tone="error" inline>
          Could not make a link: {create.error.message}
        </Alert>
      )}
      {link && (
        <p role="status" className="break-all text-slate-700" data-testid="errors-link">
          {link.copied ? "Link copied" : "Link (copy it yourself)"}:{" "}
          <a href={link.url} className="font-mono text-indigo-700 underline">
            {link.url}
          </a>{" "}
          {!link.copied && <CopyButton text={link.url} className="text-xs" />}
          <span className="text-slate-500">
            {" "}
            — anyone with it can download the file until <Time iso={link.expiresAt} mode="absolute" /> (
            <Time iso={link.expiresAt} />
            ).
          </span>
        </p>
      )}
    </div>
  );
}

/** Cancel, confirmed: the running stage stops within about a second; nothing reaches the table. */
export function CancelImport({ job }: { job: ImportDto["job"] }) {
  const qc = useQueryClient();
  const { confirm, dialog } = useConfirm();
  const cancel = useMutation({
    mutationFn: (reason?: string) => cancelJob(job.id, reason),
    onSettled: () => {
      void refetchAfterChange(qc, importKeys.all);
      void refetchAfterChange(qc, jobKeys.all);
    },
  });
  return (
    <>
      {dialog}
      <Button
        variant="danger"
        disabled={cancel.isPending || job.cancelRequested !== null}
        onClick={async () => {
          const answer = await confirm({
            title: "Cancel this import?",
            message:
              "The stage that runs stops within about a second. Nothing reaches the table before the commit stage, which is all or nothing. This cannot be undone.",
            confirmLabel: "Cancel import",
            variant: "danger",
            reason: { label: "Reason" },
          });
          if (answer) cancel.mutate(answer.reason);
        }}
      >
        {cancel.isPending ? "Cancelling…" : job.cancelRequested ? "Stopping…" : "Cancel import"}
      </Button>
      {cancel.error && (
        <Alert tone={cancel.error instanceof ApiError && cancel.error.status === 409 ? "neutral" : "error"} inline>
          {cancel.error instanceof ApiError && cancel.error.status === 409 ? "Nothing changed: " : ""}
          {cancel.error.message}
        </Alert>
      )}
    </>
  );
}

/**
 * An import that failed for more bad rows than it allowed, run again from the same upload (no
 * file to pick again) allowing the bad rows it found; `hrefOf` is where the new import is shown.
 */
export function ImportAgain({ imp, hrefOf }: { imp: ImportDto; hrefOf: (jobId: string) => string }) {
  const qc = useQueryClient();
  const router = useRouter();
  // One key per failed import and allowance: a double click starts one import.
  const key = useRef(crypto.randomUUID());
  const rejected = rejectedTooMany(imp);
  const again = useMutation({
    mutationFn: (allow: number) => importAgain(imp, allow, key.current),
    onSuccess: (job) => {
      void refetchAfterChange(qc, importKeys.all);
      void refetchAfterChange(qc, jobKeys.lists());
      router.push(hrefOf(job.id), { scroll: false });
    },
  });
  if (rejected === null) return null;
  return (
    <div className="space-y-2" data-testid="import-again">
      <p className="text-sm text-slate-700" data-testid="import-again-why">
        <span className="font-medium">
          More bad rows than allowed: {formatCount(rejected)} found, {formatCount(imp.request.maxBadRows)} allowed.
        </span>{" "}
        Importing again leaves {rejected === 1 ? "it" : "them"} out (listed in the errors file) and brings in the rest,
        from the same file: nothing to upload again.
      </p>
      <div className="flex flex-wrap items-center gap-3">
        <Button variant="primary" onClick={() => again.mutate(rejected)} disabled={again.isPending}>
          {again.isPending
            ? "Starting the import…"
            : `Import again allowing ${rejected === 1 ? "this bad row" : `these ${formatCount(rejected)} bad rows`}`}
        </Button>
        {again.error && (
          <Alert tone="error" inline>
            Could not start it: {again.error.message}
            {again.error instanceof ApiError && again.error.status === 404
              ? " The uploaded file is kept a day after a failed import; upload it again from New import."
              : ""}
          </Alert>
        )}
      </div>
    </div>
  );
}
