/**
 * The probe workload: one task that sleeps and records an idempotent side
 * effect, for `npm run chaos` and `npm run bench:throughput`. The worked
 * example of docs/ARCHITECTURE.md's "Adding a task type".
 */
import { defineWorkload } from "../jobs/task";
import { probeTask } from "./task";

export const probeWorkload = defineWorkload({
  name: "probe",
  tasks: [probeTask],
  tables: [{ name: "probe_effects" }],
});
