"use client";

import { useQuery } from "@tanstack/react-query";
import { fetchJobHistory, historyKeys, type JobDto } from "@/lib/client/api";
import { formatDuration, formatTime, zoneLabel } from "@/lib/client/format";
import { failureWords } from "@/lib/client/failures";
import { useDisplayZone } from "@/lib/client/time-zone";
import { TableBox, td, th, theadClass } from "./ui/table";
import { Time } from "./ui/time";

/** An attempt's outcome in words: a run that fanned out "waiting" for its parts (stages, chunks), or "waited" once they ended. */
function outcomeText(outcome: string, later: boolean, noun: string): string {
  if (outcome === "waiting") return later ? `waited for its ${noun}` : `waiting for its ${noun}`;
  return outcome;
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
          {data.attempts.map((a, i) => (
            <tr
              key={`${a.attempt}.${a.resume}`}
              data-testid="attempt-row"
              className="border-t border-slate-100 align-top"
            >
              <td className={td}>
                {a.attempt}
                {a.resume > 0 && <span className="text-xs text-slate-500"> resumed</span>}
              </td>
              <td className={td}>{outcomeText(a.outcome, i < data.attempts.length - 1, noun)}</td>
              <td className={`${td} min-w-40 font-mono text-xs break-all`}>
                {a.workerId ?? <span title="Shown to operators">—</span>}
              </td>
              <td className={td}>
                <Time iso={a.startedAt} />
              </td>
              <td className={td}>{a.durationMs === null ? "—" : formatDuration(a.durationMs)}</td>
              <td className={`${td} min-w-64`}>
                {a.error && (
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
          ))}
        </tbody>
      </TableBox>
      {zone && data.transitions.length > 0 && (
        <p className="mt-3 text-xs text-slate-500" data-testid="attempts-timeline">
          Timeline ({zoneLabel(zone, data.transitions[0]!.at)}):{" "}
          {data.transitions.map((t) => `${t.to} ${formatTime(t.at, zone, "clock")}`).join(" → ")}
        </p>
      )}
    </section>
  );
}
