/** What the notifications API takes, as zod schemas (the routes and the OpenAPI document share them). */
import { z } from "zod";

export const listNotificationsQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    cursor: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,200}$/, "must be a cursor this API answered")
      .optional(),
  })
  .strict();

export const markReadSchema = z
  .object({
    ids: z.array(z.uuid()).min(1).max(100).optional(),
    all: z.literal(true).optional(),
  })
  .strict()
  .refine((v) => (v.ids === undefined) !== (v.all === undefined), {
    message: "give either ids or all: true",
    path: ["ids"],
  });

export const preferenceUpdateSchema = z
  .object({
    kind: z.string().min(1).max(64),
    email: z.boolean(),
  })
  .strict();

export const unsubscribeSchema = z.object({ token: z.string().min(1).max(1_000) }).strict();

export type NotificationOutcome = "succeeded" | "failed" | "cancelled";
