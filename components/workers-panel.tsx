"use client";

import { useQuery } from "@tanstack/react-query";
import { consoleKeys, fetchWorkers, type WorkerDto } from "@/lib/client/api";
import { describeRestart, isLive, type WorkerPoolDto } from "@/lib/ops/workers";
import { Alert } from "./ui/alert";
import { StatusBadge } from "./ui/status-badge";
import { TableBox, td, th, theadClass } from "./ui/table";
import { Time } from "./ui/time";

/** A worker's state in the console's one palette: live blue, winding down amber, silent amber ringed, dead red. */
const STATE_COLOUR: Record<string, string> = {
  running: "running",
  stopping: "retrying",
  unresponsive: "paused",
  stopped: "cancelled",
  dead: "dead",
};

const STATE_TITLE: Record<string, string> = {
  unresponsive: "Its heartbeat stopped: the reaper declares it dead soon, and its jobs run elsewhere.",
  dead: "Declared dead by the fleet (its heartbeat stopped); its jobs were handed on.",
  stopped: "Stopped cleanly.",
};

function WorkerState({ state }: { state: string }) {
  return (
    <StatusBadge status={STATE_COLOUR[state] ?? state} label={state} title={STATE_TITLE[state]} testId="worker-state" />
  );
}

function WorkerIdentity({ w }: { w: WorkerDto }) {
  const restart = describeRestart(w);
  return (
    <>
      <span className="break-all font-mono text-xs">{w.id}</span>
      <p className="text-xs text-slate-500">
        {w.host} · pid {w.pid} · v{w.version}
      </p>
      {restart && (
        <p className="text-xs text-amber-800" data-testid="worker-restart">
          {restart}
        </p>
      )}
    </>
  );
}

function PoolsTable({ pools }: { pools: WorkerPoolDto[] }) {
  return (
    <TableBox label="Worker pools" testId="worker-pools">
      <thead className={theadClass}>
        <tr>
          <th className={th}>Pool</th>
          <th className={th}>Workers</th>
          <th className={th}>Running</th>
          <th className={th}>Restarts</th>
          <th className={th}>Last exit</th>
          <th className={th}>Newest started</th>
        </tr>
      </thead>
      <tbody>
        {pools.map((p) => (
          <tr key={`${p.host}/${p.queues.join(",")}`} data-testid="worker-pool" className="border-t border-slate-100">
            <td className={td}>
              <span className="font-medium">{p.queues.join(", ")}</span>
              <p className="text-xs text-slate-500">{p.host}</p>
            </td>
            <td className={td}>
              {p.live ? (
                <StatusBadge status="running" label={`${p.live} live`} testId="pool-live" />
              ) : (
                <StatusBadge
                  status="dead"
                  label="none live"
                  testId="pool-live"
                  title="No worker serves these queues now"
                />
              )}
              {p.unresponsive > 0 && <span className="ml-2 text-xs text-amber-800">{p.unresponsive} unresponsive</span>}
              {p.exited > 0 && <span className="ml-2 text-xs text-slate-500">{p.exited} exited</span>}
            </td>
            <td className={td}>
              {p.runningJobs} of {p.concurrency}
            </td>
            <td className={td} data-testid="pool-restarts">
              {describeRestart(p) ?? <span className="text-slate-500">none</span>}
            </td>
            <td className={td}>
              <Time iso={p.lastExitAt} />
            </td>
            <td className={td}>
              <Time iso={p.startedAt} />
            </td>
          </tr>
        ))}
      </tbody>
    </TableBox>
  );
}

/** Workers, one row each: the live ones with their running jobs, or (`ended`) those that stopped or died, with when. */
function WorkersTable({
  workers,
  ended,
  label,
  testId,
}: {
  workers: WorkerDto[];
  ended: boolean;
  label: string;
  testId: string;
}) {
  return (
    <TableBox label={label} testId={testId}>
      <thead className={theadClass}>
        <tr>
          <th className={th}>Worker</th>
          <th className={th}>State</th>
          <th className={th}>Queues</th>
          {!ended && <th className={th}>Running</th>}
          <th className={th}>Started</th>
          <th className={th}>Last heartbeat</th>
          {ended && <th className={th}>Ended</th>}
        </tr>
      </thead>
      <tbody>
        {workers.map((w) => (
          <tr key={w.id} data-testid="worker" className="border-t border-slate-100">
            <td className={td}>
              <WorkerIdentity w={w} />
            </td>
            <td className={td}>
              <WorkerState state={w.state} />
            </td>
            <td className={td}>{w.queues.join(", ")}</td>
            {!ended && (
              <td className={td}>
                {w.runningJobs} of {w.concurrency}
              </td>
            )}
            <td className={td}>
              <Time iso={w.startedAt} />
            </td>
            <td className={td}>
              <Time iso={w.heartbeatAt} />
            </td>
            {ended && (
              <td className={td}>
                <Time iso={w.stoppedAt} />
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </TableBox>
  );
}

/** The worker fleet (platform admins): a line per pool with its restarts, the live workers, then those that ended. */
export function WorkersPanel() {
  const workers = useQuery({ queryKey: consoleKeys.workers, queryFn: fetchWorkers, refetchInterval: 3_000 });
  if (workers.isPending) return <p className="text-sm text-slate-500">Loading…</p>;
  if (workers.isError) return <Alert tone="error">{workers.error.message}</Alert>;
  const { pools } = workers.data;
  if (!pools.length) return <Alert tone="warning">No worker has registered yet: jobs wait until one starts.</Alert>;
  // Unresponsive workers are listed with the live ones: they still hold their jobs until declared dead.
  const live = workers.data.workers.filter((w) => isLive(w.state) || w.state === "unresponsive");
  const exited = workers.data.workers.filter((w) => !isLive(w.state) && w.state !== "unresponsive");
  return (
    <div className="space-y-8">
      <section aria-labelledby="worker-pools-heading" className="space-y-3">
        <h2 id="worker-pools-heading" className="text-lg font-semibold">
          Pools
        </h2>
        <p className="text-sm text-slate-600">
          <code>npm start</code> restarts a worker that exits, with a growing delay while it keeps dying; a restarted
          worker says how many restarts its pool had and how the one before it ended.
        </p>
        <PoolsTable pools={pools} />
      </section>
      <section aria-labelledby="live-workers-heading" className="space-y-3">
        <h2 id="live-workers-heading" className="text-lg font-semibold">
          Live workers ({live.length})
        </h2>
        {live.length ? (
          <WorkersTable workers={live} ended={false} label="Live workers" testId="live-workers" />
        ) : (
          <Alert tone="warning">No live worker: jobs wait until one starts.</Alert>
        )}
      </section>
      {exited.length > 0 && (
        <section aria-labelledby="exited-workers-heading" className="space-y-3">
          <h2 id="exited-workers-heading" className="text-lg font-semibold">
            Stopped and dead workers ({exited.length})
          </h2>
          <WorkersTable workers={exited} ended label="Stopped and dead workers" testId="exited-workers" />
        </section>
      )}
    </div>
  );
}
