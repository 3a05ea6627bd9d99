/**
 * `webhook_delivery`: one message to one endpoint. Each run sends at most one
 * request, through the endpoint's downstream guard (rate limit, concurrency,
 * Retry-After, circuit breaker); every request sent is kept as an attempt.
 * Failures retry on the Svix schedule (at once, 5 s, 5 min, 30 min, 2 h, 5 h,
 * 10 h, 10 h; ±20% jitter; WEBHOOK_RETRY_SCALE), never sooner than a
 * Retry-After; then the delivery is dead-lettered. 410 Gone disables the
 * endpoint, as does failing for 5 days.
 */
import { z } from "zod";
import { inTransaction, pool } from "../db";
import type { CallOutcome } from "../downstream";
import { webhookSettings } from "./settings";
import { GaveUpError, parseRetryAfter, PermanentError, RetryableError } from "../jobs/errors";
import { defineTask, type JobContext } from "../jobs/task";
import { failWaiting } from "../jobs/transitions";
import { send, type SendResult } from "./http";
import { bodyToSend } from "./links";
import { signatureHeaders } from "./signing";

/** Delays after the 1st, 2nd… failed request, in ms; after the 8th request the delivery is dead. */
export const RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
export const MAX_REQUESTS = RETRY_SCHEDULE_MS.length + 1;
/** An endpoint failing (no success) for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;

export const endpointKey = (endpointId: string) => `webhook:${endpointId}`;

const inputSchema = z.object({ deliveryId: z.uuid() }).strict();

type Row = {
  id: string;
  job_id: string;
  job_active: boolean;
  attempts: number;
  round_start: number;
  endpoint_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_valid: boolean;
  rate_limit_per_second: number;
  disabled_reason: string | null;
  disabled: boolean;
  message_id: string;
  body: string;
  failing_too_long: boolean;
};

/** What a request's answer means for the endpoint's health. */
export function outcomeOf(r: Pick<SendResult, "statusCode">): CallOutcome {
  if (r.statusCode !== null && r.statusCode >= 200 && r.statusCode < 300) return "success";
  if (r.statusCode === 429) return "neutral"; // it asked us to slow down; it is not broken
  return "failure";
}

function describe(r: SendResult): string {
  if (r.statusCode === null) return r.error ?? "no answer";
  if (r.statusCode >= 300 && r.statusCode < 400) return `HTTP ${r.statusCode} (redirects are not followed)`;
  return `HTTP ${r.statusCode}`;
}

/**
 * Disables an endpoint. Its parked deliveries go to the dead-letter queue at
 * once, in this statement (recoverable once it is enabled again); the others
 * find it disabled when they run.
 */
async function disable(endpointId: string, reason: string): Promise<void> {
  await inTransaction(async (tx) => {
    const { rows } = await tx.query<{ holder: string }>(
      `WITH e AS (UPDATE webhook_endpoints SET disabled_at = now(), disabled_reason = $2, updated_at = now()
                   WHERE id = $1 AND disabled_at IS NULL RETURNING id)
       DELETE FROM downstream_waiters WHERE key = $3 AND EXISTS (SELECT 1 FROM e) RETURNING holder`,
      [endpointId, reason, endpointKey(endpointId)],
    );
    await failWaiting(
      tx,
      rows.map((r) => r.holder),
      `The endpoint is disabled: ${reason}`,
      { unadmittedOnly: true },
    );
  });
}

