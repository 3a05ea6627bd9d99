"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { fetchTenants, peopleKeys } from "@/lib/client/accounts";
import { formatCount } from "@/lib/client/format";
import { fetchEndpoints, formatRate, webhookKeys, type EndpointDto } from "@/lib/client/webhooks";
import { Alert } from "./ui/alert";
import { Select } from "./ui/select";
import { Time } from "./ui/time";

const th = "px-4 py-2";
const td = "px-4 py-3 align-top";

const circuitStyles: Record<EndpointDto["health"]["circuit"], string> = {
  closed: "bg-emerald-100 text-emerald-800",
  half_open: "bg-amber-100 text-amber-800",
  open: "bg-red-100 text-red-800",
};

/** Enabled or disabled (with why), as a badge. */
export function EndpointState({ endpoint: e }: { endpoint: Pick<EndpointDto, "disabled" | "disabledReason"> }) {
  return e.disabled ? (
    <span className="flex flex-col items-start gap-1">
      <span data-testid="endpoint-state" className="rounded bg-red-100 px-2 py-0.5 text-xs font-medium text-red-800">
        disabled
      </span>
      {e.disabledReason && (
        <span data-testid="disabled-reason" className="text-xs text-red-800">
          {e.disabledReason}
        </span>
      )}
    </span>
  ) : (
    <span
      data-testid="endpoint-state"
      className="rounded bg-emerald-100 px-2 py-0.5 text-xs font-medium text-emerald-800"
    >
      enabled
    </span>
  );
}

/**
 * An endpoint's health: its success rate over 24 hours, its circuit (when it
 * lets a probe through, if open), a Retry-After in force, and how many
 * deliveries wait and how many are dead.
 */
export function EndpointHealth({ health: h }: { health: EndpointDto["health"] }) {
  return (
    <span className="flex flex-col items-start gap-1" data-testid="endpoint-health">
      <span data-testid="success-rate">
        {h.successRate24h === null
          ? "no requests yet"
          : `${formatRate(h.successRate24h)} of ${formatCount(h.requests24h)} request(s) in 24 h`}
      </span>
      <span className="flex flex-wrap items-center gap-1">
        <span
          data-testid="circuit"
          className={`inline-block rounded px-2 py-0.5 text-xs font-medium ${circuitStyles[h.circuit]}`}
        >
          circuit {h.circuit === "half_open" ? "half-open" : h.circuit}
        </span>
        {h.circuit === "open" && h.circuitRetryAt && (
          <span className="text-xs text-slate-600">
            probe at <Time iso={h.circuitRetryAt} mode="absolute" />
          </span>
        )}
      </span>
      {h.blockedUntil && (
        <span className="text-xs text-amber-800">
          Retry-After: waits until <Time iso={h.blockedUntil} mode="absolute" />
        </span>
      )}
      {h.failingSince && (
        <span className="text-xs text-red-800">
          failing since <Time iso={h.failingSince} mode="absolute" />
        </span>
      )}
      <span className="text-xs text-slate-600" data-testid="delivery-counts">
        {/* One word per state, the deliveries' own (`status`: pending, delivered, failed); the API's count is `dead`. */}
        {formatCount(h.pending)} pending · {formatCount(h.dead)} failed
        {h.waiting ? ` · ${formatCount(h.waiting)} waiting their turn` : ""}
      </span>
    </span>
  );
}

/**
 * The webhook endpoints a principal may see, with their health. `isAdmin`:
 * every tenant's, with a tenant column and filter. `console`: the operators'
 * heading. Each links to its page.
 */
export function WebhookList({
  variant = "member",
  isAdmin = false,
}: {
  variant?: "member" | "console";
  isAdmin?: boolean;
}) {
  const [tenant, setTenant] = useState<string>("");
  const tenants = useQuery({ queryKey: peopleKeys.tenants, queryFn: fetchTenants, enabled: isAdmin });
  // Health moves: success rates, circuits, pending counts. Look again every few seconds.
  const list = useQuery({
    queryKey: webhookKeys.list(tenant || null),
    queryFn: () => fetchEndpoints(tenant || null),
    refetchInterval: 3_000,
  });
  const isConsole = variant === "console";

  return (
    <section aria-labelledby="webhooks-heading" className="rounded-lg border border-slate-200 bg-white shadow-sm">
      <div className="flex flex-wrap items-end gap-4 border-b border-slate-200 px-5 py-3">
        <h2 id="webhooks-heading" className="text-lg font-semibold">
          {isAdmin ? "Every tenant's endpoints" : "Endpoints"}
        </h2>
        {isAdmin && (
          <Select
            label="Tenant"
            className="ml-auto"
            value={tenant}
            onChange={(e) => setTenant(e.target.value)}
            any="every tenant"
            options={(tenants.data?.tenants ?? []).map((t) => [t.slug, t.name] as const)}
          />
        )}
      </div>
      {list.isPending ? (
        <p className="px-5 py-6 text-sm text-slate-600">Loading endpoints…</p>
      ) : list.isError ? (
        <Alert tone="error" className="m-5">
          Could not load the endpoints: {list.error.message}
        </Alert>
      ) : list.data.endpoints.length === 0 ? (
        <p className="px-5 py-6 text-sm text-slate-600">
          No endpoints yet.{isConsole ? "" : " Add one above: a URL that receives the events you choose."}
        </p>
      ) : (
        <div className="relative overflow-x-auto">
          <table className="w-full text-left text-sm">
            <thead className="bg-slate-50 text-xs text-slate-600 uppercase">
              <tr>
                <th className={th}>URL</th>
                {isAdmin && <th className={th}>Tenant</th>}
                <th className={th}>Events</th>
                <th className={th}>Health</th>
                <th className={th}>Rate limit</th>
                <th className={th}>State</th>
              </tr>
            </thead>
            <tbody>
              {list.data.endpoints.map((e) => (
                <tr key={e.id} data-testid="endpoint-row" data-endpoint-id={e.id} className="border-t border-slate-100">
                  <td className={td}>
                    <Link
                      href={`/settings/webhooks/${e.id}`}
                      className="font-medium break-all text-indigo-700 underline"
                    >
                      {e.url}
                    </Link>
                    {e.description && <span className="block text-xs text-slate-600">{e.description}</span>}
                  </td>
                  {isAdmin && <td className={td}>{e.tenant}</td>}
                  <td className={td}>
                    <ul>
                      {e.events.map((ev) => (
                        <li key={ev}>
                          <code className="text-xs">{ev}</code>
                        </li>
                      ))}
                    </ul>
                  </td>
                  <td className={td}>
                    <EndpointHealth health={e.health} />
                  </td>
                  <td className={`${td} whitespace-nowrap`}>{formatCount(e.rateLimitPerSecond)}/s</td>
                  <td className={td}>
                    <EndpointState endpoint={e} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
