/** An endpoint's row as the service reads it (with its last day's requests and its queue), by id within the principal's tenant. */
import { tenantScope } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { pool } from "../db";
import { notFound } from "../errors";
import { parseIdOr404 } from "../ids";
import type { WebhookEvent } from "./schema";

export type EndpointRow = {
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

export const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

export const ENDPOINT_SELECT = `
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

/** The endpoint the principal may see; 404 otherwise. */
export async function endpointRow(principal: Principal, rawId: string): Promise<EndpointRow> {
  const id = parseIdOr404(rawId, "Webhook endpoint not found");
  const own = tenantScope(principal).tenantId ?? null;
  const { rows } = await pool().query<EndpointRow>(
    `${ENDPOINT_SELECT} WHERE e.id = $1 AND ($2::uuid IS NULL OR e.tenant_id = $2::uuid)`,
    [id, own],
  );
  if (!rows[0]) throw notFound("Webhook endpoint not found");
  return rows[0];
}
