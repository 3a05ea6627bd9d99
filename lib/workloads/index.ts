/**
 * The one list of workloads. Importing this module registers every workload's
 * manifest with the engine (lib/jobs/registry.ts); each entry point imports it
 * once: the worker, the app (through lib/http), the scripts and the tests.
 * A new workload is one line here (see docs/ARCHITECTURE.md, "Adding a workload").
 */
import { registerWorkloads } from "../jobs/registry";
import type { Workload } from "../jobs/task";
import { exportsWorkload } from "../exports";
import { importsWorkload } from "../imports";
import { probeWorkload } from "../probe";
import { schedulesWorkload } from "../schedules";
import { webhooksWorkload } from "../webhooks";

export const workloads: readonly Workload[] = [
  exportsWorkload,
  importsWorkload,
  probeWorkload,
  schedulesWorkload,
  webhooksWorkload,
];

registerWorkloads(workloads);
