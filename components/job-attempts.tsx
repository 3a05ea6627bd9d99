"use client";

import { useQuery } from "@tanstack/react-query";
import { fetchJobHistory, historyKeys } from "@/lib/client/api";
import { formatDuration, formatTime } from "@/lib/client/format";

/** An attempt's outcome in words: a run that fanned out "waiting" for its parts, or "waited" once they ended. */
function outcomeText(outcome: string, later: boolean): string {
  if (outcome === "waiting") return later ? "waited for its parts" : "waiting for its parts";
  return outcome;
}

/** Every attempt of a job, with its worker, duration, outcome and error; refreshed as the job moves. */
export function JobAttempts({ jobId, seq }: { jobId: string; seq: number }) {
  const { data } = useQuery({ queryKey: [...historyKeys.detail(jobId), seq], queryFn: () => fetchJobHistory(jobId) });
  if (!data || data.attempts.length === 0) return null;
  return (
    <section aria-label="Attempts" className="rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
      <h2 className="mb-3 font-semibold">Attempts</h2>
      <table className="w-full text-sm">
        <thead className="text-left text-xs uppercase text-slate-500">
          <tr>
            <th className="py-1 pr-3">Attempt</th>
            <th className="py-1 pr-3">Outcome</th>
            <th className="py-1 pr-3">Worker</th>
            <th className="py-1 pr-3">Started</th>
            <th className="py-1 pr-3">Duration</th>
            <th className="py-1">Error</th>
          </tr>
        </thead>
        <tbody>
          {data.attempts.map((a, i) => (
            <tr
              key={`${a.attempt}.${a.resume}`}
              data-testid="attempt-row"
              className="border-t border-slate-100 align-top"
            >
              <td className="py-2 pr-3">
                {a.attempt}
                {a.resume > 0 && <span className="text-xs text-slate-500"> resumed</span>}
              </td>
              <td className="py-2 pr-3">{outcomeText(a.outcome, i < data.attempts.length - 1)}</td>
              <td className="py-2 pr-3 font-mono text-xs break-all">{a.workerId ?? "—"}</td>
              <td className="py-2 pr-3">{formatTime(a.startedAt)}</td>
              <td className="py-2 pr-3">{a.durationMs === null ? "—" : formatDuration(a.durationMs)}</td>
              <td className="py-2">
                {a.error && (
                  <details>
                    <summary className="cursor-pointer text-red-700">
                      {a.error.class}: {a.error.message}
                    </summary>
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
      </table>
      <p className="mt-3 text-xs text-slate-500">
        Timeline: {data.transitions.map((t) => `${t.to} ${new Date(t.at).toLocaleTimeString()}`).join(" → ")}
      </p>
    </section>
  );
}
