"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import Link from "next/link";
import { useEffect, useRef, useState, type FormEvent } from "react";
import {
  ApiError,
  createExport,
  fetchJob,
  jobKeys,
  type ExportForm as ExportBody,
  type JobDto,
} from "@/lib/client/api";
import { localDay, localMidnight, browserZone } from "@/lib/client/format";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { fieldClass as field, Select } from "./ui/select";
import { Time } from "./ui/time";

/** The form's fields as an earlier export had them ("Request again"). */
type Prefill = {
  dataset: string;
  format: string;
  compression: string;
  from: string;
  to: string;
  csvSafe: boolean;
  /** Its window had times of day, which the form's date fields cannot hold. */
  timesOfDay: boolean;
  what: string;
};

const EMPTY: Prefill = {
  dataset: "orders",
  format: "csv",
  compression: "none",
  from: "",
  to: "",
  csvSafe: true,
  timesOfDay: false,
  what: "",
};

function prefillOf(job: JobDto): Prefill {
  const input = job.input as {
    dataset?: string;
    format?: string;
    compression?: string;
    csvSafe?: boolean;
    filter?: { from?: string; to?: string };
  };
  // The form sends a day as the browser's local midnight: the local date of that instant is the day again.
  const day = (iso?: string) => (iso ? localDay(iso).day : "");
  const timed = (iso?: string) => Boolean(iso && !localDay(iso).midnight);
  const format = input.format ?? "csv";
  return {
    dataset: input.dataset ?? EMPTY.dataset,
    format,
    compression: input.compression ?? "none",
    from: day(input.filter?.from),
    to: day(input.filter?.to),
    // The API leaves spreadsheet-safe CSV off unless asked: an export made without it is repeated without it.
    csvSafe: input.csvSafe === true,
    timesOfDay: timed(input.filter?.from) || timed(input.filter?.to),
    what: `${input.dataset ?? "?"} · ${format}${input.compression === "gzip" ? ".gz" : ""}`,
  };
}

/**
 * `again`: an export's job id whose dataset, format, compression, window and CSV safety fill the form.
 * It takes the focus when it opens (New export, Request again); `closeHref` closes it (the list's
 * filters kept), `emptyHref` opens it empty.
 */
