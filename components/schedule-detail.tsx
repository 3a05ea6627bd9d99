"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useState, type FormEvent, type ReactNode } from "react";
import { ApiError } from "@/lib/client/api";
import { formatCount, formatDuration } from "@/lib/client/format";
import {
  backfillSchedule,
  deleteSchedule,
  fetchSchedule,
  hasSeconds,
  localInputToIso,
  missedRunPolicyLabels,
  overlapPolicyLabels,
  pauseSchedule,
  resumeSchedule,
  scheduleKeys,
  triggerSchedule,
  type OverlapPolicy,
  type ScheduledExportInput,
  type ScheduleDto,
} from "@/lib/client/schedules";
import { ScheduleForm } from "./schedule-form";
import { ScheduleHistory } from "./schedule-history";
import { ScheduleState, ScheduleWhen, triggerText } from "./schedule-list";
import { ZonedTime } from "./schedule-time";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";
import { fieldClass as field, Select } from "./ui/select";
import { StatusBadge } from "./ui/status-badge";
import { Time } from "./ui/time";

const card = "rounded-lg border border-slate-200 bg-white p-5 shadow-sm";

function Row({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="grid grid-cols-3 gap-4 py-2">
      <dt className="text-sm text-slate-600">{label}</dt>
      <dd className="col-span-2 text-sm">{children}</dd>
    </div>
  );
}

/** What a scheduled export exports, in words. */
function describeInput(input: unknown): string {
  const i = input as Partial<ScheduledExportInput>;
  const since = i.filter && "since" in i.filter ? "; only rows since the last run" : "";
  return `${i.dataset ?? "?"} · ${i.format ?? "csv"}${i.compression === "gzip" ? ".gz" : ""}${since}`;
}

