"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import Link from "next/link";
import { useEffect, useId, useRef, useState, useSyncExternalStore, type FormEvent } from "react";
import { ApiError } from "@/lib/client/api";
import {
  createSchedule,
  describeCron,
  formatInZone,
  hasSeconds,
  missedRunPolicyLabels,
  overlapPolicyLabels,
  presetCron,
  presetOf,
  previewRuns,
  scheduleKeys,
  timeZones,
  updateSchedule,
  WEEKDAYS,
  type MissedRunPolicy,
  type OverlapPolicy,
  type Preset,
  type PresetValues,
  type ScheduleBody,
  type ScheduledExportInput,
  type ScheduleDto,
} from "@/lib/client/schedules";
import { ScheduleExportFields } from "./schedule-export-fields";
import { useViewerZone } from "./schedule-time";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { fieldClass as field, Select } from "./ui/select";

const never = () => () => {};
let zoneList: string[] | null = null;
/** The browser's zones, once (null on the server: its list may not be the browser's). */
const useZones = () =>
  useSyncExternalStore(
    never,
    () => (zoneList ??= timeZones()),
    () => null,
  );

/** The current time, ticking each second once mounted (null on the server). */
function useNow(): Date | null {
  const [now, setNow] = useState<Date | null>(null);
  useEffect(() => {
    setNow(new Date());
    const t = setInterval(() => setNow(new Date()), 1_000);
    return () => clearInterval(t);
  }, []);
  return now;
}

/** The paths this form shows next to a field; an error naming another is shown above the button. */
const SHOWN = [
  "name",
  "cron",
  "timezone",
  "missedRunPolicy",
  "overlapPolicy",
  "catchupWindowSeconds",
  "maxCatchup",
  "input.dataset",
  "input.format",
  "input.compression",
];

/**
 * Creates a schedule, or edits one (`schedule`): name, when (presets or raw
 * cron) in a time zone with a live preview of the next five runs, the export it
 * runs, and its missed-run and overlap policies.
 */
/**
 * `closeHref`: a new schedule's form opened from the list (`/schedules?new=1`): it takes the focus
 * (its Name) when it opens and has a link that closes it.
 */
