"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { useState, type ReactNode } from "react";
import {
  deadLetterKeys,
  discardDeadLetterGroup,
  fetchDeadLetterGroups,
  jobKeys,
  replayDeadLetterGroup,
  type DeadLetterGroupDto,
  type DeadLetterGroupFilter,
  type DeadLetterGroupsQuery,
} from "@/lib/client/api";
import { fetchTenants, peopleKeys } from "@/lib/client/accounts";
import { failureWords, type FailureWords } from "@/lib/client/failures";
import Link from "next/link";
import { formatCount } from "@/lib/client/format";
import { Time } from "./ui/time";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";
import { fieldClass, QueueSelect, Select } from "./ui/select";

/** The error classes a filter offers (lib/jobs/errors.ts), by what they mean. */
const ERROR_CLASSES = [
  ["crashed", "crashed (the worker died)"],
  ["lease_lost", "lease lost"],
  ["timeout", "timed out"],
  ["retryable", "failed every attempt"],
  ["exhausted", "gave up after its own retries"],
  ["rate_limited", "rate limited"],
  ["permanent", "refused (input or a refusal)"],
] as const;

/** The "since" choices, kept in the URL as their key; the time is taken when the list loads. */
const SINCE: Record<string, { label: string; ms: number }> = {
  "1h": { label: "the last hour", ms: 3_600_000 },
  "24h": { label: "the last 24 hours", ms: 86_400_000 },
  "7d": { label: "the last 7 days", ms: 7 * 86_400_000 },
};

/** The page's filters, from its URL. */
type Filters = { queue: string; type: string; errorClass: string; tenant: string; since: string };

const queryOf = (f: Filters): DeadLetterGroupsQuery => {
  const window = SINCE[f.since];
  return {
    ...(f.queue ? { queue: f.queue } : {}),
    ...(f.type ? { type: f.type } : {}),
    ...(f.errorClass ? { errorClass: f.errorClass } : {}),
    ...(f.tenant ? { tenant: f.tenant } : {}),
    ...(window ? { from: new Date(Date.now() - window.ms).toISOString() } : {}),
  };
};

/** The jobs explorer filtered to one group's jobs. */
export function groupJobsHref(g: DeadLetterGroupDto): string {
  // dead=1: not yet replayed or discarded (exactly the group; it holds no parts: they fail with their parent).
  const q = new URLSearchParams({ status: "failed", type: g.type, dead: "1" });
  if (g.errorClass) q.set("errorClass", g.errorClass);
  if (g.fingerprint) q.set("fingerprint", g.fingerprint);
  return `/ops/jobs?${q.toString()}`;
}

/** What happened to a group's jobs, by their real cause (the class is data, the words are made here). */
function causeText(g: DeadLetterGroupDto): string {
  const attempts = `${formatCount(g.attempts)} ${g.attempts === 1 ? "attempt" : "attempts"}`;
  switch (g.errorClass) {
    case "crashed":
    case "lease_lost":
    case "shutdown":
      return "stopped with the worker running them";
    case "timeout":
      return `ran past their time limit (gave up after ${attempts})`;
    case "permanent":
      return "were refused as asked: bad input, or a refusal that retrying does not change";
    case "exhausted":
      return "gave up after retrying on their own schedule: the service they call kept failing";
    case "rate_limited":
      return `were told to slow down until their attempts ran out (${attempts})`;
    default:
      return `failed every attempt and gave up after ${attempts}`;
  }
}

/** Why replaying a group as it is would likely fail again (null when a replay is the natural fix). */
function replayWarning(g: DeadLetterGroupDto): string | null {
  if (g.errorClass === "crashed")
    return "These jobs ended in their worker's death (each attempt killed or crashed its worker). Replayed as they are, they will likely crash workers again. Replay them only after the cause is fixed.";
  if (g.errorClass === "permanent")
    return "These jobs were refused as they were asked (bad input, or a refusal that retrying does not change). Replayed as they are, they will likely fail the same way: the member who asked should fix the input and ask again.";
  return null;
}

/** The page's sections: whose failure it is (lib/client/failures.ts), most urgent first. */
const SECTIONS: { whose: FailureWords["whose"]; title: string; help: string }[] = [
  {
    whose: "ours",
    title: "System failures",
    help: "Failures on the platform's side: workers, storage, the database, time limits. Fix the cause, then replay.",
  },
  {
    whose: "downstream",
    title: "A service they call kept failing",
    help: "A webhook endpoint or another service answered with errors until the jobs gave up. Once it is fixed, replay them.",
  },
  {
    whose: "request",
    title: "Refused as asked (the member's input)",
    help: "Jobs that cannot succeed as they were asked, a bad CSV say. Not a system failure: the member fixes the input and asks again.",
  },
];

