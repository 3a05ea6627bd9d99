/**
 * The payload of a `conveyor_job_events` notification, as the `jobs_notify`
 * trigger writes it (values only: display text is made by the application),
 * parsed with a schema where it is received.
 */
import { z } from "zod";

export const JOB_EVENTS_CHANNEL = "conveyor_job_events";

// int8 columns arrive as JSON numbers; a big one would lose precision, never fail.
const count = z.number();

export const jobEventSchema = z.object({
  tenantId: z.string(),
  jobId: z.string(),
  seq: z.number().int(),
  type: z.string(),
  status: z.enum(["scheduled", "queued", "running", "retrying", "succeeded", "failed", "cancelled", "expired"]),
  attempts: z.number().int(),
  done: count,
  total: count.nullable(),
  unit: z.string().nullable(),
  stage: z.string().nullable(),
  message: z.string().nullable(),
  bytes: count.nullish().transform((v) => v ?? null),
  /** The structured progress detail; null when there is none or it is too large for a notification (over 2 kB). */
  detail: z
    .record(z.string(), z.unknown())
    .nullish()
    .transform((v) => v ?? null),
  /** The run's recent (ms, done) samples (conveyor_job_progress_sample); the rate is made from them. */
  samples: z
    .array(z.tuple([z.number(), z.number()]))
    .nullish()
    .transform((v) => v ?? null),
  children: z
    .object({
      total: z.number().int(),
      done: z.number().int(),
      failed: z.number().int(),
      retrying: z.number().int().default(0),
      /** The first few children in a retry, as the roll-up stores them (read loosely: `toRetries`). */
      retries: z.array(z.unknown()).default([]),
    })
    .nullish()
    .transform((v) => v ?? null),
  /** A cancel was requested while the job runs. */
  cancelRequested: z.boolean().default(false),
  /** Where a waiting job stands in admission (lib/jobs/admission-state.ts); null once it runs. */
  admission: z
    .enum(["admitted", "waiting", "paused"])
    .nullish()
    .transform((v) => v ?? null),
  at: z.string(),
});

export type JobEvent = z.infer<typeof jobEventSchema>;

/** The event in a notification's payload, or an error naming what is wrong with it. */
export function parseJobEvent(payload: string): { ok: true; event: JobEvent } | { ok: false; error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(payload);
  } catch (e) {
    return { ok: false, error: `not JSON: ${(e as Error).message}` };
  }
  const parsed = jobEventSchema.safeParse(raw);
  if (!parsed.success) {
    return { ok: false, error: parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ") };
  }
  return { ok: true, event: parsed.data };
}
