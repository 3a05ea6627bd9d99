/** The bodies of the schedule routes. */
import { z } from "zod";
import { priorityField } from "../jobs/priority";
import { isoInstant } from "../validation";
import { scheduleSettings } from "./settings";
import { cronProblem, intervalProblem, zoneProblem } from "./cron";

export const missedRunPolicies = ["skip", "once", "all"] as const;
export const overlapPolicies = ["skip", "buffer_one", "allow", "cancel_other"] as const;
export type MissedRunPolicy = (typeof missedRunPolicies)[number];
export type OverlapPolicy = (typeof overlapPolicies)[number];

const cron = z
  .string({ error: "must be a cron expression" })
  .trim()
  .min(1, "must be a cron expression")
  .max(200, "must be at most 200 characters")
  .superRefine((v, ctx) => {
    // Runs closer than SCHEDULE_MIN_INTERVAL_SECONDS are refused: a 6-field cron could make a run a second.
    // (Measured in UTC: a zone's DST changes move a day's runs, not the gaps of the pattern.)
    const problem = cronProblem(v) || intervalProblem(v, "UTC", scheduleSettings().SCHEDULE_MIN_INTERVAL_SECONDS);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
const timezone = z
  .string({ error: "must be an IANA time zone" })
  .max(100, "must be at most 100 characters")
  .superRefine((v, ctx) => {
    const problem = zoneProblem(v);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
const name = z
  .string({ error: "must be a name" })
  .trim()
  .min(1, "must not be empty")
  .max(200, "must be at most 200 characters");
const missedRunPolicy = z.enum(missedRunPolicies, { error: `must be one of ${missedRunPolicies.join(", ")}` });
const overlapPolicy = z.enum(overlapPolicies, { error: `must be one of ${overlapPolicies.join(", ")}` });
const catchupWindowSeconds = z
  .number({ error: "must be a whole number of seconds" })
  .int("must be a whole number of seconds")
  .min(0, "must be at least 0")
  .max(366 * 86_400, "must be at most a year (31622400)");
const maxCatchup = z
  .number({ error: "must be a whole number" })
  .int("must be a whole number")
  .min(1, "must be at least 1")
  .max(1_000, "must be at most 1000");
const optionalInstant = isoInstant.nullable().optional();

const fields = {
  name,
  cron,
  timezone: timezone.default("UTC"),
  task: z.string({ error: "must name a task type" }).min(1, "must name a task type").max(100),
  input: z.unknown().default({}),
  missedRunPolicy: missedRunPolicy.default("once"),
  overlapPolicy: overlapPolicy.default("skip"),
  catchupWindowSeconds: catchupWindowSeconds.default(86_400),
  maxCatchup: maxCatchup.default(100),
  startAt: optionalInstant,
  endAt: optionalInstant,
  paused: z.boolean({ error: "must be true or false" }).default(false),
  /** Its runs' priority (lib/jobs/priority.ts): high only where the tenant allows it. */
  priority: priorityField.default("normal"),
};

function windowInOrder(v: { startAt?: string | null; endAt?: string | null }, ctx: z.RefinementCtx): void {
  if (v.startAt && v.endAt && new Date(v.endAt) <= new Date(v.startAt)) {
    ctx.addIssue({ code: "custom", path: ["endAt"], message: "must be after startAt" });
  }
}

/** POST /api/v1/schedules */
export const createScheduleSchema = z.object(fields).strict().superRefine(windowInOrder);
export type CreateSchedule = z.infer<typeof createScheduleSchema>;

/** PATCH /api/v1/schedules/{id}: any of the fields; the next runs are recomputed. */
export const updateScheduleSchema = z
  .object({
    name: name.optional(),
    cron: cron.optional(),
    timezone: timezone.optional(),
    input: z.unknown().optional(),
    missedRunPolicy: missedRunPolicy.optional(),
    overlapPolicy: overlapPolicy.optional(),
    catchupWindowSeconds: catchupWindowSeconds.optional(),
    maxCatchup: maxCatchup.optional(),
    startAt: optionalInstant,
    endAt: optionalInstant,
    priority: priorityField.optional(),
  })
  .strict()
  .superRefine(windowInOrder);
export type UpdateSchedule = z.infer<typeof updateScheduleSchema>;

/** POST /api/v1/schedules/{id}/backfill: a run per occurrence in [from, to], with its own overlap rule. */
export const MAX_BACKFILL = 1_000;
export const backfillSchema = z
  .object({
    from: isoInstant,
    to: isoInstant,
    overlapPolicy: overlapPolicy.default("allow"),
  })
  .strict()
  .superRefine((v, ctx) => {
    if (new Date(v.to) <= new Date(v.from))
      ctx.addIssue({ code: "custom", path: ["to"], message: "must be after from" });
  });

/** POST /api/v1/schedules/{id}/trigger: one run now; by default beside any open run. */
export const triggerSchema = z.object({ overlapPolicy: overlapPolicy.default("allow") }).strict();
