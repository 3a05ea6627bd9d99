"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useEffect, useRef, useState } from "react";
import { ApiError } from "@/lib/client/api";
import { formatBytes, formatCount, formatDuration, rateAndEta } from "@/lib/client/format";
import {
  currentStage,
  fetchImport,
  importKeys,
  importName,
  type ImportDto,
  type ImportStageDto,
} from "@/lib/client/imports";
import { useJobEventsWhere } from "@/lib/client/live";
import { isTerminal } from "@/lib/jobs/dto";
import { Alert } from "./ui/alert";
import { ProgressBar } from "./ui/progress-bar";
import { StatusBadge } from "./ui/status-badge";
import { Time } from "./ui/time";
import { BadRows, CancelImport, Counts, ImportAgain } from "./import-outcome";
import { FailureText } from "./failure-notice";
import { PauseBadge, PauseNotice } from "./pause-notice";

/** What each stage does, in a line. */
const STAGE_HELP: Record<string, string> = {
  scan: "Checks the file: size, UTF-8, quoting, the header",
  parse: "Checks every row; bad rows go to the errors file",
  chunk: "Splits the good rows into chunks",
  load: "Copies the chunks into a staging table",
  commit: "Moves the rows into the table, in one transaction",
};

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** An amount in a stage's unit: bytes as sizes, anything else counted. */
function amount(n: number, unit: string | null): string {
  return unit === "bytes" ? formatBytes(n) : `${formatCount(n)} ${unit ?? "items"}`;
}

/**
 * One import, live: its five stages (status, progress, rate and time left,
 * attempts, error), where it stands, its result counts, the first bad rows and
 * the errors file. Refetched when an event of its job or its stages' jobs
 * arrives on the tenant's stream, and every second while that stream is down.
 */
export function ImportTimeline({ id, canOperate = false }: { id: string; canOperate?: boolean }) {
  const qc = useQueryClient();
  const [streamOpen, setStreamOpen] = useState(false);
  const query = useQuery({
    queryKey: importKeys.detail(id),
    queryFn: () => fetchImport(id),
    retry: (n, err) => !(err instanceof ApiError && err.status < 500) && n < 2,
    refetchInterval: (q) => (q.state.data && isTerminal(q.state.data.job.status) ? false : streamOpen ? 5_000 : 1_000),
  });
  const imp = query.data;
  const open = !imp || !isTerminal(imp.job.status);
  // The stage jobs' ids (and the import's): events of these, or of an import stage not seen yet, mean a refetch.
  const known = new Set([id, ...(imp?.stages.flatMap((s) => (s.jobId ? [s.jobId] : [])) ?? [])]);
  const live = useJobEventsWhere(
    (e) => known.has(e.jobId) || e.type.startsWith("import_"),
    // The list below follows the imports' own events (components/import-list.tsx).
    () => void qc.invalidateQueries({ queryKey: importKeys.detail(id) }),
    { enabled: open },
  );
  useEffect(() => setStreamOpen(live), [live]);

  // The import just started, or was picked from the list: its heading takes the focus (and scrolls into view).
  const heading = useRef<HTMLHeadingElement>(null);
  const focused = useRef(false);
  useEffect(() => {
    if (!imp || focused.current) return;
    focused.current = true;
    heading.current?.focus();
  }, [imp]);

  if (query.isPending) {
    return (
      <p role="status" className="text-sm text-slate-500">
        Loading the import…
      </p>
    );
  }
  if (query.isError) {
    return (
      <Alert tone="error" testId="import-error">
        {query.error instanceof ApiError && query.error.status === 404
          ? "That import was not found."
          : `Could not load the import: ${query.error.message}`}
      </Alert>
    );
  }
  const data = query.data;
  const job = data.job;
  const at = currentStage(data);

  return (
    <section
      aria-labelledby="import-title"
      data-testid="import-timeline"
      data-job-id={job.id}
      data-status={job.status}
      className="space-y-4 rounded-lg border border-slate-200 bg-white p-4 shadow-sm sm:p-5"
    >
      <div className="flex flex-wrap items-center gap-3">
        <h2 id="import-title" ref={heading} tabIndex={-1} className="text-lg font-semibold focus:outline-none">
          {importName(data.request)} import
        </h2>
        <StatusBadge status={job.status} testId="import-status" />
        <PauseBadge pause={job.pause} type={job.type} />
        <span className="text-sm text-slate-600" data-testid="import-stage">
          {stageSummary(data, at)}
        </span>
        <div className="flex w-full flex-wrap items-center gap-3 sm:ml-auto sm:w-auto">
          <Link href={`/jobs/${job.id}`} className="text-sm text-indigo-700 underline">
            Job page
          </Link>
          {!isTerminal(job.status) && <CancelImport job={job} />}
        </div>
      </div>
      <p className="-mt-2 text-sm text-slate-600">
        {job.requestedBy ? `Requested by ${job.requestedBy} ` : "Requested "}
        <Time iso={job.createdAt} />
        {data.file && (
          <>
            {" "}
            · {formatBytes(data.file.size)}, {formatCount(data.file.rows)} rows, columns {data.file.columns.join(", ")}
          </>
        )}
        {data.request.maxBadRows > 0 && <> · up to {formatCount(data.request.maxBadRows)} bad rows allowed</>}
      </p>
      <PauseNotice pause={job.pause} canOperate={canOperate} type={job.type} />
      {/* Screen readers hear a stage start or end, not every progress tick. */}
      <p role="status" aria-live="polite" className="sr-only">
        {`${stageSummary(data, at)}: ${at.stage.name} ${at.stage.status}`}
      </p>

      <ol aria-label="Stages" className="space-y-3">
        {data.stages.map((stage, i) => (
          <StageRow key={stage.name} stage={stage} index={i} of={data.stages.length} />
        ))}
      </ol>

      {job.status === "failed" && job.error && (
        <Alert tone="error" title="The import failed" testId="import-outcome">
          <FailureText error={job.error} final canOperate={false} extra="Nothing was written to the table." />
        </Alert>
      )}
      <ImportAgain imp={data} hrefOf={(jobId) => `/imports?id=${jobId}`} />
      {job.status === "cancelled" && (
        <Alert
          tone="neutral"
          title={job.cancelRequested?.by ? `Cancelled by ${job.cancelRequested.by}` : "Cancelled"}
          testId="import-outcome"
        >
          {job.cancelRequested?.reason ? `${job.cancelRequested.reason}. ` : ""}Nothing was written to the table.
        </Alert>
      )}
      {job.status === "succeeded" && <Counts counts={data.counts} mode={data.request.mode} />}
      <BadRows imp={data} />
    </section>
  );
}

