/** Schemas shared by more than one corner of lib/. */
import { z } from "zod";

const ISO_MESSAGE = "must be an ISO 8601 date (2026-01-31) or date-time (2026-01-31T12:00:00Z) between 1970 and 9999";

/** An ISO 8601 date or date-time within what Postgres and people mean, normalised to UTC. */
export const isoInstant = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()], { error: ISO_MESSAGE })
  .transform((v) => new Date(v))
  .refine(
    (d) => !Number.isNaN(d.getTime()) && d.getTime() >= Date.UTC(1970, 0, 1) && d.getTime() < Date.UTC(10000, 0, 1),
    {
      message: ISO_MESSAGE,
    },
  )
  .transform((d) => d.toISOString());
