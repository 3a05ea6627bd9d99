/** The webhooks workload's configuration (read through lib/env.ts, listed in its manifest). */
import { z } from "zod";
import { defineSettings, intFrom, MAX_CONCURRENCY } from "../env";

export const webhookSettings = defineSettings({
  /** Default cap: webhook deliveries of one tenant admitted or running at once (each endpoint also limits itself). */
  QUEUE_WEBHOOKS_TENANT_CAP: intFrom(400, 0, 100_000),
  /** Webhook deliveries of all tenants admitted or running at once: what the webhooks pools hold, and a little more. */
  QUEUE_WEBHOOKS_WINDOW: intFrom(1_600, 1, 100_000),
  /**
   * Deliveries the webhooks worker pool sends at once. A delivery waiting on its endpoint holds no
   * connection, only memory (about 20 kB): the seeds' sizing, 100 messages/s answered in 10 s × 1.3,
   * is 1,300 in flight; at 1,024 the pool was full and messages waited for a slot (bench:capacity).
   */
  WEBHOOK_CONCURRENCY: intFrom(1_536, 1, MAX_CONCURRENCY),
  /**
   * Requests in flight to one endpoint at once: an endpoint's share of the pool. A slow endpoint holds
   * at most this many of WEBHOOK_CONCURRENCY; one answering fast is never held back by it (64 in flight
   * at 20 ms is 3,200 requests a second). WEBHOOK_SLOW_MS adapts it further.
   */
  WEBHOOK_ENDPOINT_CONCURRENCY: intFrom(64, 1, MAX_CONCURRENCY),
  /**
   * Unset (the default): the endpoint's limit is WEBHOOK_ENDPOINT_CONCURRENCY. Set (ms): an answer slower
   * than this, or a request still unanswered after it, halves the limit in force; each faster answer
   * adds one, up to WEBHOOK_ENDPOINT_CONCURRENCY (AIMD). For a small pool, where a slow endpoint's
   * share is too much to lose; a slow endpoint then holds one slot.
   */
  WEBHOOK_SLOW_MS: z.coerce.number().int().min(1).max(120_000).optional(),
  /** A delivery not answered within this long failed, in ms. */
  WEBHOOK_TIMEOUT_MS: intFrom(15_000, 100, 120_000),
  /** Multiplies the retry schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h): 0.001 makes it milliseconds, for tests. */
  WEBHOOK_RETRY_SCALE: z.coerce.number().min(0).max(100).default(1),
  /** How long an endpoint's circuit stays open before one probe, in ms. */
  WEBHOOK_CIRCUIT_OPEN_MS: intFrom(30_000, 10, 3_600_000),
  /** `1`: endpoints may be loopback or private addresses, over plain http too (development, tests). Link-local and metadata addresses stay refused. */
  WEBHOOK_ALLOW_PRIVATE: z.enum(["0", "1"]).default("0"),
});
