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
import { AppError, parseOrThrow } from "../errors";
import { requestCancel } from "../jobs/transitions";
import { resolvePublic } from "./http";
import { createEndpointSchema, updateEndpointSchema, type WebhookEvent } from "./schema";
import { newSecret } from "./signing";
import { endpointKey } from "./task";
import { webhookSettings } from "./settings";
import { ENDPOINT_SELECT, endpointRow, iso, type EndpointRow } from "./endpoint-row";

export {
  getDelivery,
  listDeliveries,
  listJobDeliveries,
  recoverEndpoint,
  replayDelivery,
  type AttemptDto,
  type DeliveryDto,
  type DeliveryStatus,
} from "./deliveries";

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
    /** Requests allowed in flight now: the limit adapting to the endpoint's latency under WEBHOOK_ENDPOINT_CONCURRENCY (WEBHOOK_SLOW_MS 0: that maximum). */
    inFlightLimit: number;
    /** Deliveries waiting for their turn (parked by the guard). */
    waiting: number;
    pending: number;
    dead: number;
  };
};

/** The endpoint's in-flight limit in force: the adaptive one, which starts at 2 (WEBHOOK_SLOW_MS 0: the fixed maximum). */
function inFlightLimit(adaptive: number | null): number {
  const { WEBHOOK_ENDPOINT_CONCURRENCY: max, WEBHOOK_SLOW_MS: slowMs } = webhookSettings();
  if (!slowMs) return max;
  return Math.min(max, adaptive ?? 2);
}

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
        inFlightLimit: inFlightLimit(s?.limit ?? null),
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

export async function getEndpoint(principal: Principal, rawId: string): Promise<EndpointDto> {
  return (await toDtos([await endpointRow(principal, rawId)]))[0]!;
}

/** A host that resolves only to refused addresses is refused now (a name that does not resolve yet is allowed). */
async function checkResolves(url: string): Promise<void> {
  const host = new URL(url).hostname;
  try {
    await resolvePublic(host, webhookSettings().WEBHOOK_ALLOW_PRIVATE === "1");
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
