/**
 * Webhooks as the API, the pages and the CLI use them. Members manage their
 * tenant's endpoints (a platform admin sees every tenant's); another tenant's
 * endpoint, delivery or message is not found. Every change is audited.
 */
import { recordAudit } from "../audit";
import { requireTenant, tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { inTransaction, pool } from "../db";
import { downstreamStates, forgetDownstream } from "../downstream";
import { AppError, notFound, parseOrThrow } from "../errors";
import { parseIdOr404 } from "../ids";
import { decodeCursor, encodeCursor } from "../jobs/queries";
import { requestCancel } from "../jobs/transitions";
import { resolvePublic } from "./http";
import {
  createEndpointSchema,
  deliveryQuerySchema,
  recoverSchema,
  updateEndpointSchema,
  type WebhookEvent,
} from "./schema";
import { newSecret } from "./signing";
import { endpointKey } from "./task";
import { env } from "../env";

/** How long a rotated-out secret keeps signing. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

export type EndpointDto = {
  id: string;
  tenantId: string;
  tenant: string;
  url: string;
  description: string;
  events: WebhookEvent[];
  rateLimitPerSecond: number;
  disabled: boolean;
  disabledAt: string | null;
  disabledReason: string | null;
  /** Until then the previous secret signs too (after a rotation). */
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
  health: {
    /** Share of requests answered 2xx over the last 24 hours (null: none sent). */
    successRate24h: number | null;
    requests24h: number;
    circuit: "closed" | "open" | "half_open";
    /** Open: when one probe is let through. */
    circuitRetryAt: string | null;
    /** A Retry-After in force until then. */
    blockedUntil: string | null;
    failingSince: string | null;
    inFlight: number;
    /** Deliveries waiting for their turn (parked by the guard). */
    waiting: number;
    pending: number;
    dead: number;
  };
};

export type DeliveryStatus = "pending" | "delivered" | "failed" | "cancelled";

export type DeliveryDto = {
  id: string;
  endpointId: string;
  messageId: string;
  eventType: string;
  status: DeliveryStatus;
  jobId: string;
  /** The job's status (retrying: waiting for its next request). */
  jobStatus: string;
  requests: number;
  lastStatusCode: number | null;
  lastError: string | null;
  lastAttemptAt: string | null;
  /** When the next request may go (pending deliveries). */
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  createdAt: string;
};

export type AttemptDto = {
  id: string;
  jobId: string | null;
  url: string;
  requestHeaders: Record<string, string>;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  responseHeaders: Record<string, string> | null;
  responseBody: string | null;
  error: string | null;
  outcome: string;
};

type EndpointRow = {
  id: string;
  tenant_id: string;
  slug: string;
  url: string;
  description: string;
  events: WebhookEvent[];
  rate_limit_per_second: number;
  disabled_at: Date | null;
  disabled_reason: string | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  requests_24h: number;
  ok_24h: number;
  pending: number;
  dead: number;
};

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

const ENDPOINT_SELECT = `
  SELECT e.id, e.tenant_id, t.slug, e.url, e.description, e.events, e.rate_limit_per_second, e.disabled_at,
         e.disabled_reason, CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret_expires_at END
           AS previous_secret_expires_at, e.created_at, e.updated_at,
         coalesce(a.requests, 0)::int AS requests_24h, coalesce(a.ok, 0)::int AS ok_24h,
         coalesce(q.pending, 0)::int AS pending, coalesce(q.dead, 0)::int AS dead
    FROM webhook_endpoints e
    JOIN tenants t ON t.id = e.tenant_id
    LEFT JOIN LATERAL (
      SELECT count(*) AS requests, count(*) FILTER (WHERE at.outcome = 'success') AS ok
        FROM webhook_deliveries d JOIN webhook_attempts at ON at.delivery_id = d.id
       WHERE d.endpoint_id = e.id AND at.started_at > now() - interval '24 hours') a ON true
    LEFT JOIN LATERAL (
      SELECT count(*) FILTER (WHERE j.status IN ('queued', 'running', 'retrying')) AS pending,
             count(*) FILTER (WHERE j.status = 'failed') AS dead
        FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id WHERE d.endpoint_id = e.id) q ON true`;

