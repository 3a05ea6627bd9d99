"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import Link from "next/link";
import { useState } from "react";
import { fetchTenants, peopleKeys } from "@/lib/client/accounts";
import { formatCount } from "@/lib/client/format";
import {
  deleteSchedule,
  describeCron,
  fetchSchedules,
  hasSeconds,
  pauseSchedule,
  resumeSchedule,
  scheduleKeys,
  triggerSchedule,
  type RunsResult,
  type ScheduleDto,
} from "@/lib/client/schedules";
import { ZonedTime } from "./schedule-time";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";
import { Select } from "./ui/select";
import { StatusBadge } from "./ui/status-badge";
import { TableBox, td, th, theadClass } from "./ui/table";

/** When a schedule runs, in words when it can be said, with its cron and zone. */
export function ScheduleWhen({ schedule: s }: { schedule: Pick<ScheduleDto, "cron" | "timezone"> }) {
  const words = describeCron(s.cron);
  return (
    <span>
      {words && <span className="block">{words}</span>}
      <code className={words ? "text-xs text-slate-600" : ""}>{s.cron}</code>
      <span className="block text-xs text-slate-600">{s.timezone}</span>
    </span>
  );
}

/** Paused or active, as a badge. */
export function ScheduleState({ paused }: { paused: boolean }) {
  return paused ? (
    <span data-testid="schedule-state" className="rounded bg-amber-100 px-2 py-0.5 text-xs font-medium text-amber-800">
      paused
    </span>
  ) : (
    <span
      data-testid="schedule-state"
      className="rounded bg-emerald-100 px-2 py-0.5 text-xs font-medium text-emerald-800"
    >
      active
    </span>
  );
}

/** What "Run now" did, in words. */
export function triggerText(r: RunsResult): string {
  if (r.runs.length) return `Run started${r.cancelled ? `; ${r.cancelled} open run(s) cancelled` : ""}.`;
  return r.skipped ? "Skipped: a run is still open." : "No run was made.";
}

/**
 * The schedules a principal may see, with their next and last runs. `console`:
 * the operators' view (missed and skipped counts; pause, resume and run now);
 * otherwise members' (also delete). `isAdmin`: every tenant's, with a tenant
 * column and filter.
 */
