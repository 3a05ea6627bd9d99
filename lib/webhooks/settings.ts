/** The webhooks workload's configuration (read through lib/env.ts, listed in its manifest). */
import { z } from "zod";
import { defineSettings, intFrom } from "../env";

export const webhookSettings = defineSettings({
  /** Default cap: webhook deliveries of one tenant admitted or running at once (each endpoint also limits itself). */
  QUEUE_WEBHOOKS_TENANT_CAP: intFrom(32, 0, 100_000),
  /** Webhook deliveries of all tenants admitted or running at once. */
  QUEUE_WEBHOOKS_WINDOW: intFrom(64, 1, 100_000),
  /** Deliveries the webhooks worker pool sends at once. */
  WEBHOOK_CONCURRENCY: intFrom(16, 1, 64),
  /** Requests in flight to one endpoint at once, at most: an endpoint answering fast reaches it (see WEBHOOK_SLOW_MS). */
  WEBHOOK_ENDPOINT_CONCURRENCY: intFrom(8, 1, 256),
  /**
   * An answer slower than this (ms) halves the endpoint's in-flight limit, as does a request still
   * unanswered after it; each faster answer adds one, up to WEBHOOK_ENDPOINT_CONCURRENCY. A slow
   * endpoint so holds one of the pool's slots, not WEBHOOK_ENDPOINT_CONCURRENCY.
   */
  WEBHOOK_SLOW_MS: intFrom(1_000, 1, 120_000),
  /** A delivery not answered within this long failed, in ms. */
  WEBHOOK_TIMEOUT_MS: intFrom(15_000, 100, 120_000),
  /** Multiplies the retry schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h): 0.001 makes it milliseconds, for tests. */
  WEBHOOK_RETRY_SCALE: z.coerce.number().min(0).max(100).default(1),
  /** How long an endpoint's circuit stays open before one probe, in ms. */
  WEBHOOK_CIRCUIT_OPEN_MS: intFrom(30_000, 10, 3_600_000),
  /** `1`: endpoints may be loopback or private addresses, over plain http too (development, tests). Link-local and metadata addresses stay refused. */
  WEBHOOK_ALLOW_PRIVATE: z.enum(["0", "1"]).default("0"),
});
