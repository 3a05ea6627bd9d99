"use client";

import { useInfiniteQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState, type FormEvent } from "react";
import {
  fetchOpsJobs,
  jobKeys,
  planJobAction,
  runJobAction,
  type JobAction,
  type OpsJobFilters,
} from "@/lib/client/api";
import { formatCount, formatTime } from "@/lib/client/format";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";
import { LoadMore } from "./ui/load-more";
import { fieldClass, QueueSelect, Select } from "./ui/select";
import { useJobEventsRefetch } from "@/lib/client/live";
import { StatusBadge } from "./ui/status-badge";

const STATUSES = ["scheduled", "queued", "running", "retrying", "succeeded", "failed", "cancelled", "expired"];
/** Jobs per request while a bulk action runs, so its progress shows. */
const CHUNK = 100;
const ACTIONS: { action: JobAction; label: string }[] = [
  { action: "cancel", label: "Cancel" },
  { action: "replay", label: "Replay" },
  { action: "retry_now", label: "Retry now" },
  { action: "discard", label: "Discard" },
];

export function JobsExplorer({
  isAdmin,
  types,
  initial = {},
}: {
  isAdmin: boolean;
  types: string[];
  /** Filters from the page's URL (?status=&type=&queue=&tenant=&q=), e.g. a link from the overview. */
  initial?: OpsJobFilters;
}) {
  const qc = useQueryClient();
  const { confirm, dialog } = useConfirm();
  const [filters, setFilters] = useState<OpsJobFilters>(initial);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [allMatching, setAllMatching] = useState(false);
  const [result, setResult] = useState<string | null>(null);
  const queryKey = ["ops-jobs", filters];
  const jobs = useInfiniteQuery({
    queryKey,
    queryFn: ({ pageParam }) => fetchOpsJobs(filters, pageParam || undefined),
    initialPageParam: "",
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  // Rows follow the tenant's job events.
  useJobEventsRefetch(queryKey);
  const [progress, setProgress] = useState<{ done: number; total: number; label: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);
  const rows = jobs.data?.pages.flatMap((p) => p.jobs) ?? [];
  const tenantSlugs: Record<string, string> = Object.assign({}, ...(jobs.data?.pages.map((p) => p.tenants) ?? []));
  const onFilter = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const next: OpsJobFilters = {};
    for (const k of ["status", "type", "queue", "tenant", "q", "from", "to"] as const) {
      const v = String(f.get(k) ?? "").trim();
      if (v) next[k] = k === "from" || k === "to" ? new Date(v).toISOString() : v;
    }
    setFilters(next);
    setSelected(new Set());
    setAllMatching(false);
  };
  // Count first (a dry run), confirm that count, then act in chunks of ids — each
  // still constrained by the filter — so a long action shows its progress.
  const run = async (action: JobAction, label: string) => {
    setResult(null);
    setActionError(null);
    setBusy(true);
    const scope = allMatching ? { filter: filters } : { ids: [...selected] };
    let affected = 0;
    let sent = 0;
    try {
      const plan = await planJobAction({ action, ...scope });
      const what = allMatching
        ? `${plan.moreThanLimit ? "more than " : ""}${formatCount(plan.matched)} jobs matching this filter`
        : `${formatCount(plan.matched)} selected jobs`;
      if (plan.applicable === 0) {
        setResult(`${label}: it applies to none of the ${what}`);
        return;
      }
      const extra = plan.moreThanLimit ? " (the oldest 10,000)" : "";
      const ok = await confirm({
        title: `${label} ${formatCount(plan.applicable)} jobs?`,
        message: `${label} ${formatCount(plan.applicable)} of ${what}${extra}?`,
        confirmLabel: `${label} ${formatCount(plan.applicable)}`,
        variant: action === "cancel" || action === "discard" ? "danger" : "primary",
      });
      if (!ok) return;
      setProgress({ done: 0, total: plan.applicable, label });
      for (let i = 0; i < plan.ids.length; i += CHUNK) {
        const r = await runJobAction({
          action,
          ids: plan.ids.slice(i, i + CHUNK),
          ...(allMatching ? { filter: filters } : {}),
        });
        affected += r.affected;
        sent = Math.min(i + CHUNK, plan.ids.length);
        setProgress({ done: Math.min(i + CHUNK, plan.ids.length), total: plan.applicable, label });
      }
      setResult(`${label}: ${formatCount(affected)} of ${formatCount(plan.applicable)} jobs`);
      setSelected(new Set());
      setAllMatching(false);
    } catch (err) {
      const partly = sent ? ` — ${formatCount(affected)} jobs were already done (${formatCount(sent)} sent)` : "";
      setActionError(`${(err as Error).message}${partly}`);
    } finally {
      setBusy(false);
      setProgress(null);
      void qc.invalidateQueries({ queryKey: ["ops-jobs"] });
      void qc.invalidateQueries({ queryKey: jobKeys.all });
    }
  };
  const toggle = (id: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const input = fieldClass;

  return (
    <div className="space-y-4">
      <form
        onSubmit={onFilter}
        aria-label="Filter jobs"
        className="grid gap-3 rounded-lg border border-slate-200 bg-white p-4 shadow-sm md:grid-cols-4"
      >
        <Select label="Status" name="status" options={STATUSES} any="any" defaultValue={initial.status ?? ""} />
        <Select label="Type" name="type" options={types} any="any" defaultValue={initial.type ?? ""} />
        <QueueSelect label="Queue" name="queue" any="any" defaultValue={initial.queue ?? ""} />
        {isAdmin && (
          <label className="text-sm font-medium">
            Tenant
            <input name="tenant" placeholder="slug or id" className={input} defaultValue={initial.tenant} />
          </label>
        )}
        <label className="text-sm font-medium md:col-span-2">
          Search input and errors
          <input name="q" placeholder="text" className={input} defaultValue={initial.q} />
        </label>
        <label className="text-sm font-medium">
          Created from
          <input name="from" type="datetime-local" className={input} />
        </label>
        <label className="text-sm font-medium">
          Created before
          <input name="to" type="datetime-local" className={input} />
        </label>
        <Button type="submit" variant="primary" size="md" className="self-end">
          Apply filter
        </Button>
      </form>
      {dialog}

      <div className="flex flex-wrap items-center gap-3 text-sm">
        <label className="flex items-center gap-2">
          <input type="checkbox" checked={allMatching} onChange={(e) => setAllMatching(e.target.checked)} />
          All jobs matching this filter
        </label>
        <span className="text-slate-500">{allMatching ? "" : `${selected.size} selected`}</span>
        {ACTIONS.map(({ action, label }) => (
          <Button
            key={action}
            disabled={busy || (!allMatching && selected.size === 0)}
            onClick={() => void run(action, label)}
          >
            {label}
          </Button>
        ))}
        {progress && (
          <span role="status" className="flex items-center gap-2 text-slate-600">
            {progress.label}: {formatCount(progress.done)} of {formatCount(progress.total)}
            <progress
              className="h-2 w-40"
              aria-label={`${progress.label} progress`}
              max={progress.total}
              value={progress.done}
            />
          </span>
        )}
        {result && !progress && (
          <Alert tone={/applies to none/.test(result) ? "neutral" : "success"} inline testId="action-result">
            {result}
          </Alert>
        )}
        {(actionError || jobs.error) && (
          <Alert tone="error" inline>
            {actionError ?? jobs.error?.message}
          </Alert>
        )}
      </div>

      <table className="w-full rounded-lg border border-slate-200 bg-white text-left text-sm shadow-sm">
        <thead className="bg-slate-50 text-xs uppercase text-slate-500">
          <tr>
            <th className="px-3 py-2" />
            <th className="px-3 py-2">Job</th>
            {isAdmin && <th className="px-3 py-2">Tenant</th>}
            <th className="px-3 py-2">Status</th>
            <th className="px-3 py-2">Created</th>
            <th className="px-3 py-2">Attempts</th>
            <th className="px-3 py-2">Error</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((j) => (
            <tr key={j.id} data-testid="ops-job" className="border-t border-slate-100">
              <td className="px-3 py-2">
                <input
                  type="checkbox"
                  aria-label={`Select job ${j.id}`}
                  checked={allMatching || selected.has(j.id)}
                  disabled={allMatching}
                  onChange={() => toggle(j.id)}
                />
              </td>
              <td className="px-3 py-2">
                <Link href={`/jobs/${j.id}`} className="text-indigo-700 underline">
                  {j.type}
                </Link>{" "}
                <span className="text-xs text-slate-500">{j.queue}</span>
              </td>
              {isAdmin && (
                <td className="px-3 py-2" data-testid="ops-job-tenant">
                  {tenantSlugs[j.tenantId] ?? j.tenantId}
                </td>
              )}
              <td className="px-3 py-2">
                <StatusBadge status={j.status} />
              </td>
              <td className="px-3 py-2">{formatTime(j.createdAt)}</td>
              <td className="px-3 py-2">
                {j.attempts}/{j.maxAttempts}
              </td>
              <td className="max-w-sm truncate px-3 py-2 text-xs text-slate-600" title={j.error?.message ?? ""}>
                {j.error?.message ?? ""}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 && !jobs.isPending && <p className="text-sm text-slate-500">No jobs match.</p>}
      <LoadMore query={jobs} />
    </div>
  );
}