async function toDtos(rows: EndpointRow[]): Promise<EndpointDto[]> {
  const states = await downstreamStates(rows.map((r) => endpointKey(r.id)));
  return rows.map((r) => {
    const s = states.get(endpointKey(r.id));
    return {
      id: r.id,
      tenantId: r.tenant_id,
      tenant: r.slug,
      url: r.url,
      description: r.description,
      events: r.events,
      rateLimitPerSecond: r.rate_limit_per_second,
      disabled: r.disabled_at !== null,
      disabledAt: iso(r.disabled_at),
      disabledReason: r.disabled_reason,
      previousSecretExpiresAt: iso(r.previous_secret_expires_at),
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
      health: {
        successRate24h: r.requests_24h ? r.ok_24h / r.requests_24h : null,
        requests24h: r.requests_24h,
        circuit: s?.circuit ?? "closed",
        circuitRetryAt: s?.circuit === "open" ? iso(s.retryAt) : null,
        blockedUntil: s?.blockedUntil && s.blockedUntil > new Date() ? iso(s.blockedUntil) : null,
        failingSince: iso(s?.failingSince),
        inFlight: s?.inFlight ?? 0,
        waiting: s?.waiting ?? 0,
        pending: r.pending,
        dead: r.dead,
      },
    };
  });
}

/** The endpoints the principal may see (a platform admin: every tenant's, or `?tenant=` one). */
export async function listEndpoints(principal: Principal, query: { tenant?: string } = {}): Promise<EndpointDto[]> {
  const own = tenantScope(principal).tenantId ?? null;
  const { rows } = await pool().query<EndpointRow>(
    `${ENDPOINT_SELECT}
     WHERE ($1::uuid IS NULL OR e.tenant_id = $1::uuid) AND ($2::text IS NULL OR t.slug = $2 OR t.id::text = $2)
     ORDER BY t.slug, e.created_at, e.id LIMIT 500`,
    [own, principal.isPlatformAdmin ? (query.tenant ?? null) : null],
  );
  return toDtos(rows);
}

async function endpointRow(principal: Principal, rawId: string): Promise<EndpointRow> {
  const id = parseIdOr404(rawId, "Webhook endpoint not found");
  const own = tenantScope(principal).tenantId ?? null;
  const { rows } = await pool().query<EndpointRow>(
    `${ENDPOINT_SELECT} WHERE e.id = $1 AND ($2::uuid IS NULL OR e.tenant_id = $2::uuid)`,
    [id, own],
  );
  if (!rows[0]) throw notFound("Webhook endpoint not found");
  return rows[0];
}

export async function getEndpoint(principal: Principal, rawId: string): Promise<EndpointDto> {
  return (await toDtos([await endpointRow(principal, rawId)]))[0]!;
}

/** A host that resolves only to refused addresses is refused now (a name that does not resolve yet is allowed). */
async function checkResolves(url: string): Promise<void> {
  const host = new URL(url).hostname;
  try {
    await resolvePublic(host, env().WEBHOOK_ALLOW_PRIVATE === "1");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOTFOUND" || (e as NodeJS.ErrnoException).code === "EAI_AGAIN") return;
    const message = (e as Error).message;
    throw new AppError("invalid_input", `Invalid input: url: ${message}`, [{ path: "url", message }]);
  }
}

