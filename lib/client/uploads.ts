"use client";
/**
 * A file sent to /api/v1/uploads with tus (tus-js-client), as React state: the
 * bytes sent, the rate, pause and resume, cancel (termination), retries after
 * a dropped connection (from the server's offset, asked with HEAD), and
 * resuming an upload a reloaded page left off (its URL is kept in
 * localStorage under the file's fingerprint: name, type, size, modified time).
 */
import { useCallback, useEffect, useRef, useState } from "react";
import * as tus from "tus-js-client";
import { UPLOAD_CHUNK_BYTES } from "./imports";

export type UploadState =
  | { phase: "idle" }
  | {
      phase: "uploading" | "paused";
      sent: number;
      total: number;
      /** Bytes per second over the last few seconds; null until it is known. */
      rate: number | null;
      /** A request failed and is being tried again (from the offset the server has). */
      retrying: boolean;
      /** Resuming an upload started earlier (another page load): when it was started, and the bytes the server had. */
      resumed: { startedAt: string; offset: number | null } | null;
    }
  | { phase: "done"; uploadId: string; total: number; resumed: { startedAt: string; offset: number | null } | null }
  | { phase: "failed"; message: string; sent: number; total: number };

/** Waits between tries after a failed request (ms): five tries over about 45 s, then the upload fails. */
const RETRY_DELAYS_MS = [0, 1_000, 3_000, 10_000, 30_000];
/** The window the rate is measured over (ms). */
const RATE_WINDOW_MS = 5_000;

/** The API's message in a failed tus request's answer, or what happened in words. */
function messageOf(err: Error): string {
  const res = (err as tus.DetailedError).originalResponse;
  if (!res) return "The connection to the server failed. Check the network and try again.";
  try {
    const body = JSON.parse(res.getBody()) as { error?: { message?: string } };
    if (body.error?.message) return body.error.message;
  } catch {
    // Not the API's JSON: fall through to the status.
  }
  return `The server answered ${res.getStatus()}.`;
}

/** The upload's last path segment: the id POST /api/v1/imports takes. */
function uploadIdOf(url: string): string {
  return new URL(url).pathname.split("/").filter(Boolean).pop() ?? "";
}

export function useTusUpload(): {
  state: UploadState;
  start: (file: File) => Promise<void>;
  pause: () => void;
  resume: () => void;
  cancel: () => Promise<void>;
  reset: () => void;
} {
  const [state, setState] = useState<UploadState>({ phase: "idle" });
  const uploadRef = useRef<tus.Upload | null>(null);
  const samples = useRef<{ at: number; sent: number }[]>([]);

  // Leaving the page stops the upload but keeps it on the server: picking the file again resumes it.
  useEffect(
    () => () => {
      void uploadRef.current?.abort(false);
    },
    [],
  );

  const rateOf = (sent: number): number | null => {
    const now = Date.now();
    const s = samples.current;
    s.push({ at: now, sent });
    while (s.length > 2 && now - s[0]!.at > RATE_WINDOW_MS) s.shift();
    const first = s[0]!;
    const seconds = (now - first.at) / 1000;
    return seconds >= 0.5 && sent >= first.sent ? (sent - first.sent) / seconds : null;
  };

  const start = useCallback(async (file: File) => {
    samples.current = [];
    let resumed: { startedAt: string; offset: number | null } | null = null;
    const upload = new tus.Upload(file, {
      // Absolute: tus-js-client resolves the Location it gets (/api/v1/uploads/{id}) against it.
      endpoint: `${window.location.origin}/api/v1/uploads`,
      chunkSize: UPLOAD_CHUNK_BYTES,
      retryDelays: RETRY_DELAYS_MS,
      metadata: { filename: file.name, ...(file.type ? { filetype: file.type } : {}) },
      storeFingerprintForResuming: true,
      // A finished upload is the import's: picking the file again sends it again, for another import.
      removeFingerprintOnSuccess: true,
      // docs/API.md: retry a dropped connection, a server error, an offset that moved on (409), a lock (423), a rate limit.
      onShouldRetry: (err) => {
        const status = err.originalResponse?.getStatus() ?? 0;
        const retry = status === 0 || status >= 500 || [409, 423, 429].includes(status);
        if (retry) setState((s) => (s.phase === "uploading" ? { ...s, retrying: true } : s));
        return retry;
      },
      onAfterResponse: (req, res) => {
        // The offset the server has: where a resumed upload goes on from.
        if (req.getMethod() !== "HEAD" || !resumed || resumed.offset !== null) return;
        const offset = Number(res.getHeader("Upload-Offset"));
        if (!Number.isFinite(offset)) return;
        resumed = { ...resumed, offset };
        const r = resumed;
        setState((s) => (s.phase === "uploading" ? { ...s, sent: offset, resumed: r } : s));
      },
      onProgress: (sent, total) => {
        const rate = rateOf(sent);
        setState((s) =>
          s.phase === "uploading" || s.phase === "paused"
            ? { ...s, sent, total, rate, retrying: s.retrying && sent <= s.sent }
            : s,
        );
      },
      onSuccess: () => {
        uploadRef.current = null;
        const r = resumed;
        setState({ phase: "done", uploadId: uploadIdOf(upload.url ?? ""), total: file.size, resumed: r });
      },
      onError: (err) => {
        uploadRef.current = null;
        setState((s) => ({
          phase: "failed",
          message: messageOf(err),
          sent: s.phase === "uploading" || s.phase === "paused" ? s.sent : 0,
          total: file.size,
        }));
      },
    });
    uploadRef.current = upload;
    // The same file, picked again after a reload: go on with the upload the last page started.
    const previous = (await upload.findPreviousUploads().catch(() => [])).sort((a, b) =>
      b.creationTime.localeCompare(a.creationTime),
    );
    if (previous[0]) {
      upload.resumeFromPreviousUpload(previous[0]);
      resumed = { startedAt: previous[0].creationTime, offset: null };
    }
    setState({ phase: "uploading", sent: 0, total: file.size, rate: null, retrying: false, resumed });
    upload.start();
  }, []);

  const pause = useCallback(() => {
    const upload = uploadRef.current;
    if (!upload) return;
    void upload.abort(false);
    setState((s) => (s.phase === "uploading" ? { ...s, phase: "paused", rate: null, retrying: false } : s));
  }, []);

  const resume = useCallback(() => {
    const upload = uploadRef.current;
    if (!upload) return;
    samples.current = [];
    setState((s) => (s.phase === "paused" ? { ...s, phase: "uploading" } : s));
    // A HEAD first: the bytes go on from the offset the server has.
    upload.start();
  }, []);

  /** Stops the upload and removes what the server has of it (tus termination). */
  const cancel = useCallback(async () => {
    const upload = uploadRef.current;
    uploadRef.current = null;
    setState({ phase: "idle" });
    if (upload) await upload.abort(true);
  }, []);

  const reset = useCallback(() => {
    uploadRef.current = null;
    setState({ phase: "idle" });
  }, []);

  return { state, start, pause, resume, cancel, reset };
}
