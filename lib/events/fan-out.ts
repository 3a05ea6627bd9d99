/**
 * Whether this process is writing a fan-out of events to its event streams' sockets
 * (lib/http/sse-direct.ts writes them a slice per turn of the event loop, so that requests are
 * read between slices). Events that arrive meanwhile are held by the hub (lib/events/hub.ts) and
 * dispatched together once the writes are done: each socket then gets all of them in one write,
 * as when a fan-out took one turn and the notifications that came during it were read in one go.
 * Dispatched between slices instead, each would re-cork every socket already written: one more
 * write per stream per event (bench:sse, 10,000 streams: a new job's first event p50 229 → 376 ms).
 */
// One per process, on globalThis as the hub itself is: Next.js may bundle this module into more
// than one route's chunk, and the hub (created by whichever loaded first) and every copy of
// lib/http/sse-direct.ts must see the same state.
const key = Symbol.for("conveyor.events.fanOut");
const store = globalThis as unknown as { [key]?: { waiting: (() => void)[] | null } };
const state = (store[key] ??= { waiting: null });

export function fanOutStarted(): void {
  state.waiting ??= [];
}

export function fanOutEnded(): void {
  const callbacks = state.waiting;
  state.waiting = null;
  for (const f of callbacks ?? []) f();
}

/** Runs `f` once the fan-out under way ends; false (and `f` not kept) when none is. */
export function afterFanOut(f: () => void): boolean {
  if (!state.waiting) return false;
  state.waiting.push(f);
  return true;
}
