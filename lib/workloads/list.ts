/**
 * Every workload, one line each (lib/workloads/index.ts registers them). A new workload
 * is one line here: its folder's manifest says the rest (docs/ARCHITECTURE.md, "Adding a workload").
 */
export { exportsWorkload } from "../exports";
export { importsWorkload } from "../imports";
export { probeWorkload } from "../probe";
export { schedulesWorkload } from "../schedules";
export { webhooksWorkload } from "../webhooks";
export { reportsWorkload } from "../reports";
export { notificationsWorkload } from "../notifications";