/** A schedule's page: its settings and next runs, pause, run now, edit, backfill, delete, and its history, live. */
export function ScheduleDetail({ id }: { id: string }) {
  const qc = useQueryClient();
  const router = useRouter();
  const { confirm, dialog } = useConfirm();
  const [editing, setEditing] = useState(false);
  const [notice, setNotice] = useState<{ text: string; jobId?: string } | null>(null);
  const query = useQuery({
    queryKey: scheduleKeys.detail(id),
    queryFn: () => fetchSchedule(id),
    refetchInterval: 2_000,
  });
  const refresh = () => void refetchAfterChange(qc, scheduleKeys.all);
  const pause = useMutation({
    mutationFn: (s: ScheduleDto) => (s.paused ? resumeSchedule(s.id) : pauseSchedule(s.id)),
    onSuccess: (s) => {
      qc.setQueryData(scheduleKeys.detail(id), s);
      setNotice({ text: s.paused ? "Paused: no run starts until it is resumed." : "Resumed." });
      refresh();
    },
  });
  const trigger = useMutation({
    mutationFn: () => triggerSchedule(id),
    onSuccess: (r) => {
      setNotice({ text: triggerText(r), jobId: r.runs[0] });
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: () => deleteSchedule(id),
    onSuccess: () => {
      qc.removeQueries({ queryKey: scheduleKeys.detail(id) });
      void refetchAfterChange(qc, scheduleKeys.lists());
      router.push("/schedules");
    },
  });

  if (query.isPending) return <p className="text-sm text-slate-600">Loading the schedule…</p>;
  if (query.isError) return <Alert tone="error">Could not load the schedule: {query.error.message}</Alert>;
  const s = query.data;
  const seconds = hasSeconds(s.cron);
  const error = pause.error ?? trigger.error ?? remove.error;
  const busy = pause.isPending || trigger.isPending || remove.isPending;

  return (
    <div className="space-y-6">
      {dialog}
      <div className="flex flex-wrap items-center gap-3">
        <h1 className="text-2xl font-semibold">{s.name}</h1>
        <ScheduleState paused={s.paused} />
        <span className="ml-auto flex flex-wrap gap-2">
          <Button variant={s.paused ? "primary" : "warning"} disabled={busy} onClick={() => pause.mutate(s)}>
            {s.paused ? "Resume" : "Pause"}
          </Button>
          <Button disabled={busy} onClick={() => trigger.mutate()}>
            Run now
          </Button>
          <Button onClick={() => setEditing((e) => !e)} aria-expanded={editing}>
            {editing ? "Close the editor" : "Edit"}
          </Button>
          <Button
            variant="danger"
            disabled={busy}
            onClick={async () => {
              const ok = await confirm({
                title: `Delete ${s.name}?`,
                message:
                  "No run starts from it any more; its waiting runs are cancelled. Finished and running runs are kept. This cannot be undone.",
                confirmLabel: "Delete schedule",
                variant: "danger",
              });
              if (ok) remove.mutate();
            }}
          >
            Delete
          </Button>
        </span>
      </div>
      {error && <Alert tone="error">{error.message}</Alert>}
      {notice && !error && (
        <Alert tone="success" testId="schedule-notice">
          {notice.text}{" "}
          {notice.jobId && (
            <Link href={`/jobs/${notice.jobId}`} className="underline">
              Follow the run
            </Link>
          )}
        </Alert>
      )}

      {editing && (
        <ScheduleForm
          schedule={s}
          onSaved={() => {
            setEditing(false);
            setNotice({ text: "Saved: the next runs are recomputed." });
          }}
        />
      )}

      <div className="grid gap-6 md:grid-cols-2">
        <section aria-label="Settings" className={card}>
          <h2 className="mb-2 font-semibold">Settings</h2>
          <dl className="divide-y divide-slate-100">
            <Row label="When">
              <ScheduleWhen schedule={s} />
            </Row>
            <Row label="Runs">
              {s.task}: {describeInput(s.input)}
            </Row>
            <Row label="Missed runs">
              {missedRunPolicyLabels[s.missedRunPolicy].label}: {missedRunPolicyLabels[s.missedRunPolicy].help}
              {s.missedRunPolicy === "all" &&
                ` Window ${formatDuration(s.catchupWindowSeconds * 1000)}, at most ${formatCount(s.maxCatchup)} runs.`}
            </Row>
            <Row label="Overlap">
              {overlapPolicyLabels[s.overlapPolicy].label}: {overlapPolicyLabels[s.overlapPolicy].help}
            </Row>
            {(s.startAt || s.endAt) && (
              <Row label="Between">
                <Time iso={s.startAt} mode="absolute" /> and <Time iso={s.endAt} mode="absolute" />
              </Row>
            )}
            <Row label="Missed · skipped">
              <span data-testid="schedule-counts">
                {formatCount(s.missedCount)} missed · {formatCount(s.overlapSkippedCount)} skipped for an overlap
                {s.quotaSkippedCount ? ` · ${formatCount(s.quotaSkippedCount)} refused by a quota` : ""}
              </span>
            </Row>
            {s.bufferedFor && (
              <Row label="Buffered">
                <ZonedTime iso={s.bufferedFor} zone={s.timezone} withSeconds={seconds} /> waits for the open run
              </Row>
            )}
            <Row label="Created">
              <Time iso={s.createdAt} mode="absolute" /> by {s.createdBy ?? "a deleted user"}
            </Row>
            {s.paused && (
              <Row label="Paused since">
                <Time iso={s.pausedAt} mode="absolute" />
              </Row>
            )}
          </dl>
        </section>

        <section aria-labelledby="next-runs-heading" className={card}>
          <h2 id="next-runs-heading" className="mb-2 font-semibold">
            {s.paused ? "Next runs once resumed" : "Next runs"}
          </h2>
          {s.nextRuns.length === 0 ? (
            <p className="text-sm text-slate-600">None: the schedule has ended.</p>
          ) : (
            <ol className="space-y-2 text-sm">
              {s.nextRuns.map((r) => (
                <li key={r} data-testid="next-run">
                  <ZonedTime iso={r} zone={s.timezone} withSeconds={seconds} />
                </li>
              ))}
            </ol>
          )}
          {s.lastRun && (
            <p className="mt-4 flex flex-wrap items-center gap-2 text-sm">
              Last run:{" "}
              <Link href={`/jobs/${s.lastRun.id}`} className="text-indigo-700 underline">
                <ZonedTime iso={s.lastRun.scheduledFor} zone={s.timezone} withSeconds={seconds} />
              </Link>
              <StatusBadge status={s.lastRun.status} testId="last-run-status" />
            </p>
          )}
        </section>
      </div>

      <BackfillForm id={s.id} onDone={refresh} />
      <ScheduleHistory id={s.id} zone={s.timezone} withSeconds={seconds} />
    </div>
  );
}

/** Runs for every occurrence in a past range that has none yet, under an overlap rule of its own. */
function BackfillForm({ id, onDone }: { id: string; onDone: () => void }) {
  const mutation = useMutation({
    mutationFn: (body: { from: string; to: string; overlapPolicy: OverlapPolicy }) => backfillSchedule(id, body),
    onSuccess: onDone,
  });
  const [overlap, setOverlap] = useState<OverlapPolicy>("allow");
  const error = mutation.error instanceof ApiError ? mutation.error : null;
  const fieldError = (path: string) => error?.fields.find((f) => f.path === path)?.message;
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    mutation.mutate({
      from: localInputToIso(String(data.get("from") ?? "")),
      to: localInputToIso(String(data.get("to") ?? "")),
      overlapPolicy: overlap,
    });
  };
  const r = mutation.data;
  return (
    <form onSubmit={onSubmit} aria-label="Backfill" className={card}>
      <h2 className="font-semibold">Backfill</h2>
      <p className="mb-3 text-sm text-slate-600">
        A run for every time in the range (your clock) that has none yet, oldest first.
      </p>
      <div className="grid gap-4 md:grid-cols-4">
        <label className="text-sm font-medium">
          From
          <input
            type="datetime-local"
            name="from"
            step={1}
            required
            className={field}
            aria-invalid={Boolean(fieldError("from"))}
            aria-describedby={fieldError("from") ? "backfill-from-error" : undefined}
          />
          {fieldError("from") && (
            <span id="backfill-from-error" className="mt-1 block text-xs font-normal text-red-700">
              {fieldError("from")}
            </span>
          )}
        </label>
        <label className="text-sm font-medium">
          To
          <input
            type="datetime-local"
            name="to"
            step={1}
            required
            className={field}
            aria-invalid={Boolean(fieldError("to"))}
            aria-describedby={fieldError("to") ? "backfill-to-error" : undefined}
          />
          {fieldError("to") && (
            <span id="backfill-to-error" className="mt-1 block text-xs font-normal text-red-700">
              {fieldError("to")}
            </span>
          )}
        </label>
        <div className="md:col-span-2">
          <Select
            label="Overlap"
            value={overlap}
            onChange={(e) => setOverlap(e.target.value as OverlapPolicy)}
            aria-describedby="backfill-overlap-help"
            options={Object.entries(overlapPolicyLabels).map(([v, l]) => [v, l.label] as const)}
          />
          <p id="backfill-overlap-help" className="mt-1 text-xs text-slate-600">
            {overlapPolicyLabels[overlap].help}
          </p>
        </div>
      </div>
      <div className="mt-4 flex flex-wrap items-center gap-4">
        <Button type="submit" disabled={mutation.isPending}>
          {mutation.isPending ? "Backfilling…" : "Backfill"}
        </Button>
        {error && !fieldError("from") && !fieldError("to") && (
          <Alert tone="error" inline>
            {error.message}
          </Alert>
        )}
        {mutation.error && !error && (
          <Alert tone="error" inline>
            {mutation.error.message}
          </Alert>
        )}
        {r && !mutation.error && (
          <Alert tone={r.runs.length ? "success" : "neutral"} inline testId="backfill-result">
            {formatCount(r.occurrences)} time(s) in the range: {formatCount(r.runs.length)} run(s) made
            {r.skipped ? `, ${formatCount(r.skipped)} skipped` : ""}
            {r.quotaSkipped ? `, ${formatCount(r.quotaSkipped)} refused by a quota` : ""}
            {r.cancelled ? `, ${formatCount(r.cancelled)} open run(s) cancelled` : ""}.
          </Alert>
        )}
      </div>
    </form>
  );
}
