"use client";

/**
 * An endpoint's deliveries: the paged list, filtered by state (`?status=` in the URL), and the
 * delivery that is open (`?delivery=`): its message, every request in the order they were
 * sent with its answer, and Replay. The open delivery is shown apart from the list, so a
 * replayed one (no longer `failed`) stays in view with its confirmation while the filter
 * stands, and its state is seen to change to delivered.
 */
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { refetchAfterChange } from "@/lib/client/refresh";
import { formatCount } from "@/lib/client/format";
import {
  DELIVERY_LABELS,
  DELIVERY_STATUSES,
  fetchDeliveries,
  fetchDelivery,
  firstKiB,
  parseDeliveryStatus,
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
import { TableBox, td, th, theadClass } from "./ui/table";
import { Time } from "./ui/time";

const pre = "max-h-80 overflow-auto rounded bg-slate-50 p-3 font-mono text-xs whitespace-pre-wrap break-all";

const deliveryStyles: Record<DeliveryStatus, string> = {
  pending: "bg-amber-100 text-amber-800",
  delivered: "bg-emerald-100 text-emerald-800",
  failed: "bg-red-100 text-red-800",
  cancelled: "bg-slate-200 text-slate-700",
};

/** A delivery's state, by its one word (DELIVERY_LABELS), its meaning as the tooltip. */
export function DeliveryBadge({ status }: { status: DeliveryStatus }) {
  return (
    <span
      data-testid="delivery-status"
      title={DELIVERY_LABELS[status].meaning}
      className={`inline-block rounded px-2 py-0.5 text-xs font-medium ${deliveryStyles[status]}`}
    >
      {DELIVERY_LABELS[status].label}
    </span>
  );
}

/**
 * How many requests it took, against the schedule's bound: "3 of 8" while pending or once
 * failed (this round: a replay starts a new one), the count alone once delivered; requests of
 * earlier rounds are added in words.
 */
export function requestsText(d: Pick<DeliveryDto, "status" | "requests" | "roundRequests" | "maxRequests">): string {
  if (d.status === "delivered" || d.status === "cancelled") return formatCount(d.requests);
  const earlier = d.requests - d.roundRequests;
  return `${formatCount(d.roundRequests)} of ${formatCount(d.maxRequests)}${earlier > 0 ? ` (+${formatCount(earlier)} before its replay)` : ""}`;
}

/** An endpoint's deliveries, newest first, filtered by state, paged, refreshed every two seconds. */
export function Deliveries({ id }: { id: string }) {
  const router = useRouter();
  const pathname = usePathname();
  const params = useSearchParams();
  const status = parseDeliveryStatus(params.get("status"));
  const open = params.get("delivery");
  const setParam = (key: "status" | "delivery", value: string | null) => {
    const next = new URLSearchParams(params.toString());
    if (value) next.set(key, value);
    else next.delete(key);
    router.replace(`${pathname}${next.size ? `?${next}` : ""}#deliveries`, { scroll: false });
  };
  const list = useInfiniteQuery({
    queryKey: webhookKeys.deliveries(id, status),
    queryFn: ({ pageParam }) => fetchDeliveries(id, status, pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    refetchInterval: 2_000,
  });
  const deliveries = list.data?.pages.flatMap((p) => p.deliveries) ?? [];
  return (
    <section
      id="deliveries"
      aria-labelledby="deliveries-heading"
      className="space-y-4 rounded-lg border border-slate-200 bg-white p-4 shadow-sm sm:p-5"
    >
      <div className="flex flex-wrap items-end gap-4">
        <h2 id="deliveries-heading" className="text-lg font-semibold">
          Deliveries
        </h2>
        <Select
          label="Status"
          className="ml-auto"
          value={status ?? ""}
          onChange={(ev) => setParam("status", ev.target.value || null)}
          any="all"
          options={DELIVERY_STATUSES.map((s) => [s, DELIVERY_LABELS[s].label] as const)}
        />
      </div>
      <p className="text-sm text-slate-700" data-testid="status-meaning">
        {status ? (
          <>
            <strong>{DELIVERY_LABELS[status].label}</strong>: {DELIVERY_LABELS[status].meaning}.
          </>
        ) : (
          "Every delivery, newest first. Open one to see each request and its answer."
        )}
      </p>
      {open && <DeliveryDetail key={open} id={open} onClose={() => setParam("delivery", null)} />}
      {list.isPending ? (
        <p className="text-sm text-slate-600">Loading deliveries…</p>
      ) : list.isError ? (
        <Alert tone="error">Could not load the deliveries: {list.error.message}</Alert>
      ) : deliveries.length === 0 ? (
        <p className="text-sm text-slate-600">
          {status
            ? `No ${DELIVERY_LABELS[status].label} deliveries.`
            : "No deliveries yet: send a test event to see one."}
        </p>
      ) : (
        <TableBox label="Deliveries list" testId="deliveries-table">
          <thead className={theadClass}>
            <tr>
              <th className={th}>Event</th>
              <th className={th}>Status</th>
              <th className={th}>Requests</th>
              <th className={th}>Last answer</th>
              <th className={th}>Next attempt</th>
              <th className={th}>Created</th>
              <th className={th}>Webhook-id</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.map((d) => (
              <tr
                key={d.id}
                data-testid="delivery-row"
                data-delivery-id={d.id}
                data-message-id={d.messageId}
                className={`border-t border-slate-100 ${open === d.id ? "bg-indigo-50" : ""}`}
              >
                <td className={td}>
                  <Button
                    variant="link"
                    aria-expanded={open === d.id}
                    aria-controls={open === d.id ? "delivery-detail" : undefined}
                    aria-label={`${d.eventType}, ${DELIVERY_LABELS[d.status].label}: ${open === d.id ? "close" : "open"}`}
                    onClick={() => setParam("delivery", open === d.id ? null : d.id)}
                  >
                    <code>{d.eventType}</code>
                  </Button>
                </td>
                <td className={td}>
                  <DeliveryBadge status={d.status} />
                </td>
                <td className={td} data-testid="delivery-requests">
                  {requestsText(d)}
                </td>
                <td className={td} data-testid="delivery-last">
                  <LastAnswer delivery={d} />
                </td>
                <td className={td} data-testid="delivery-next">
                  {d.status === "pending" && d.nextAttemptAt ? <Time iso={d.nextAttemptAt} mode="absolute" /> : "—"}
                </td>
                <td className={td}>
                  <Time iso={d.createdAt} mode="absolute" />
                </td>
                <td className={td}>
                  <code className="text-xs break-all">{d.messageId}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </TableBox>
      )}
      <div className="empty:hidden">
        <LoadMore query={list} />
      </div>
    </section>
  );
}

export function LastAnswer({ delivery: d }: { delivery: Pick<DeliveryDto, "lastStatusCode" | "lastError"> }) {
  if (d.lastStatusCode === null && !d.lastError) return <span className="text-slate-600">—</span>;
  return (
    <span className="flex flex-col gap-0.5">
      {d.lastStatusCode !== null && <span>HTTP {d.lastStatusCode}</span>}
      {d.lastError && d.lastError !== `HTTP ${d.lastStatusCode}` && (
        <span className="text-xs break-words text-red-800">{d.lastError}</span>
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

/** Why a delivery ended as it did, in a sentence: what the member reads first. */
function whyText(d: DeliveryDto): string {
  const last = d.lastError ?? (d.lastStatusCode !== null ? `HTTP ${d.lastStatusCode}` : "no answer");
  switch (d.status) {
    case "failed":
      return `Your endpoint failed every request (${requestsText(d)}); the last answer was ${last}. Conveyor stopped trying. Fix the endpoint, then replay it.`;
    case "pending":
      return d.roundRequests > 0
        ? `Not delivered yet: the last answer was ${last}. The next request goes out on its own at the time shown; nothing to do unless it keeps failing.`
        : "Not sent yet: its first request goes out shortly.";
    case "delivered":
      return `Delivered: your endpoint answered HTTP ${d.lastStatusCode ?? 200}.`;
    case "cancelled":
      return "Never sent: its endpoint was deleted or disabled.";
  }
}

/** One delivery: why it is where it is, Replay, the message sent, every request oldest first. */
function DeliveryDetail({ id, onClose }: { id: string; onClose: () => void }) {
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
  const shell = (children: React.ReactNode) => (
    <div
      id="delivery-detail"
      className="space-y-4 rounded-lg border border-indigo-200 bg-indigo-50/40 p-4"
      data-testid="delivery-detail"
    >
      {children}
    </div>
  );
  if (query.isPending) return shell(<p className="text-sm text-slate-600">Loading the delivery…</p>);
  if (query.isError)
    return shell(
      <>
        <Alert tone="error">Could not load the delivery: {query.error.message}</Alert>
        <Button onClick={onClose}>Close</Button>
      </>,
    );
  const d = query.data;
  const underWay = d.status === "pending";
  return shell(
    <>
      <div className="flex flex-wrap items-center gap-3">
        <h3 className="min-w-0 font-semibold break-all">
          <code>{d.eventType}</code> · <code className="text-xs">{d.messageId}</code>
        </h3>
        <DeliveryBadge status={d.status} />
        <Button className="ml-auto" onClick={onClose}>
          Close
        </Button>
      </div>
      <p className="text-sm" data-testid="delivery-why">
        {whyText(d)}
        {underWay && d.nextAttemptAt && (
          <>
            {" "}
            Next request: <Time iso={d.nextAttemptAt} mode="absolute" />.
          </>
        )}
      </p>
      <div className="flex flex-wrap items-center gap-3">
        <Button
          variant={d.status === "failed" ? "primary" : "secondary"}
          onClick={() => replay.mutate()}
          disabled={replay.isPending || underWay}
          aria-describedby={underWay ? "replay-help" : undefined}
        >
          {replay.isPending ? "Replaying…" : "Replay"}
        </Button>
        {underWay && !replay.isSuccess && (
          <span id="replay-help" className="text-sm text-slate-600">
            Replay is possible once this delivery has ended.
          </span>
        )}
        {replay.error && (
          <Alert tone="error" inline>
            {replay.error.message}
          </Alert>
        )}
        {replay.isSuccess && !replay.error && (
          <Alert tone="success" inline testId="replay-result">
            Replayed: a new request went out with the same webhook-id. This delivery stays open here; its state above
            changes when your endpoint answers.
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
        <h4 className="mb-1 text-sm font-medium">Requests, oldest first ({formatCount(d.attempts.length)})</h4>
        {d.attempts.length === 0 ? (
          <p className="text-sm text-slate-600">None sent yet.</p>
        ) : (
          <ol className="space-y-3">
            {d.attempts.map((a, i) => (
              <Attempt key={a.id} attempt={a} n={i + 1} />
            ))}
          </ol>
        )}
      </div>
    </>,
  );
}

function Attempt({ attempt: a, n }: { attempt: AttemptDto; n: number }) {
  return (
    <li data-testid="attempt" className="space-y-2 rounded border border-slate-200 bg-white p-3">
      <p className="flex flex-wrap gap-x-4 gap-y-1 text-sm">
        <span className="font-medium">Request {formatCount(n)}</span>
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
