"use client";

/**
 * An endpoint's deliveries: the paged, filtered list and one delivery's detail
 * (its payload, headers and every attempt), for the webhook endpoint page.
 */
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import { Fragment, useState } from "react";
import { formatCount } from "@/lib/client/format";
import {
  DELIVERY_STATUSES,
  fetchDeliveries,
  fetchDelivery,
  firstKiB,
  prettyJson,
  replayDelivery,
  webhookKeys,
  type AttemptDto,
  type DeliveryDto,
  type DeliveryStatus,
} from "@/lib/client/webhooks";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { LoadMore } from "./ui/load-more";
import { Select } from "./ui/select";
import { Time } from "./ui/time";

const th = "px-4 py-2";
const td = "px-4 py-2 align-top";
const pre = "max-h-80 overflow-auto rounded bg-slate-50 p-3 font-mono text-xs whitespace-pre-wrap break-all";

const deliveryStyles: Record<DeliveryStatus, string> = {
  pending: "bg-amber-100 text-amber-800",
  delivered: "bg-emerald-100 text-emerald-800",
  failed: "bg-red-100 text-red-800",
  cancelled: "bg-slate-200 text-slate-600",
};

function DeliveryBadge({ status }: { status: DeliveryStatus }) {
  return (
    <span
      data-testid="delivery-status"
      className={`inline-block rounded px-2 py-0.5 text-xs font-medium ${deliveryStyles[status]}`}
    >
      {status}
    </span>
  );
}

