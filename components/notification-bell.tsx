"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useId, useRef, useState } from "react";
import { Time } from "@/components/ui/time";
import { isTerminal } from "@/lib/jobs/dto";
import { useJobEventsWhere } from "@/lib/client/live";
import {
  bellLabel,
  fetchNotifications,
  markNotificationsRead,
  notificationKeys,
  notificationTitle,
  type NotificationDto,
} from "@/lib/client/notifications";

/** How many the bell's panel lists; the page has the rest. */
const SHOWN = 8;

function BellIcon() {
  return (
    <svg aria-hidden="true" viewBox="0 0 24 24" className="h-5 w-5" fill="none" stroke="currentColor" strokeWidth="1.8">
      <path
        strokeLinecap="round"
        strokeLinejoin="round"
        d="M14.857 17.082a23.848 23.848 0 005.454-1.31A8.967 8.967 0 0118 9.75V9A6 6 0 006 9v.75a8.967 8.967 0 01-2.312 6.022c1.733.64 3.56 1.085 5.455 1.31m5.714 0a24.255 24.255 0 01-5.714 0m5.714 0a3 3 0 11-5.714 0"
      />
    </svg>
  );
}

const outcomeDot = { succeeded: "bg-emerald-600", failed: "bg-red-600", cancelled: "bg-slate-500" } as const;

/** One notification as a link to its job; opening it marks it read. */
export function NotificationItem({ n, onOpen }: { n: NotificationDto; onOpen: (n: NotificationDto) => void }) {
  return (
    <Link
      href={n.job.url}
      onClick={() => onOpen(n)}
      className="flex gap-3 rounded px-3 py-2 hover:bg-slate-50"
      data-testid="notification"
      data-unread={n.readAt ? undefined : "true"}
    >
      <span aria-hidden="true" className={`mt-1.5 h-2 w-2 shrink-0 rounded-full ${outcomeDot[n.outcome]}`} />
      <span className="min-w-0 flex-1">
        <span className={`block text-sm ${n.readAt ? "text-slate-700" : "font-semibold text-slate-900"}`}>
          {notificationTitle(n)}
          {!n.readAt && <span className="sr-only"> (unread)</span>}
        </span>
        {n.error && <span className="block truncate text-xs text-red-800">{n.error}</span>}
        <span className="block text-xs text-slate-600">
          <Time iso={n.createdAt} />
        </span>
      </span>
    </Link>
  );
}

/**
 * The bell in the header: the member's unread count, and a panel of their newest notifications.
 * It reads the list again when a job of the tenant ends (the tenant's event stream: the
 * notification was written in the transaction that ended the job), and every 30 s while the
 * stream is down.
 */
export function NotificationBell() {
  const qc = useQueryClient();
  const pathname = usePathname();
  const panelId = useId();
  const [open, setOpen] = useState(false);
  const wrapRef = useRef<HTMLDivElement>(null);
  const live = useJobEventsWhere(
    (e) => isTerminal(e.status),
    () => void qc.invalidateQueries({ queryKey: notificationKeys.all }),
    { minGapMs: 1_000 },
  );
  const query = useQuery({
    queryKey: notificationKeys.bell(),
    queryFn: () => fetchNotifications({ limit: SHOWN }),
    refetchInterval: live ? false : 30_000,
  });
  const mark = useMutation({
    mutationFn: markNotificationsRead,
    onSettled: () => qc.invalidateQueries({ queryKey: notificationKeys.all }),
  });
  useEffect(() => setOpen(false), [pathname]);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && setOpen(false);
    const onClick = (e: MouseEvent) => {
      if (wrapRef.current && !wrapRef.current.contains(e.target as Node)) setOpen(false);
    };
    window.addEventListener("keydown", onKey);
    window.addEventListener("mousedown", onClick);
    return () => {
      window.removeEventListener("keydown", onKey);
      window.removeEventListener("mousedown", onClick);
    };
  }, [open]);

  const unread = query.data?.unread ?? 0;
  const items = query.data?.notifications ?? [];
  const openOne = (n: NotificationDto) => {
    if (!n.readAt) mark.mutate([n.id]);
  };
  return (
    <div ref={wrapRef} className="relative">
      <button
        type="button"
        aria-label={bellLabel(unread)}
        aria-expanded={open}
        aria-controls={panelId}
        onClick={() => setOpen((o) => !o)}
        className="relative rounded p-1.5 text-slate-700 hover:bg-slate-100 hover:text-slate-900"
        data-testid="notification-bell"
      >
        <BellIcon />
        {unread > 0 && (
          <span
            aria-hidden="true"
            className="absolute -right-1 -top-1 min-w-5 rounded-full bg-red-700 px-1 text-center text-xs font-semibold leading-5 text-white"
            data-testid="notification-count"
          >
            {unread > 99 ? "99+" : unread}
          </span>
        )}
      </button>
      {open && (
        <div
          id={panelId}
          role="region"
          aria-label="Notifications"
          className="fixed inset-x-4 top-16 z-40 rounded border border-slate-200 bg-white shadow-lg sm:absolute sm:inset-x-auto sm:right-0 sm:top-auto sm:mt-2 sm:w-80"
        >
          <div className="flex items-center justify-between border-b border-slate-100 px-3 py-2">
            <h2 className="text-sm font-semibold">Notifications</h2>
            <button
              type="button"
              className="text-sm text-indigo-700 underline hover:text-indigo-600 disabled:opacity-50"
              disabled={unread === 0 || mark.isPending}
              onClick={() => mark.mutate("all")}
            >
              Mark all read
            </button>
          </div>
          {query.isError ? (
            <p role="alert" className="px-3 py-4 text-sm text-red-800">
              Notifications could not be loaded.
            </p>
          ) : items.length === 0 ? (
            <p className="px-3 py-4 text-sm text-slate-600">
              {query.isPending ? "Loading…" : "Nothing yet: when a job of yours ends, it shows here."}
            </p>
          ) : (
            <ul className="max-h-96 overflow-y-auto py-1">
              {items.map((n) => (
                <li key={n.id}>
                  <NotificationItem n={n} onOpen={openOne} />
                </li>
              ))}
            </ul>
          )}
          <div className="border-t border-slate-100 px-3 py-2">
            <Link href="/notifications" className="text-sm text-indigo-700 underline hover:text-indigo-600">
              All notifications and e-mail settings
            </Link>
          </div>
        </div>
      )}
    </div>
  );
}