export function ExportForm({
  again,
  closeHref = "/exports",
  emptyHref = "/exports?new=1",
}: {
  again?: string;
  closeHref?: string;
  emptyHref?: string;
}) {
  const qc = useQueryClient();
  const formRef = useRef<HTMLFormElement>(null);
  const [created, setCreated] = useState<JobDto | null>(null);
  const [later, setLater] = useState(false);
  // The format picked in this form; until then, the one filled in.
  const [picked, setPicked] = useState<string | null>(null);
  // The member's own tenant's jobs only: another tenant's id answers 404, like one that never existed.
  const source = useQuery({
    queryKey: jobKeys.detail(again ?? ""),
    queryFn: () => fetchJob(again!),
    enabled: Boolean(again),
    retry: (n, err) => !(err instanceof ApiError && err.status < 500) && n < 1,
    staleTime: Infinity,
  });
  const sourceJob = again && source.data?.type === "export" ? source.data : null;
  const notFound =
    Boolean(again) &&
    ((source.error instanceof ApiError && source.error.status === 404) ||
      (source.data !== undefined && source.data.type !== "export"));
  const prefill = sourceJob ? prefillOf(sourceJob) : EMPTY;
  const settled = !again || sourceJob !== null || source.isError || notFound;
  // Once the export to repeat is read (or is not found), the form takes the focus: the next step is there.
  const focused = useRef<string | null>(null);
  useEffect(() => {
    const opened = again ?? "new";
    if (!settled || focused.current === opened) return;
    focused.current = opened;
    formRef.current?.querySelector<HTMLSelectElement>('select[name="dataset"]')?.focus();
  }, [again, settled]);
  useEffect(() => {
    if (!sourceJob) return;
    setLater(false);
    setPicked(null);
  }, [sourceJob]);
  const format = picked ?? prefill.format;
  const mutation = useMutation({
    mutationFn: ({ body, key }: { body: ExportBody; key: string }) => createExport(body, key),
    onSuccess: (job) => {
      setCreated(job);
      void refetchAfterChange(qc, jobKeys.lists());
    },
  });

  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    // A day means its midnight in the browser's zone (stated beside the fields), like every time shown.
    const instant = (k: string) => {
      const v = String(data.get(k) ?? "");
      return v ? (localMidnight(v)?.toISOString() ?? v) : "";
    };
    const from = instant("from");
    const to = instant("to");
    // The browser's clock: a datetime-local value has no zone until it is read here.
    const runAt = later ? String(data.get("runAt") ?? "") : "";
    const body: ExportBody = {
      dataset: String(data.get("dataset")),
      format: String(data.get("format")),
      compression: String(data.get("compression")),
      ...(from || to ? { filter: { ...(from ? { from } : {}), ...(to ? { to } : {}) } } : {}),
      ...(String(data.get("format")) === "csv" ? { csvSafe: data.get("csvSafe") === "on" } : {}),
      ...(runAt ? { runAt: new Date(runAt).toISOString() } : {}),
    };
    // One key per submission: a double click or a retried request creates one export.
    mutation.mutate({ body, key: crypto.randomUUID() });
  };

  const error = mutation.error instanceof ApiError ? mutation.error : null;
  // In the form's words: "filter.from" is the field labelled From.
  const fieldError = (path: string) =>
    error?.fields
      .find((f) => f.path === path)
      ?.message.replace(/filter\.(from|to)/g, (_, k: string) => (k === "from" ? "‘From’" : "‘To’"));

  return (
    <form
      ref={formRef}
      // A new key when the export to repeat arrives: the fields take its values as their defaults.
      key={sourceJob ? `again-${sourceJob.id}` : "empty"}
      onSubmit={onSubmit}
      aria-label="Request an export"
      data-again={sourceJob?.id}
      className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm sm:p-5"
    >
      <div className="mb-4 flex flex-wrap items-baseline justify-between gap-3">
        <h2 className="text-lg font-semibold">Request an export</h2>
        <Link href={closeHref} scroll={false} className="text-sm text-indigo-700 underline">
          Close the form
        </Link>
      </div>
      {again && !settled && (
        <p role="status" className="mb-4 text-sm text-slate-600">
          Reading the export to request again…
        </p>
      )}
      {sourceJob && (
        <Alert tone="info" className="mb-4" testId="again-note">
          Filled in as the export of <Time iso={sourceJob.createdAt} mode="absolute" /> ({prefill.what}) was. Change
          what you need, then request it.
          {prefill.timesOfDay && " Its window had times of day; this form keeps whole days."}{" "}
          <Link href={emptyHref} className="underline">
            Start from an empty form
          </Link>
        </Alert>
      )}
      {notFound && (
        <Alert tone="neutral" className="mb-4" testId="again-note">
          That export was not found. The form is empty.
        </Alert>
      )}
      {again && source.isError && !notFound && (
        <Alert tone="error" className="mb-4">
          Could not read that export: {source.error.message}
        </Alert>
      )}
      <div className="grid grid-cols-1 gap-4 min-[360px]:grid-cols-2 md:grid-cols-5">
        <Select
          label="Dataset"
          name="dataset"
          defaultValue={prefill.dataset}
          options={[
            ["customers", "Customers"],
            ["orders", "Orders"],
            ["events", "Events"],
          ]}
        />
        <Select
          label="Format"
          name="format"
          defaultValue={prefill.format}
          onChange={(e) => setPicked(e.target.value)}
          options={[
            ["csv", "CSV"],
            ["jsonl", "JSON Lines"],
          ]}
        />
        <Select
          label="Compression"
          name="compression"
          defaultValue={prefill.compression}
          options={[
            ["none", "None"],
            ["gzip", "gzip"],
          ]}
        />
        <DateField label="From" name="from" defaultValue={prefill.from} error={fieldError("filter.from")} />
        <DateField label="To (exclusive)" name="to" defaultValue={prefill.to} error={fieldError("filter.to")} />
        <p id="export-dates-zone" className="text-xs text-slate-500 min-[360px]:col-span-2 md:col-span-5">
          From and To are midnight in your time zone
          <ZoneName />.
        </p>
      </div>
      {/* CSV only: JSON Lines quotes every text, and a spreadsheet does not open it. */}
      {format === "csv" && (
        <label className="mt-3 flex items-start gap-2 text-sm">
          <input type="checkbox" name="csvSafe" defaultChecked={prefill.csvSafe} className="mt-1" />
          Spreadsheet-safe CSV: cells that start with = + - @ get a leading apostrophe, so a spreadsheet never runs them
        </label>
      )}
      <div className="mt-3 flex flex-wrap items-end gap-4">
        <label className="flex items-center gap-2 text-sm">
          <input type="checkbox" checked={later} onChange={(e) => setLater(e.target.checked)} />
          Run later
        </label>
        {later && (
          <label className="text-sm font-medium">
            Start at (your clock)
            <input
              type="datetime-local"
              name="runAt"
              step={1}
              required
              className={field}
              aria-invalid={Boolean(fieldError("runAt"))}
              aria-describedby={fieldError("runAt") ? "export-run-at-error" : undefined}
            />
            {fieldError("runAt") && (
              <span id="export-run-at-error" className="block text-xs text-red-700">
                {fieldError("runAt")}
              </span>
            )}
          </label>
        )}
      </div>
      <div className="mt-4 flex flex-wrap items-center gap-4">
        <Button type="submit" variant="primary" size="md" disabled={mutation.isPending || !settled}>
          {mutation.isPending ? "Requesting…" : later ? "Schedule export" : "Request export"}
        </Button>
        {error && (
          <Alert tone="error" inline>
            {error.message}
          </Alert>
        )}
        {created && !error && (
          <Alert tone="success" inline>
            {created.status === "scheduled" ? (
              <>
                Export scheduled for <Time iso={created.runAt} mode="absolute" />.
              </>
            ) : (
              "Export queued."
            )}{" "}
            <Link className="underline" href={`/jobs/${created.id}`}>
              Follow it
            </Link>
          </Alert>
        )}
      </div>
    </form>
  );
}

/** The browser's zone, once hydrated (the server would name its own). */
function ZoneName() {
  const [zone, setZone] = useState<string | null>(null);
  useEffect(() => setZone(browserZone()), []);
  return zone ? <> ({zone})</> : null;
}

/** A date field with its error below it, tied to it (aria-describedby), and the zone note. */
function DateField({
  label,
  name,
  defaultValue,
  error,
}: {
  label: string;
  name: string;
  defaultValue: string;
  error: string | undefined;
}) {
  const errorId = `export-${name}-error`;
  return (
    <div className="min-w-0">
      <label className="text-sm font-medium">
        {label}
        <input
          type="date"
          name={name}
          defaultValue={defaultValue}
          className={field}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? `${errorId} export-dates-zone` : "export-dates-zone"}
        />
      </label>
      {error && (
        <p id={errorId} className="mt-1 text-xs text-red-700">
          ‘{label.replace(" (exclusive)", "")}’ {error}
        </p>
      )}
    </div>
  );
}
