"use client";

/**
 * One row of the jobs explorer: its id, type and what it reads and writes (as
 * its kind says), tenant, status, who asked, when, how long, attempts, error.
 */
import Link from "next/link";
import type { JobDto } from "@/lib/client/api";
import { formatDuration } from "@/lib/client/format";
import { attemptsText, kindOf } from "@/lib/client/kinds/lookup";
import { CopyButton } from "./ui/copy-button";
import { PriorityBadge } from "./ui/priority-badge";
import { StatusBadge } from "./ui/status-badge";
import { td } from "./ui/table";
import { Time } from "./ui/time";
import { shortId } from "@/lib/ids";

/** "events · csv.gz": what a job reads and writes, as its kind says; null when it says nothing. */
export function datasetOf(job: Pick<JobDto, "type" | "input">): string | null {
  return kindOf(job.type)?.entry.summary?.(job) ?? null;
}

/** How long it ran (finished − started), or has been running; null before it started. */
function durationOf(job: JobDto, now: number): string | null {
  if (!job.startedAt) return null;
  const started = new Date(job.startedAt).getTime();
  if (job.finishedAt) return formatDuration(new Date(job.finishedAt).getTime() - started);
  if (job.status === "running") return `running for ${formatDuration(now - started)}`;
  return null;
}

/** Who asked for the job: a person, or what else made it. */
function requesterOf(job: JobDto): string {
  if (job.requestedBy) return job.requestedBy;
  if (job.parentId) return "its parent job";
  if (job.scheduleId || job.scheduledFor) return "a schedule";
  return "—";
}

export function JobRow({
  job: j,
  now,
  tenant,
  checked,
  disabled,
  onToggle,
}: {
  job: JobDto;
  now: number;
  /** The tenant's slug, shown to platform admins; null: no column. */
  tenant: string | null;
  checked: boolean;
  disabled: boolean;
  onToggle: () => void;
}) {
  const dataset = datasetOf(j);
  const duration = durationOf(j, now);
  return (
    <tr data-testid="ops-job" className="border-t border-slate-100">
      <td className={td}>
        <input
          type="checkbox"
          aria-label={`Select job ${j.id}`}
          checked={checked}
          disabled={disabled}
          onChange={onToggle}
        />
      </td>
      <td className={`${td} whitespace-nowrap`}>
        <Link
          href={`/jobs/${j.id}`}
          title={j.id}
          data-testid="ops-job-id"
          className="font-mono text-xs text-indigo-700 underline"
        >
          {shortId(j.id)}
        </Link>{" "}
        <CopyButton text={j.id} label="Copy id" className="ml-1 px-1.5 py-0 text-xs" />
      </td>
      <td className={td} data-testid="ops-job-type">
        <span className="break-words">
          {j.type}
          {dataset ? ` · ${dataset}` : ""}
        </span>
        <span className="block text-xs text-slate-500">
          {j.queue}
          {j.parentId ? " · part" : ""}
        </span>
      </td>
      {tenant !== null && (
        <td className={td} data-testid="ops-job-tenant">
          {tenant}
        </td>
      )}
      <td className={td} data-testid="ops-job-status">
        <span className="flex flex-wrap items-center gap-1">
          <StatusBadge status={j.status} /> <PriorityBadge priority={j.priority} />
        </span>
      </td>
      <td className={`${td} break-words`} data-testid="ops-job-requester">
        {requesterOf(j)}
      </td>
      <td className={td}>
        <Time iso={j.createdAt} />
      </td>
      <td className={td} data-testid="ops-job-duration">
        {duration ?? "—"}
      </td>
      <td className={td}>{attemptsText(j)}</td>
      {/* The whole message, wrapped: never cut off (it is what an operator scans the list for). */}
      <td className={`${td} min-w-48 max-w-sm break-words text-xs text-slate-600`} data-testid="ops-job-error">
        {j.error?.message ?? ""}
      </td>
    </tr>
  );
}
