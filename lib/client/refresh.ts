/**
 * Refetching after a change the user made. `invalidateQueries` alone joins a fetch already on
 * its way when its query has no data yet (react-query dedupes a first load): if that fetch started
 * before the change, the list shows the state before it (an invitation just made, missing) until
 * the next refetch. Cancelling first makes the refetch start after the change.
 * Not for live events (lib/client/live.ts): at their rate, cancelling could keep a slow first
 * load from ever finishing.
 */
import type { QueryClient, QueryKey } from "@tanstack/react-query";

export async function refetchAfterChange(qc: QueryClient, queryKey: QueryKey): Promise<void> {
  await qc.cancelQueries({ queryKey });
  await qc.invalidateQueries({ queryKey });
}