async function deliver(ctx: JobContext<z.infer<typeof inputSchema>>) {
  const { rows } = await pool().query<Row>(
    `SELECT d.id, d.job_id, d.attempts, d.round_start, d.endpoint_id, e.url, e.secret, e.previous_secret,
            coalesce(e.previous_secret_expires_at > now(), false) AS previous_valid,
            e.rate_limit_per_second, e.disabled_reason, e.disabled_at IS NOT NULL AS disabled,
            m.id AS message_id, m.body,
            d.job_id <> $2 AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id
                                        AND j.status IN ('scheduled', 'queued', 'running', 'retrying')) AS job_active,
            coalesce((SELECT failing_since < now() - make_interval(secs => $3::float8 / 1000)
                        FROM downstreams WHERE key = 'webhook:' || e.id::text), false) AS failing_too_long
       FROM webhook_deliveries d
       JOIN webhook_endpoints e ON e.id = d.endpoint_id
       JOIN webhook_messages m ON m.id = d.message_id
      WHERE d.id = $1`,
    [ctx.input.deliveryId, ctx.job.id, DISABLE_AFTER_MS],
  );
  const d = rows[0];
  if (!d) return { skipped: "The delivery no longer exists (its endpoint was deleted)" };
  if (d.job_active) throw new PermanentError("Another job is delivering this message");
  if (d.job_id !== ctx.job.id) {
    // A replay from the dead-letter queue: this job now carries the delivery, and its retry schedule restarts.
    await pool().query(`UPDATE webhook_deliveries SET job_id = $2, round_start = attempts WHERE id = $1`, [
      d.id,
      ctx.job.id,
    ]);
    d.round_start = d.attempts;
  }
  if (d.disabled) throw new PermanentError(`The endpoint is disabled: ${d.disabled_reason ?? "by a member"}`);
  if (d.failing_too_long) {
    const reason = "Every delivery failed for 5 days";
    await disable(d.endpoint_id, reason);
    throw new PermanentError(`The endpoint is disabled: ${reason}`);
  }

  const e = webhookSettings();
  const permit = await ctx.downstream(endpointKey(d.endpoint_id), {
    ratePerSecond: d.rate_limit_per_second,
    concurrency: e.WEBHOOK_ENDPOINT_CONCURRENCY,
    slowMs: e.WEBHOOK_SLOW_MS || undefined,
    holdMs: e.WEBHOOK_TIMEOUT_MS + 10_000,
    breaker: { openMs: e.WEBHOOK_CIRCUIT_OPEN_MS },
  });
  const secrets = d.previous_valid && d.previous_secret ? [d.secret, d.previous_secret] : [d.secret];
  let headers: Record<string, string>;
  let result: SendResult;
  try {
    // Links are made for this request only; the signature covers the body as sent.
    const body = await bodyToSend(pool(), d.body);
    headers = {
      "content-type": "application/json",
      "user-agent": "Conveyor-Webhooks/1.0",
      ...signatureHeaders(secrets, d.message_id, body),
    };
    result = await send({
      url: d.url,
      headers,
      body,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE === "1",
      signal: ctx.signal,
    });
  } catch (err) {
    await permit.release("neutral");
    throw err;
  }
  const outcome = outcomeOf(result);
  const retryAfter =
    result.statusCode === 429 || result.statusCode === 503 ? parseRetryAfter(result.headers?.["retry-after"]) : null;
  const message = describe(result);
  // The slot is given back as soon as the answer is in: the record below needs no slot.
  await permit.release(outcome, retryAfter ?? 0);
  // The request happened: record it whatever became of this attempt's lease.
  const { rows: counted } = await pool().query<{ attempts: number }>(
    `WITH a AS (
       INSERT INTO webhook_attempts (delivery_id, tenant_id, job_id, url, request_headers, started_at, duration_ms,
                                     status_code, response_headers, response_body, error, outcome)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     )
     UPDATE webhook_deliveries SET attempts = attempts + 1, last_status_code = $8, last_error = $13,
            last_attempt_at = $6, delivered_at = CASE WHEN $12 = 'success' THEN now() ELSE delivered_at END
      WHERE id = $1 RETURNING attempts`,
    [
      d.id,
      ctx.job.tenantId,
      ctx.job.id,
      d.url,
      JSON.stringify(headers),
      result.startedAt,
      result.durationMs,
      result.statusCode,
      result.headers === null ? null : JSON.stringify(result.headers),
      result.body,
      result.error,
      outcome,
      outcome === "success" ? null : message,
    ],
  );

  if (outcome === "success") return { statusCode: result.statusCode, requests: counted[0]!.attempts };
  if (result.statusCode === 410) {
    await disable(d.endpoint_id, "The endpoint answered 410 Gone");
    throw new PermanentError("HTTP 410 Gone: the endpoint is disabled");
  }
  const sent = (counted[0]?.attempts ?? d.attempts + 1) - d.round_start;
  // The receiver failed every request of the schedule: a transient cause (not the message) that ran out of tries.
  if (sent >= MAX_REQUESTS) throw new GaveUpError(`${message}; gave up after ${sent} requests`, sent);
  const scheduled = RETRY_SCHEDULE_MS[sent - 1]! * e.WEBHOOK_RETRY_SCALE * (0.8 + Math.random() * 0.4);
  throw new RetryableError(message, Math.max(scheduled, retryAfter ?? 0));
}

export const deliveryTask = defineTask({
  type: "webhook_delivery",
  queue: "webhooks",
  inputSchema,
  // The retry schedule is the task's own (above); this budget only bounds crashes and deferrals' bookkeeping.
  retry: { maxAttempts: 1000, initialBackoffMs: 1_000, maxBackoffMs: 60_000, multiplier: 2, jitter: "full" },
  timeoutMs: 60_000,
  // A crashed worker's delivery is taken over within seconds; renewed every 1.7 s, which is also how
  // soon a call left unanswered past WEBHOOK_SLOW_MS cuts its endpoint's limit (lib/downstream).
  leaseMs: 5_000,
  handler: deliver,
});
