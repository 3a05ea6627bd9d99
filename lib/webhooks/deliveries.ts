/** An endpoint's deliveries: listed, read with their attempts, replayed one by one or all failed since a time. */
import { recordAudit } from "../audit";
import { tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { pool } from "../db";
import { AppError, notFound, parseOrThrow } from "../errors";
import { parseIdOr404 } from "../ids";
import { decodeCursor, encodeCursor } from "../jobs/queries";
import { deliveryQuerySchema, jobDeliveryQuerySchema, recoverSchema } from "./schema";
import { endpointRow, iso } from "./endpoint-row";
import { MAX_REQUESTS } from "./task";

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
  /** Every request sent for it, replays included. */
  requests: number;
  /** Requests sent since it was last (re)started: a replay starts a new round. */
  roundRequests: number;
  /** How many requests a round sends at most before the delivery fails for good (the retry schedule's length). */
  maxRequests: number;
  /** The job the event is about (`job.succeeded`…), when it is about one. */
  subjectJobId: string | null;
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

const DELIVERY_SELECT = `
  SELECT d.id, d.endpoint_id, d.message_id, m.event_type, m.job_id AS subject_job_id, d.job_id,
         j.status::text AS job_status, d.attempts, d.round_start,
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
  subject_job_id: string | null;
  attempts: number;
  round_start: number;
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
    roundRequests: r.attempts - r.round_start,
    maxRequests: MAX_REQUESTS,
    subjectJobId: r.subject_job_id,
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    lastAttemptAt: iso(r.last_attempt_at),
    nextAttemptAt: iso(r.next_attempt_at),
    deliveredAt: iso(r.delivered_at),
    createdAt: r.created_at.toISOString(),
  };
}

/** An endpoint's deliveries, newest first, paged by (created_at, id); `status` and `job` (the job an event is about) filter. */
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
       AND ($6::uuid IS NULL OR m.job_id = $6::uuid)
     ORDER BY d.created_at DESC, d.id DESC LIMIT $5`,
    [
      endpoint.id,
      q.status ? STATUS_JOBS[q.status] : null,
      cursor?.createdAt ?? null,
      cursor?.id ?? null,
      q.limit + 1,
      q.job ?? null,
    ],
  );
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return {
    deliveries: page.map(toDelivery),
    nextCursor: rows.length > q.limit && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null,
  };
}

/**
 * The deliveries of one job (`?job=`), to every endpoint of the principal's tenant(s), newest
 * first: those of events about it (`job.succeeded`…), and the one it carries when it is a
 * `webhook_delivery` job itself.
 */
export async function listJobDeliveries(
  principal: Principal,
  query: unknown,
): Promise<{ deliveries: DeliveryDto[]; nextCursor: string | null }> {
  const q = parseOrThrow(jobDeliveryQuerySchema, query);
  const own = tenantScope(principal).tenantId ?? null;
  const { rows } = await pool().query<DeliveryRow>(
    `${DELIVERY_SELECT}
     WHERE d.id IN (SELECT d2.id FROM webhook_deliveries d2 JOIN webhook_messages m2 ON m2.id = d2.message_id
                     WHERE m2.job_id = $1
                    UNION ALL
                    SELECT d3.id FROM webhook_deliveries d3 WHERE d3.job_id = $1)
       AND ($2::uuid IS NULL OR d.tenant_id = $2::uuid)
     ORDER BY d.created_at DESC, d.id DESC LIMIT $3`,
    [q.job, own, q.limit],
  );
  return { deliveries: rows.map(toDelivery), nextCursor: null };
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

/** One delivery with the message sent and every request's answer, oldest request first (the order they were sent). */
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
         FROM (SELECT * FROM webhook_attempts WHERE delivery_id = $1 ORDER BY id DESC LIMIT 200) a ORDER BY a.id`,
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
