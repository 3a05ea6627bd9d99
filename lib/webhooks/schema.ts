/** What the webhook API accepts. */
import { isIP } from "node:net";
import { z } from "zod";
import { webhookSettings } from "./settings";
import { judgeAddress } from "./address";

/** Events an endpoint may subscribe to (`ping` is only ever sent by "Send test event"). */
export const WEBHOOK_EVENTS = ["export.ready", "job.succeeded", "job.failed", "job.cancelled"] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Why a URL may not be an endpoint, or null. https only (plain http and private hosts with WEBHOOK_ALLOW_PRIVATE=1). */
export function urlProblem(raw: string, allowPrivate = webhookSettings().WEBHOOK_ALLOW_PRIVATE === "1"): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "must be an absolute URL (https://…)";
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) {
    return allowPrivate ? "must be an http or https URL" : "must be an https URL";
  }
  if (url.username || url.password) return "must not carry a user name or password";
  if (url.hash) return "must not have a #fragment";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host)) {
    const verdict = judgeAddress(host, allowPrivate);
    if (!verdict.ok) return `may not point at ${verdict.reason.replace(`${host} is `, "")}`;
  } else if (!allowPrivate && (host === "localhost" || host.endsWith(".localhost") || !host.includes("."))) {
    return "must name a public host";
  }
  return null;
}

const url = z
  .string({ error: "is required" })
  .trim()
  .max(2048, "must be at most 2048 characters")
  .superRefine((v, ctx) => {
    const problem = urlProblem(v);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

const events = z
  .array(z.enum(WEBHOOK_EVENTS, { error: `must be one of ${WEBHOOK_EVENTS.join(", ")}` }), {
    error: "must be a list of event types",
  })
  .min(1, "must name at least one event")
  .max(WEBHOOK_EVENTS.length)
  .transform((list) => [...new Set(list)]);

const rate = z
  .number({ error: "must be a whole number" })
  .int("must be a whole number")
  .min(1, "must be at least 1")
  .max(1000, "must be at most 1000");

const description = z.string().trim().max(500, "must be at most 500 characters");

export const createEndpointSchema = z
  .object({ url, events, description: description.optional(), rateLimitPerSecond: rate.optional() })
  .strict();

export const updateEndpointSchema = z
  .object({
    url: url.optional(),
    events: events.optional(),
    description: description.optional(),
    rateLimitPerSecond: rate.optional(),
    disabled: z.boolean({ error: "must be true or false" }).optional(),
  })
  .strict();

export const recoverSchema = z
  .object({ since: z.iso.datetime({ offset: true, error: "must be an ISO 8601 date-time" }) })
  .strict();

export const deliveryQuerySchema = z
  .object({
    status: z
      .enum(["pending", "delivered", "failed", "cancelled"], {
        error: "must be pending, delivered, failed or cancelled",
      })
      .optional(),
    /** Only the deliveries of events about this job (`job.succeeded`… of job `job`). */
    job: z.uuid({ error: "must be a job id" }).optional(),
    cursor: z.string().max(200).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(25),
  })
  .strict();

export const jobDeliveryQuerySchema = z
  .object({
    job: z.uuid({ error: "must be a job id" }),
    limit: z.coerce.number().int().min(1).max(100).default(25),
  })
  .strict();