function stageSummary(imp: ImportDto, at: ReturnType<typeof currentStage>): string {
  const { status } = imp.job;
  const where = `stage ${at.index} of ${at.of} (${at.stage.name})`;
  if (status === "succeeded") return `All ${at.of} stages done`;
  if (status === "failed") return `Failed in ${where}`;
  if (status === "cancelled") return `Cancelled in ${where}`;
  if (status === "expired") return "Expired before it started";
  if (imp.job.pause) return `Held by a pause at stage ${at.index} of ${at.of} (${at.stage.name})`;
  if (status === "scheduled" || (status === "queued" && at.index === 1 && at.stage.status === "pending")) {
    return `Waiting to start · ${at.of} stages`;
  }
  return `Stage ${at.index} of ${at.of}: ${at.stage.name}`;
}

/** One stage: its status, a bar with done/total, rate and time left while it runs, attempts, its error. */
function StageRow({ stage, index, of }: { stage: ImportStageDto; index: number; of: number }) {
  const running = stage.status === "running";
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!running) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [running]);
  const { progress } = stage;
  const unit = progress.unit;
  const percent =
    stage.status === "succeeded"
      ? 100
      : progress.total
        ? Math.min(100, Math.floor((progress.done / progress.total) * 100))
        : stage.status === "pending"
          ? 0
          : null;
  const { rate, etaMs } = rateAndEta({ status: stage.status, progress }, now);
  const took =
    stage.startedAt && stage.finishedAt
      ? formatDuration(new Date(stage.finishedAt).getTime() - new Date(stage.startedAt).getTime())
      : null;
  let text: string;
  switch (stage.status) {
    case "pending":
      text = index === 0 ? "Not started" : "Starts when the stage before it is done";
      break;
    case "queued":
    case "scheduled":
      text = "Queued";
      break;
    case "retrying":
      text = `Retrying after attempt ${stage.attempts}`;
      break;
    case "succeeded":
      // A finished stage did its whole total (the load stage's own count may lag its chunks').
      text = `${unit ? amount(Math.max(progress.done, progress.total ?? 0), unit) : "Done"}${took ? ` in ${took}` : ""}`;
      break;
    case "failed":
    case "cancelled":
      text = `${capitalize(stage.status)}${progress.done > 0 ? ` after ${amount(progress.done, unit)}` : ""}`;
      break;
    default: {
      const count =
        progress.total !== null
          ? `${amount(progress.done, unit)} of ${amount(progress.total, unit)}`
          : amount(progress.done, unit);
      const speed =
        rate !== null
          ? ` · ${unit === "bytes" ? `${formatBytes(rate)}/s` : `${formatCount(rate)} ${unit ?? "items"}/s`}`
          : "";
      const eta = etaMs !== null ? ` · ${formatDuration(etaMs)} left` : "";
      text = `${percent !== null ? `${percent}% · ` : ""}${count}${speed}${eta}`;
    }
  }
  return (
    <li
      data-testid="import-stage-row"
      data-stage={stage.name}
      data-status={stage.status}
      className="grid min-w-0 gap-2 rounded border border-slate-100 p-3 md:grid-cols-[12rem_minmax(0,1fr)] md:gap-4"
    >
      <div className="min-w-0">
        <div className="flex flex-wrap items-center gap-2">
          <span className="font-medium">
            {index + 1}. {capitalize(stage.name)}
            <span className="sr-only">{`, stage ${index + 1} of ${of}`}</span>
          </span>
          <StatusBadge status={stage.status} testId="stage-status" />
        </div>
        <p className="mt-1 text-xs text-slate-500">{STAGE_HELP[stage.name] ?? ""}</p>
      </div>
      <div className="min-w-0 space-y-1">
        <ProgressBar
          percent={percent}
          label={`${capitalize(stage.name)} progress`}
          tone={stage.status === "failed" ? "failed" : stage.status === "cancelled" ? "stopped" : "active"}
        />
        <p className="text-xs text-slate-600" data-testid="stage-text">
          {text}
          {stage.attempts > 1 && ` · ${stage.attempts} attempts`}
          {stage.attempts === 1 && stage.status !== "pending" && " · 1 attempt"}
        </p>
        {progress.message && stage.status !== "failed" && stage.status !== "pending" && (
          <p className="text-xs text-slate-500" data-testid="stage-message">
            {progress.message}
          </p>
        )}
        {stage.error && (
          // A cancel somebody asked for is no error: it reads in the page's own colour.
          <p
            className={`text-sm break-words ${stage.status === "cancelled" ? "text-slate-700" : "text-red-700"}`}
            data-testid="stage-error"
          >
            {stage.error}
          </p>
        )}
      </div>
    </li>
  );
}
