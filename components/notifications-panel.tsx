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
  // A box's value while its save is on its way: the click's, whatever a refetch says meanwhile (every
  // notification refetches this list with the bell's) or an earlier save's answer arriving late.
  const [pending, setPending] = useState<Record<string, boolean>>({});
  const latest = useRef<Record<string, number>>({});
  const save = useMutation({
    mutationFn: ({ kind, email }: { kind: string; email: boolean; seq: number }) => updatePreference(kind, email),
    onSuccess: (data, { kind, seq }) => {
      if (latest.current[kind] !== seq) return;
      setError(null);
      qc.setQueryData(key, data);
    },
    onError: (e, { kind, seq }) => {
      if (latest.current[kind] !== seq) return;
      // A refusal puts the box back (the pending value goes) and says why.
      setError(e instanceof Error ? e.message : "The change was not saved");
    },
    onSettled: (_data, _err, { kind, seq }) => {
      if (latest.current[kind] !== seq) return;
      setPending(({ [kind]: _done, ...rest }) => rest);
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
            checked={pending[p.kind] ?? p.email}
            onChange={(e) => {
              // The box follows the click in the same event, and keeps it until its save is answered.
              const email = e.target.checked;
              const seq = (latest.current[p.kind] ?? 0) + 1;
              latest.current[p.kind] = seq;
              setPending((now) => ({ ...now, [p.kind]: email }));
              save.mutate({ kind: p.kind, email, seq });
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