export function ScheduleForm({
  schedule,
  onSaved,
  closeHref,
}: {
  schedule?: ScheduleDto;
  onSaved?: (s: ScheduleDto) => void;
  closeHref?: string;
}) {
  const nameRef = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (closeHref) nameRef.current?.focus();
    // Once, when the form opens (closeHref does not change while it is open).
  }, []);
  const qc = useQueryClient();
  const id = useId();
  const initial = presetOf(schedule?.cron ?? "0 9 * * *");
  const input = (schedule?.input ?? {}) as Partial<ScheduledExportInput>;
  const [preset, setPreset] = useState<Preset>(initial.preset);
  const [values, setValues] = useState<PresetValues>(initial.values);
  const [zone, setZone] = useState<string | null>(schedule?.timezone ?? null);
  const [missed, setMissed] = useState<MissedRunPolicy>(schedule?.missedRunPolicy ?? "once");
  const [overlap, setOverlap] = useState<OverlapPolicy>(schedule?.overlapPolicy ?? "skip");
  const viewer = useViewerZone();
  const zones = useZones();
  const now = useNow();
  const timezone = zone ?? viewer ?? "UTC";
  const cron = presetCron(preset, values);
  const preview = now ? previewRuns(cron, timezone, now) : null;
  const [saved, setSaved] = useState<ScheduleDto | null>(null);

  const mutation = useMutation({
    mutationFn: ({ task, ...body }: ScheduleBody) =>
      // A schedule's task is fixed once made: an edit sends the rest.
      schedule ? updateSchedule(schedule.id, body) : createSchedule({ task, ...body }),
    onSuccess: (s) => {
      setSaved(s);
      qc.setQueryData(scheduleKeys.detail(s.id), s);
      void refetchAfterChange(qc, scheduleKeys.all);
      onSaved?.(s);
    },
  });
  const error = mutation.error instanceof ApiError ? mutation.error : null;
  const fieldError = (path: string) => error?.fields.find((f) => f.path === path)?.message;
  const unshown = error && (!error.fields.length || error.fields.some((f) => !SHOWN.includes(f.path)));
  const cronMessage = (preview?.error || null) ?? fieldError("cron");
  const set = (patch: Partial<PresetValues>) => setValues((v) => ({ ...v, ...patch }));

  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const s = (k: string) => String(data.get(k) ?? "");
    const format = s("format");
    const body: ScheduleBody = {
      name: s("name"),
      cron,
      timezone,
      task: "export",
      input: {
        dataset: s("dataset"),
        format,
        compression: s("compression"),
        ...(format === "csv" ? { csvSafe: data.get("csvSafe") === "on" } : {}),
        ...(data.get("sinceLastRun") === "on" ? { filter: { since: "lastRun" as const } } : {}),
      },
      missedRunPolicy: missed,
      overlapPolicy: overlap,
      ...(missed === "all"
        ? { catchupWindowSeconds: Number(s("catchupWindowSeconds")), maxCatchup: Number(s("maxCatchup")) }
        : {}),
    };
    mutation.mutate(body);
  };

  const errorOf = (path: string) => {
    const message = fieldError(path);
    return message ? (
      <span id={`${id}-${path}-error`} className="mt-1 block text-xs font-normal text-red-700">
        {message}
      </span>
    ) : null;
  };
  const describedBy = (path: string) => (fieldError(path) ? `${id}-${path}-error` : undefined);
  const title = schedule ? `Edit ${schedule.name}` : "New schedule";

  return (
    <form
      onSubmit={onSubmit}
      aria-label={schedule ? "Edit the schedule" : "New schedule"}
      className="space-y-5 rounded-lg border border-slate-200 bg-white p-5 shadow-sm"
    >
      <div className="flex flex-wrap items-baseline justify-between gap-3">
        <h2 className="text-lg font-semibold">{title}</h2>
        {closeHref && (
          <Link href={closeHref} scroll={false} className="text-sm text-indigo-700 underline">
            Close the form
          </Link>
        )}
      </div>
      <label className="block max-w-md text-sm font-medium">
        Name
        <input
          ref={nameRef}
          name="name"
          required
          maxLength={200}
          defaultValue={schedule?.name}
          placeholder="e.g. Nightly orders"
          className={field}
          aria-invalid={Boolean(fieldError("name"))}
          aria-describedby={describedBy("name")}
        />
        {errorOf("name")}
      </label>

      <fieldset className="space-y-3">
        <legend className="text-sm font-semibold">When</legend>
        <div className="grid gap-4 md:grid-cols-4">
          <Select
            label="Repeat"
            value={preset}
            onChange={(e) => {
              const next = e.target.value as Preset;
              // Switching to a raw cron starts from what the preset said.
              if (next === "custom" && preset !== "custom") set({ custom: cron });
              setPreset(next);
            }}
            options={[
              ["hourly", "Hourly"],
              ["daily", "Daily"],
              ["weekly", "Weekly"],
              ["custom", "Custom cron"],
            ]}
          />
          {preset === "hourly" && (
            <label className="text-sm font-medium">
              At minute
              <input
                type="number"
                min={0}
                max={59}
                required
                value={values.minute}
                onChange={(e) => set({ minute: Math.min(59, Math.max(0, Number(e.target.value) || 0)) })}
                className={field}
              />
            </label>
          )}
          {preset === "weekly" && (
            <Select
              label="On"
              value={String(values.day)}
              onChange={(e) => set({ day: Number(e.target.value) })}
              options={WEEKDAYS.map((d, i) => [String(i), d] as const)}
            />
          )}
          {(preset === "daily" || preset === "weekly") && (
            <label className="text-sm font-medium">
              At
              <input
                type="time"
                required
                value={values.time}
                onChange={(e) => set({ time: e.target.value || "00:00" })}
                className={field}
              />
            </label>
          )}
          <label className="text-sm font-medium md:col-span-2">
            Cron expression{preset === "custom" ? "" : " (from the preset)"}
            <input
              name="cron"
              value={cron}
              readOnly={preset !== "custom"}
              onChange={(e) => set({ custom: e.target.value })}
              spellCheck={false}
              autoComplete="off"
              placeholder="minute hour day-of-month month day-of-week"
              className={`${field} font-mono ${preset === "custom" ? "" : "bg-slate-50 text-slate-600"}`}
              aria-invalid={Boolean(cronMessage)}
              aria-describedby={`${id}-cron-help${cronMessage ? ` ${id}-cron-error` : ""}`}
            />
            <span id={`${id}-cron-help`} className="mt-1 block text-xs font-normal text-slate-600">
              5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first.
            </span>
            {cronMessage && (
              <span
                id={`${id}-cron-error`}
                data-testid="cron-error"
                className="mt-1 block text-xs font-normal text-red-700"
              >
                {cronMessage}
              </span>
            )}
          </label>
        </div>
        <label className="block max-w-md text-sm font-medium">
          Time zone
          <select
            name="timezone"
            value={timezone}
            onChange={(e) => setZone(e.target.value)}
            className={field}
            aria-invalid={Boolean(fieldError("timezone"))}
            aria-describedby={describedBy("timezone")}
          >
            {/* The browser may name a zone by another of its names (Asia/Calcutta for Asia/Kolkata): keep the chosen one. */}
            {(zones ? (zones.includes(timezone) ? zones : [timezone, ...zones]) : [timezone]).map((z) => (
              <option key={z} value={z}>
                {z}
                {z === viewer ? " (yours)" : ""}
              </option>
            ))}
          </select>
          {errorOf("timezone")}
        </label>
      </fieldset>

      <section aria-label="Preview" className="rounded border border-slate-200 bg-slate-50 p-4 text-sm">
        <h3 className="font-semibold">
          Next five runs{describeCron(cron) ? `: ${describeCron(cron)}` : ""} ({timezone})
        </h3>
        {!preview ? (
          <p className="text-slate-600">Computing…</p>
        ) : preview.error ? (
          <p className="text-slate-700">No runs to show: the cron expression is not valid (see above).</p>
        ) : preview.runs.length === 0 ? (
          <p className="text-slate-700">This expression never runs.</p>
        ) : (
          <ol className="mt-2 space-y-1">
            {preview.runs.map((r) => (
              <li key={r.getTime()} data-testid="preview-run">
                {formatInZone(r, timezone, hasSeconds(cron), now ?? undefined)}
                {viewer && viewer !== timezone && (
                  <span className="text-slate-600">
                    {" "}
                    · {formatInZone(r, viewer, hasSeconds(cron), now ?? undefined)} your time
                  </span>
                )}
              </li>
            ))}
          </ol>
        )}
      </section>

      <ScheduleExportFields input={input} errorOf={errorOf} describedBy={describedBy} />

      <fieldset className="grid gap-4 md:grid-cols-2">
        <legend className="mb-3 text-sm font-semibold">Policies</legend>
        <div>
          <Select
            label="Missed runs"
            name="missedRunPolicy"
            value={missed}
            onChange={(e) => setMissed(e.target.value as MissedRunPolicy)}
            aria-describedby={`${id}-missed-help`}
            options={Object.entries(missedRunPolicyLabels).map(([v, l]) => [v, l.label] as const)}
          />
          <p id={`${id}-missed-help`} className="mt-1 text-xs text-slate-600">
            {missedRunPolicyLabels[missed].help}
          </p>
          {errorOf("missedRunPolicy")}
        </div>
        <div>
          <Select
            label="Overlap"
            name="overlapPolicy"
            value={overlap}
            onChange={(e) => setOverlap(e.target.value as OverlapPolicy)}
            aria-describedby={`${id}-overlap-help`}
            options={Object.entries(overlapPolicyLabels).map(([v, l]) => [v, l.label] as const)}
          />
          <p id={`${id}-overlap-help`} className="mt-1 text-xs text-slate-600">
            {overlapPolicyLabels[overlap].help}
          </p>
          {errorOf("overlapPolicy")}
        </div>
        {missed === "all" && (
          <>
            <label className="text-sm font-medium">
              Catch-up window (seconds)
              <input
                type="number"
                name="catchupWindowSeconds"
                min={0}
                max={31_622_400}
                required
                defaultValue={schedule?.catchupWindowSeconds ?? 86_400}
                className={field}
                aria-invalid={Boolean(fieldError("catchupWindowSeconds"))}
                aria-describedby={describedBy("catchupWindowSeconds")}
              />
              {errorOf("catchupWindowSeconds")}
            </label>
            <label className="text-sm font-medium">
              At most this many catch-up runs
              <input
                type="number"
                name="maxCatchup"
                min={1}
                max={1_000}
                required
                defaultValue={schedule?.maxCatchup ?? 100}
                className={field}
                aria-invalid={Boolean(fieldError("maxCatchup"))}
                aria-describedby={describedBy("maxCatchup")}
              />
              {errorOf("maxCatchup")}
            </label>
          </>
        )}
      </fieldset>

      <div className="flex flex-wrap items-center gap-4">
        <Button type="submit" variant="primary" size="md" disabled={mutation.isPending}>
          {mutation.isPending ? "Saving…" : schedule ? "Save changes" : "Create schedule"}
        </Button>
        {unshown && (
          <Alert tone="error" inline>
            {error.message}
          </Alert>
        )}
        {error && !unshown && (
          <Alert tone="error" inline>
            Check the fields marked above.
          </Alert>
        )}
        {mutation.error && !error && (
          <Alert tone="error" inline>
            {mutation.error.message}
          </Alert>
        )}
        {saved && !mutation.error && !schedule && (
          <Alert tone="success" inline>
            Schedule “{saved.name}” created.{" "}
            <Link className="underline" href={`/schedules/${saved.id}`}>
              Open it
            </Link>
          </Alert>
        )}
      </div>
    </form>
  );
}
