"use client";

import { useQuery } from "@tanstack/react-query";
import { consoleKeys, fetchWorkers } from "@/lib/client/api";
import { formatTime } from "@/lib/client/format";
import { Alert } from "./ui/alert";

const card = "rounded-lg border border-slate-200 bg-white shadow-sm";
const th = "px-4 py-2 font-medium";
const td = "px-4 py-2 align-top";

export function WorkersPanel() {
  const workers = useQuery({ queryKey: consoleKeys.workers, queryFn: fetchWorkers, refetchInterval: 3_000 });
  if (workers.isPending) return <p className="text-sm text-slate-500">Loading…</p>;
  if (workers.isError) return <Alert tone="error">{workers.error.message}</Alert>;
  return (
    <table className={`${card} w-full text-left text-sm`}>
      <thead className="bg-slate-50 text-xs uppercase text-slate-500">
        <tr>
          <th className={th}>Worker</th>
          <th className={th}>State</th>
          <th className={th}>Queues</th>
          <th className={th}>Running</th>
          <th className={th}>Last heartbeat</th>
          <th className={th}>Started</th>
        </tr>
      </thead>
      <tbody>
        {workers.data.workers.map((w) => (
          <tr key={w.id} data-testid="worker" className="border-t border-slate-100">
            <td className={td}>
              <span className="font-mono text-xs">{w.id}</span>
              <p className="text-xs text-slate-500">
                {w.host} · pid {w.pid} · v{w.version}
              </p>
            </td>
            <td className={td} data-testid="worker-state">
              {w.state}
            </td>
            <td className={td}>{w.queues.join(", ")}</td>
            <td className={td}>
              {w.runningJobs} of {w.concurrency}
            </td>
            <td className={td}>{formatTime(w.heartbeatAt)}</td>
            <td className={td}>{formatTime(w.startedAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
