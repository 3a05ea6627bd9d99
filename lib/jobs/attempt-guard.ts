/**
 * What keeps one attempt honest while its handler runs: an AbortSignal that
 * fires on cancel (through the process's one LISTEN connection), timeout,
 * worker shutdown or a lost lease; and its lease, kept by the process's lease
 * keeper (lib/jobs/lease-keeper.ts: one statement a tick renews every running
 * attempt's, each fenced by its token). The lease is also tracked locally (from
 * before the claim was sent, on the monotonic clock), and the attempt stops
 * before it can run out: another worker may then take the job over, and two
 * attempts must never run at once, even when the database is unreachable.
 */
import { bookkeepingPool } from "../db";
import { eventHub } from "../events/hub";
import { AbortReason } from "./errors";
import { LeaseKeeper } from "./lease-keeper";

let keeper: LeaseKeeper | null = null;
/** The process's lease keeper: its renewals go through the bookkeeping pool. */
export function leaseKeeper(): LeaseKeeper {
  return (keeper ??= new LeaseKeeper(bookkeepingPool));
}

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
  // The lease: renewed with every other attempt of the process, one statement a tick (lib/jobs/lease-keeper.ts).
  const lease = leaseKeeper().keep({
    jobId: opts.jobId,
    token: opts.token,
    leaseMs: opts.leaseMs,
    claimedAt: opts.claimedAt,
    onLost: (why) =>
      why === "fenced" ? leaseLost() : abort(new AbortReason("lease_lost", "The lease could not be renewed in time")),
    onCancel: () => abort(new AbortReason("cancelled", "Cancelled on request")),
    onError: (e) => opts.log(`${opts.tag} heartbeat failed: ${e.message}`),
  });

  return {
    signal: controller.signal,
    abort,
    leaseLost,
    checkLease() {
      if (lease.expiring()) abort(new AbortReason("lease_lost", "The lease ran out before the handler could start"));
    },
    stop() {
      clearTimeout(timeout);
      lease.release();
      unsubscribe();
      opts.shutdown?.removeEventListener("abort", onShutdown);
    },
  };
}
