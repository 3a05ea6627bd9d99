/**
 * What keeps one attempt honest while its handler runs: an AbortSignal that
 * fires on cancel (through the process's one LISTEN connection), timeout,
 * worker shutdown or a lost lease; and the heartbeat that extends the lease,
 * fenced by the attempt's token. The lease is also tracked locally (from
 * before the claim was sent, on the monotonic clock), and the attempt stops
 * before it can run out: another worker may then take the job over, and two
 * attempts must never run at once, even when the database is unreachable.
 */
import type { SqlClient } from "../db";
import { eventHub } from "../events/hub";
import { AbortReason } from "./errors";
import { heartbeatJob } from "./sql/heartbeat";

export type AttemptGuard = {
  signal: AbortSignal;
  abort(reason: AbortReason): void;
  /** Another attempt owns the job (a fenced write matched nothing). */
  leaseLost(): void;
  /** Aborts (lease lost) when the lease may run out before the next heartbeat. */
  checkLease(): void;
  /** Stops the timers and the subscription. */
  stop(): void;
};

export async function guardAttempt(opts: {
  client: SqlClient;
  jobId: string;
  token: bigint;
  leaseMs: number;
  timeoutMs: number;
  /** performance.now() just before the claim was sent. */
  claimedAt: number;
  /** The worker's shutdown. */
  shutdown?: AbortSignal;
  log: (line: string) => void;
  tag: string;
}): Promise<AttemptGuard> {
  const controller = new AbortController();
  const abort = (reason: AbortReason) => {
    if (!controller.signal.aborted) controller.abort(reason);
  };
  const leaseLost = () => abort(new AbortReason("lease_lost", "The lease was lost to another attempt"));
  const onShutdown = () => abort(new AbortReason("shutdown", "The worker shut down during the attempt"));
  opts.shutdown?.addEventListener("abort", onShutdown, { once: true });

  let unsubscribe: () => void = () => {};
  try {
    unsubscribe = await eventHub().subscribe({ jobId: opts.jobId }, (e) => {
      if (e.cancelRequested) abort(new AbortReason("cancelled", "Cancelled on request"));
    });
  } catch (e) {
    opts.log(`${opts.tag} could not listen for cancellation (${(e as Error).message}); the heartbeat still checks`);
  }

  const timeout = setTimeout(
    () => abort(new AbortReason("timeout", `Timed out after ${opts.timeoutMs} ms`)),
    opts.timeoutMs,
  );
  let leaseValidUntil = opts.claimedAt + opts.leaseMs;
  const heartbeatEvery = Math.max(200, Math.floor(opts.leaseMs / 3));
  const expiring = () => performance.now() > leaseValidUntil - heartbeatEvery / 2;
  const heartbeat = setInterval(() => {
    if (expiring()) return abort(new AbortReason("lease_lost", "The lease could not be renewed in time"));
    const sentAt = performance.now();
    heartbeatJob(opts.client, { jobId: opts.jobId, token: opts.token, leaseMs: opts.leaseMs })
      .then((beat) => {
        if (!beat) return leaseLost();
        leaseValidUntil = sentAt + opts.leaseMs;
        if (beat.cancelRequested) abort(new AbortReason("cancelled", "Cancelled on request"));
      })
      .catch((e: Error) => opts.log(`${opts.tag} heartbeat failed: ${e.message}`));
  }, heartbeatEvery);

  return {
    signal: controller.signal,
    abort,
    leaseLost,
    checkLease() {
      if (expiring()) abort(new AbortReason("lease_lost", "The lease ran out before the handler could start"));
    },
    stop() {
      clearTimeout(timeout);
      clearInterval(heartbeat);
      unsubscribe();
      opts.shutdown?.removeEventListener("abort", onShutdown);
    },
  };
}
