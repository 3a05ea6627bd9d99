/**
 * The bell's side of notifications, as the API, the pages and the tests use it: a member's
 * notifications in their tenant (newest first, keyset-paged, with the unread count), marking them
 * read, their e-mail preferences per kind, and the unsubscribe link that needs no sign-in.
 * Everything is the caller's own: another member's notification is never listed nor marked.
 */
import { isOperator, requireTenant } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import { pool } from "../db";
import { AppError, parseOrThrow } from "../errors";
import { run } from "../sql";
import { verifyUnsubscribeToken } from "./links";
import {
  listNotificationsQuerySchema,
  markReadSchema,
  preferenceUpdateSchema,
  unsubscribeSchema,
  type NotificationOutcome,
} from "./schema";
import {
  countUnread,
  kindLabel,
  listNotifications as listStatement,
  listPreferences,
  markRead,
  setPreference,
} from "./sql/statements";

export type NotificationDto = {
  id: string;
  /** What it is about: a job type that tells its owner, `schedule` for a scheduled run. */
  kind: string;
  /** The kind in words ("export", "scheduled run"). */
  kindLabel: string;
  outcome: NotificationOutcome;
  job: { id: string; type: string; url: string };
  /** The job's error, when it failed. */
  error: string | null;
  createdAt: string;
  readAt: string | null;
};

export type NotificationListDto = { notifications: NotificationDto[]; unread: number; nextCursor: string | null };

export type PreferenceDto = { kind: string; label: string; audience: "members" | "operators"; email: boolean };

const encodeCursor = (at: Date, id: string) => Buffer.from(`${at.toISOString()}|${id}`).toString("base64url");
function decodeCursor(cursor: string): [Date, string] {
  const [at, id] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  const when = new Date(at ?? "");
  if (!id || Number.isNaN(when.getTime()) || !/^[0-9a-f-]{36}$/.test(id)) {
    throw new AppError("invalid_input", "Invalid input: cursor: must be a cursor this API answered", [
      { path: "cursor", message: "must be a cursor this API answered" },
    ]);
  }
  return [when, id];
}

/** The caller's notifications in their tenant, newest first, and how many are unread. */
export async function listNotifications(principal: Principal, query: unknown): Promise<NotificationListDto> {
  const tenantId = requireTenant(principal);
  const q = parseOrThrow(listNotificationsQuerySchema, query);
  const [at, id] = q.cursor ? decodeCursor(q.cursor) : [null, null];
  const { rows } = await run(pool(), listStatement, [principal.userId, tenantId, at, id, q.limit + 1]);
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  return {
    notifications: page.map((r) => ({
      id: r.id,
      kind: r.kind,
      kindLabel: r.kindLabel,
      outcome: r.outcome as NotificationOutcome,
      job: { id: r.jobId, type: r.jobType, url: `/jobs/${r.jobId}` },
      error: r.outcome === "failed" ? r.errorMessage : null,
      createdAt: r.createdAt.toISOString(),
      readAt: r.readAt?.toISOString() ?? null,
    })),
    unread: await unreadCount(principal.userId, tenantId),
    nextCursor: rows.length > q.limit && last ? encodeCursor(new Date(last.createdAt), last.id) : null,
  };
}

async function unreadCount(userId: string, tenantId: string): Promise<number> {
  const { rows } = await run(pool(), countUnread, [userId, tenantId]);
  return rows[0]!.unread;
}

/** Marks the caller's notifications read (`ids`, or `all: true`); answers how many and what is left unread. */
export async function markNotificationsRead(
  principal: Principal,
  body: unknown,
): Promise<{ marked: number; unread: number }> {
  const tenantId = requireTenant(principal);
  const input = parseOrThrow(markReadSchema, body);
  const { rowCount } = await run(pool(), markRead, [principal.userId, tenantId, input.ids ?? null]);
  return { marked: rowCount, unread: await unreadCount(principal.userId, tenantId) };
}

/** The caller's e-mail choice for every kind offered to them (operators also get the dead-letter digest). */
export async function getPreferences(principal: Principal): Promise<{ preferences: PreferenceDto[] }> {
  const tenantId = requireTenant(principal);
  const { rows } = await run(pool(), listPreferences, [principal.userId, tenantId, isOperator(principal)]);
  return {
    preferences: rows.map((r) => ({
      kind: r.kind,
      label: r.label,
      audience: r.audience as PreferenceDto["audience"],
      email: r.email,
    })),
  };
}

/** Turns e-mail for one kind on or off for the caller; a kind not offered to them is a 400 naming `kind`. */
export async function updatePreference(principal: Principal, body: unknown): Promise<{ preferences: PreferenceDto[] }> {
  const tenantId = requireTenant(principal);
  const input = parseOrThrow(preferenceUpdateSchema, body);
  const offered = (await getPreferences(principal)).preferences.map((p) => p.kind);
  if (!offered.includes(input.kind)) {
    const message = `must be one of ${offered.join(", ")}`;
    throw new AppError("invalid_input", `Invalid input: kind: ${message}`, [{ path: "kind", message }]);
  }
  await run(pool(), setPreference, [principal.userId, tenantId, input.kind, input.email]);
  return getPreferences(principal);
}

/** What an unsubscribe link's token would turn off (its page asks before it does); null when it is not valid. */
export async function describeUnsubscribe(token: string): Promise<{ kind: string; label: string } | null> {
  const claim = await verifyUnsubscribeToken(pool(), token);
  if (!claim) return null;
  const { rows } = await run(pool(), kindLabel, [claim.kind]);
  return rows[0] ? { kind: claim.kind, label: rows[0].label } : null;
}

/**
 * An unsubscribe link's token (from a notification mail) turns that member's e-mail for that kind
 * off, without a sign-in. A token that is not well signed is a 404 (nothing says whether it ever was).
 */
export async function unsubscribe(body: unknown): Promise<{ kind: string; label: string; email: false }> {
  const { token } = parseOrThrow(unsubscribeSchema, body);
  const claim = await verifyUnsubscribeToken(pool(), token);
  if (!claim) throw new AppError("not_found", "This unsubscribe link is not valid");
  const { rows } = await run(pool(), kindLabel, [claim.kind]);
  if (!rows[0]) throw new AppError("not_found", "This unsubscribe link is not valid");
  await run(pool(), setPreference, [claim.userId, claim.tenantId, claim.kind, false]);
  return { kind: claim.kind, label: rows[0].label, email: false };
}
