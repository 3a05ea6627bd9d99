/**
 * Browser-side fetchers, query keys and wire → UI helpers for outbound
 * webhooks: endpoints with their health, deliveries and their attempts.
 * Types only from lib/webhooks (its modules are server-side).
 */
import type { WebhookEvent } from "../webhooks/schema";
import type { AttemptDto, DeliveryDto, DeliveryStatus, EndpointDto } from "../webhooks/service";
import { request } from "./api";

export type { AttemptDto, DeliveryDto, DeliveryStatus, EndpointDto, WebhookEvent };

/** The events an endpoint may subscribe to (lib/webhooks/schema.ts's WEBHOOK_EVENTS, which is server-side). */
export const WEBHOOK_EVENTS = [
  "export.ready",
  "job.succeeded",
  "job.failed",
  "job.cancelled",
] as const satisfies readonly WebhookEvent[];

export const DELIVERY_STATUSES = ["pending", "delivered", "failed", "cancelled"] as const satisfies DeliveryStatus[];

/**
 * The one word for each delivery state, everywhere it is shown (pages, CLI, docs/WEBHOOKS.md),
 * and what it means. The API's values stay as documented (`status`; an endpoint's `dead` count
 * is its `failed` deliveries): these only name them.
 */
export const DELIVERY_LABELS: Record<DeliveryStatus, { label: string; meaning: string }> = {
  pending: {
    label: "pending",
    meaning: "not delivered yet: its next request goes out on the retry schedule (no action needed)",
  },
  delivered: { label: "delivered", meaning: "your endpoint answered 2xx" },
  failed: {
    label: "failed",
    meaning: "every request of its schedule failed and Conveyor stopped trying: fix the endpoint, then replay it",
  },
  cancelled: { label: "cancelled", meaning: "never sent: its endpoint was deleted or disabled" },
};

/** Parses a `?status=` value from the URL (anything else: all). */
export function parseDeliveryStatus(value: string | null): DeliveryStatus | null {
  return (DELIVERY_STATUSES as readonly string[]).includes(value ?? "") ? (value as DeliveryStatus) : null;
}

/**
 * An endpoint's circuit in words a member understands: its name, what it means, when it ends
 * and what to do. `closed` is the normal state.
 */
export const CIRCUIT_WORDS: Record<EndpointDto["health"]["circuit"], { label: string; meaning: string }> = {
  closed: { label: "sending", meaning: "Requests go out as events happen." },
  open: {
    label: "paused (circuit open)",
    meaning:
      "Its last requests failed, so Conveyor stopped sending to it for a while instead of piling retries on it. " +
      "Nothing is lost: deliveries wait. At the time shown one test request goes out; if it succeeds sending " +
      "resumes, if not the pause starts again. Fix your endpoint; deliveries that failed meanwhile can be replayed.",
  },
  half_open: {
    label: "testing (circuit half-open)",
    meaning: "After a pause, one test request is out to see whether your endpoint answers again.",
  },
};

/** Where an endpoint's deliveries are listed, filtered (`status`), one open (`delivery`). */
export function deliveriesHref(
  endpointId: string,
  q: { status?: DeliveryStatus | null; delivery?: string | null } = {},
): string {
  const p = new URLSearchParams();
  if (q.status) p.set("status", q.status);
  if (q.delivery) p.set("delivery", q.delivery);
  const query = p.toString();
  return `/settings/webhooks/${encodeURIComponent(endpointId)}${query ? `?${query}` : ""}#deliveries`;
}

export type DeliveryDetail = DeliveryDto & { body: string; attempts: AttemptDto[] };

export type EndpointBody = {
  url: string;
  events: WebhookEvent[];
  description?: string;
  rateLimitPerSecond?: number;
};

