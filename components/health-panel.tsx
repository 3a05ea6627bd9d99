"use client";

import { useQuery } from "@tanstack/react-query";
import {
  consoleKeys,
  fetchHealth,
  type HealthRowDto,
  type HealthSignal,
  type HealthState,
  type SignalDto,
} from "@/lib/client/api";
import { formatDuration } from "@/lib/client/format";
import { Alert } from "./ui/alert";
import { TableBox, td, th, theadClass } from "./ui/table";

/** What each state reads as, and its colours (text as well as colour: the state is never colour alone). */
const STATE: Record<HealthState, { label: string; className: string }> = {
  ok: { label: "ok", className: "bg-emerald-100 text-emerald-800" },
  warning: { label: "warning", className: "bg-amber-100 text-amber-900" },
  behind: { label: "falling behind", className: "bg-red-100 text-red-800" },
};

const COLUMNS: { signal: HealthSignal; title: string }[] = [
  { signal: "oldestReadyAge", title: "Oldest ready" },
  { signal: "startLatencyP95", title: "Start p95" },
  { signal: "utilisation", title: "Utilisation" },
  { signal: "retryRate", title: "Retry rate" },
  { signal: "deadLettersPerHour", title: "Dead letters (1 h)" },
];

function format(signal: HealthSignal, v: number | null): string {
  if (v === null) return "—";
  switch (signal) {
    case "oldestReadyAge":
    case "startLatencyP95":
      return v < 1 && v > 0 ? `${Math.round(v * 1000)} ms` : formatDuration(v * 1000);
    case "utilisation":
    case "retryRate":
      return `${Math.round(v * 1000) / 10}%`;
    case "deadLettersPerHour":
      return String(v);
  }
}

function StateBadge({ state, testId }: { state: HealthState; testId?: string }) {
  return (
    <span
      data-testid={testId}
      className={`inline-block whitespace-nowrap rounded px-2 py-0.5 text-xs font-medium ${STATE[state].className}`}
    >
      {STATE[state].label}
    </span>
  );
}

function SignalCell({ signal, s, row }: { signal: HealthSignal; s: SignalDto; row: HealthRowDto }) {
  const limits = `warning at ${format(signal, s.warning)}, falling behind at ${format(signal, s.behind)}`;
  const detail =
    signal === "utilisation"
      ? row.tenant
        ? `${row.busy} of its cap ${row.capacity}`
        : row.liveWorkers === 0
          ? "no live worker"
          : `${row.busy} of ${row.capacity} slots`
      : signal === "retryRate"
        ? `${row.retries} of ${row.started} starts`
        : null;
  return (
    <td className={`${td} tabular-nums`} data-testid={`health-${signal}`} data-state={s.state} title={limits}>
      <span className="flex items-center gap-2">
        <span>{format(signal, s.value)}</span>
        {s.state !== "ok" ? <StateBadge state={s.state} /> : null}
      </span>
      <span className="block text-xs text-slate-500">{detail ?? `≥ ${format(signal, s.behind)} behind`}</span>
    </td>
  );
}

function Rows({ rows, scope }: { rows: HealthRowDto[]; scope: string }) {
  return rows.map((r) => (
    <tr
      key={`${r.queue}-${r.tenant?.id ?? "all"}`}
      data-testid="health-row"
      data-queue={r.queue}
      data-tenant={r.tenant?.slug ?? ""}
      data-state={r.state}
      className="border-t border-slate-100"
    >
      <td className={td}>
        <span className="font-medium">{r.queue}</span>
        <span className="text-slate-500"> · {r.tenant ? r.tenant.slug : scope}</span>
      </td>
      <td className={td}>
        <StateBadge state={r.state} testId="health-state" />
      </td>
      {COLUMNS.map((c) => (
        <SignalCell key={c.signal} signal={c.signal} s={r.signals[c.signal]} row={r} />
      ))}
    </tr>
  ));
}

/**
 * The Health panel of the overview: per queue (platform admins: the whole
 * fleet) and per queue and tenant, each signal with its state; hovering a
 * value shows its thresholds. The same numbers feed /api/metrics and the
 * alert rules in deploy/alerts.yaml.
 */
export function HealthPanel({ tenant = "" }: { tenant?: string }) {
  const health = useQuery({
    queryKey: consoleKeys.health(tenant),
    queryFn: () => fetchHealth(tenant),
    refetchInterval: 10_000,
  });
  const h = health.data;
  const all = h ? [...h.queues, ...h.tenants] : [];
  const worst: HealthState | null = !h
    ? null
    : all.some((r) => r.state === "behind")
      ? "behind"
      : all.some((r) => r.state === "warning")
        ? "warning"
        : "ok";
  return (
    <section aria-label="Health" data-testid="health-panel" className="space-y-2">
      <div className="flex flex-wrap items-baseline gap-3">
        <h2 className="text-lg font-semibold">Health</h2>
        {worst ? <StateBadge state={worst} testId="health-overall" /> : null}
        <p className="text-xs text-slate-500">
          Oldest ready job (paused ones left out), start latency p95, retry rate over the last {h?.windowMinutes ?? 5}{" "}
          minutes; utilisation now (per tenant: of its cap); dead letters of the last hour.
        </p>
      </div>
      {health.isPending ? <p className="text-sm text-slate-500">Loading…</p> : null}
      {health.isError ? <Alert tone="error">{health.error.message}</Alert> : null}
      {h ? (
        <TableBox label="Health per queue and tenant" testId="health-table">
          <thead className={theadClass}>
            <tr>
              <th className={th}>Queue · scope</th>
              <th className={th}>State</th>
              {COLUMNS.map((c) => (
                <th key={c.signal} className={th}>
                  {c.title}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            <Rows rows={h.queues} scope="all tenants" />
            <Rows rows={h.tenants} scope="" />
          </tbody>
        </TableBox>
      ) : null}
    </section>
  );
}
