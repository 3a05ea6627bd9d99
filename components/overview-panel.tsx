"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useSearchParams } from "next/navigation";
import { useState, type FormEvent } from "react";
import {
  Bar,
  BarChart,
  CartesianGrid,
  Legend,
  Line,
  LineChart,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from "recharts";
import {
  consoleKeys,
  fetchOverview,
  fetchPauses,
  type Overview,
  type PauseDto,
  type SeriesPoint,
} from "@/lib/client/api";
import { formatCount, formatDuration, formatTime } from "@/lib/client/format";
import { useDisplayZone } from "@/lib/client/time-zone";
import { statusColor } from "@/lib/client/status";
import { StatusBadge } from "./ui/status-badge";
import { TableBox, th as tableTh, theadClass } from "./ui/table";
import { Time, useFormatTime } from "./ui/time";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { QueueSelect } from "./ui/select";
import { HealthPanel } from "./health-panel";

const card = "rounded-lg border border-slate-200 bg-white shadow-sm";
const th = "px-3 py-2 font-medium";
const td = "px-3 py-2 tabular-nums";
const input = "rounded border border-slate-300 px-2 py-1 text-sm";

function rate(r: number | null): string {
  return r === null ? "—" : `${(r * 100).toFixed(1)}%`;
}

function ms(v: number | null): string {
  if (v === null) return "—";
  return v < 1000 ? `${v} ms` : formatDuration(v);
}

function age(iso: string | null): string {
  return iso ? formatDuration(Date.now() - new Date(iso).getTime()) : "—";
}

function Stat({ label, value, hint }: { label: string; value: string; hint?: string }) {
  return (
    <div className={`${card} px-4 py-3`} data-testid={`stat-${label.toLowerCase().replace(/\W+/g, "-")}`}>
      <p className="text-xs uppercase text-slate-500">{label}</p>
      <p className="text-xl font-semibold tabular-nums">{value}</p>
      {hint ? <p className="text-xs text-slate-500">{hint}</p> : null}
    </div>
  );
}

/** Where the overview was read and how far behind the read replica is (none configured: nothing). */
function ReplicaNote({ readFrom, replica }: Pick<Overview, "readFrom" | "replica">) {
  if (!replica) return null;
  const lag = replica.lagMs === null ? null : ms(replica.lagMs);
  const bound = ms(replica.maxLagMs);
  const why =
    readFrom === "replica"
      ? `Read from the replica, ${lag ?? "?"} behind the primary (reads move to the primary past ${bound}).`
      : replica.state === "ok"
        ? `Read from the primary: you changed something in the last ${bound} (the replica is ${lag ?? "?"} behind).`
        : replica.state === "lagging"
          ? `Read from the primary: the replica is ${lag === null ? "too far" : lag} behind, over the ${bound} bound.`
          : replica.state === "down"
            ? "Read from the primary: the replica does not answer."
            : replica.state === "not_standby"
              ? "Read from the primary: the replica is not a standby (promoted, or the URL names a primary)."
              : "Read from the primary: the replica's lag is not measured yet.";
  const fallback = readFrom === "primary" && replica.state !== "ok";
  return (
    <p
      className={`text-xs ${fallback ? "text-amber-800" : "text-slate-500"}`}
      data-testid="overview-replica"
      data-state={replica.state}
    >
      {why}
    </p>
  );
}

/** The pauses that hold a queue and type (a pause with no queue or type holds every one). */
function pausesOf(pauses: PauseDto[], queue: string, type: string): PauseDto[] {
  return pauses.filter((p) => (p.queue === null || p.queue === queue) && (p.type === null || p.type === type));
}

/** What a pause stops: "queue bulk · type export · tenant acme". */
function pauseScopeWords(p: PauseDto): string {
  return [
    p.queue ? `queue ${p.queue}` : "every queue",
    p.type ? `type ${p.type}` : null,
    p.tenant ? `tenant ${p.tenant.slug}` : "every tenant",
  ]
    .filter(Boolean)
    .join(" · ");
}

function pauseWords(p: PauseDto): string {
  return `${pauseScopeWords(p)} paused by ${p.createdBy ?? "a deleted user"}${p.reason ? `: ${p.reason}` : ""}`;
}

/** The charts' numbers as a table: the text alternative for screen readers and for reading exact values. */
function SeriesTable({ data }: { data: (SeriesPoint & { label: string })[] }) {
  return (
    <TableBox label="Finished attempts and runtime, as a table" className="max-h-72 overflow-y-auto shadow-none">
      <thead className={theadClass}>
        <tr>
          <th className={tableTh}>Time</th>
          <th className={tableTh}>Succeeded</th>
          <th className={tableTh}>Failed</th>
          <th className={tableTh}>p50</th>
          <th className={tableTh}>p99</th>
        </tr>
      </thead>
      <tbody>
        {data.map((p) => (
          <tr key={p.at} className="border-t border-slate-100 tabular-nums">
            <td className="px-3 py-1">{p.label}</td>
            <td className="px-3 py-1">{formatCount(p.succeeded)}</td>
            <td className="px-3 py-1">{formatCount(p.failed)}</td>
            <td className="px-3 py-1">{ms(p.p50Ms)}</td>
            <td className="px-3 py-1">{ms(p.p99Ms)}</td>
          </tr>
        ))}
      </tbody>
    </TableBox>
  );
}

function Charts({ points, range }: { points: SeriesPoint[]; range: "hour" | "day" }) {
  const [asTable, setAsTable] = useState(false);
  const zone = useDisplayZone();
  const data = points.map((p) => ({
    ...p,
    label: zone ? formatTime(p.at, zone, "clock", { seconds: false }) : "",
  }));
  const total = points.reduce((a, p) => a + p.succeeded + p.failed, 0);
  const failed = points.reduce((a, p) => a + p.failed, 0);
  return (
    <div className="space-y-2">
      <p className="text-sm text-slate-600" data-testid="chart-summary">
        Last {range}: {formatCount(total)} attempts finished, {formatCount(failed)} failed.{" "}
        <button
          type="button"
          className="text-indigo-700 underline"
          aria-pressed={asTable}
          onClick={() => setAsTable((v) => !v)}
        >
          {asTable ? "Show as charts" : "Show as a table"}
        </button>
      </p>
      {asTable ? (
        <SeriesTable data={data} />
      ) : (
        <div className="grid gap-4 lg:grid-cols-2" aria-hidden={false}>
          <figure className={`${card} p-4`} data-testid="chart-throughput">
            <figcaption className="mb-2 text-sm font-medium">
              Finished attempts per {range === "hour" ? "minute" : "15 minutes"}
            </figcaption>
            <ResponsiveContainer width="100%" height={220}>
              <BarChart data={data}>
                <CartesianGrid strokeDasharray="3 3" vertical={false} />
                <XAxis dataKey="label" fontSize={11} minTickGap={24} />
                <YAxis fontSize={11} allowDecimals={false} />
                <Tooltip />
                <Legend />
                <Bar dataKey="succeeded" stackId="a" fill={statusColor("succeeded")} isAnimationActive={false} />
                <Bar dataKey="failed" stackId="a" fill={statusColor("failed")} isAnimationActive={false} />
              </BarChart>
            </ResponsiveContainer>
          </figure>
          <figure className={`${card} p-4`} data-testid="chart-runtime">
            <figcaption className="mb-2 text-sm font-medium">Runtime (ms), p50 and p99</figcaption>
            <ResponsiveContainer width="100%" height={220}>
              <LineChart data={data}>
                <CartesianGrid strokeDasharray="3 3" vertical={false} />
                <XAxis dataKey="label" fontSize={11} minTickGap={24} />
                <YAxis fontSize={11} />
                <Tooltip />
                <Legend />
                <Line
                  dataKey="p50Ms"
                  name="p50"
                  stroke={statusColor("running")}
                  dot={{ r: 2 }}
                  connectNulls
                  isAnimationActive={false}
                />
                <Line
                  dataKey="p99Ms"
                  name="p99"
                  stroke="#f59e0b"
                  dot={{ r: 2 }}
                  connectNulls
                  isAnimationActive={false}
                />
              </LineChart>
            </ResponsiveContainer>
          </figure>
        </div>
      )}
    </div>
  );
}

/** The overview's filters, in the URL (?tenant=&queue=&range=day): a link, a reload and Back keep them. */
function useOverviewFilters(): {
  filters: Record<string, string>;
  range: "hour" | "day";
  set: (next: Record<string, string>) => void;
} {
  const pathname = usePathname();
  const search = useSearchParams().toString();
  const [pending, setPending] = useState<{ from: string; to: string } | null>(null);
  if (pending && pending.from !== search) setPending(null);
  const params = new URLSearchParams(pending ? pending.to : search);
  const filters = Object.fromEntries(
    (["tenant", "queue"] as const).flatMap((k) => (params.get(k)?.trim() ? [[k, params.get(k)!.trim()]] : [])),
  );
  const range = params.get("range") === "day" ? "day" : "hour";
  const set = (next: Record<string, string>) => {
    const q = new URLSearchParams(Object.entries(next).filter(([, v]) => v)).toString();
    setPending({ from: search, to: q });
    window.history.pushState(null, "", q ? `${pathname}?${q}` : pathname);
  };
  return { filters, range, set };
}

export function OverviewPanel({ isAdmin }: { isAdmin: boolean }) {
  const formatAt = useFormatTime();
  const { filters, range, set } = useOverviewFilters();
  const setRange = (r: "hour" | "day") => set({ ...filters, range: r === "day" ? "day" : "" });
  const overview = useQuery({
    queryKey: consoleKeys.overview(filters),
    queryFn: () => fetchOverview(filters),
    refetchInterval: 10_000,
  });
  const pausesQuery = useQuery({ queryKey: ["pauses", "active"], queryFn: fetchPauses, refetchInterval: 10_000 });
  const pauses = pausesQuery.data?.pauses ?? [];

  const onFilter = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    set({
      ...Object.fromEntries([...form.entries()].map(([k, v]) => [k, String(v).trim()])),
      range: range === "day" ? "day" : "",
    });
  };

  return (
    <div className="space-y-6">
      {pausesQuery.isError ? <Alert tone="error">Could not load the pauses: {pausesQuery.error.message}</Alert> : null}
      {pauses.length > 0 && (
        <section
          aria-label="Active pauses"
          data-testid="overview-pauses"
          className="rounded-lg border border-amber-300 bg-amber-50 p-4 text-sm text-amber-900"
        >
          <h2 className="font-semibold">
            {pauses.length === 1 ? "1 pause holds jobs back" : `${pauses.length} pauses hold jobs back`}
          </h2>
          <ul className="mt-1 space-y-1">
            {pauses.map((p) => (
              <li key={p.id} data-testid="overview-pause" className="break-words">
                <span className="font-medium">{pauseScopeWords(p)}</span> paused by{" "}
                <span className="font-medium">{p.createdBy ?? "a deleted user"}</span> since <Time iso={p.createdAt} />
                {p.reason ? <>: “{p.reason}”</> : null}{" "}
                <Link href={`/ops/queues#pause-${p.id}`} className="font-medium text-indigo-700 underline">
                  See it and resume
                </Link>
              </li>
            ))}
          </ul>
        </section>
      )}
      <form
        key={`${filters.tenant ?? ""}|${filters.queue ?? ""}`}
        onSubmit={onFilter}
        aria-label="Filter the overview"
        className="flex flex-wrap items-end gap-3 text-sm"
      >
        {isAdmin ? (
          <label className="flex flex-col gap-1">
            Tenant
            <input
              name="tenant"
              defaultValue={filters.tenant ?? ""}
              placeholder="all tenants (slug or id)"
              className={input}
            />
          </label>
        ) : null}
        <QueueSelect label="Queue" name="queue" any="all" defaultValue={filters.queue ?? ""} />
        <Button type="submit" variant="primary">
          Show
        </Button>
      </form>

      <HealthPanel tenant={filters.tenant ?? ""} />
      {overview.isPending ? <p className="text-sm text-slate-500">Loading…</p> : null}
      {overview.isError ? <Alert tone="error">{overview.error.message}</Alert> : null}
      {overview.data ? (
        <>
          <p className="text-xs text-slate-500" data-testid="overview-as-of">
            {overview.data.countsAt
              ? `Counts as of ${formatAt(overview.data.countsAt)}; refreshed by the workers every few seconds.`
              : "No statistics yet: they appear once a worker has run its first rollup."}
          </p>
          <ReplicaNote readFrom={overview.data.readFrom} replica={overview.data.replica} />
          <div className="grid grid-cols-2 gap-3 md:grid-cols-4 lg:grid-cols-8">
            <Stat label="Queued" value={formatCount(overview.data.totals.queued)} />
            <Stat label="Scheduled" value={formatCount(overview.data.totals.scheduled)} />
            <Stat label="Running" value={formatCount(overview.data.totals.running)} />
            <Stat label="Retrying" value={formatCount(overview.data.totals.retrying)} />
            <Stat label="Dead" value={formatCount(overview.data.totals.dead)} />
            <Stat label="Oldest queued" value={age(overview.data.totals.oldestQueuedAt)} />
            <Stat
              label="Per minute (5 min)"
              value={String(overview.data.totals.last5m.perMinute)}
              hint={`failure rate ${rate(overview.data.totals.last5m.failureRate)}`}
            />
            <Stat
              label="Per minute (1 h)"
              value={String(overview.data.totals.last1h.perMinute)}
              hint={`failure rate ${rate(overview.data.totals.last1h.failureRate)}`}
            />
          </div>

          <div className="flex gap-2 text-sm" role="group" aria-label="Chart range">
            {(["hour", "day"] as const).map((r) => (
              <button
                key={r}
                type="button"
                aria-pressed={range === r}
                onClick={() => setRange(r)}
                className={`rounded px-3 py-1 ${range === r ? "bg-indigo-600 text-white" : "border border-slate-300"}`}
              >
                Last {r}
              </button>
            ))}
          </div>
          <Charts points={overview.data.series[range]} range={range} />

          {overview.data.rows.length === 0 ? (
            <p className={`${card} p-5 text-sm text-slate-500`}>No jobs in this scope yet.</p>
          ) : (
            <TableBox label="Queues and types">
              <thead className={theadClass}>
                <tr>
                  <th className={th}>Queue · type</th>
                  <th className={th}>Queued</th>
                  <th className={th}>Scheduled</th>
                  <th className={th}>Running</th>
                  <th className={th}>Retrying</th>
                  <th className={th}>Dead</th>
                  <th className={th}>Oldest queued</th>
                  <th className={th}>/min 5m · 1h</th>
                  <th className={th}>Failures 5m · 1h</th>
                  <th className={th}>p50 · p99 (1h)</th>
                </tr>
              </thead>
              <tbody>
                {overview.data.rows.map((r) => (
                  <tr key={`${r.queue}-${r.type}`} data-testid="overview-row" className="border-t border-slate-100">
                    <td className="px-3 py-2">
                      <Link
                        className="text-indigo-700 underline"
                        href={`/ops/jobs?${new URLSearchParams({
                          queue: r.queue,
                          type: r.type,
                          ...(filters.tenant ? { tenant: filters.tenant } : {}),
                        })}`}
                      >
                        {r.queue} · {r.type}
                      </Link>
                      {pausesOf(pauses, r.queue, r.type).map((p) => (
                        <span key={p.id} className="ml-2">
                          <StatusBadge status="paused" label="paused" testId="row-paused" title={pauseWords(p)} />
                        </span>
                      ))}
                    </td>
                    <td className={td}>{formatCount(r.queued)}</td>
                    <td className={td}>{formatCount(r.scheduled)}</td>
                    <td className={td}>{formatCount(r.running)}</td>
                    <td className={td}>{formatCount(r.retrying)}</td>
                    <td className={td}>
                      {r.dead ? (
                        <Link
                          className="text-red-700 underline"
                          href={`/ops/jobs?${new URLSearchParams({
                            queue: r.queue,
                            type: r.type,
                            status: "failed",
                            ...(filters.tenant ? { tenant: filters.tenant } : {}),
                          })}`}
                        >
                          {formatCount(r.dead)}
                        </Link>
                      ) : (
                        0
                      )}
                    </td>
                    <td className={td}>{age(r.oldestQueuedAt)}</td>
                    <td className={td}>
                      {r.last5m.perMinute} · {r.last1h.perMinute}
                    </td>
                    <td className={td}>
                      {rate(r.last5m.failureRate)} · {rate(r.last1h.failureRate)}
                    </td>
                    <td className={td}>
                      {ms(r.p50Ms)} · {ms(r.p99Ms)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </TableBox>
          )}
        </>
      ) : null}
    </div>
  );
}
