"use client";

import { useSyncExternalStore } from "react";
import { browserZone, formatInZone, sameClock } from "@/lib/client/schedules";

const never = () => () => {};

/**
 * The viewer's time zone; null while rendering on the server and hydrating
 * (the server's zone is not the reader's), so the first paint matches.
 */
export function useViewerZone(): string | null {
  return useSyncExternalStore(never, browserZone, () => null);
}

/**
 * An instant on the schedule's clock, and on the viewer's when that shows
 * another time: "Tue, Dec 2, 02:30 CET · 01:30 UTC your time".
 */
export function ZonedTime({
  iso,
  zone,
  withSeconds = false,
  testId,
}: {
  iso: string;
  zone: string;
  withSeconds?: boolean;
  testId?: string;
}) {
  const viewer = useViewerZone();
  const at = new Date(iso);
  return (
    <span data-testid={testId}>
      <time dateTime={at.toISOString()}>{formatInZone(at, zone, withSeconds)}</time>
      {viewer && !sameClock(zone, viewer, at) && (
        <span className="block text-xs text-slate-600">{formatInZone(at, viewer, withSeconds)} your time</span>
      )}
    </span>
  );
}
