"use client";

import { useEffect, useState } from "react";
import { formatRelative, formatTime } from "@/lib/client/format";

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
 * `mode="absolute"` shows the absolute time with the relative one on hover.
 */
export function Time({
  iso,
  mode = "relative",
  empty = "—",
  testId,
}: {
  iso: string | null | undefined;
  mode?: "relative" | "absolute";
  empty?: string;
  testId?: string;
}) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => subscribe(setNow), []);
  if (!iso) return <span data-testid={testId}>{empty}</span>;
  const absolute = formatTime(iso);
  const rel = formatRelative(iso, now);
  return (
    <time
      dateTime={iso}
      title={mode === "relative" ? absolute : rel}
      data-testid={testId}
      suppressHydrationWarning
      className="whitespace-nowrap"
    >
      {mode === "relative" ? rel : absolute}
    </time>
  );
}
