"use client";

import { useEffect, useState } from "react";
import type { JobDto } from "@/lib/client/api";
import { formatCount, formatDuration, formatTime, percentDone, rateAndEta, waitingText } from "@/lib/client/format";
import { ProgressBar } from "./ui/progress-bar";

/** Progress bar with percent, rows, rate and ETA; re-renders each second while running. */
export function JobProgress({ job, label }: { job: JobDto; label: string }) {
  const [now, setNow] = useState(() => Date.now());
  const active = job.status === "running" || job.status === "queued" || job.status === "retrying";
  useEffect(() => {
    if (!active) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [active]);
  const percent = percentDone(job);
  const { rate, etaMs } = rateAndEta(job, now);
  const unit = job.progress.unit ?? "items";
  // A job that ended without knowing its total shows an empty bar, not a busy one.
  const shown = percent ?? (active && job.status !== "queued" ? null : 0);
  const hasCount = job.progress.done > 0 || job.progress.total !== null;
  return (
    <div className="min-w-48 space-y-1">
      <ProgressBar percent={job.status === "queued" ? 0 : shown} label={label} />
      <p className="text-xs text-slate-600" data-testid="progress-text">
        {percent !== null ? `${percent}% · ` : ""}
        {hasCount
          ? `${formatCount(job.progress.done)}${job.progress.total !== null ? ` of ${formatCount(job.progress.total)}` : ""} ${unit}`
          : job.status === "queued" || job.status === "retrying"
            ? waitingText(job, now)
            : job.status === "scheduled"
              ? `Scheduled for ${formatTime(job.runAt)}`
              : job.status}
        {hasCount && rate !== null ? ` · ${formatCount(rate)} ${unit}/s` : ""}
        {etaMs !== null && job.status === "running" ? ` · ${formatDuration(etaMs)} left` : ""}
      </p>
    </div>
  );
}
