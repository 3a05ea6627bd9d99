"use client";

import { zoneLabel } from "@/lib/client/format";
import { setTimesIn, useBrowserZone, useTimesIn, type TimesIn } from "@/lib/client/time-zone";

/**
 * Local times or UTC, for every time on every page (a schedule's own times keep its zone
 * beside the browser's). Kept in this browser; drawn once hydrated, as the times are.
 */
export function TimeZoneSwitch() {
  const timesIn = useTimesIn();
  const local = useBrowserZone();
  if (!timesIn || !local) return null;
  const option = (value: TimesIn, label: string) => (
    <button
      type="button"
      aria-pressed={timesIn === value}
      onClick={() => setTimesIn(value)}
      className={`rounded px-2 py-1 ${
        timesIn === value ? "bg-slate-800 text-white" : "text-slate-700 underline hover:text-slate-900"
      }`}
    >
      {label}
    </button>
  );
  return (
    <div role="group" aria-label="Show times in" className="flex flex-wrap items-center gap-1 text-xs text-slate-600">
      <span className="mr-1">Times in</span>
      {option("local", `local time (${local === "UTC" ? "UTC" : `${local}, ${zoneLabel(local)}`})`)}
      {option("utc", "UTC")}
    </div>
  );
}