/** Creates an endpoint; the answer carries its secret, shown this once. */
export async function createEndpoint(
  principal: Principal,
  body: unknown,
): Promise<{ endpoint: EndpointDto; secret: string }> {
  const tenantId = requireTenant(principal);
  const input = parseOrThrow(createEndpointSchema, body);
  await checkResolves(input.url);
  const secret = newSecret();
  const { rows } = await pool().query<{ id: string }>(
    `INSERT INTO webhook_endpoints (id, tenant_id, url, description, events, secret, rate_limit_per_second, created_by_id)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7) RETURNING id`,
    [
      tenantId,
      input.url,
      input.description ?? "",
      input.events,
      secret,
      input.rateLimitPerSecond ?? 10,
      principal.userId,
    ],
  );
  const id = rows[0]!.id;
  await recordAudit(principal, {
    action: "webhook.create",
    targetType: "webhook_endpoint",
    targetIds: [id],
    details: { url: input.url, events: input.events },
  });
  return { endpoint: await getEndpoint(principal, id), secret };
}

/** Changes url, events, description, rate limit, or disables / re-enables (which resets its breaker). */
export async function updateEndpoint(principal: Principal, rawId: string, body: unknown): Promise<EndpointDto> {
  const current = await endpointRow(principal, rawId);
  const input = parseOrThrow(updateEndpointSchema, body);
  if (input.url) await checkResolves(input.url);
  await pool().query(
    `UPDATE webhook_endpoints SET
       url = coalesce($2, url), events = coalesce($3, events), description = coalesce($4, description),
       rate_limit_per_second = coalesce($5, rate_limit_per_second),
       disabled_at = CASE WHEN $6::boolean IS NULL THEN disabled_at WHEN $6 THEN coalesce(disabled_at, now()) ELSE NULL END,
       disabled_reason = CASE WHEN $6::boolean IS NULL THEN disabled_reason
                              WHEN $6 THEN coalesce(disabled_reason, 'Disabled by a member') ELSE NULL END,
       updated_at = now()
     WHERE id = $1`,
    [
      current.id,
      input.url ?? null,
      input.events ?? null,
      input.description ?? null,
      input.rateLimitPerSecond ?? null,
      input.disabled ?? null,
    ],
  );
  // Re-enabled: its failure history no longer holds it back.
  if (input.disabled === false && current.disabled_at) await forgetDownstream(endpointKey(current.id));
  await recordAudit(principal, {
    action: "webhook.update",
    targetType: "webhook_endpoint",
    targetIds: [current.id],
    tenantId: current.tenant_id,
    details: input,
  });
  return getEndpoint(principal, current.id);
}

/** Deletes an endpoint: its waiting deliveries are cancelled, its history goes with it. */
export async function deleteEndpoint(principal: Principal, rawId: string): Promise<void> {
  const current = await endpointRow(principal, rawId);
  await inTransaction(async (tx) => {
    const { rows } = await tx.query<{ job_id: string }>(
      `SELECT job_id FROM webhook_deliveries WHERE endpoint_id = $1`,
      [current.id],
    );
    await requestCancel(
      tx,
      rows.map((r) => r.job_id),
      "Its webhook endpoint was deleted",
    );
    await tx.query(`DELETE FROM webhook_endpoints WHERE id = $1`, [current.id]);
  });
  await forgetDownstream(endpointKey(current.id));
  await recordAudit(principal, {
    action: "webhook.delete",
    targetType: "webhook_endpoint",
    targetIds: [current.id],
    tenantId: current.tenant_id,
    details: { url: current.url },
  });
}

/** A new secret; the old one keeps signing (a second signature) for 24 hours. */
export async function rotateSecret(
  principal: Principal,
  rawId: string,
): Promise<{ secret: string; previousSecretExpiresAt: string }> {
  const current = await endpointRow(principal, rawId);
  const secret = newSecret();
  const { rows } = await pool().query<{ until: Date }>(
    `UPDATE webhook_endpoints SET previous_secret = secret, secret = $2,
            previous_secret_expires_at = now() + make_interval(secs => $3::float8 / 1000), updated_at = now()
      WHERE id = $1 RETURNING previous_secret_expires_at AS until`,
    [current.id, secret, ROTATION_OVERLAP_MS],
  );
  await recordAudit(principal, {
    action: "webhook.rotate_secret",
    targetType: "webhook_endpoint",
    targetIds: [current.id],
    tenantId: current.tenant_id,
  });
  return { secret, previousSecretExpiresAt: rows[0]!.until.toISOString() };
}

