"use client";
/**
 * Live updates over Server-Sent Events, merged into react-query's cache.
 */
import { replaceEqualDeep, useQueryClient, type InfiniteData, type QueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { isTerminal, type JobDto } from "../jobs/dto";
import type { JobEventWire } from "../sse/streams";
import { jobKeys } from "./api";

/** Applies an event to a cached job, ignoring events older than what is cached. */
export function applyJobEvent(job: JobDto, e: JobEventWire): JobDto {
  if (e.seq <= job.seq) return job;
  return {
    ...job,
    seq: e.seq,
    status: e.status,
    attempts: e.attempts,
    progress: {
      ...e.progress,
      done: Math.max(job.progress.done, e.progress.done),
      // An event's detail is null when it was too large to notify: the cached one holds while the stage is the same.
      detail: e.progress.detail ?? (e.progress.stage === job.progress.stage ? job.progress.detail : null),
    },
    startedAt: job.startedAt ?? (e.status === "running" ? e.at : null),
    admission: e.admission,
    // The event says only that it was asked; who and why come with the next snapshot.
    cancelRequested:
      job.cancelRequested ?? (e.cancelRequested ? { at: e.at, byUserId: null, by: null, reason: null } : null),
  };
}

/**
 * Every job query's `structuralSharing` (./query-client.ts): an answer older than the cached job
 * (a lower seq) is dropped.
 * A fetch begun before a change can land after that change's events and the terminal snapshot;
 * taken as is, it put a job that had succeeded back to "retrying", and with the stream closed
 * nothing came to correct it.
 */
export function keepNewerJob(old: unknown, next: unknown): unknown {
  const o = old as JobDto | undefined;
  const n = next as JobDto;
  if (o && n && typeof o.seq === "number" && typeof n.seq === "number" && n.seq < o.seq) return o;
  return replaceEqualDeep(old, next);
}

/** Streams one job's events into its detail query. */
export function useJobEvents(jobId: string, enabled: boolean): void {
  const qc = useQueryClient();
  useEffect(() => {
    if (!enabled) return;
    const source = new EventSource(`/api/v1/jobs/${encodeURIComponent(jobId)}/events`);
    const key = jobKeys.detail(jobId);
    source.addEventListener("snapshot", (m) => {
      qc.setQueryData<JobDto>(key, JSON.parse((m as MessageEvent<string>).data) as JobDto);
    });
    const onChange = (m: Event) => {
      const e = JSON.parse((m as MessageEvent<string>).data) as JobEventWire;
      qc.setQueryData<JobDto>(key, (old) => (old ? applyJobEvent(old, e) : old));
    };
    source.addEventListener("progress", onChange);
    source.addEventListener("status", onChange);
    // The server closes the stream after a terminal status; don't let EventSource reconnect then.
    source.onerror = () => {
      const job = qc.getQueryData<JobDto>(key);
      if (job && isTerminal(job.status)) source.close();
    };
    return () => source.close();
  }, [jobId, enabled, qc]);
}

type JobPage = { jobs: JobDto[]; nextCursor: string | null };

/**
 * Reloads the queries under `queryKey` after events, never cancelling a reload in flight: each
 * call schedules one reload at most `gapMs` later, and while a reload still runs it waits for it
 * to finish instead. (Invalidating on every event cancelled the running fetch and began another,
 * so on a busy tenant, events coming faster than a list loads, a list never finished loading and
 * a new export never appeared in it.) Every event is followed by a reload begun after it.
 */
function reloader(qc: QueryClient, queryKey: readonly unknown[], gapMs: number) {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const fire = () => {
    timer = null;
    if (qc.isFetching({ queryKey }) > 0) {
      timer = setTimeout(fire, 50);
      return;
    }
    void qc.invalidateQueries({ queryKey });
  };
  return {
    soon() {
      timer ??= setTimeout(fire, gapMs);
    },
    stop() {
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}

/** Streams the tenant's job events into every cached job list (paged ones too). */
export function useTenantJobEvents(): void {
  const qc = useQueryClient();
  useEffect(() => {
    const source = new EventSource("/api/v1/events");
    const lists = reloader(qc, jobKeys.lists(), 100);
    source.addEventListener("job", (m) => {
      const e = JSON.parse((m as MessageEvent<string>).data) as JobEventWire;
      let known = false;
      const patch = (page: JobPage): JobPage => ({
        ...page,
        jobs: page.jobs.map((j) => {
          if (j.id !== e.jobId) return j;
          known = true;
          return applyJobEvent(j, e);
        }),
      });
      // A list is one page, or the pages of an infinite query ("Load more").
      qc.setQueriesData<JobPage | InfiniteData<JobPage>>({ queryKey: jobKeys.lists() }, (old) => {
        if (!old) return old;
        return "pages" in old ? { ...old, pages: old.pages.map(patch) } : patch(old);
      });
      // New jobs, and finished ones (their result files), come from the API.
      if (!known || isTerminal(e.status)) lists.soon();
    });
    // A reconnect after too many changes to replay: reload the lists.
    source.addEventListener("reset", () => lists.soon());
    return () => {
      lists.stop();
      source.close();
    };
  }, [qc]);
}

/**
 * Refetches `queryKey` when any job of the tenant changes (at most once a
 * second): for paged views whose rows cannot be patched one by one.
 */
export function useJobEventsRefetch(queryKey: readonly unknown[]): void {
  const qc = useQueryClient();
  const key = JSON.stringify(queryKey);
  useEffect(() => {
    const source = new EventSource("/api/v1/events");
    const reload = reloader(qc, JSON.parse(key) as unknown[], 1_000);
    source.addEventListener("job", () => reload.soon());
    return () => {
      reload.stop();
      source.close();
    };
  }, [key, qc]);
}

/**
 * Calls `onMatch` (at most once per `minGapMs`) when an event of the tenant's
 * stream passes `match`: for views that read something the events do not carry
 * (an import's stages, counts and bad rows) and refetch it instead. Answers
 * whether the stream is open, so a view can poll while it is not.
 */
export function useJobEventsWhere(
  match: (e: JobEventWire) => boolean,
  onMatch: () => void,
  { enabled = true, minGapMs = 300 }: { enabled?: boolean; minGapMs?: number } = {},
): boolean {
  const [open, setOpen] = useState(false);
  // The latest callbacks, without reconnecting the stream when they change.
  const matchRef = useRef(match);
  const onMatchRef = useRef(onMatch);
  useEffect(() => {
    matchRef.current = match;
    onMatchRef.current = onMatch;
  });
  useEffect(() => {
    if (!enabled) return;
    const source = new EventSource("/api/v1/events");
    let timer: ReturnType<typeof setTimeout> | null = null;
    let last = 0;
    const fire = () => {
      if (timer) return;
      const wait = Math.max(0, last + minGapMs - Date.now());
      timer = setTimeout(() => {
        timer = null;
        last = Date.now();
        onMatchRef.current();
      }, wait);
    };
    source.onopen = () => setOpen(true);
    source.onerror = () => setOpen(source.readyState === EventSource.OPEN);
    source.addEventListener("job", (m) => {
      if (matchRef.current(JSON.parse((m as MessageEvent<string>).data) as JobEventWire)) fire();
    });
    // Too much to replay after a reconnect: whatever changed, read it again.
    source.addEventListener("reset", fire);
    return () => {
      if (timer) clearTimeout(timer);
      source.close();
      setOpen(false);
    };
  }, [enabled, minGapMs]);
  return open;
}
