"use client";

import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import Link from "next/link";
import { usePathname, useSearchParams } from "next/navigation";
import { useState, type FormEvent } from "react";
import {
  consoleKeys,
  fetchAudit,
  fetchStuckJobs,
  jobKeys,
  resumePause,
  runJobAction,
  type JobAction,
  type StuckJobDto,
} from "@/lib/client/api";
import { attemptsText, jobTitle } from "@/lib/client/kinds/lookup";
import { useConfirm } from "./ui/confirm-dialog";
import { Time } from "./ui/time";
import { TableBox, theadClass } from "./ui/table";
import { LoadMore } from "./ui/load-more";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { shortId } from "@/lib/ids";

const card = "rounded-lg border border-slate-200 bg-white shadow-sm";
const th = "px-4 py-2 font-medium";
const td = "px-4 py-2 align-top";

const KIND_LABEL: Record<StuckJobDto["kind"], string> = {
  paused: "held by a pause",
  waiting_parent: "waiting for its parts",
  lease_expired: "lease expired",
  no_heartbeat: "no heartbeat",
  queued_too_long: "long wait",
  retrying_repeatedly: "retrying again and again",
};

/** Kinds in the order an operator deals with them: what a click fixes first. */
const KIND_ORDER: StuckJobDto["kind"][] = [
  "paused",
  "waiting_parent",
  "lease_expired",
  "no_heartbeat",
  "queued_too_long",
  "retrying_repeatedly",
];

type StuckGroup = {
  key: string;
  kind: StuckJobDto["kind"];
  jobs: StuckJobDto[];
  first: StuckJobDto;
  /** The pause that holds every job of the group (held jobs, and parents waiting for held parts). */
  pause: StuckJobDto["pause"];
};

/**
 * One group per pause (the jobs it holds and the parents waiting for parts it holds, whatever
 * their queue and type); other jobs by kind, queue and type (parents waiting long by kind alone).
 */
function groupStuck(jobs: StuckJobDto[]): StuckGroup[] {
  const groups = new Map<string, StuckGroup>();
  for (const j of jobs) {
    const held = j.pause && (j.kind === "paused" || j.kind === "waiting_parent");
    const key = held
      ? `pause|${j.pause!.id}`
      : `${j.kind}|${j.kind === "waiting_parent" ? "" : `${j.queue}|${j.type}`}|${
          j.kind === "queued_too_long" ? String(j.admitted) : ""
        }`;
    const g = groups.get(key) ?? {
      key,
      kind: held ? "paused" : j.kind,
      jobs: [],
      first: j,
      pause: held ? j.pause : null,
    };
    g.jobs.push(j);
    groups.set(key, g);
  }
  return [...groups.values()].sort((a, b) => KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind));
}

/** What a pause stops, in words ("queue bulk · type export"). */
function pauseScope(p: NonNullable<StuckJobDto["pause"]>): string {
  return [p.queue ? `queue ${p.queue}` : "every queue", p.type ? `type ${p.type}` : null].filter(Boolean).join(" · ");
}

const SHOWN = 8;

/** The Stuck page's filter, in the URL (?cause=paused): a link, a reload and Back keep it. */
function useCauseFilter(): [StuckJobDto["kind"] | null, (cause: string) => void] {
  const pathname = usePathname();
  const search = useSearchParams().toString();
  const [pending, setPending] = useState<{ from: string; to: string } | null>(null);
  if (pending && pending.from !== search) setPending(null);
  const raw = new URLSearchParams(pending ? pending.to : search).get("cause");
  const cause = KIND_ORDER.find((k) => k === raw) ?? null;
  const set = (next: string) => {
    const q = next ? new URLSearchParams({ cause: next }).toString() : "";
    setPending({ from: search, to: q });
    window.history.pushState(null, "", q ? `${pathname}?${q}` : pathname);
  };
  return [cause, set];
}

