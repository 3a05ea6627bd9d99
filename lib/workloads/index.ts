/**
 * Registers every workload's manifest (./list.ts) with the engine (lib/jobs/registry.ts).
 * Each entry point imports this module once: the worker, the app (through lib/http), the
 * scripts and the tests.
 */
import { registerWorkloads } from "../jobs/registry";
import type { Workload } from "../jobs/task";
import * as list from "./list";

/** In the order of their names (a module's exports are sorted). */
export const workloads: readonly Workload[] = Object.values(list);

registerWorkloads(workloads);
