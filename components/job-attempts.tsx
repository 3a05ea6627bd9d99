"use client";

import { useQuery } from "@tanstack/react-query";
import { fetchJobHistory, historyKeys } from "@/lib/client/api";
import { formatDuration, formatTime } from "@/lib/client/format";

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
            <th className="py-1">#</th>
            <th className="py-1">Outcome</th>
            <th className="py-1">Worker</th>
            <th className="py-1">Started</th>
            <th className="py-1">Duration</th>
            <th className="py-1">Error</th>
          </tr>
        </thead>
        <tbody>
          {data.attempts.map((a) => (
            <tr key={a.attempt} data-testid="attempt-row" className="border-t border-slate-100 align-top">
              <td className="py-2">{a.attempt}</td>
              <td className="py-2">{a.outcome}</td>
              <td className="py-2 font-mono text-xs">{a.workerId}</td>
              <td className="py-2">{formatTime(a.startedAt)}</td>
              <td className="py-2">{a.durationMs === null ? "—" : formatDuration(a.durationMs)}</td>
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
