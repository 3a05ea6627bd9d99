"use client";

import { useInfiniteQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import { usePathname, useSearchParams } from "next/navigation";
import { useState, useSyncExternalStore, useEffect, type FormEvent } from "react";
import {
  ApiError,
  fetchOpsJobs,
  jobKeys,
  planJobAction,
  runJobAction,
  type JobAction,
  type OpsJobFilters,
} from "@/lib/client/api";
import { formatCount, browserZone } from "@/lib/client/format";
import { useDisplayZone } from "@/lib/client/time-zone";
import { Alert } from "./ui/alert";
import { JobFilterForm, type Draft } from "./job-filter-form";
import { JobRow } from "./jobs-explorer-row";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";
import { LoadMore } from "./ui/load-more";
import { useJobEventsRefetch } from "@/lib/client/live";
import { TableBox, th, theadClass } from "./ui/table";
import { CHIPS, DATE, apiFilters, draftOf, filtersFromSearch } from "./job-filters";

/** Jobs per request while a bulk action runs, so its progress shows. */
const CHUNK = 100;
const ACTIONS: { action: JobAction; label: string }[] = [
  { action: "cancel", label: "Cancel" },
  { action: "replay", label: "Replay" },
  { action: "retry_now", label: "Retry now" },
  { action: "discard", label: "Discard" },
];

/** Now, every 15 s (for "running for"). */
function useNow(): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 15_000);
    return () => clearInterval(t);
  }, []);
  return now;
}

const noSubscription = () => () => {};

// ── The explorer ─────────────────────────────────────────────────────────────

type Selection = { search: string; ids: Set<string>; all: boolean };

