/**
 * The probe workload: one task that sleeps and records an idempotent side
 * effect, for `npm run chaos` and `npm run bench:throughput` (a workload as
 * docs/ARCHITECTURE.md's "Adding a workload" describes; its worked example is lib/reports).
 */
import { defineWorkload } from "../jobs/task";
import { probeTask } from "./task";

export const probeWorkload = defineWorkload({
  name: "probe",
  tasks: [probeTask],
  tables: [{ name: "probe_effects" }],
});
