"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import type { JobFilters } from "@/lib/client/api";
import { fetchSchedules, scheduleKeys } from "@/lib/client/schedules";
import { STATE_LABELS, stateLabel } from "@/lib/client/status";
import { Select } from "./ui/select";

/** The datasets an export reads (the form's choices). */
export const EXPORT_DATASETS = [
  ["customers", "Customers"],
  ["orders", "Orders"],
  ["events", "Events"],
] as const;

/** The states a job can be in on the wire (`paused` is shown, never stored). */
const STATUSES = (Object.keys(STATE_LABELS) as (keyof typeof STATE_LABELS)[]).filter((s) => s !== "paused");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The exports list's filters as the URL holds them (shareable; Back undoes one): `status`,
 * `dataset`, `source` (`manual`, `schedule`, or one schedule's id). "Failed only" is `status=failed`.
 * A value the page does not know is dropped, not sent.
 */
export type ExportFilters = { status?: string; dataset?: string; source?: string };

export function parseExportFilters(params: URLSearchParams): ExportFilters {
  const status = params.get("status") ?? "";
  const dataset = params.get("dataset") ?? "";
  const source = params.get("source") ?? "";
  return {
    ...((STATUSES as readonly string[]).includes(status) ? { status } : {}),
    ...(EXPORT_DATASETS.some(([d]) => d === dataset) ? { dataset } : {}),
    ...(source === "manual" || source === "schedule" || UUID.test(source) ? { source } : {}),
  };
}

/** The API's query for these filters (GET /api/v1/jobs). */
export function exportJobFilters(f: ExportFilters, limit: number): JobFilters {
  return {
    type: "export",
    limit,
    ...(f.status ? { status: f.status } : {}),
    ...(f.dataset ? { input: `dataset:${f.dataset}` } : {}),
    ...(f.source === "manual" || f.source === "schedule" ? { source: f.source } : {}),
    ...(f.source && UUID.test(f.source) ? { schedule: f.source } : {}),
  };
}

export const hasFilters = (f: ExportFilters) => Boolean(f.status || f.dataset || f.source);

/** The bar above the list: each change is a new URL (pushed, so Back returns to the last one). */
export function ExportFilterBar({ filters, params }: { filters: ExportFilters; params: URLSearchParams }) {
  const router = useRouter();
  const pathname = usePathname();
  const schedules = useQuery({ queryKey: scheduleKeys.list(null), queryFn: () => fetchSchedules(null) });
  const exportSchedules = (schedules.data?.schedules ?? []).filter((s) => s.task === "export");
  const go = (change: Partial<Record<keyof ExportFilters, string>>) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(change)) {
      if (v) next.set(k, v);
      else next.delete(k);
    }
    const q = next.toString();
    router.push(q ? `${pathname}?${q}` : pathname, { scroll: false });
  };
  const clear = new URLSearchParams(params);
  for (const k of ["status", "dataset", "source"]) clear.delete(k);

  return (
    <form
      aria-label="Filter exports"
      onSubmit={(e) => e.preventDefault()}
      className="flex flex-wrap items-end gap-x-4 gap-y-3 border-b border-slate-200 px-4 py-3 sm:px-5"
    >
      <Select
        label="State"
        name="status"
        value={filters.status ?? ""}
        onChange={(e) => go({ status: e.target.value })}
        any="any state"
        options={STATUSES.map((s) => [s, stateLabel(s)] as const)}
        className="min-w-[9rem]"
      />
      <Select
        label="Dataset"
        name="dataset"
        value={filters.dataset ?? ""}
        onChange={(e) => go({ dataset: e.target.value })}
        any="any dataset"
        options={EXPORT_DATASETS}
        className="min-w-[9rem]"
      />
      <Select
        label="Requested by"
        name="source"
        value={filters.source ?? ""}
        onChange={(e) => go({ source: e.target.value })}
        any="anyone or any schedule"
        options={[
          ["manual", "a person (not a schedule)"],
          ["schedule", "any schedule"],
          ...exportSchedules.map((s) => [s.id, `schedule: ${s.name}`] as const),
          // A shared link to a schedule this list does not hold (deleted, another tenant's): still named.
          ...(filters.source && UUID.test(filters.source) && !exportSchedules.some((s) => s.id === filters.source)
            ? [[filters.source, "a schedule not listed"] as const]
            : []),
        ]}
        className="min-w-[12rem]"
      />
      <label className="flex items-center gap-2 py-1.5 text-sm font-medium">
        <input
          type="checkbox"
          checked={filters.status === "failed"}
          onChange={(e) => go({ status: e.target.checked ? "failed" : "" })}
        />
        Failed only
      </label>
      {hasFilters(filters) && (
        <Link
          href={clear.toString() ? `${pathname}?${clear}` : pathname}
          scroll={false}
          className="py-1.5 text-sm text-indigo-700 underline"
        >
          Clear filters
        </Link>
      )}
    </form>
  );
}