export function ScheduleList({
  variant = "member",
  isAdmin = false,
}: {
  variant?: "member" | "console";
  isAdmin?: boolean;
}) {
  const qc = useQueryClient();
  const { confirm, dialog } = useConfirm();
  const [tenant, setTenant] = useState<string>("");
  const tenants = useQuery({ queryKey: peopleKeys.tenants, queryFn: fetchTenants, enabled: isAdmin });
  // Next runs move on and last runs change status: look again every few seconds.
  const list = useQuery({
    queryKey: scheduleKeys.list(tenant || null),
    queryFn: () => fetchSchedules(tenant || null),
    refetchInterval: 3_000,
  });
  const [notice, setNotice] = useState<{ name: string; text: string; jobId?: string } | null>(null);
  const refresh = () => void refetchAfterChange(qc, scheduleKeys.all);
  const pause = useMutation({
    mutationFn: (s: ScheduleDto) => (s.paused ? resumeSchedule(s.id) : pauseSchedule(s.id)),
    onSuccess: (s) => {
      setNotice({ name: s.name, text: s.paused ? "Paused: no run starts until it is resumed." : "Resumed." });
      refresh();
    },
  });
  const trigger = useMutation({
    mutationFn: (s: ScheduleDto) => triggerSchedule(s.id).then((r) => ({ s, r })),
    onSuccess: ({ s, r }) => {
      setNotice({ name: s.name, text: triggerText(r), jobId: r.runs[0] });
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (s: ScheduleDto) => deleteSchedule(s.id).then((r) => ({ s, r })),
    onSuccess: ({ s, r }) => {
      setNotice({
        name: s.name,
        text: `Deleted${r.cancelledRuns ? `; ${r.cancelledRuns} waiting run(s) cancelled` : ""}.`,
      });
      refresh();
    },
  });
  const error = pause.error ?? trigger.error ?? remove.error;
  const busy = pause.isPending || trigger.isPending || remove.isPending;
  const isConsole = variant === "console";

  return (
    <section aria-labelledby="schedules-heading" className="rounded-lg border border-slate-200 bg-white shadow-sm">
      {dialog}
      <div className="flex flex-wrap items-end gap-4 border-b border-slate-200 px-5 py-3">
        <h2 id="schedules-heading" className="text-lg font-semibold">
          {isAdmin ? "Every tenant's schedules" : "Schedules"}
        </h2>
        {isAdmin && (
          <Select
            label="Tenant"
            className="ml-auto"
            value={tenant}
            onChange={(e) => setTenant(e.target.value)}
            any="every tenant"
            options={(tenants.data?.tenants ?? []).map((t) => [t.slug, t.name] as const)}
          />
        )}
      </div>
      {(notice || error) && (
        <div className="border-b border-slate-100 px-5 py-2">
          {error ? (
            <Alert tone="error" inline>
              {error.message}
            </Alert>
          ) : (
            notice && (
              <Alert tone="success" inline testId="schedule-notice">
                {notice.name}: {notice.text}{" "}
                {notice.jobId && (
                  <Link href={`/jobs/${notice.jobId}`} className="underline">
                    Follow the run
                  </Link>
                )}
              </Alert>
            )
          )}
        </div>
      )}
      {list.isPending ? (
        <p className="px-5 py-6 text-sm text-slate-600">Loading schedules…</p>
      ) : list.isError ? (
        <Alert tone="error" className="m-5">
          Could not load the schedules: {list.error.message}
        </Alert>
      ) : list.data.schedules.length === 0 ? (
        <p className="px-5 py-6 text-sm text-slate-600">
          No schedules yet.{isConsole ? "" : " Use New schedule to make one: an export that runs by itself."}
        </p>
      ) : (
        <TableBox
          label={isAdmin ? "Every tenant's schedules" : "Schedules"}
          className="rounded-none border-x-0 border-b-0 shadow-none"
        >
          <thead className={theadClass}>
            <tr>
              <th className={th}>Name</th>
              {isAdmin && <th className={th}>Tenant</th>}
              <th className={th}>When</th>
              <th className={th}>Next run</th>
              <th className={th}>Last run</th>
              {isConsole && <th className={th}>Missed · skipped</th>}
              <th className={th}>State</th>
              <th className={th}>
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.schedules.map((s) => (
              <tr key={s.id} data-testid="schedule-row" data-schedule-id={s.id} className="border-t border-slate-100">
                <td className={td}>
                  <Link href={`/schedules/${s.id}`} className="font-medium text-indigo-700 underline">
                    {s.name}
                  </Link>
                  <span className="block text-xs text-slate-600">
                    {s.task} {(s.input as { dataset?: string }).dataset ?? ""}
                  </span>
                </td>
                {isAdmin && <td className={td}>{s.tenant}</td>}
                <td className={td}>
                  <ScheduleWhen schedule={s} />
                </td>
                <td className={td}>
                  {s.nextRunAt ? (
                    <ZonedTime iso={s.nextRunAt} zone={s.timezone} withSeconds={hasSeconds(s.cron)} />
                  ) : (
                    <span className="text-slate-600">{s.paused ? "none while paused" : "none"}</span>
                  )}
                </td>
                <td className={td}>
                  {s.lastRun ? (
                    <span className="flex flex-col items-start gap-1">
                      <Link href={`/jobs/${s.lastRun.id}`} className="text-indigo-700 underline">
                        <ZonedTime iso={s.lastRun.scheduledFor} zone={s.timezone} withSeconds={hasSeconds(s.cron)} />
                      </Link>
                      <StatusBadge status={s.lastRun.status} testId="last-run-status" />
                    </span>
                  ) : (
                    <span className="text-slate-600">not yet</span>
                  )}
                </td>
                {isConsole && (
                  <td className={td} data-testid="schedule-counts">
                    {formatCount(s.missedCount)} · {formatCount(s.overlapSkippedCount)}
                  </td>
                )}
                <td className={td}>
                  <ScheduleState paused={s.paused} />
                </td>
                <td className={td}>
                  <span className="flex flex-wrap justify-end gap-2">
                    <Button
                      variant={s.paused ? "primary" : "warning"}
                      disabled={busy}
                      aria-label={`${s.paused ? "Resume" : "Pause"} ${s.name}`}
                      onClick={() => pause.mutate(s)}
                    >
                      {s.paused ? "Resume" : "Pause"}
                    </Button>
                    <Button disabled={busy} aria-label={`Run ${s.name} now`} onClick={() => trigger.mutate(s)}>
                      Run now
                    </Button>
                    {!isConsole && (
                      <Button
                        variant="danger"
                        disabled={busy}
                        aria-label={`Delete ${s.name}`}
                        onClick={async () => {
                          const ok = await confirm({
                            title: `Delete ${s.name}?`,
                            message:
                              "No run starts from it any more; its waiting runs are cancelled. Finished and running runs are kept. This cannot be undone.",
                            confirmLabel: "Delete schedule",
                            variant: "danger",
                          });
                          if (ok) remove.mutate(s);
                        }}
                      >
                        Delete
                      </Button>
                    )}
                  </span>
                </td>
              </tr>
            ))}
          </tbody>
        </TableBox>
      )}
    </section>
  );
}
