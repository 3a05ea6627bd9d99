"use client";

import { useEffect, useState } from "react";
import type { JobDto } from "@/lib/client/api";
import { formatCount, formatDuration, percentDone, rateAndEta, retryLines, waitingText } from "@/lib/client/format";
import { childNoun } from "@/lib/client/kinds/lookup";
import { ProgressBar } from "./ui/progress-bar";
import { useFormatTime } from "./ui/time";

/**
 * Progress bar with percent, rows, rate and ETA (the rate over the last 30 s,
 * so a stall or a retry's redone rows show as a falling rate, not an average
 * since the start); re-renders each second while running. A parent's children
 * in a retry are named where they are ("part 3 of 8 retrying, attempt 2 of 3,
 * next in 4s"). A finished job shows what it did, never a rate or an ETA; one
 * that failed or was cancelled shows where it stopped.
 */
export function JobProgress({ job, label }: { job: JobDto; label: string }) {
  const [now, setNow] = useState(() => Date.now());
  const formatAt = useFormatTime();
  const active = job.status === "running" || job.status === "queued" || job.status === "retrying";
  useEffect(() => {
    if (!active) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [active]);
  const percent = percentDone(job);
  const { rate, etaMs } = rateAndEta(job, now);
  const retries = retryLines(job, childNoun(job.type), now);
  const unit = job.progress.unit ?? "items";
  const stopped = job.status === "failed" || job.status === "cancelled";
  // A job that ended without knowing its total shows an empty bar, not a busy one.
  const shown = percent ?? (active && job.status !== "queued" ? null : 0);
  const hasCount = job.progress.done > 0 || job.progress.total !== null;
  const count = `${formatCount(job.progress.done)}${job.progress.total !== null ? ` of ${formatCount(job.progress.total)}` : ""} ${unit}`;
  let text: string;
  if (stopped) {
    text = `${job.status === "failed" ? "Failed" : "Cancelled"}${hasCount ? ` after ${count}` : " before it started"}`;
  } else if (job.status === "succeeded") {
    text = `100% · ${hasCount ? count : "done"}${
      job.startedAt && job.finishedAt
        ? ` in ${formatDuration(new Date(job.finishedAt).getTime() - new Date(job.startedAt).getTime())}`
        : ""
    }`;
  } else if (hasCount) {
    text = `${percent !== null ? `${percent}% · ` : ""}${count}${rate !== null ? ` · ${formatCount(rate)} ${unit}/s` : ""}${
      etaMs !== null && job.status === "running" ? ` · ${formatDuration(etaMs)} left` : ""
    }`;
  } else if (job.status === "queued" || job.status === "retrying") {
    text = waitingText(job, now);
  } else if (job.status === "scheduled") {
    text = `Scheduled for ${formatAt(job.runAt)}`;
  } else {
    text = job.status;
  }
  return (
    <div className="min-w-48 space-y-1">
      <ProgressBar
        percent={job.status === "queued" ? 0 : shown}
        label={label}
        tone={job.status === "failed" ? "failed" : stopped ? "stopped" : "active"}
      />
      <p className="text-xs text-slate-600" data-testid="progress-text">
        {text}
      </p>
      {retries.map((line) => (
        <p key={line} className="text-xs text-amber-800" data-testid="progress-retry">
          {line}
        </p>
      ))}
    </div>
  );
}
