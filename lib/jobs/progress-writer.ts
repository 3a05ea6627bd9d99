/**
 * A running attempt's progress writes, throttled to one per
 * PROGRESS_INTERVAL_MS: updates in between are merged (a later one keeps the
 * fields an earlier one set, and `done` never moves backwards). The process's
 * attempts write together: the writes due while one statement is on its way go
 * in the next (lib/batcher.ts), so a thousand attempts reporting progress send
 * a few statements, not a thousand.
 */
import { Batcher } from "../batcher";
import { bookkeepingPool } from "../db";
import { env } from "../env";
import { writeProgress, type ProgressWrite } from "./sql/progress";
import type { ProgressUpdate } from "./task";

const writes = new Batcher<ProgressWrite, boolean>((batch) => writeProgress(bookkeepingPool(), batch), {
  maxBatch: 2_000,
  maxInFlight: 2,
});

export type ProgressWriter = {
  update(u: ProgressUpdate): void;
  /** Writes what is pending and stops taking updates. */
  close(): Promise<void>;
};

export function createProgressWriter(
  jobId: string,
  token: bigint,
  /** Called when a write finds the fence gone (another attempt owns the job). */
  onStale: () => void,
  log: (line: string) => void,
): ProgressWriter {
  const interval = env().PROGRESS_INTERVAL_MS;
  let pending: ProgressUpdate | null = null;
  let lastWrite = 0;
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<void> = Promise.resolve();
  let closed = false;

  const flush = () => {
    timer = null;
    if (!pending) return inFlight;
    const u = pending;
    pending = null;
    lastWrite = performance.now();
    inFlight = inFlight
      .then(() => writes.push({ jobId, token, update: u }))
      .then((ok) => {
        if (!ok) onStale();
      })
      .catch((e: Error) => log(`[jobs] job ${jobId} progress write failed: ${e.message}`));
    return inFlight;
  };

  return {
    update(u) {
      if (closed) return; // a late callback after the attempt ended
      pending = { ...pending, ...u, done: Math.max(pending?.done ?? 0, u.done ?? 0) };
      if (timer) return;
      timer = setTimeout(flush, Math.max(0, lastWrite + interval - performance.now()));
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await flush();
    },
  };
}
