/**
 * The job kinds, one line each: a workload's client registration. Everything
 * shared that names, links or words a job (the job page, the parts grid, the
 * explorer, the console, the navigation, the progress text, the CLI) asks
 * these, never a type string of its own.
 */
import { exportKind } from "./export";
import { importKind } from "./import";
import { scheduleKind } from "./schedule";
import { webhookKind } from "./webhook";
import type { JobKind } from "./types";

export const KINDS: readonly JobKind[] = [exportKind, importKind, scheduleKind, webhookKind];
