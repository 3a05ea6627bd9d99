/**
 * The notifications workload's API, described (lib/api-doc.ts): the bell's list and its unread
 * count, marking read, e-mail preferences, and the unsubscribe link's route (no sign-in). Handed
 * to the engine in its manifest (./index.ts, `openapi`).
 */
import { z } from "zod";
import {
  answers,
  authed,
  body,
  cursorPage,
  instant,
  jsonOf,
  nullableInstant,
  operation,
  type ApiDescription,
  type Out,
  type Ret,
  type Same,
} from "../api-doc";
import { listNotificationsQuerySchema, markReadSchema, preferenceUpdateSchema, unsubscribeSchema } from "./schema";
import type { getPreferences, listNotifications, markNotificationsRead, unsubscribe } from "./service";

export const notificationSchema = z
  .object({
    id: z.string(),
    kind: z.string().meta({ description: "What it is about: `export`, `import`, `schedule` (a scheduled run)…" }),
    kindLabel: z.string().meta({ description: "The kind in words (`scheduled run`)" }),
    outcome: z.enum(["succeeded", "failed", "cancelled"]),
    job: z.object({ id: z.string(), type: z.string(), url: z.string().meta({ description: "The job's page" }) }),
    error: z.string().nullable().meta({ description: "The job's error, when it failed" }),
    createdAt: instant,
    readAt: nullableInstant,
  })
  .meta({ id: "Notification" });

const listSchema = z
  .object({
    notifications: z.array(notificationSchema),
    unread: z
      .number()
      .int()
      .meta({ description: "The caller's unread notifications in the tenant (the bell's number)" }),
    ...cursorPage,
  })
  .meta({ id: "NotificationList" });

const markedSchema = z
  .object({ marked: z.number().int(), unread: z.number().int() })
  .meta({ id: "NotificationsMarked" });

const preferencesSchema = z
  .object({
    preferences: z.array(
      z.object({
        kind: z.string(),
        label: z.string(),
        audience: z.enum(["members", "operators"]),
        email: z.boolean().meta({ description: "Whether an e-mail goes out (the in-app notification always does)" }),
      }),
    ),
  })
  .meta({ id: "NotificationPreferences" });

const unsubscribedSchema = z
  .object({ kind: z.string(), label: z.string(), email: z.literal(false) })
  .meta({ id: "Unsubscribed" });

export const notificationOperations = {
  list: operation("get", "/api/v1/notifications", {
    tags: ["Notifications"],
    summary: "The caller's notifications (newest first) and their unread count",
    description:
      "One per job of the caller's that ended (an export, an import, a scheduled run), made in the transaction " +
      "that ended it; the tenant's event stream (`GET /api/v1/events`) tells when to read again.",
    requestParams: { query: listNotificationsQuerySchema },
    responses: authed({ "200": jsonOf(listSchema, "A page of notifications") }, 400),
  }),
  read: operation("post", "/api/v1/notifications/read", {
    tags: ["Notifications"],
    summary: "Mark the caller's notifications read: `ids`, or `all: true`",
    requestBody: body(markReadSchema.meta({ id: "MarkNotificationsRead" })),
    responses: authed({ "200": jsonOf(markedSchema, "How many were marked, and how many stay unread") }, 400),
  }),
  preferences: operation("get", "/api/v1/notifications/preferences", {
    tags: ["Notifications"],
    summary: "The caller's e-mail choice for each kind (operators also get `dead_letters`, the digest)",
    responses: authed({ "200": jsonOf(preferencesSchema, "Each kind and whether it is mailed") }),
  }),
  setPreference: operation("put", "/api/v1/notifications/preferences", {
    tags: ["Notifications"],
    summary: "Turn e-mail for one kind on or off",
    requestBody: body(preferenceUpdateSchema.meta({ id: "NotificationPreferenceUpdate" })),
    responses: authed({ "200": jsonOf(preferencesSchema, "Every kind, after the change") }, 400),
  }),
  unsubscribe: operation("post", "/api/v1/notifications/unsubscribe", {
    tags: ["Notifications"],
    summary: "Turn e-mail for one kind off with the token of a mail's unsubscribe link (no sign-in)",
    requestBody: body(unsubscribeSchema.meta({ id: "UnsubscribeRequest" })),
    responses: answers({ "200": jsonOf(unsubscribedSchema, "E-mail for that kind is off") }, 400, 404, 429),
  }),
};

export const notificationsApi: ApiDescription = {
  tags: [{ name: "Notifications", description: "The bell: a member's job outcomes, read in the app or by e-mail" }],
  operations: Object.values(notificationOperations),
};

/** One entry per response schema; `tsc` reports the first that is not `true`. */
export const notificationSchemasMatchTheirTypes: {
  list: Same<Out<typeof listSchema>, Ret<typeof listNotifications>>;
  marked: Same<Out<typeof markedSchema>, Ret<typeof markNotificationsRead>>;
  preferences: Same<Out<typeof preferencesSchema>, Ret<typeof getPreferences>>;
  unsubscribed: Same<Out<typeof unsubscribedSchema>, Ret<typeof unsubscribe>>;
} = { list: true, marked: true, preferences: true, unsubscribed: true };
