"use client";

import { useQuery } from "@tanstack/react-query";
import { fetchJobHistory, historyKeys, type JobDto } from "@/lib/client/api";
import type { JobHistory } from "@/lib/jobs/history";
import { formatDuration, formatTime, zoneLabel } from "@/lib/client/format";
import { failureWords } from "@/lib/client/failures";
import { useDisplayZone } from "@/lib/client/time-zone";
import { TableBox, td, th, theadClass } from "./ui/table";
import { Time } from "./ui/time";

type Attempt = JobHistory["attempts"][number];

/**
 * An attempt's runs folded into one row: a job that fans out (an export's parts, an import's
 * stages) runs once, waits for its children, and runs again when they end — the same attempt,
 * resumed, no retry. The row is the attempt's last run, with how many times it waited.
 */
type AttemptRow = { last: Attempt; first: Attempt; waits: number; durationMs: number | null };

function foldAttempts(attempts: Attempt[]): AttemptRow[] {
  const rows: AttemptRow[] = [];
  for (const a of attempts) {
    const row = rows[rows.length - 1];
    if (row && row.last.attempt === a.attempt) {
      if (row.last.outcome === "waiting") row.waits += 1;
      row.last = a;
      row.durationMs = row.durationMs === null || a.durationMs === null ? null : row.durationMs + a.durationMs;
    } else {
      rows.push({ last: a, first: a, waits: 0, durationMs: a.durationMs });
    }
  }
  return rows;
}

/** An attempt's outcome in words: still waiting for its children, or how it ended after waiting N times. */
function outcomeText(row: AttemptRow, noun: string): string {
  const { outcome } = row.last;
  if (outcome === "waiting") return `waiting for its ${noun}`;
  if (row.waits === 0) return outcome;
  return `${outcome}, after waiting for its ${noun} ${row.waits === 1 ? "once" : `${row.waits} times`}`;
}

/**
 * The status timeline with a fan-out's waits folded: a parent woken when its children end goes
 * running → retrying → running within one attempt; that is a resume, not a retry.
 */
function timelineOf(transitions: JobHistory["transitions"]): { to: string; at: string }[] {
  const out: { to: string; at: string }[] = [];
  transitions.forEach((t, i) => {
    const next = transitions[i + 1];
    const wake = t.to === "retrying" && t.from === "running" && next?.to === "running" && next.attempt === t.attempt;
    if (wake) return;
    const resumed = t.to === "running" && t.from === "retrying" && transitions[i - 1]?.attempt === t.attempt;
    if (resumed) return;
    out.push({ to: t.to, at: t.at });
  });
  return out;
}

/**
 * Every attempt of a job, with its worker, duration, outcome and error; refreshed when the job
 * moves: a status, an attempt, a start or an end. Not on its progress, which changes the job
 * (its `seq`) several times a second while it runs and never an attempt: a refetch per progress
 * event kept a busy machine's browser and server fetching the same history all along an export.
 */
export function JobAttempts({
  job,
  noun = "parts",
  canOperate = false,
}: {
  job: Pick<JobDto, "id" | "status" | "attempts" | "startedAt" | "finishedAt">;
  noun?: string;
  /** Operators read an attempt's error as the worker wrote it; members its plain sentence first. */
  canOperate?: boolean;
}) {
  const zone = useDisplayZone();
  const moved = [job.status, job.attempts, job.startedAt, job.finishedAt];
  const { data } = useQuery({
    queryKey: [...historyKeys.detail(job.id), ...moved],
    queryFn: () => fetchJobHistory(job.id),
  });
  if (!data || data.attempts.length === 0) return null;
  const rows = foldAttempts(data.attempts);
  const timeline = timelineOf(data.transitions);
  return (
    <section aria-label="Attempts" className="rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
      <h2 className="mb-3 font-semibold">Attempts</h2>
      <TableBox label="Attempts of this job" className="shadow-none">
        <thead className={theadClass}>
          <tr>
            <th className={th}>Attempt</th>
            <th className={th}>Outcome</th>
            <th className={th}>Worker</th>
            <th className={th}>Started</th>
            <th className={th}>Duration</th>
            <th className={th}>Error</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => {
            const a = row.last;
            return (
              <tr key={a.attempt} data-testid="attempt-row" className="border-t border-slate-100 align-top">
                <td className={td}>{a.attempt}</td>
                <td className={td} data-testid="attempt-outcome">
                  {outcomeText(row, noun)}
                </td>
                <td className={`${td} font-mono text-xs break-all sm:min-w-40`}>
                  {a.workerId ?? <span title="Shown to operators">—</span>}
                </td>
                <td className={td}>
                  <Time iso={row.first.startedAt} />
                </td>
                <td className={td}>
                  <span title={row.waits > 0 ? `Running time, without the waits for its ${noun}` : undefined}>
                    {row.durationMs === null ? "—" : formatDuration(row.durationMs)}
                  </span>
                </td>
                <td className={`${td} sm:min-w-64`}>
                  {!a.error ? (
                    <span className="text-slate-500">—</span>
                  ) : (
                    <details>
                      {/* A cancel somebody asked for is no error: it reads in the page's own colour. */}
                      <summary
                        className={`cursor-pointer ${a.error.class === "cancelled" ? "text-slate-700" : "text-red-700"}`}
                        data-testid="attempt-error"
                      >
                        {canOperate || a.error.class === "cancelled" ? (
                          <>
                            <span className="font-medium">{a.error.class ?? "error"}</span>: {a.error.message}
                          </>
                        ) : (
                          // A member reads what happened in plain words; the cause opens below.
                          failureWords(a.error.class, false).summary
                        )}
                        {a.error.stack ? <span className="text-xs text-slate-500"> (stack trace)</span> : null}
                      </summary>
                      {!canOperate && a.error.class !== "cancelled" && (
                        <p className="mt-1 text-xs text-slate-600">
                          {a.error.class ?? "error"}: {a.error.message}
                        </p>
                      )}
                      {a.error.stack && (
                        <pre className="mt-1 max-w-xl overflow-x-auto text-xs whitespace-pre-wrap text-slate-600">
                          {a.error.stack}
                        </pre>
                      )}
                    </details>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </TableBox>
      {zone && timeline.length > 0 && (
        <p className="mt-3 text-xs text-slate-500" data-testid="attempts-timeline">
          Timeline ({zoneLabel(zone, timeline[0]!.at)}):{" "}
          {timeline.map((t) => `${t.to} ${formatTime(t.at, zone, "clock")}`).join(" → ")}
        </p>
      )}
    </section>
  );
}
