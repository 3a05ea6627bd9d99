"use client";

import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { NotificationItem } from "@/components/notification-bell";
import { Alert } from "@/components/ui/alert";
import { Button } from "@/components/ui/button";
import { LoadMore } from "@/components/ui/load-more";
import {
  fetchNotifications,
  fetchPreferences,
  markNotificationsRead,
  notificationKeys,
  updatePreference,
  type NotificationDto,
  type PreferenceDto,
} from "@/lib/client/notifications";

/** Every notification of the member in their tenant, newest first, paged; marking read. */
export function NotificationsList() {
  const qc = useQueryClient();
  const list = useInfiniteQuery({
    queryKey: notificationKeys.pages(),
    queryFn: ({ pageParam }) => fetchNotifications({ limit: 25, cursor: pageParam || null }),
    initialPageParam: "",
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const mark = useMutation({
    mutationFn: markNotificationsRead,
    onSettled: () => qc.invalidateQueries({ queryKey: notificationKeys.all }),
  });
  const items = list.data?.pages.flatMap((p) => p.notifications) ?? [];
  const unread = list.data?.pages[0]?.unread ?? 0;
  const openOne = (n: NotificationDto) => {
    if (!n.readAt) mark.mutate([n.id]);
  };
  return (
    <div className="space-y-3">
      <div className="flex flex-wrap items-center justify-between gap-2">
        <p className="text-sm text-slate-700" data-testid="notifications-unread">
          {unread === 0 ? "All read." : `${unread} unread.`}
        </p>
        <Button onClick={() => mark.mutate("all")} disabled={unread === 0 || mark.isPending}>
          Mark all read
        </Button>
      </div>
      {list.isPending && <p className="text-sm text-slate-500">Loading…</p>}
      {list.isError && <Alert tone="error">Notifications could not be loaded.</Alert>}
      {list.isSuccess && items.length === 0 && (
        <p className="text-sm text-slate-600">
          Nothing yet: when an export, import or scheduled run of yours ends, it shows here.
        </p>
      )}
      {items.length > 0 && (
        <ul className="divide-y divide-slate-100 rounded border border-slate-200 bg-white">
          {items.map((n) => (
            <li key={n.id}>
              <NotificationItem n={n} onOpen={openOne} />
            </li>
          ))}
        </ul>
      )}
      <LoadMore query={list} />
    </div>
  );
}

/** The member's e-mail choice per kind: a checkbox each, saved as it changes. */
export function NotificationPreferences() {
  const qc = useQueryClient();
  const prefs = useQuery({ queryKey: notificationKeys.preferences(), queryFn: fetchPreferences });
  const [error, setError] = useState<string | null>(null);
  const key = notificationKeys.preferences();
  // Clicks made while an earlier save is on its way: only the latest save's answer is shown, so a
  // quick uncheck-then-check is not undone by the uncheck's answer arriving after the check.
  const latest = useRef(0);
  type Change = { kind: string; email: boolean; before?: { preferences: PreferenceDto[] } };
  const save = useMutation({
    mutationFn: ({ kind, email }: Change) => updatePreference(kind, email),
    onMutate: ({ before }: Change) => ({ before, seq: ++latest.current }),
    onSuccess: (data, _vars, ctx) => {
      setError(null);
      if (ctx.seq === latest.current) qc.setQueryData(key, data);
    },
    onError: (e, _vars, ctx) => {
      if (ctx?.before && ctx.seq === latest.current) qc.setQueryData(key, ctx.before);
      setError(e instanceof Error ? e.message : "The change was not saved");
    },
  });
  if (prefs.isError) return <Alert tone="error">E-mail settings could not be loaded.</Alert>;
  if (!prefs.data) return <p className="text-sm text-slate-600">Loading…</p>;
  return (
    <fieldset className="space-y-2">
      <legend className="sr-only">E-mail me when</legend>
      {prefs.data.preferences.map((p) => (
        <label key={p.kind} className="flex items-center gap-2 text-sm">
          <input
            type="checkbox"
            className="h-4 w-4 shrink-0"
            checked={p.email}
            onChange={(e) => {
              // The box follows the click in the same event (a controlled input re-rendered with the old
              // value would flip back until the mutation's own update landed); a refusal puts it back.
              const email = e.target.checked;
              const before = qc.getQueryData<{ preferences: PreferenceDto[] }>(key);
              if (before)
                qc.setQueryData(key, {
                  preferences: before.preferences.map((x) => (x.kind === p.kind ? { ...x, email } : x)),
                });
              save.mutate({ kind: p.kind, email, before });
            }}
          />
          {p.audience === "operators"
            ? "New dead letters in my tenant, as one digest per window (operators)"
            : `My ${p.label}s end (finished, failed, or cancelled by someone else)`}
        </label>
      ))}
      {error && <Alert tone="error">{error}</Alert>}
    </fieldset>
  );
}
