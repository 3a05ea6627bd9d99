"use client";

import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState, type FormEvent } from "react";
import { consoleKeys, fetchAudit, fetchStuckJobs } from "@/lib/client/api";
import { formatTime } from "@/lib/client/format";
import { LoadMore } from "./ui/load-more";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";

const card = "rounded-lg border border-slate-200 bg-white shadow-sm";
const th = "px-4 py-2 font-medium";
const td = "px-4 py-2 align-top";

const KIND_LABEL: Record<string, string> = {
  lease_expired: "lease expired",
  no_heartbeat: "no heartbeat",
  queued_too_long: "queued too long",
  retrying_repeatedly: "retrying again and again",
};

export function StuckJobsPanel() {
  const stuck = useQuery({ queryKey: consoleKeys.stuck, queryFn: fetchStuckJobs, refetchInterval: 5_000 });
  if (stuck.isPending) return <p className="text-sm text-slate-500">Loading…</p>;
  if (stuck.isError) return <Alert tone="error">{stuck.error.message}</Alert>;
  if (stuck.data.jobs.length === 0) return <p className={`${card} p-5 text-sm text-slate-500`}>Nothing is stuck.</p>;
  return (
    <table className={`${card} w-full text-left text-sm`}>
      <thead className="bg-slate-50 text-xs uppercase text-slate-500">
        <tr>
          <th className={th}>Job</th>
          <th className={th}>Why</th>
          <th className={th}>Since</th>
          <th className={th}>What to do</th>
        </tr>
      </thead>
      <tbody>
        {stuck.data.jobs.map((j) => (
          <tr key={`${j.kind}-${j.id}`} data-testid="stuck-job" className="border-t border-slate-100">
            <td className={td}>
              <Link href={`/jobs/${j.id}`} className="text-indigo-700 underline">
                {j.type}
              </Link>{" "}
              <span className="text-xs text-slate-500">
                {j.queue} · {j.status} · attempt {j.attempts}/{j.maxAttempts}
              </span>
            </td>
            <td className={td}>
              <span className="font-medium">{KIND_LABEL[j.kind] ?? j.kind}</span>
              <p className="text-xs text-slate-600">{j.detail}</p>
            </td>
            <td className={td}>{formatTime(j.since)}</td>
            <td className={td}>{j.suggestion}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const AUDIT_FIELDS = ["action", "actor", "target", "tenant"] as const;

export function AuditPanel({ isAdmin }: { isAdmin: boolean }) {
  const [filters, setFilters] = useState<Record<string, string>>({});
  const audit = useInfiniteQuery({
    queryKey: consoleKeys.audit(filters),
    queryFn: ({ pageParam }) => fetchAudit({ ...filters, ...(pageParam ? { cursor: pageParam } : {}) }),
    initialPageParam: "",
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    setFilters(Object.fromEntries(AUDIT_FIELDS.map((k) => [k, String(f.get(k) ?? "").trim()]).filter(([, v]) => v)));
  };
  const entries = audit.data?.pages.flatMap((p) => p.entries) ?? [];
  const input = "mt-1 block w-full rounded border border-slate-300 px-2 py-1.5";
  return (
    <div className="space-y-4">
      <form onSubmit={onSubmit} aria-label="Filter the audit log" className={`${card} grid gap-3 p-4 md:grid-cols-5`}>
        <label className="text-sm font-medium">
          Action
          <input name="action" placeholder="e.g. queue. or job.cancel" className={input} />
        </label>
        <label className="text-sm font-medium">
          Actor
          <input name="actor" placeholder="part of an e-mail" className={input} />
        </label>
        <label className="text-sm font-medium">
          Target id
          <input name="target" placeholder="a job or pause id" className={input} />
        </label>
        {isAdmin && (
          <label className="text-sm font-medium">
            Tenant
            <input name="tenant" placeholder="slug or id" className={input} />
          </label>
        )}
        <Button type="submit" variant="primary" size="md" className="self-end">
          Filter
        </Button>
      </form>
      {audit.isError && <Alert tone="error">{audit.error.message}</Alert>}
      <table className={`${card} w-full text-left text-sm`}>
        <thead className="bg-slate-50 text-xs uppercase text-slate-500">
          <tr>
            <th className={th}>When</th>
            <th className={th}>Who</th>
            <th className={th}>What</th>
            <th className={th}>On</th>
            <th className={th}>Details</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr key={e.id} data-testid="audit-entry" className="border-t border-slate-100">
              <td className={td}>{formatTime(e.at)}</td>
              <td className={td}>
                {e.actor ?? "a deleted user"}
                {e.viaToken && <span className="text-xs text-slate-500"> (API token)</span>}
                {e.tenant && <p className="text-xs text-slate-500">{e.tenant.slug}</p>}
              </td>
              <td className={td}>{e.action}</td>
              <td className={td}>
                <span className="text-xs text-slate-500">{e.targetType}</span>
                <p className="break-all font-mono text-xs">{e.targetIds.slice(0, 3).join(", ")}</p>
                {e.targetIds.length > 3 && <p className="text-xs text-slate-500">and {e.targetIds.length - 3} more</p>}
              </td>
              <td className={td}>
                {/* Details are data: shown as text. */}
                <pre className="max-w-md overflow-x-auto whitespace-pre-wrap text-xs text-slate-700">
                  {e.details === null ? "" : JSON.stringify(e.details, null, 1)}
                </pre>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {entries.length === 0 && !audit.isPending && <p className="text-sm text-slate-500">No entries.</p>}
      <LoadMore query={audit} />
    </div>
  );
}
