"use client";

/**
 * What a schedule runs — an export: its dataset, format, compression, whether
 * each run takes only the rows since the last, and spreadsheet-safe CSV. The
 * fields are the schedule form's (read from its FormData on submit).
 */
import { useState, type ReactNode } from "react";
import type { ScheduledExportInput } from "@/lib/client/schedules";
import { Select } from "./ui/select";

export function ScheduleExportFields({
  input,
  errorOf,
  describedBy,
}: {
  input: Partial<ScheduledExportInput>;
  errorOf: (path: string) => ReactNode;
  describedBy: (path: string) => string | undefined;
}) {
  const [format, setFormat] = useState<string>(input.format ?? "csv");
  return (
    <fieldset className="space-y-3">
      <legend className="text-sm font-semibold">What it runs: an export</legend>
      <div className="grid grid-cols-2 gap-4 md:grid-cols-3">
        <Select
          label="Dataset"
          name="dataset"
          defaultValue={input.dataset ?? "orders"}
          aria-describedby={describedBy("input.dataset")}
          options={[
            ["customers", "Customers"],
            ["orders", "Orders"],
            ["events", "Events"],
          ]}
        />
        <Select
          label="Format"
          name="format"
          defaultValue={input.format ?? "csv"}
          onChange={(e) => setFormat(e.target.value)}
          aria-describedby={describedBy("input.format")}
          options={[
            ["csv", "CSV"],
            ["jsonl", "JSON Lines"],
          ]}
        />
        <Select
          label="Compression"
          name="compression"
          defaultValue={input.compression ?? "none"}
          aria-describedby={describedBy("input.compression")}
          options={[
            ["none", "None"],
            ["gzip", "gzip"],
          ]}
        />
      </div>
      {errorOf("input.dataset")}
      {errorOf("input.format")}
      {errorOf("input.compression")}
      <label className="flex items-center gap-2 text-sm">
        <input type="checkbox" name="sinceLastRun" defaultChecked={Boolean(input.filter && "since" in input.filter)} />
        Only rows since the last run (each run exports the rows from the previous run&apos;s time to its own)
      </label>
      {/* CSV only, as on the export form. */}
      {format === "csv" && (
        <label className="flex items-center gap-2 text-sm">
          <input type="checkbox" name="csvSafe" defaultChecked={input.csvSafe ?? true} />
          Spreadsheet-safe CSV (cells that start with = + - @ get a leading apostrophe)
        </label>
      )}
    </fieldset>
  );
}
