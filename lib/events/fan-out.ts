/**
 * Whether this process is writing a fan-out of events to its event streams' sockets
 * (lib/http/sse-direct.ts writes them a slice per turn of the event loop, so that requests are
 * read between slices). Events that arrive meanwhile are held by the hub (lib/events/hub.ts) and
 * dispatched together once the writes are done: each socket then gets all of them in one write,
 * as when a fan-out took one turn and the notifications that came during it were read in one go.
 * Dispatched between slices instead, each would re-cork every socket already written: one more
 * write per stream per event (bench:sse, 10,000 streams: a new job's first event p50 229 → 376 ms).
 */
let waiting: (() => void)[] | null = null;

export function fanOutStarted(): void {
  waiting ??= [];
}

export function fanOutEnded(): void {
  const callbacks = waiting;
  waiting = null;
  for (const f of callbacks ?? []) f();
}

/** Runs `f` once the fan-out under way ends; false (and `f` not kept) when none is. */
export function afterFanOut(f: () => void): boolean {
  if (!waiting) return false;
  waiting.push(f);
  return true;
}