export function StuckJobsPanel({ isAdmin }: { isAdmin: boolean }) {
  const qc = useQueryClient();
  const [cause, setCause] = useCauseFilter();
  const { confirm, dialog } = useConfirm();
  const [done, setDone] = useState<{ tone: "success" | "neutral"; text: string } | null>(null);
  const stuck = useQuery({ queryKey: consoleKeys.stuck, queryFn: fetchStuckJobs, refetchInterval: 5_000 });
  const refresh = () => {
    void refetchAfterChange(qc, consoleKeys.stuck);
    void refetchAfterChange(qc, jobKeys.all);
  };
  const resume = useMutation({
    mutationFn: resumePause,
    onSuccess: () => {
      setDone({ tone: "success", text: "Pause resumed: its jobs start now." });
      refresh();
    },
  });
  const act = useMutation({
    mutationFn: (v: { action: JobAction; ids: string[] }) => runJobAction(v),
    onSuccess: (r) => {
      setDone(
        r.affected > 0
          ? {
              tone: "success",
              text: `${r.action === "cancel" ? "Cancelled" : "Retried"} ${r.affected} of ${r.matched} jobs.`,
            }
          : {
              tone: "neutral",
              text: `Nothing changed: none of the ${r.matched} jobs could be ${r.action === "cancel" ? "cancelled" : "retried"} any more.`,
            },
      );
      refresh();
    },
  });
  if (stuck.isPending) return <p className="text-sm text-slate-500">Loading…</p>;
  if (stuck.isError) return <Alert tone="error">{stuck.error.message}</Alert>;
  const all = groupStuck(stuck.data.jobs);
  const groups = cause ? all.filter((g) => g.kind === cause) : all;
  const busy = resume.isPending || act.isPending;
  const error = resume.error ?? act.error;
  const cancelGroup = async (g: StuckGroup) => {
    const ok = await confirm({
      title: `Cancel ${g.jobs.length} ${g.jobs.length === 1 ? "job" : "jobs"}?`,
      message: `${g.jobs.length === 1 ? "It" : "They"} will not run. This cannot be undone.`,
      confirmLabel: `Cancel ${g.jobs.length}`,
      variant: "danger",
    });
    if (ok) act.mutate({ action: "cancel", ids: g.jobs.map((j) => j.id) });
  };
  return (
    <div className="space-y-4">
      {dialog}
      {done && <Alert tone={done.tone}>{done.text}</Alert>}
      {error && <Alert tone="error">{error.message}</Alert>}
      <label className="flex flex-wrap items-center gap-2 text-sm font-medium">
        Cause
        <select
          value={cause ?? ""}
          onChange={(e) => setCause(e.target.value)}
          className="rounded border border-slate-300 px-2 py-1.5 font-normal"
        >
          <option value="">every cause ({all.length})</option>
          {KIND_ORDER.map((k) => (
            <option key={k} value={k}>
              {KIND_LABEL[k]} ({all.filter((g) => g.kind === k).length})
            </option>
          ))}
        </select>
      </label>
      {groups.length === 0 ? (
        <p className={`${card} p-5 text-sm text-slate-500`}>
          {cause && all.length ? `Nothing stuck for this cause (${KIND_LABEL[cause]}).` : "Nothing is stuck."}
        </p>
      ) : (
        <ul className="space-y-3">
          {groups.map((g) => {
            const p = g.pause;
            return (
              <li key={g.key} data-testid="stuck-group" data-kind={g.kind} className={`${card} p-4`}>
                <div className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
                  <span className="text-lg font-semibold tabular-nums" data-testid="stuck-count">
                    {g.jobs.length}
                  </span>
                  <span className="font-medium">{KIND_LABEL[g.kind]}</span>
                  <span className="text-sm text-slate-600">
                    {p
                      ? pauseScope(p)
                      : g.kind === "waiting_parent"
                        ? "parents"
                        : `${g.first.type} on ${g.first.queue}`}
                  </span>
                </div>
                {p ? (
                  <p className="mt-1 text-sm text-slate-700" data-testid="stuck-pause">
                    Paused by <span className="font-medium">{p.by ?? "an operator"}</span>
                    {p.reason ? <> (“{p.reason}”)</> : null} since <Time iso={p.since} />.
                  </p>
                ) : (
                  <p className="mt-1 text-sm text-slate-700">{g.first.detail}</p>
                )}
                <p className="mt-1 text-sm text-slate-600">
                  {p
                    ? "Resume the pause to let its jobs start (parents waiting for held parts go on), or cancel them."
                    : g.first.suggestion}
                </p>
                <div className="mt-3 flex flex-wrap gap-2">
                  {p && (
                    <Button
                      variant="primary"
                      disabled={busy}
                      onClick={async () => {
                        const ok = await confirm({
                          title: "Resume this pause?",
                          message: `Everything it holds${p.queue ? ` on ${p.queue}` : ""}${
                            p.type ? ` of type ${p.type}` : ""
                          } starts, not only these jobs.`,
                          confirmLabel: "Resume",
                        });
                        if (ok) resume.mutate(p.id);
                      }}
                    >
                      Resume the pause
                    </Button>
                  )}
                  {p && (
                    <Link href={`/ops/queues#pause-${p.id}`} className="self-center text-sm text-indigo-700 underline">
                      See the pause
                    </Link>
                  )}
                  {g.kind === "retrying_repeatedly" && (
                    <Button
                      disabled={busy}
                      onClick={() => act.mutate({ action: "retry_now", ids: g.jobs.map((j) => j.id) })}
                    >
                      Retry now
                    </Button>
                  )}
                  {!p && g.kind === "queued_too_long" && !g.first.admitted && (
                    <Link href="/ops/queues" className="self-center text-sm text-indigo-700 underline">
                      Queues and caps
                    </Link>
                  )}
                  {isAdmin &&
                    !p &&
                    (g.kind === "lease_expired" || g.kind === "no_heartbeat" || g.first.admitted) &&
                    g.kind !== "retrying_repeatedly" && (
                      <Link href="/ops/workers" className="self-center text-sm text-indigo-700 underline">
                        Workers
                      </Link>
                    )}
                  <Button variant={p ? "secondary" : "danger"} disabled={busy} onClick={() => void cancelGroup(g)}>
                    Cancel {g.jobs.length === 1 ? "it" : `all ${g.jobs.length}`}
                  </Button>
                </div>
                <ul className="mt-3 divide-y divide-slate-100 border-t border-slate-100 text-sm">
                  {/* In a pause's group the parents waiting for held parts come first: they are what people asked for. */}
                  {[...g.jobs]
                    .sort((a, b) => Number(b.kind === "waiting_parent") - Number(a.kind === "waiting_parent"))
                    .slice(0, SHOWN)
                    .map((j) => (
                      <li key={j.id} data-testid="stuck-job" className="flex flex-wrap items-baseline gap-x-3 py-1.5">
                        <Link href={`/jobs/${j.id}`} className="text-indigo-700 underline">
                          {jobTitle(j)}
                        </Link>
                        <span className="font-mono text-xs text-slate-500" title={j.id} data-testid="stuck-job-id">
                          {shortId(j.id)}
                        </span>
                        <span className="text-xs text-slate-500">
                          {p && j.kind === "waiting_parent" ? "waiting for its held parts · " : ""}
                          {j.status} · attempt {attemptsText(j)} · since <Time iso={j.since} />
                        </span>
                        {g.kind === "retrying_repeatedly" && (
                          <span className="w-full text-xs text-slate-600">{j.detail}</span>
                        )}
                      </li>
                    ))}
                </ul>
                {g.jobs.length > SHOWN && (
                  <p className="mt-1 text-xs text-slate-500">and {g.jobs.length - SHOWN} more</p>
                )}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}

const AUDIT_FIELDS = ["action", "actor", "target", "tenant"] as const;

/** An audit entry's targets: ids by their distinguishing end (the whole id on hover), anything else as it is. */
function targetText(id: string): string {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(id) ? shortId(id) : id;
}

/** The audit log, its filters in the URL (?action=&actor=&target=&tenant=): a link, a reload and Back keep them. */
export function AuditPanel({ isAdmin }: { isAdmin: boolean }) {
  const pathname = usePathname();
  const search = useSearchParams().toString();
  // The filters just applied, until the URL catches up (as the jobs explorer does).
  const [pending, setPending] = useState<{ from: string; to: string } | null>(null);
  if (pending && pending.from !== search) setPending(null);
  const shown = pending ? pending.to : search;
  const params = new URLSearchParams(shown);
  const filters: Record<string, string> = Object.fromEntries(
    AUDIT_FIELDS.flatMap((k) => (params.get(k)?.trim() ? [[k, params.get(k)!.trim()]] : [])),
  );
  const audit = useInfiniteQuery({
    queryKey: consoleKeys.audit(filters),
    queryFn: ({ pageParam }) => fetchAudit({ ...filters, ...(pageParam ? { cursor: pageParam } : {}) }),
    initialPageParam: "",
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const next = new URLSearchParams();
    for (const k of AUDIT_FIELDS) {
      const v = String(f.get(k) ?? "").trim();
      if (v) next.set(k, v);
    }
    const q = next.toString();
    if (q === shown) {
      void audit.refetch();
      return;
    }
    setPending({ from: search, to: q });
    window.history.pushState(null, "", q ? `${pathname}?${q}` : pathname);
  };
  const entries = audit.data?.pages.flatMap((p) => p.entries) ?? [];
  const input = "mt-1 block w-full rounded border border-slate-300 px-2 py-1.5";
  return (
    <div className="space-y-4">
      <form
        key={shown}
        onSubmit={onSubmit}
        aria-label="Filter the audit log"
        className={`${card} grid gap-3 p-4 md:grid-cols-5`}
      >
        <label className="text-sm font-medium">
          Action
          <input
            name="action"
            defaultValue={filters.action ?? ""}
            placeholder="e.g. queue. or job.cancel"
            className={input}
          />
        </label>
        <label className="text-sm font-medium">
          Actor
          <input name="actor" defaultValue={filters.actor ?? ""} placeholder="part of an e-mail" className={input} />
        </label>
        <label className="text-sm font-medium">
          Target id
          <input name="target" defaultValue={filters.target ?? ""} placeholder="a job or pause id" className={input} />
        </label>
        {isAdmin && (
          <label className="text-sm font-medium">
            Tenant
            <input name="tenant" defaultValue={filters.tenant ?? ""} placeholder="slug or id" className={input} />
          </label>
        )}
        <Button type="submit" variant="primary" size="md" className="self-end">
          Filter
        </Button>
      </form>
      {audit.isError && <Alert tone="error">Could not load the audit log: {audit.error.message}</Alert>}
      {audit.isPending && <p className="text-sm text-slate-500">Loading…</p>}
      {audit.isSuccess && entries.length === 0 && (
        <p className={`${card} p-5 text-sm text-slate-500`}>
          {Object.keys(filters).length ? "No entry matches these filters." : "No entries yet."}
        </p>
      )}
      {entries.length > 0 && (
        <TableBox label="Audit entries">
          <thead className={theadClass}>
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
                <td className={td}>
                  <Time iso={e.at} />
                </td>
                <td className={`${td} break-words`}>
                  <span>
                    {e.actor ?? "a deleted user"}
                    {e.viaToken && <span className="text-xs text-slate-500"> (API token)</span>}
                    {e.tenant && <span className="block text-xs text-slate-500">{e.tenant.slug}</span>}
                  </span>
                </td>
                <td className={`${td} break-words`}>{e.action}</td>
                <td className={td}>
                  <span>
                    <span className="block text-xs text-slate-500">{e.targetType}</span>
                    {e.targetIds.slice(0, 3).map((id) => (
                      <span key={id} className="block break-all font-mono text-xs" title={id} data-id={id}>
                        {targetText(id)}
                      </span>
                    ))}
                    {e.targetIds.length > 3 && (
                      <span className="block text-xs text-slate-500">and {e.targetIds.length - 3} more</span>
                    )}
                  </span>
                </td>
                <td className={td}>
                  {/* Details are data: shown as text, wrapped (never cut off). */}
                  <pre className="max-w-md whitespace-pre-wrap break-all text-xs text-slate-700">
                    {e.details === null ? "" : JSON.stringify(e.details, null, 1)}
                  </pre>
                </td>
              </tr>
            ))}
          </tbody>
        </TableBox>
      )}
      <LoadMore query={audit} />
    </div>
  );
}
