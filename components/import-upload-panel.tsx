"use client";

/**
 * The import form's upload panel (the file's progress, speed and time left,
 * pause and resume) and its field errors.
 */
import { useEffect, useState } from "react";
import { formatBytes, formatDuration } from "@/lib/client/format";
import { type UploadState } from "@/lib/client/uploads";
import { Alert } from "./ui/alert";
import { ProgressBar } from "./ui/progress-bar";
import { Time } from "./ui/time";

export function FieldError({
  error,
  id,
  children,
}: {
  error: string | undefined;
  id: string;
  children: React.ReactNode;
}) {
  return (
    <div className="min-w-0">
      {children}
      {error && (
        <p id={id} className="mt-1 text-xs text-red-700">
          {error}
        </p>
      )}
    </div>
  );
}

/** The upload's bar: bytes sent of the total, percent, rate and time left; what it is doing, for screen readers too. */
export function UploadPanel({ state, imported }: { state: UploadState; imported: boolean }) {
  // Screen readers hear the upload in steps of 10 %, not at every progress event.
  const percent =
    state.phase === "uploading" || state.phase === "paused" || state.phase === "failed"
      ? state.total
        ? Math.floor((state.sent / state.total) * 100)
        : 0
      : state.phase === "done"
        ? 100
        : null;
  const [announced, setAnnounced] = useState("");
  const step = percent === null ? null : Math.floor(percent / 10) * 10;
  useEffect(() => {
    if (state.phase === "idle") return setAnnounced("");
    if (state.phase === "paused") return setAnnounced(`Upload paused at ${step}%`);
    if (state.phase === "done") return setAnnounced("Upload complete; starting the import");
    if (state.phase === "failed") return setAnnounced("");
    setAnnounced(`Uploading: ${step}%`);
  }, [state.phase, step]);

  // One live region, there from the start: a region that appears with its text is not always read out.
  const live = (
    <span role="status" aria-live="polite" className="sr-only">
      {announced}
    </span>
  );
  if (state.phase === "idle") return <div>{live}</div>;
  const sent = state.phase === "done" ? state.total : state.sent;
  const left =
    state.phase === "uploading" && state.rate ? formatDuration(((state.total - state.sent) / state.rate) * 1000) : null;
  return (
    <div>
      {live}
      <div className="mt-4 space-y-1" data-testid="upload-panel" data-phase={state.phase}>
        <ProgressBar
          percent={percent}
          label="Upload progress"
          tone={state.phase === "failed" ? "failed" : state.phase === "paused" ? "stopped" : "active"}
        />
        <p className="text-xs text-slate-600" data-testid="upload-text">
          {formatBytes(sent)} of {formatBytes(state.total)} · {percent}%
          {state.phase === "uploading" && state.rate !== null && ` · ${formatBytes(state.rate)}/s`}
          {left && ` · ${left} left`}
          {state.phase === "paused" && " · paused"}
          {state.phase === "done" && (imported ? " · uploaded; the import started" : " · uploaded")}
        </p>
        {state.phase !== "failed" && state.resumed && (
          <p className="text-xs text-slate-600" data-testid="upload-resumed">
            {state.phase === "done" ? "Resumed" : "Resuming"} the upload of this file started{" "}
            <Time iso={state.resumed.startedAt} mode="absolute" />
            {state.resumed.offset !== null && `: the server had ${formatBytes(state.resumed.offset)}`}.
          </p>
        )}
        {state.phase === "uploading" && state.retrying && (
          <p className="text-xs text-amber-800" data-testid="upload-retrying">
            The connection dropped; trying again from where the server got to…
          </p>
        )}
        {state.phase === "failed" && (
          <Alert tone="error" inline testId="upload-error">
            The upload stopped at {formatBytes(state.sent)}: {state.message}
          </Alert>
        )}
      </div>
    </div>
  );
}