export const webhookKeys = {
  all: ["webhooks"] as const,
  lists: () => [...webhookKeys.all, "list"] as const,
  list: (tenant: string | null) => [...webhookKeys.lists(), tenant] as const,
  detail: (id: string) => [...webhookKeys.all, "detail", id] as const,
  deliveries: (id: string, status: DeliveryStatus | null) => [...webhookKeys.all, "deliveries", id, status] as const,
  jobDeliveries: (jobId: string) => [...webhookKeys.all, "job-deliveries", jobId] as const,
  delivery: (id: string) => [...webhookKeys.all, "delivery", id] as const,
};

const endpointPath = (id: string, rest = "") => `/api/v1/webhooks/endpoints/${encodeURIComponent(id)}${rest}`;
const deliveryPath = (id: string, rest = "") => `/api/v1/webhooks/deliveries/${encodeURIComponent(id)}${rest}`;

/** The principal's tenant's endpoints; a platform admin's: every tenant's, or `tenant`'s (a slug). */
export function fetchEndpoints(tenant: string | null = null): Promise<{ endpoints: EndpointDto[] }> {
  return request(`/api/v1/webhooks/endpoints${tenant ? `?tenant=${encodeURIComponent(tenant)}` : ""}`);
}

export function fetchEndpoint(id: string): Promise<EndpointDto> {
  return request(endpointPath(id));
}

export function createEndpoint(body: EndpointBody): Promise<{ endpoint: EndpointDto; secret: string }> {
  return request("/api/v1/webhooks/endpoints", { method: "POST", body: JSON.stringify(body) });
}

export function updateEndpoint(id: string, body: Partial<EndpointBody> & { disabled?: boolean }): Promise<EndpointDto> {
  return request(endpointPath(id), { method: "PATCH", body: JSON.stringify(body) });
}

export function deleteEndpoint(id: string): Promise<void> {
  return request(endpointPath(id), { method: "DELETE" });
}

export function rotateSecret(id: string): Promise<{ secret: string; previousSecretExpiresAt: string }> {
  return request(endpointPath(id, "/rotate-secret"), { method: "POST" });
}

export function sendTestEvent(id: string): Promise<{ messageId: string; deliveryId: string }> {
  return request(endpointPath(id, "/test"), { method: "POST" });
}

export function recoverEndpoint(id: string, since: string): Promise<{ replayed: number }> {
  return request(endpointPath(id, "/recover"), { method: "POST", body: JSON.stringify({ since }) });
}

export function fetchDeliveries(
  id: string,
  status: DeliveryStatus | null,
  cursor?: string,
): Promise<{ deliveries: DeliveryDto[]; nextCursor: string | null }> {
  const q = new URLSearchParams();
  if (status) q.set("status", status);
  if (cursor) q.set("cursor", cursor);
  q.set("limit", "25");
  return request(`${endpointPath(id, "/deliveries")}?${q}`);
}

/** The deliveries of events about one job, every endpoint's (newest first). */
export function fetchJobDeliveries(jobId: string): Promise<{ deliveries: DeliveryDto[]; nextCursor: string | null }> {
  return request(`/api/v1/webhooks/deliveries?job=${encodeURIComponent(jobId)}&limit=25`);
}

export function fetchDelivery(id: string): Promise<DeliveryDetail> {
  return request(deliveryPath(id));
}

export function replayDelivery(id: string): Promise<DeliveryDto> {
  return request(deliveryPath(id, "/replay"), { method: "POST" });
}

/** A share (0–1) as a percentage: 100%, 99.5%, 0%. */
export function formatRate(rate: number): string {
  const pct = rate * 100;
  return `${Number.isInteger(pct) ? pct : pct.toFixed(1)}%`;
}

/** A string as pretty JSON when it is JSON, else as it is. */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** The first 4 KiB of a response body (the rest is cut with a note). */
export function firstKiB(text: string, kib = 4): string {
  const limit = kib * 1024;
  return text.length > limit ? `${text.slice(0, limit)}\n… (cut at ${kib} KiB)` : text;
}
