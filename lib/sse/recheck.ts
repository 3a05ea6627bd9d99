/**
 * The periodic re-check of open SSE streams, once per process rather than once per stream: every
 * SSE_RECHECK_MS each distinct principal holding streams here is reloaded once (its streams share
 * the answer), the streams of one that is gone — a revoked or expired token, a removed membership, a
 * session from before its user's password changed — are closed, and the slots of the others are refreshed by one batched statement.
 *
 * A timer per stream (each reloading its principal, then touching its own slot) sent 10,000 streams'
 * ~20,000 queries within seconds and left an unrelated request waiting a minute for a connection.
 */
import { reloadPrincipal, type Principal } from "../auth/principal";
import { env } from "../env";
import { touchStreamSlots } from "./admission";

/** An open stream as the re-check sees it. */
type Watched = { slotId: string; close(): void };
type Group = { principal: Principal; streams: Set<Watched> };
type State = {
  groups: Map<string, Group>;
  timer: NodeJS.Timeout | null;
  /** When the pending timer fires (ms). */
  dueAt: number;
  running: boolean;
};

/** Principals reloaded at once: a re-check keeps most of the pool for requests. */
const RELOAD_CONCURRENCY = 4;
/** Slot ids per UPDATE. */
const TOUCH_BATCH = 5_000;

/** What the re-checks did, for /api/metrics-style reads and the tests. */
export const sseRecheckStats = { ticks: 0, reloads: 0, closed: 0, touchStatements: 0, touchedSlots: 0 };

// One per process, even if this module is bundled more than once (route handlers and lib/http).
const stateKey = Symbol.for("conveyor.sse.recheck");
const store = globalThis as unknown as { [stateKey]?: State };
const state: State = (store[stateKey] ??= { groups: new Map(), timer: null, dueAt: 0, running: false });

/** What reloadPrincipal reads of a principal: streams with the same key get the same answer. */
function recheckKey(p: Principal): string {
  return `${p.tokenId ?? "-"}|${p.userId}|${p.tenantId ?? "-"}|${p.isPlatformAdmin ? 1 : 0}|${p.authAt ?? "-"}`;
}

function schedule(): void {
  if (state.running || state.groups.size === 0) return;
  const interval = env().SSE_RECHECK_MS;
  const dueAt = Date.now() + interval;
  // A timer set under a longer SSE_RECHECK_MS (the setting changed) is brought forward.
  if (state.timer && state.dueAt <= dueAt) return;
  if (state.timer) clearTimeout(state.timer);
  state.dueAt = dueAt;
  state.timer = setTimeout(() => void tick(), interval);
}

async function tick(): Promise<void> {
  state.timer = null;
  state.running = true;
  const startedAt = Date.now();
  try {
    sseRecheckStats.ticks++;
    const groups = [...state.groups.values()];
    const alive: Group[] = [];
    let next = 0;
    const worker = async () => {
      while (next < groups.length) {
        const group = groups[next++]!;
        let now: Principal | null;
        try {
          sseRecheckStats.reloads++;
          now = await reloadPrincipal(group.principal);
        } catch {
          continue; // The database is away: neither closed nor touched, as before; the next tick tries again.
        }
        if (now) {
          alive.push(group);
          continue;
        }
        for (const stream of [...group.streams]) {
          sseRecheckStats.closed++;
          stream.close();
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(RELOAD_CONCURRENCY, groups.length) }, worker));
    // The slots of streams still open (one that closed meanwhile has released its row).
    const ids = alive.flatMap((g) => [...g.streams].map((s) => s.slotId));
    for (let i = 0; i < ids.length; i += TOUCH_BATCH) {
      const batch = ids.slice(i, i + TOUCH_BATCH);
      try {
        await touchStreamSlots(batch);
        sseRecheckStats.touchStatements++;
        sseRecheckStats.touchedSlots += batch.length;
      } catch {
        /* the next tick touches them again, well before they count as stale */
      }
    }
  } finally {
    state.running = false;
    if (state.groups.size > 0) {
      const interval = env().SSE_RECHECK_MS;
      const delay = Math.max(0, startedAt + interval - Date.now());
      state.dueAt = Date.now() + delay;
      state.timer = setTimeout(() => void tick(), delay);
    }
  }
}

/**
 * Puts an open stream under the re-check: `close` ends it when its principal is gone. Returns what
 * takes it off again (when the stream ends for any reason).
 */
export function watchStream(principal: Principal, slotId: string, close: () => void): () => void {
  const key = recheckKey(principal);
  let group = state.groups.get(key);
  if (!group) state.groups.set(key, (group = { principal, streams: new Set() }));
  const stream: Watched = { slotId, close };
  group.streams.add(stream);
  schedule();
  return () => {
    const g = state.groups.get(key);
    if (!g || !g.streams.delete(stream)) return;
    if (g.streams.size === 0) state.groups.delete(key);
    if (state.groups.size === 0 && state.timer) {
      clearTimeout(state.timer);
      state.timer = null;
    }
  };
}

/** Streams and distinct principals under the re-check in this process. */
export function watchedStreams(): { streams: number; principals: number } {
  let streams = 0;
  for (const g of state.groups.values()) streams += g.streams.size;
  return { streams, principals: state.groups.size };
}
