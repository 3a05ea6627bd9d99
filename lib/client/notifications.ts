/**
 * Browser-side fetchers, query keys and words for notifications (the bell, its page and the
 * e-mail preferences). Types only from lib/notifications (its modules are server-side).
 */
import type { NotificationDto, NotificationListDto, PreferenceDto } from "../notifications/service";
import { request } from "./api";

export type { NotificationDto, NotificationListDto, PreferenceDto };

export const notificationKeys = {
  all: ["notifications"] as const,
  /** The bell's newest few, with the unread count. */
  bell: () => [...notificationKeys.all, "bell"] as const,
  /** The notifications page, paged with "Load more". */
  pages: () => [...notificationKeys.all, "pages"] as const,
  preferences: () => [...notificationKeys.all, "preferences"] as const,
};

export function fetchNotifications(
  opts: { limit?: number; cursor?: string | null } = {},
): Promise<NotificationListDto> {
  const q = new URLSearchParams();
  if (opts.limit) q.set("limit", String(opts.limit));
  if (opts.cursor) q.set("cursor", opts.cursor);
  const qs = q.toString();
  return request(`/api/v1/notifications${qs ? `?${qs}` : ""}`);
}

/** Marks `ids` read, or every notification when `ids` is "all". */
export function markNotificationsRead(ids: string[] | "all"): Promise<{ marked: number; unread: number }> {
  return request("/api/v1/notifications/read", {
    method: "POST",
    body: JSON.stringify(ids === "all" ? { all: true } : { ids }),
  });
}

export function fetchPreferences(): Promise<{ preferences: PreferenceDto[] }> {
  return request("/api/v1/notifications/preferences");
}

export function updatePreference(kind: string, email: boolean): Promise<{ preferences: PreferenceDto[] }> {
  return request("/api/v1/notifications/preferences", { method: "PUT", body: JSON.stringify({ kind, email }) });
}

const OUTCOME_WORDS = { succeeded: "finished", failed: "failed", cancelled: "was cancelled" } as const;

/** A notification as a line: "Your export failed". */
export function notificationTitle(n: Pick<NotificationDto, "kindLabel" | "outcome">): string {
  const label = n.kindLabel.charAt(0).toUpperCase() + n.kindLabel.slice(1);
  return `${label} ${OUTCOME_WORDS[n.outcome]}`;
}

/** The bell's accessible name: what it is and how many are unread. */
export function bellLabel(unread: number): string {
  return unread === 0 ? "Notifications, none unread" : `Notifications, ${unread} unread`;
}