/** An endpoint's deliveries, newest first, filtered by status, paged, refreshed every two seconds. */
export function Deliveries({ id }: { id: string }) {
  const [status, setStatus] = useState<DeliveryStatus | "">("");
  const [open, setOpen] = useState<string | null>(null);
  const list = useInfiniteQuery({
    queryKey: webhookKeys.deliveries(id, status || null),
    queryFn: ({ pageParam }) => fetchDeliveries(id, status || null, pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: 2_000,
  });
  const deliveries = list.data?.pages.flatMap((p) => p.deliveries) ?? [];
  return (
    <section aria-labelledby="deliveries-heading" className="rounded-lg border border-slate-200 bg-white shadow-sm">
      <div className="flex flex-wrap items-end gap-4 border-b border-slate-200 px-5 py-3">
        <h2 id="deliveries-heading" className="text-lg font-semibold">
          Deliveries
        </h2>
        <Select
          label="Status"
          className="ml-auto"
          value={status}
          onChange={(ev) => setStatus(ev.target.value as DeliveryStatus | "")}
          any="all"
          options={DELIVERY_STATUSES}
        />
      </div>
      {list.isPending ? (
        <p className="px-5 py-6 text-sm text-slate-600">Loading deliveries…</p>
      ) : list.isError ? (
        <Alert tone="error" className="m-5">
          Could not load the deliveries: {list.error.message}
        </Alert>
      ) : deliveries.length === 0 ? (
        <p className="px-5 py-6 text-sm text-slate-600">
          {status ? `No ${status} deliveries.` : "No deliveries yet: send a test event to see one."}
        </p>
      ) : (
        <div className="relative overflow-x-auto">
          <table className="w-full text-left text-sm">
            <thead className="bg-slate-50 text-xs text-slate-600 uppercase">
              <tr>
                <th className={th}>Event</th>
                <th className={th}>Webhook-id</th>
                <th className={th}>Status</th>
                <th className={th}>Requests</th>
                <th className={th}>Last answer</th>
                <th className={th}>Next attempt</th>
                <th className={th}>Created</th>
              </tr>
            </thead>
            <tbody>
              {deliveries.map((d) => (
                <Fragment key={d.id}>
                  <tr
                    data-testid="delivery-row"
                    data-delivery-id={d.id}
                    data-message-id={d.messageId}
                    className="border-t border-slate-100"
                  >
                    <td className={td}>
                      <Button
                        variant="link"
                        aria-expanded={open === d.id}
                        aria-controls={`delivery-${d.id}`}
                        onClick={() => setOpen(open === d.id ? null : d.id)}
                      >
                        <code>{d.eventType}</code>
                      </Button>
                    </td>
                    <td className={td}>
                      <code className="text-xs break-all">{d.messageId}</code>
                    </td>
                    <td className={td}>
                      <DeliveryBadge status={d.status} />
                    </td>
                    <td className={td} data-testid="delivery-requests">
                      {formatCount(d.requests)}
                    </td>
                    <td className={td} data-testid="delivery-last">
                      <LastAnswer delivery={d} />
                    </td>
                    <td className={td}>
                      {d.status === "pending" && d.nextAttemptAt ? <Time iso={d.nextAttemptAt} mode="absolute" /> : "—"}
                    </td>
                    <td className={`${td} whitespace-nowrap`}>
                      <Time iso={d.createdAt} mode="absolute" />
                    </td>
                  </tr>
                  {open === d.id && (
                    <tr id={`delivery-${d.id}`} className="border-t border-slate-100 bg-slate-50/50">
                      <td colSpan={7} className="px-4 py-3">
                        <DeliveryDetail id={d.id} />
                      </td>
                    </tr>
                  )}
                </Fragment>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="px-5 py-3 empty:hidden">
        <LoadMore query={list} />
      </div>
    </section>
  );
}

function LastAnswer({ delivery: d }: { delivery: Pick<DeliveryDto, "lastStatusCode" | "lastError"> }) {
  if (d.lastStatusCode === null && !d.lastError) return <span className="text-slate-600">—</span>;
  return (
    <span className="flex flex-col gap-0.5">
      {d.lastStatusCode !== null && <span>HTTP {d.lastStatusCode}</span>}
      {d.lastError && d.lastError !== `HTTP ${d.lastStatusCode}` && (
        <span className="max-w-xs text-xs break-words text-red-800">{d.lastError}</span>
      )}
    </span>
  );
}

function Headers({ headers }: { headers: Record<string, string> | null }) {
  if (!headers || Object.keys(headers).length === 0) return <p className="text-xs text-slate-600">none</p>;
  return (
    <pre className={pre}>
      {Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}`)
        .join("\n")}
    </pre>
  );
}

/** One delivery: the message sent, every request and its answer, and Replay. */
function DeliveryDetail({ id }: { id: string }) {
  const qc = useQueryClient();
  const query = useQuery({
    queryKey: webhookKeys.delivery(id),
    queryFn: () => fetchDelivery(id),
    refetchInterval: 2_000,
  });
  const replay = useMutation({
    mutationFn: () => replayDelivery(id),
    onSuccess: () => void refetchAfterChange(qc, webhookKeys.all),
  });
  if (query.isPending) return <p className="text-sm text-slate-600">Loading the delivery…</p>;
  if (query.isError) return <Alert tone="error">Could not load the delivery: {query.error.message}</Alert>;
  const d = query.data;
  return (
    <div className="space-y-4" data-testid="delivery-detail">
      <div className="flex flex-wrap items-center gap-3">
        <h3 className="font-semibold">
          <code>{d.eventType}</code> · <code className="text-xs break-all">{d.messageId}</code>
        </h3>
        <Button onClick={() => replay.mutate()} disabled={replay.isPending}>
          Replay
        </Button>
        {replay.error && (
          <Alert tone="error" inline>
            {replay.error.message}
          </Alert>
        )}
        {replay.isSuccess && !replay.error && (
          <Alert tone="success" inline testId="replay-result">
            Sent again: a new request goes out with the same webhook-id.
          </Alert>
        )}
      </div>
      <div>
        <h4 className="mb-1 text-sm font-medium">Message</h4>
        <pre className={pre} data-testid="message-body">
          {prettyJson(d.body)}
        </pre>
      </div>
      <div>
        <h4 className="mb-1 text-sm font-medium">Requests ({formatCount(d.attempts.length)})</h4>
        {d.attempts.length === 0 ? (
          <p className="text-sm text-slate-600">None sent yet.</p>
        ) : (
          <ol className="space-y-3">
            {d.attempts.map((a) => (
              <Attempt key={a.id} attempt={a} />
            ))}
          </ol>
        )}
      </div>
    </div>
  );
}

function Attempt({ attempt: a }: { attempt: AttemptDto }) {
  return (
    <li data-testid="attempt" className="space-y-2 rounded border border-slate-200 bg-white p-3">
      <p className="flex flex-wrap gap-x-4 gap-y-1 text-sm">
        <span>
          <Time iso={a.startedAt} mode="absolute" />
        </span>
        <span>{formatCount(a.durationMs)} ms</span>
        <span data-testid="attempt-status">{a.statusCode !== null ? `HTTP ${a.statusCode}` : "no answer"}</span>
        <span className="text-slate-600">{a.outcome}</span>
      </p>
      {a.error && (
        <p data-testid="attempt-error" className="text-sm break-words text-red-800">
          {a.error}
        </p>
      )}
      <details>
        <summary className="cursor-pointer text-sm">Request headers</summary>
        <Headers headers={a.requestHeaders} />
      </details>
      <details>
        <summary className="cursor-pointer text-sm">Response headers</summary>
        <Headers headers={a.responseHeaders} />
      </details>
      <div>
        <h5 className="text-sm">Response body</h5>
        {a.responseBody ? (
          <pre className={pre} data-testid="attempt-body">
            {firstKiB(a.responseBody)}
          </pre>
        ) : (
          <p className="text-xs text-slate-600">empty</p>
        )}
      </div>
    </li>
  );
}
