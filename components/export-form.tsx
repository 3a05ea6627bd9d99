"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState, type FormEvent } from "react";
import { ApiError, createExport, jobKeys, type ExportForm as ExportBody, type JobDto } from "@/lib/client/api";
import { formatTime } from "@/lib/client/format";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { fieldClass as field, Select } from "./ui/select";

export function ExportForm() {
  const qc = useQueryClient();
  const [created, setCreated] = useState<JobDto | null>(null);
  const [later, setLater] = useState(false);
  const mutation = useMutation({
    mutationFn: ({ body, key }: { body: ExportBody; key: string }) => createExport(body, key),
    onSuccess: (job) => {
      setCreated(job);
      void qc.invalidateQueries({ queryKey: jobKeys.lists() });
    },
  });

  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const from = String(data.get("from") ?? "");
    const to = String(data.get("to") ?? "");
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
  const fieldError = (path: string) => error?.fields.find((f) => f.path === path)?.message;

  return (
    <form
      onSubmit={onSubmit}
      aria-label="Request an export"
      className="rounded-lg border border-slate-200 bg-white p-5 shadow-sm"
    >
      <h2 className="mb-4 text-lg font-semibold">Request an export</h2>
      <div className="grid grid-cols-2 gap-4 md:grid-cols-5">
        <Select
          label="Dataset"
          name="dataset"
          defaultValue="orders"
          options={[
            ["customers", "Customers"],
            ["orders", "Orders"],
            ["events", "Events"],
          ]}
        />
        <Select
          label="Format"
          name="format"
          defaultValue="csv"
          options={[
            ["csv", "CSV"],
            ["jsonl", "JSON Lines"],
          ]}
        />
        <Select
          label="Compression"
          name="compression"
          defaultValue="none"
          options={[
            ["none", "None"],
            ["gzip", "gzip"],
          ]}
        />
        <label className="text-sm font-medium">
          From
          <input type="date" name="from" className={field} aria-invalid={Boolean(fieldError("filter.from"))} />
          {fieldError("filter.from") && <span className="text-xs text-red-700">{fieldError("filter.from")}</span>}
        </label>
        <label className="text-sm font-medium">
          To (exclusive)
          <input type="date" name="to" className={field} aria-invalid={Boolean(fieldError("filter.to"))} />
          {fieldError("filter.to") && <span className="text-xs text-red-700">{fieldError("filter.to")}</span>}
        </label>
      </div>
      <label className="mt-3 flex items-center gap-2 text-sm">
        <input type="checkbox" name="csvSafe" defaultChecked />
        Spreadsheet-safe CSV: cells that start with = + - @ get a leading apostrophe, so a spreadsheet never runs them
      </label>
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
        <Button type="submit" variant="primary" size="md" disabled={mutation.isPending}>
          {mutation.isPending ? "Requesting…" : later ? "Schedule export" : "Request export"}
        </Button>
        {error && (
          <Alert tone="error" inline>
            {error.message}
          </Alert>
        )}
        {created && !error && (
          <Alert tone="success" inline>
            {created.status === "scheduled" ? `Export scheduled for ${formatTime(created.runAt)}.` : "Export queued."}{" "}
            <Link className="underline" href={`/jobs/${created.id}`}>
              Follow it
            </Link>
          </Alert>
        )}
      </div>
    </form>
  );
}
