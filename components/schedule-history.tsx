"use client";

import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { formatDuration } from "@/lib/client/format";
import {
  eventLabels,
  eventQuotaLabels,
  fetchScheduleEvents,
  fetchScheduleRuns,
  mergeHistory,
  scheduleKeys,
} from "@/lib/client/schedules";
import { ZonedTime } from "./schedule-time";
import { Alert } from "./ui/alert";
import { LoadMore } from "./ui/load-more";
import { StatusBadge } from "./ui/status-badge";
import { TableBox, td, th, theadClass } from "./ui/table";

/**
 * A schedule's history, newest occurrence first: its runs (status, link to the
 * job) and the occurrences that made none (missed, skipped for an overlap,
 * buffered) or cancelled an older run. Refreshed every two seconds.
 */
export function ScheduleHistory({ id, zone, withSeconds }: { id: string; zone: string; withSeconds: boolean }) {
  const runs = useInfiniteQuery({
    queryKey: scheduleKeys.runs(id),
    queryFn: ({ pageParam }) => fetchScheduleRuns(id, pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: 2_000,
  });
  const events = useQuery({
    queryKey: scheduleKeys.events(id),
    queryFn: () => fetchScheduleEvents(id),
    refetchInterval: 2_000,
  });

  const error = runs.error ?? events.error;
  const entries =
    runs.data && events.data
      ? mergeHistory(
          runs.data.pages.flatMap((p) => p.runs),
          events.data.events,
          !runs.hasNextPage,
        )
      : null;

  return (
    <section aria-labelledby="history-heading" className="rounded-lg border border-slate-200 bg-white shadow-sm">
      <h2 id="history-heading" className="border-b border-slate-200 px-5 py-3 text-lg font-semibold">
        History
      </h2>
      {error ? (
        <Alert tone="error" className="m-5">
          Could not load the history: {error.message}
        </Alert>
      ) : !entries ? (
        <p className="px-5 py-6 text-sm text-slate-600">Loading the history…</p>
      ) : entries.length === 0 ? (
        <p className="px-5 py-6 text-sm text-slate-600">Nothing yet: the first run appears here when it is due.</p>
      ) : (
        <TableBox
          label="The schedule's history, newest first"
          className="rounded-none border-x-0 border-b-0 shadow-none"
        >
          <thead className={theadClass}>
            <tr>
              <th className={th}>Time</th>
              <th className={th}>What happened</th>
              <th className={th}>Job</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) =>
              e.kind === "run" ? (
                <tr
                  key={e.key}
                  data-testid="history-run"
                  data-status={e.run.status}
                  className="border-t border-slate-100"
                >
                  <td className={td}>
                    <ZonedTime iso={e.scheduledFor} zone={zone} withSeconds={withSeconds} />
                  </td>
                  <td className={td}>
                    <StatusBadge status={e.run.status} />
                    {e.run.startedAt && e.run.finishedAt && (
                      <span className="ml-2 text-xs text-slate-600">
                        ran {formatDuration(new Date(e.run.finishedAt).getTime() - new Date(e.run.startedAt).getTime())}
                      </span>
                    )}
                    {e.run.error && e.run.status !== "cancelled" && (
                      <span className="block max-w-md text-xs break-words text-red-700">{e.run.error.message}</span>
                    )}
                    {e.run.status === "cancelled" && (e.run.cancelRequested?.reason ?? e.run.error?.message) && (
                      <span className="block max-w-md text-xs break-words text-slate-600">
                        {e.run.cancelRequested?.reason ?? e.run.error?.message}
                      </span>
                    )}
                  </td>
                  <td className={td}>
                    <Link href={`/jobs/${e.run.id}`} className="text-indigo-700 underline">
                      Open the run
                    </Link>
                  </td>
                </tr>
              ) : (
                <tr
                  key={e.key}
                  data-testid="history-event"
                  data-kind={e.event.kind}
                  className="border-t border-slate-100 bg-slate-50/60"
                >
                  <td className={td}>
                    <ZonedTime iso={e.scheduledFor} zone={zone} withSeconds={withSeconds} />
                  </td>
                  <td className={td}>
                    {eventLabels[e.event.kind]}
                    {e.event.quota && (
                      <span className="block text-xs text-slate-600" data-testid="history-event-quota">
                        Used up: {eventQuotaLabels[e.event.quota]}
                      </span>
                    )}
                  </td>
                  <td className={td}>
                    {e.event.jobId && (
                      <Link href={`/jobs/${e.event.jobId}`} className="text-indigo-700 underline">
                        {e.event.kind === "cancelled_other" ? "The cancelled run" : "Open the run"}
                      </Link>
                    )}
                  </td>
                </tr>
              ),
            )}
          </tbody>
        </TableBox>
      )}
      <div className="px-5 py-3">
        <LoadMore query={runs} />
      </div>
    </section>
  );
}