/** Sends a `ping` event to this endpoint only. */
export async function sendTestEvent(
  principal: Principal,
  rawId: string,
): Promise<{ messageId: string; deliveryId: string }> {
  const current = await endpointRow(principal, rawId);
  if (current.disabled_at) throw new AppError("conflict", "The endpoint is disabled: enable it to send a test event");
  const { rows } = await pool().query<{ id: string }>(
    `SELECT conveyor_webhook_emit($1, 'ping', $2::jsonb, NULL, $3) AS id`,
    [current.tenant_id, JSON.stringify({ endpointId: current.id, message: "A test event from Conveyor" }), current.id],
  );
  const messageId = rows[0]!.id;
  const { rows: d } = await pool().query<{ id: string }>(
    `SELECT id FROM webhook_deliveries WHERE message_id = $1 AND endpoint_id = $2`,
    [messageId, current.id],
  );
  await recordAudit(principal, {
    action: "webhook.test",
    targetType: "webhook_endpoint",
    targetIds: [current.id],
    tenantId: current.tenant_id,
    details: { message: messageId },
  });
  return { messageId, deliveryId: d[0]!.id };
}

const DELIVERY_SELECT = `
  SELECT d.id, d.endpoint_id, d.message_id, m.event_type, d.job_id, j.status::text AS job_status, d.attempts,
         d.last_status_code, d.last_error, d.last_attempt_at, d.delivered_at, d.created_at,
         CASE WHEN j.status IN ('queued', 'retrying') THEN j.run_at END AS next_attempt_at
    FROM webhook_deliveries d
    JOIN webhook_messages m ON m.id = d.message_id
    JOIN jobs j ON j.id = d.job_id`;

type DeliveryRow = {
  id: string;
  endpoint_id: string;
  message_id: string;
  event_type: string;
  job_id: string;
  job_status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
  created_at: Date;
  next_attempt_at: Date | null;
};

function deliveryStatus(jobStatus: string): DeliveryStatus {
  if (jobStatus === "succeeded") return "delivered";
  if (jobStatus === "failed" || jobStatus === "expired") return "failed";
  if (jobStatus === "cancelled") return "cancelled";
  return "pending";
}

const STATUS_JOBS: Record<DeliveryStatus, string[]> = {
  pending: ["scheduled", "queued", "running", "retrying"],
  delivered: ["succeeded"],
  failed: ["failed", "expired"],
  cancelled: ["cancelled"],
};

function toDelivery(r: DeliveryRow): DeliveryDto {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    messageId: r.message_id,
    eventType: r.event_type,
    status: deliveryStatus(r.job_status),
    jobId: r.job_id,
    jobStatus: r.job_status,
    requests: r.attempts,
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    lastAttemptAt: iso(r.last_attempt_at),
    nextAttemptAt: iso(r.next_attempt_at),
    deliveredAt: iso(r.delivered_at),
    createdAt: r.created_at.toISOString(),
  };
}

/** An endpoint's deliveries, newest first, paged by (created_at, id); `status` filters. */
export async function listDeliveries(
  principal: Principal,
  rawId: string,
  query: unknown,
): Promise<{ deliveries: DeliveryDto[]; nextCursor: string | null }> {
  const endpoint = await endpointRow(principal, rawId);
  const q = parseOrThrow(deliveryQuerySchema, query);
  const cursor = q.cursor ? decodeCursor(q.cursor) : null;
  const { rows } = await pool().query<DeliveryRow>(
    `${DELIVERY_SELECT}
     WHERE d.endpoint_id = $1 AND ($2::text[] IS NULL OR j.status::text = ANY($2))
       AND ($3::timestamptz IS NULL OR (d.created_at, d.id) < ($3, $4::uuid))
     ORDER BY d.created_at DESC, d.id DESC LIMIT $5`,
    [endpoint.id, q.status ? STATUS_JOBS[q.status] : null, cursor?.createdAt ?? null, cursor?.id ?? null, q.limit + 1],
  );
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return {
    deliveries: page.map(toDelivery),
    nextCursor: rows.length > q.limit && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null,
  };
}

