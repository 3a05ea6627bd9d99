/**
 * Group commit: calls that arrive while a batch is on its way to Postgres go
 * together in the next one, so a busy worker claims and records its jobs in a
 * statement per batch instead of one per job (lib/jobs/runner.ts), concurrent
 * creates share an INSERT and its commit (lib/jobs/enqueue.ts), concurrent
 * requests share a token lookup (lib/auth/tokens.ts); an idle process sends
 * each call at once (no timer, no added latency). A batch starts after every
 * call in it was made, so its answer is never older than the call.
 */
export type BatchRun<I, O> = (items: I[]) => Promise<O[]>;

type Waiting<I, O> = { item: I; resolve: (o: O) => void; reject: (e: unknown) => void };

export class Batcher<I, O> {
  private waiting: Waiting<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly run: BatchRun<I, O>,
    private readonly opts: {
      maxBatch: number;
      maxInFlight: number;
      /**
       * Send as soon as the current task's microtasks are done (calls made in the same task still go
       * together) instead of at the end of the event loop's turn: for request paths, where a turn
       * can hold many I/O callbacks (an event fanned out to a thousand streams) that would all run
       * before the statement is even sent.
       */
      eager?: boolean;
    },
  ) {}

  /** Nothing waits, nothing is on its way: the batcher can be dropped. */
  idle(): boolean {
    return this.waiting.length === 0 && this.inFlight === 0 && !this.scheduled;
  }

  /** Resolves with this item's result, or rejects with its batch's error. */
  push(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      // The calls of this turn of the event loop go together; later ones wait for a free slot.
      if (!this.scheduled && this.inFlight < this.opts.maxInFlight) {
        this.scheduled = true;
        const go = () => {
          this.scheduled = false;
          this.flush();
        };
        if (this.opts.eager) queueMicrotask(go);
        else setImmediate(go);
      }
    });
  }

  private flush(): void {
    while (this.waiting.length && this.inFlight < this.opts.maxInFlight) {
      const batch = this.waiting.splice(0, this.opts.maxBatch);
      this.inFlight++;
      this.run(batch.map((w) => w.item))
        .then(
          (results) => batch.forEach((w, i) => w.resolve(results[i]!)),
          (err: unknown) => batch.forEach((w) => w.reject(err)),
        )
        .finally(() => {
          this.inFlight--;
          this.flush();
        });
    }
  }
}
