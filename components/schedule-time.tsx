"use client";

import { formatInZone, sameClock } from "@/lib/client/schedules";
import { useBrowserZone } from "@/lib/client/time-zone";

/**
 * The viewer's own time zone (the browser's, whatever the UTC switch says: a schedule's
 * times are shown on its clock and the viewer's); null while rendering on the server and
 * hydrating (the server's zone is not the reader's), so the first paint matches.
 */
export const useViewerZone = useBrowserZone;

/**
 * An instant on the schedule's clock, and on the viewer's when that shows
 * another time: "Tue 2 Dec, 02:30 UTC+1 · 01:30 UTC your time".
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