async function deliveryRow(principal: Principal, rawId: string): Promise<DeliveryRow & { tenant_id: string }> {
  const id = parseIdOr404(rawId, "Webhook delivery not found");
  const own = tenantScope(principal).tenantId ?? null;
  const { rows } = await pool().query<DeliveryRow & { tenant_id: string }>(
    `${DELIVERY_SELECT.replace("SELECT d.id,", "SELECT d.tenant_id, d.id,")}
     WHERE d.id = $1 AND ($2::uuid IS NULL OR d.tenant_id = $2::uuid)`,
    [id, own],
  );
  if (!rows[0]) throw notFound("Webhook delivery not found");
  return rows[0];
}

/** One delivery with the message sent and every request's answer. */
export async function getDelivery(
  principal: Principal,
  rawId: string,
): Promise<DeliveryDto & { body: string; attempts: AttemptDto[] }> {
  const d = await deliveryRow(principal, rawId);
  const [{ rows: m }, { rows: attempts }] = await Promise.all([
    pool().query<{ body: string }>(`SELECT body FROM webhook_messages WHERE id = $1`, [d.message_id]),
    pool().query(
      `SELECT id::text, job_id AS "jobId", url, request_headers AS "requestHeaders", started_at AS "startedAt",
              duration_ms AS "durationMs", status_code AS "statusCode", response_headers AS "responseHeaders",
              response_body AS "responseBody", error, outcome
         FROM webhook_attempts WHERE delivery_id = $1 ORDER BY id DESC LIMIT 200`,
      [d.id],
    ),
  ]);
  return {
    ...toDelivery(d),
    body: m[0]?.body ?? "",
    attempts: attempts.map((a) => ({ ...a, startedAt: (a.startedAt as Date).toISOString() }) as AttemptDto),
  };
}

/** Sends a delivery's message again (same webhook-id), with a fresh retry schedule; 409 while it is still under way. */
export async function replayDelivery(principal: Principal, rawId: string): Promise<DeliveryDto> {
  const d = await deliveryRow(principal, rawId);
  const { rows } = await pool().query<{ job: string | null }>(`SELECT conveyor_webhook_deliver($1, $2, $3) AS job`, [
    d.message_id,
    d.endpoint_id,
    principal.userId,
  ]);
  if (!rows[0]?.job) throw new AppError("conflict", "This delivery is still under way: replay it once it has ended");
  await recordAudit(principal, {
    action: "webhook.replay",
    targetType: "webhook_delivery",
    targetIds: [d.id],
    tenantId: d.tenant_id,
    details: { message: d.message_id, job: rows[0].job },
  });
  return toDelivery((await deliveryRow(principal, d.id)) as DeliveryRow);
}

/** Replays every failed (dead) delivery of an endpoint created since `since`. */
export async function recoverEndpoint(
  principal: Principal,
  rawId: string,
  body: unknown,
): Promise<{ replayed: number }> {
  const endpoint = await endpointRow(principal, rawId);
  if (endpoint.disabled_at) throw new AppError("conflict", "The endpoint is disabled: enable it before recovering");
  const { since } = parseOrThrow(recoverSchema, body);
  const { rows } = await pool().query<{ n: number }>(
    `SELECT count(conveyor_webhook_deliver(d.message_id, d.endpoint_id, $3))::int AS n
       FROM (SELECT d.message_id, d.endpoint_id FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id
              WHERE d.endpoint_id = $1 AND d.created_at >= $2 AND j.status IN ('failed', 'expired')
              ORDER BY d.created_at LIMIT 10000) d`,
    [endpoint.id, since, principal.userId],
  );
  const replayed = rows[0]?.n ?? 0;
  await recordAudit(principal, {
    action: "webhook.recover",
    targetType: "webhook_endpoint",
    targetIds: [endpoint.id],
    tenantId: endpoint.tenant_id,
    details: { since, replayed },
  });
  return { replayed };
}
