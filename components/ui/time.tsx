"use client";

import { useEffect, useState } from "react";
import { formatRelative, formatTime, type TimeStyle } from "@/lib/client/format";
import { useDisplayZone } from "@/lib/client/time-zone";

/** One clock for every <Time> on the page, ticking every 15 s. */
let listeners = new Set<(now: number) => void>();
let timer: ReturnType<typeof setInterval> | null = null;
function subscribe(fn: (now: number) => void): () => void {
  listeners.add(fn);
  timer ??= setInterval(() => {
    const now = Date.now();
    for (const l of listeners) l(now);
  }, 15_000);
  return () => {
    listeners.delete(fn);
    if (!listeners.size && timer) {
      clearInterval(timer);
      timer = null;
      listeners = new Set();
    }
  };
}

/**
 * A moment, as people read it: relative ("5 minutes ago"), with the absolute
 * time and zone on hover and for screen readers (`title`, `dateTime`).
 * `mode="absolute"` shows the absolute time (`style`, lib/client/format.ts) with
 * the relative one on hover. Drawn in the browser, in the reader's zone (or UTC,
 * by the footer's switch): on the server and while hydrating it is an empty
 * <time> (the server does not know the reader's zone).
 */
export function Time({
  iso,
  mode = "relative",
  style = "full",
  empty = "—",
  testId,
}: {
  iso: string | null | undefined;
  mode?: "relative" | "absolute";
  style?: TimeStyle;
  empty?: string;
  testId?: string;
}) {
  const [now, setNow] = useState(() => Date.now());
  const zone = useDisplayZone();
  useEffect(() => subscribe(setNow), []);
  if (!iso) return <span data-testid={testId}>{empty}</span>;
  if (!zone) return <time dateTime={iso} data-testid={testId} className="whitespace-nowrap" />;
  const absolute = formatTime(iso, zone, style);
  const rel = formatRelative(iso, now);
  return (
    <time
      dateTime={iso}
      title={mode === "relative" ? absolute : rel}
      data-testid={testId}
      className="whitespace-nowrap"
    >
      {mode === "relative" ? rel : absolute}
    </time>
  );
}

/**
 * A time inside words (a message, a label): the formatter in the reader's zone, or "" on the
 * server and while hydrating. Use <Time> where a time stands as an element of its own.
 */
export function useFormatTime(): (iso: string | null | undefined, style?: TimeStyle) => string {
  const zone = useDisplayZone();
  return (iso, style = "full") => (zone ? formatTime(iso, zone, style) : "");
}