export function JobsExplorer({ isAdmin, types }: { isAdmin: boolean; types: string[] }) {
  const qc = useQueryClient();
  const pathname = usePathname();
  const urlSearch = useSearchParams().toString();
  // The filters just applied, from the click on: the table and the bulk actions never act on the
  // previous filters while the URL catches up. Any other change of the URL (Back, a link) wins.
  const [pending, setPending] = useState<{ from: string; to: string } | null>(null);
  if (pending && pending.from !== urlSearch) setPending(null);
  const search = pending && pending.from === urlSearch ? pending.to : urlSearch;
  const params = new URLSearchParams(search);
  const { confirm, dialog } = useConfirm();
  const now = useNow();
  // The browser's zone, once hydrated (the server's would be another one).
  const zone = useSyncExternalStore(noSubscription, browserZone, () => null);
  // The zone times are drawn in (the browser's, or UTC by the footer's switch).
  const shownZone = useDisplayZone();

  const urlFilters = filtersFromSearch(params);
  const filters = apiFilters(urlFilters);
  const queryKey = ["ops-jobs", filters];
  const jobs = useInfiniteQuery({
    queryKey,
    queryFn: ({ pageParam }) => fetchOpsJobs(filters, pageParam || undefined),
    initialPageParam: "",
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    // A refused filter is refused again: say so at once.
    retry: (count, err) => !(err instanceof ApiError && err.status < 500) && count < 1,
  });
  // Rows follow the tenant's job events.
  useJobEventsRefetch(queryKey);

  // The form, the selection and the range message belong to one URL: Back (or a link) starts them afresh.
  const [draft, setDraft] = useState<{ search: string; values: Draft }>(() => ({
    search,
    values: draftOf(urlFilters),
  }));
  if (draft.search !== search) setDraft({ search, values: draftOf(urlFilters) });
  const values = draft.search === search ? draft.values : draftOf(urlFilters);
  const setField = <K extends keyof Draft>(k: K, v: Draft[K]) =>
    setDraft((d) => ({ search: d.search, values: { ...d.values, [k]: v } }));
  const [rangeError, setRangeError] = useState<string | null>(null);
  const rangeMessage = rangeError === search ? "'To' must be on or after 'From'" : null;

  const [selection, setSelection] = useState<Selection>(() => ({ search, ids: new Set(), all: false }));
  const sel: Selection = selection.search === search ? selection : { search, ids: new Set(), all: false };
  const selected = sel.ids;
  const allMatching = sel.all;
  const setSelected = (fn: (ids: Set<string>) => Set<string>) =>
    setSelection((s) => {
      const base = s.search === search ? s : { search, ids: new Set<string>(), all: false };
      return { ...base, ids: fn(base.ids) };
    });
  const setAllMatching = (all: boolean) =>
    setSelection((s) => ({ ...(s.search === search ? s : { search, ids: new Set<string>() }), all }));

  const [result, setResult] = useState<string | null>(null);
  const [progress, setProgress] = useState<{ done: number; total: number; label: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);
  const rows = jobs.data?.pages.flatMap((p) => p.jobs) ?? [];
  const tenantSlugs: Record<string, string> = Object.assign({}, ...(jobs.data?.pages.map((p) => p.tenants) ?? []));

  /** Opens the URL of these filters: a new history entry, so Back returns to the previous ones. */
  const go = (next: URLSearchParams) => {
    setResult(null);
    setActionError(null);
    if (next.toString() === search) {
      void jobs.refetch();
      return;
    }
    const q = next.toString();
    setPending({ from: urlSearch, to: q });
    // A new history entry (Next.js keeps useSearchParams in step), without a round trip to the server.
    window.history.pushState(null, "", q ? `${pathname}?${q}` : pathname);
  };

  const apply = (v: Draft) => {
    if (v.from && v.to && v.to < v.from) {
      setRangeError(search);
      document.getElementById("jobs-filter-to")?.focus();
      return;
    }
    setRangeError(null);
    const next = new URLSearchParams();
    for (const k of ["status", "type", "queue", "tenant", "q", "from", "to"] as const) {
      const value = v[k].trim();
      if (value) next.set(k, value);
      // An instant from a link (not a date the form shows) stays until its chip is removed or a date replaces it.
      else if ((k === "from" || k === "to") && urlFilters[k] && !DATE.test(urlFilters[k])) next.set(k, urlFilters[k]);
    }
    for (const k of ["errorClass", "fingerprint", "dead"] as const) if (urlFilters[k]) next.set(k, urlFilters[k]);
    if (v.children) next.set("children", "1");
    go(next);
  };
  const onFilter = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    apply(values);
  };
  const removeFilter = (key: keyof OpsJobFilters) => {
    const next = new URLSearchParams(params);
    next.delete(key);
    go(next);
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
      setSelection({ search, ids: new Set(), all: false });
    } catch (err) {
      const partly = sent ? ` — ${formatCount(affected)} jobs were already done (${formatCount(sent)} sent)` : "";
      setActionError(`${(err as Error).message}${partly}`);
    } finally {
      setBusy(false);
      setProgress(null);
      void refetchAfterChange(qc, ["ops-jobs"]);
      void refetchAfterChange(qc, jobKeys.all);
    }
  };
  const toggle = (id: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const pageSelected = rows.filter((r) => selected.has(r.id)).length;
  const allOnPage = rows.length > 0 && pageSelected === rows.length;
  const toggleAll = () =>
    setSelected((s) => {
      const n = new Set(s);
      for (const r of rows) {
        if (allOnPage) n.delete(r.id);
        else n.add(r.id);
      }
      return n;
    });
  const chips = CHIPS.flatMap(({ key, label, shown }) => {
    const v = urlFilters[key];
    return v && (!shown || shown(v)) ? [{ key, text: label(v, shownZone) }] : [];
  });
  const zoneHint = `Dates in ${zone ?? "your time zone"}: from the start of 'From' to the end of 'To'.`;

  return (
    <div className="space-y-4">
      <JobFilterForm
        values={values}
        setField={setField}
        onSubmit={onFilter}
        apply={apply}
        types={types}
        isAdmin={isAdmin}
        zoneHint={zoneHint}
        rangeMessage={rangeMessage}
        clearRangeError={() => setRangeError(null)}
      />
      {dialog}

      {chips.length > 0 && (
        <ul aria-label="Filters from the link" className="flex flex-wrap gap-2">
          {chips.map((c) => (
            <li
              key={c.key}
              data-testid={`filter-chip-${c.key}`}
              className="flex min-w-0 max-w-full items-center gap-1 rounded-full border border-indigo-200 bg-indigo-50 py-0.5 pl-3 pr-1 text-xs text-indigo-900"
            >
              <span className="min-w-0 break-all" suppressHydrationWarning>
                {c.text}
              </span>
              <button
                type="button"
                aria-label={`Remove filter ${c.text}`}
                onClick={() => removeFilter(c.key)}
                className="rounded-full px-1.5 text-base leading-none hover:bg-indigo-100"
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}

      {jobs.error && <Alert tone="error">Could not list jobs: {jobs.error.message}</Alert>}

      <div className="flex flex-wrap items-center gap-3 text-sm">
        {/* On a phone the table's header (and its select-all box) is not shown: the same box here. */}
        <label className="flex items-center gap-2 sm:hidden">
          <input
            type="checkbox"
            checked={allMatching || allOnPage}
            disabled={allMatching || rows.length === 0}
            onChange={toggleAll}
          />
          All on this page
        </label>
        <label className="flex items-center gap-2">
          <input type="checkbox" checked={allMatching} onChange={(e) => setAllMatching(e.target.checked)} />
          All jobs matching this filter
        </label>
        <span className="text-slate-500" data-testid="selected-count">
          {allMatching ? "" : `${selected.size} selected`}
        </span>
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
        {actionError && (
          <Alert tone="error" inline>
            {actionError}
          </Alert>
        )}
      </div>

      <TableBox label="Jobs">
        <thead className={theadClass}>
          <tr>
            <th className={th}>
              <input
                type="checkbox"
                aria-label="Select all on this page"
                ref={(el) => {
                  if (el) el.indeterminate = !allMatching && pageSelected > 0 && !allOnPage;
                }}
                checked={allMatching || allOnPage}
                disabled={allMatching || rows.length === 0}
                onChange={toggleAll}
              />
            </th>
            <th className={th}>Job</th>
            <th className={th}>Type</th>
            {isAdmin && <th className={th}>Tenant</th>}
            <th className={th}>Status</th>
            <th className={th}>Requested by</th>
            <th className={th}>Created</th>
            <th className={th}>Duration</th>
            <th className={th}>Attempts</th>
            <th className={th}>Error</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((j) => (
            <JobRow
              key={j.id}
              job={j}
              now={now}
              tenant={isAdmin ? (tenantSlugs[j.tenantId] ?? j.tenantId) : null}
              checked={allMatching || selected.has(j.id)}
              disabled={allMatching}
              onToggle={() => toggle(j.id)}
            />
          ))}
        </tbody>
      </TableBox>
      {jobs.isPending && <p className="text-sm text-slate-500">Loading…</p>}
      {rows.length === 0 && !jobs.isPending && !jobs.error && (
        <p className="text-sm text-slate-500">{search ? "No jobs match." : "No jobs yet."}</p>
      )}
      <LoadMore query={jobs} />
    </div>
  );
}
