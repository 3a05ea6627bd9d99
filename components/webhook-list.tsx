"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { useState } from "react";
import { fetchTenants, peopleKeys } from "@/lib/client/accounts";
import { formatCount } from "@/lib/client/format";
import {
  CIRCUIT_WORDS,
  DELIVERY_LABELS,
  deliveriesHref,
  fetchEndpoints,
  formatRate,
  webhookKeys,
  type EndpointDto,
} from "@/lib/client/webhooks";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { Select } from "./ui/select";
import { TableBox, td, th, theadClass } from "./ui/table";
import { Time } from "./ui/time";
import { WebhookForm } from "./webhook-form";

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
 * An endpoint's health: its success rate over 24 hours, whether it is sending or paused (its
 * circuit, explained in words, with when the pause ends), a Retry-After in force, and how many
 * deliveries are pending and failed; the failed count links to those deliveries (`endpointId`).
 */
export function EndpointHealth({ health: h, endpointId }: { health: EndpointDto["health"]; endpointId?: string }) {
  const circuit = CIRCUIT_WORDS[h.circuit];
  return (
    <span className="flex flex-col items-start gap-1" data-testid="endpoint-health">
      <span data-testid="success-rate">
        {h.successRate24h === null
          ? "no requests yet"
          : `${formatRate(h.successRate24h)} of ${formatCount(h.requests24h)} request(s) in 24 h`}
      </span>
      <span
        data-testid="circuit"
        className={`inline-block rounded px-2 py-0.5 text-xs font-medium ${circuitStyles[h.circuit]}`}
      >
        {circuit.label}
      </span>
      {h.circuit !== "closed" && (
        <span className="text-xs text-slate-700" data-testid="circuit-meaning">
          {circuit.meaning}
          {h.circuit === "open" && h.circuitRetryAt && (
            <>
              {" "}
              Test request at <Time iso={h.circuitRetryAt} mode="absolute" />.
            </>
          )}
        </span>
      )}
      {h.blockedUntil && (
        <span className="text-xs text-amber-800">
          It asked us to wait (Retry-After) until <Time iso={h.blockedUntil} mode="absolute" />
        </span>
      )}
      {h.failingSince && (
        <span className="text-xs text-red-800">
          failing since <Time iso={h.failingSince} mode="absolute" />
        </span>
      )}
      <span className="text-xs text-slate-700" data-testid="delivery-counts">
        {/* The API's count of failed deliveries is `dead`: it is shown with the deliveries' own word. */}
        {formatCount(h.pending)} {DELIVERY_LABELS.pending.label} ·{" "}
        {endpointId && h.dead > 0 ? (
          <Link
            href={deliveriesHref(endpointId, { status: "failed" })}
            className="font-medium text-red-800 underline"
            data-testid="failed-link"
          >
            {formatCount(h.dead)} {DELIVERY_LABELS.failed.label}
          </Link>
        ) : (
          <>
            {formatCount(h.dead)} {DELIVERY_LABELS.failed.label}
          </>
        )}
        {h.waiting ? ` · ${formatCount(h.waiting)} waiting their turn` : ""}
      </span>
    </span>
  );
}

/**
 * The webhook endpoints a principal may see, with their health, first on the page; "New
 * endpoint" opens the form above the list (`canAdd`: the principal belongs to a tenant).
 * `isAdmin`: every tenant's, with a tenant column and filter (kept in the URL, `?tenant=`).
 * `console`: the operators' heading. Each links to its page; a failed count to its failed deliveries.
 */
export function WebhookList({
  variant = "member",
  isAdmin = false,
  canAdd = false,
}: {
  variant?: "member" | "console";
  isAdmin?: boolean;
  canAdd?: boolean;
}) {
  const router = useRouter();
  const pathname = usePathname();
  const params = useSearchParams();
  const tenant = isAdmin ? (params.get("tenant") ?? "") : "";
  const [adding, setAdding] = useState(false);
  const setTenant = (value: string) => {
    const next = new URLSearchParams(params.toString());
    if (value) next.set("tenant", value);
    else next.delete("tenant");
    router.replace(`${pathname}${next.size ? `?${next}` : ""}`, { scroll: false });
  };
  const tenants = useQuery({ queryKey: peopleKeys.tenants, queryFn: fetchTenants, enabled: isAdmin });
  // Health moves: success rates, circuits, pending counts. Look again every few seconds.
  const list = useQuery({
    queryKey: webhookKeys.list(tenant || null),
    queryFn: () => fetchEndpoints(tenant || null),
    refetchInterval: 3_000,
  });
  const isConsole = variant === "console";

  return (
    <section aria-labelledby="webhooks-heading" className="space-y-4">
      <div className="flex flex-wrap items-end gap-4">
        <h2 id="webhooks-heading" className="text-lg font-semibold">
          {isAdmin ? "Every tenant's endpoints" : "Endpoints"}
        </h2>
        {isAdmin && (
          <Select
            label="Tenant"
            value={tenant}
            onChange={(e) => setTenant(e.target.value)}
            any="every tenant"
            options={(tenants.data?.tenants ?? []).map((t) => [t.slug, t.name] as const)}
          />
        )}
        {canAdd && (
          <Button
            variant="primary"
            size="md"
            className="ml-auto"
            aria-expanded={adding}
            aria-controls="new-endpoint"
            onClick={() => setAdding((a) => !a)}
          >
            {adding ? "Close the form" : "New endpoint"}
          </Button>
        )}
      </div>
      {adding && (
        <div id="new-endpoint">
          <WebhookForm onDone={() => setAdding(false)} />
        </div>
      )}
      {list.isPending ? (
        <p className="rounded-lg border border-slate-200 bg-white px-5 py-6 text-sm text-slate-600">
          Loading endpoints…
        </p>
      ) : list.isError ? (
        <Alert tone="error">Could not load the endpoints: {list.error.message}</Alert>
      ) : list.data.endpoints.length === 0 ? (
        <p className="rounded-lg border border-slate-200 bg-white px-5 py-6 text-sm text-slate-600">
          No endpoints yet.
          {isConsole || !canAdd ? "" : " Add one with New endpoint: a URL that receives the events you choose."}
        </p>
      ) : (
        <TableBox label="Endpoints" testId="endpoints-table">
          <thead className={theadClass}>
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
                  <Link href={`/settings/webhooks/${e.id}`} className="font-medium break-all text-indigo-700 underline">
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
                  <EndpointHealth health={e.health} endpointId={e.id} />
                </td>
                <td className={td}>{formatCount(e.rateLimitPerSecond)}/s</td>
                <td className={td}>
                  <EndpointState endpoint={e} />
                </td>
              </tr>
            ))}
          </tbody>
        </TableBox>
      )}
    </section>
  );
}
