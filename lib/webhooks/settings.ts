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
  /** Requests in flight to one endpoint at once, at most: an endpoint answering fast reaches it (see WEBHOOK_SLOW_MS). */
  WEBHOOK_ENDPOINT_CONCURRENCY: intFrom(8, 1, MAX_CONCURRENCY),
  /**
   * An answer slower than this (ms) halves the endpoint's in-flight limit, as does a request still
   * unanswered after it; each faster answer adds one, up to WEBHOOK_ENDPOINT_CONCURRENCY (AIMD). A slow
   * endpoint so holds one request in flight, and its deliveries wait parked, not in the pool. 0: no
   * adapting, the limit is WEBHOOK_ENDPOINT_CONCURRENCY (endpoints that are slow by nature, many of
   * them: bench:capacity's case). A fixed share of 64 let two 5-s endpoints' deliveries slow a healthy
   * endpoint's 20× in bench:webhooks: they share the process's connections and event loop.
   */
  WEBHOOK_SLOW_MS: intFrom(1_000, 0, 120_000),
  /** A delivery not answered within this long failed, in ms. */
  WEBHOOK_TIMEOUT_MS: intFrom(15_000, 100, 120_000),
  /** Multiplies the retry schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h): 0.001 makes it milliseconds, for tests. */
  WEBHOOK_RETRY_SCALE: z.coerce.number().min(0).max(100).default(1),
  /** How long an endpoint's circuit stays open before one probe, in ms. */
  WEBHOOK_CIRCUIT_OPEN_MS: intFrom(30_000, 10, 3_600_000),
  /** `1`: endpoints may be loopback or private addresses, over plain http too (development, tests). Link-local and metadata addresses stay refused. */
  WEBHOOK_ALLOW_PRIVATE: z.enum(["0", "1"]).default("0"),
});