export function DeadLettersPanel({ isAdmin = false }: { isAdmin?: boolean }) {
  const qc = useQueryClient();
  const router = useRouter();
  const pathname = usePathname();
  const params = useSearchParams();
  const filters: Filters = {
    queue: params.get("queue") ?? "",
    type: params.get("type") ?? "",
    errorClass: params.get("errorClass") ?? "",
    tenant: isAdmin ? (params.get("tenant") ?? "") : "",
    since: SINCE[params.get("since") ?? ""] ? params.get("since")! : "",
  };
  const setFilter = (key: keyof Filters, value: string) => {
    const next = new URLSearchParams(params.toString());
    if (value) next.set(key, value);
    else next.delete(key);
    router.replace(`${pathname}${next.size ? `?${next}` : ""}`, { scroll: false });
  };
  const { confirm, dialog } = useConfirm();
  const [done, setDone] = useState<{ tone: "success" | "neutral"; text: string } | null>(null);
  const tenants = useQuery({ queryKey: peopleKeys.tenants, queryFn: fetchTenants, enabled: isAdmin });
  const groups = useQuery({
    queryKey: deadLetterKeys.filtered({ ...filters }),
    queryFn: () => fetchDeadLetterGroups(queryOf(filters)),
    refetchInterval: 10_000,
  });
  const refresh = () => {
    void refetchAfterChange(qc, deadLetterKeys.groups);
    void refetchAfterChange(qc, jobKeys.all);
  };
  // A group's replay or discard acts on what the page shows: the group within the filters.
  const filterOf = (g: DeadLetterGroupDto): DeadLetterGroupFilter => {
    const q = queryOf(filters);
    return {
      type: g.type,
      ...(g.errorClass ? { errorClass: g.errorClass } : {}),
      ...(g.fingerprint ? { fingerprint: g.fingerprint } : {}),
      ...(q.queue ? { queue: q.queue } : {}),
      ...(q.tenant ? { tenant: q.tenant } : {}),
      ...(q.from ? { from: q.from } : {}),
    };
  };
  const replay = useMutation({
    mutationFn: replayDeadLetterGroup,
    onSuccess: (r) => {
      setDone(
        r.replayed > 0
          ? {
              tone: "success",
              text: `Replayed ${formatCount(r.replayed)} of ${formatCount(r.matched)} jobs as new jobs.`,
            }
          : { tone: "neutral", text: "Nothing was replayed: these jobs were already replayed or discarded." },
      );
      refresh();
    },
  });
  const discard = useMutation({
    mutationFn: discardDeadLetterGroup,
    onSuccess: (r) => {
      setDone(
        r.discarded > 0
          ? { tone: "success", text: `Discarded ${formatCount(r.discarded)} jobs (their history stays).` }
          : { tone: "neutral", text: "Nothing was discarded: these jobs had already left the queue." },
      );
      refresh();
    },
  });
  const busy = replay.isPending || discard.isPending;
  const filtered = Object.values(filters).some(Boolean);

  const group = (g: DeadLetterGroupDto) => {
    const warning = replayWarning(g);
    return (
      <li
        key={`${g.type}|${g.errorClass}|${g.fingerprint}`}
        data-testid="dead-letter-group"
        data-error-class={g.errorClass ?? ""}
        className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm"
      >
        <div className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
          <span className="text-lg font-semibold" data-testid="group-count">
            {formatCount(g.count)}
          </span>
          <span className="text-sm text-slate-700" data-testid="group-cause">
            <code>{g.type}</code> {g.count === 1 ? "job" : "jobs"} {causeText(g)}, since <Time iso={g.firstAt} />
          </span>
          <span className="text-xs text-slate-600">
            last <Time iso={g.lastAt} /> · queue {g.queue}
            {g.tenants > 1 ? ` · ${g.tenants} tenants` : ""}
          </span>
        </div>
        {/* Error text is data: rendered as text, never as markup. */}
        <pre className="mt-2 rounded bg-slate-50 p-2 text-xs whitespace-pre-wrap [overflow-wrap:anywhere] text-slate-800">
          {g.sample ?? "(no message)"}
        </pre>
        {warning && (
          <p className="mt-2 text-sm text-amber-900" data-testid="replay-warning">
            {warning}
          </p>
        )}
        <div className="mt-3 flex flex-wrap items-center gap-3">
          <Link
            href={groupJobsHref(g)}
            className="text-sm font-medium text-indigo-700 underline"
            data-testid="group-jobs"
          >
            View the {formatCount(g.count)} {g.count === 1 ? "job" : "jobs"}
          </Link>
          <Button
            variant={warning ? "secondary" : "primary"}
            disabled={busy}
            onClick={async () => {
              const ok = await confirm({
                title: warning ? "Replay jobs that will likely fail again?" : "Replay this group?",
                message: warning
                  ? `${warning} Replay ${formatCount(g.count)} ${g.type} jobs anyway?`
                  : `Replay ${formatCount(g.count)} ${g.type} jobs as new jobs?`,
                confirmLabel: warning ? `Replay ${formatCount(g.count)} anyway` : `Replay ${formatCount(g.count)}`,
                variant: warning ? "danger" : undefined,
              });
              if (ok) replay.mutate(filterOf(g));
            }}
          >
            Replay {formatCount(g.count)}
          </Button>
          <Button
            disabled={busy}
            onClick={async () => {
              const ok = await confirm({
                title: "Discard this group?",
                message: `Discard ${g.count} ${g.type} jobs from the dead-letter queue?`,
                confirmLabel: "Discard",
                variant: "danger",
              });
              if (ok) discard.mutate(filterOf(g));
            }}
          >
            Discard
          </Button>
        </div>
      </li>
    );
  };

  let body: ReactNode;
  if (groups.isPending) body = <p className="text-sm text-slate-600">Loading dead letters…</p>;
  else if (groups.isError) body = <Alert tone="error">Could not load the dead letters: {groups.error.message}</Alert>;
  else if (groups.data.groups.length === 0)
    body = (
      <p className="rounded-lg border border-slate-200 bg-white p-5 text-sm text-slate-600">
        {filtered ? "No dead letters match these filters." : "The dead-letter queue is empty."}
      </p>
    );
  else {
    const all = groups.data.groups;
    body = SECTIONS.map((s) => {
      const mine = all.filter((g) => failureWords(g.errorClass, true).whose === s.whose);
      if (!mine.length) return null;
      return (
        <section key={s.whose} aria-labelledby={`dl-${s.whose}`} data-testid={`dead-letters-${s.whose}`}>
          <h2 id={`dl-${s.whose}`} className="text-lg font-semibold">
            {s.title} ({formatCount(mine.reduce((n, g) => n + g.count, 0))})
          </h2>
          <p className="mb-2 text-sm text-slate-600">{s.help}</p>
          <ul className="space-y-3">{mine.map(group)}</ul>
        </section>
      );
    });
  }

  return (
    <div className="space-y-4">
      {dialog}
      <form
        aria-label="Filter dead letters"
        className="flex flex-wrap items-end gap-3 rounded-lg border border-slate-200 bg-white p-4 shadow-sm"
        onSubmit={(e) => e.preventDefault()}
      >
        <QueueSelect
          label="Queue"
          value={filters.queue}
          any="any"
          onChange={(e) => setFilter("queue", e.target.value)}
        />
        <label className="text-sm font-medium">
          Type
          <input
            key={filters.type}
            defaultValue={filters.type}
            placeholder="e.g. webhook_delivery"
            className={fieldClass}
            spellCheck={false}
            onBlur={(e) => setFilter("type", e.target.value.trim())}
            onKeyDown={(e) => {
              if (e.key === "Enter") setFilter("type", e.currentTarget.value.trim());
            }}
          />
        </label>
        <Select
          label="Error class"
          value={filters.errorClass}
          any="any"
          onChange={(e) => setFilter("errorClass", e.target.value)}
          options={ERROR_CLASSES}
        />
        {isAdmin && (
          <Select
            label="Tenant"
            value={filters.tenant}
            any="every tenant"
            onChange={(e) => setFilter("tenant", e.target.value)}
            options={(tenants.data?.tenants ?? []).map((t) => [t.slug, t.name] as const)}
          />
        )}
        <Select
          label="Failed in"
          value={filters.since}
          any="any time"
          onChange={(e) => setFilter("since", e.target.value)}
          options={Object.entries(SINCE).map(([k, v]) => [k, v.label] as const)}
        />
        {filtered && <Button onClick={() => router.replace(pathname, { scroll: false })}>Clear filters</Button>}
      </form>
      {done && <Alert tone={done.tone}>{done.text}</Alert>}
      {(replay.error || discard.error) && <Alert tone="error">{(replay.error ?? discard.error)?.message}</Alert>}
      {body}
    </div>
  );
}
