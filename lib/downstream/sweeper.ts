/**
 * The downstream guard's sweeper, a service every worker runs: wakes parked
 * jobs a lost wake-up left behind (`sweepWaiters`). Cheap when nobody waits.
 */
import { loop } from "../runtime/service";
import { sweepWaiters } from "./index";

export function downstreamSweeper() {
  return loop({
    name: "downstream",
    everyMs: () => 1_000,
    async run() {
      const n = await sweepWaiters();
      return n ? [`woke ${n} parked jobs`] : [];
    },
  });
}
