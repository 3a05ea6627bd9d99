/**
 * The job kinds (./list.ts, one line each: a workload's client registration). Everything
 * shared that names, links or words a job (the job page, the parts grid, the
 * explorer, the console, the navigation, the progress text, the CLI) asks
 * these, never a type string of its own.
 */
import * as list from "./list";
import type { JobKind } from "./types";

/** In the order of their export names (a module's exports are sorted): export, import, report, schedule, webhook. */
export const KINDS: readonly JobKind[] = Object.values(list);
