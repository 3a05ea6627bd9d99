/**
 * The registry of workloads and their task types. Workloads register their
 * manifests once per process (lib/workloads does it for every workload); the
 * engine looks task types up by type — to validate an enqueue, to run an
 * attempt, to choose a retry, to redact what a task marks sensitive — and reads
 * the rest of the manifests from here (queues, services, settings, tables, CLI
 * commands), never importing a workload itself.
 */
import { z } from "zod";
import { envKeys } from "../env";
import type { Service } from "../runtime/service";
import { engineQueues } from "./queues";
import type { CliCommands, HistoryTable, QueueSpec, TaskDefinition, Workload, WorkloadTable } from "./task";

// `any`: the registry holds definitions of different input and result types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyTask = TaskDefinition<any, any>;
type Entry = { def: AnyTask; workload: string | null };
type Registry = { tasks: Map<string, Entry>; workloads: Map<string, Workload> };

// On globalThis: Next.js may evaluate this module, and the workloads, in more than one bundle
// of one process. A workload registered again under its name (another bundle's copy) replaces
// itself; a task type claimed by two different workloads is an error.
const key = Symbol.for("conveyor.taskRegistry");
const store = globalThis as unknown as { [key]?: Registry };

function registry(): Registry {
  store[key] ??= { tasks: new Map(), workloads: new Map() };
  return store[key];
}

function claim(def: AnyTask, workload: string | null): void {
  const tasks = registry().tasks;
  const existing = tasks.get(def.type);
  if (existing && existing.def !== def && (workload === null || existing.workload !== workload)) {
    throw new Error(`Task type ${def.type} is registered twice`);
  }
  tasks.set(def.type, { def, workload });
}

/** Registers one task type outside any workload (tests); the same definition again is a no-op, another one of that type throws. */
export function registerTask(def: AnyTask): void {
  claim(def, null);
}

/** Forgets a task type (tests that register a task of their own). */
export function unregisterTask(type: string): void {
  registry().tasks.delete(type);
}

/** Registers workloads and their task types (idempotent). */
export function registerWorkloads(workloads: readonly Workload[]): void {
  for (const w of workloads) {
    const owner = [...registry().workloads.values()].find(
      (other) => other.name !== w.name && other.queues?.some((q) => w.queues?.some((mine) => mine.name === q.name)),
    );
    if (owner || w.queues?.some((q) => engineQueues.some((e) => e.name === q.name))) {
      throw new Error(`Workload ${w.name} brings a queue another workload or the engine already has`);
    }
    registry().workloads.set(w.name, w);
    for (const def of w.tasks) claim(def, w.name);
  }
  const known = new Set(queueNames());
  for (const w of workloads) {
    for (const def of w.tasks) {
      if (!known.has(def.queue))
        throw new Error(`Task type ${def.type} runs on queue ${def.queue}, which nobody brings`);
    }
  }
}

function requireRegistered(): Registry {
  const r = registry();
  if (r.workloads.size === 0) {
    throw new Error("No workloads are registered: the entry point must import @/lib/workloads");
  }
  return r;
}

/** The definition of a task type, or undefined for an unknown type. */
export function getTaskDefinition(type: string): TaskDefinition<unknown, unknown> | undefined {
  return requireRegistered().tasks.get(type)?.def;
}

/** Every registered task type. */
export function taskDefinitions(): TaskDefinition<unknown, unknown>[] {
  return [...requireRegistered().tasks.values()].map((e) => e.def);
}

function manifests(): Workload[] {
  return [...requireRegistered().workloads.values()];
}

/** Every registered workload's manifest. */
export function registeredWorkloads(): readonly Workload[] {
  return manifests();
}

/** Every queue: the engine's (interactive, bulk), then those the workloads bring. */
export function queues(): QueueSpec[] {
  return [...engineQueues, ...manifests().flatMap((w) => w.queues ?? [])];
}

/** Every queue's name. */
export function queueNames(): string[] {
  return queues().map((q) => q.name);
}

/**
 * A request's queue field: a string naming a registered queue, checked when parsed (the
 * list is the registry's, known once the workloads are registered).
 */
export function queueNameSchema(lead = "must be one of "): z.ZodType<string> {
  return z.string().superRefine((v, ctx) => {
    const names = queueNames();
    if (!names.includes(v)) ctx.addIssue({ code: "custom", message: `${lead}${names.join(", ")}` });
  });
}

/** A queue by name, or undefined for one nobody brings. */
export function queueSpec(name: string): QueueSpec | undefined {
  return queues().find((q) => q.name === name);
}

/** Every registered workload's long-running services (a worker process starts them). */
export function workloadServices(): Service[] {
  return manifests().flatMap((w) => w.services ?? []);
}

/** Every variable the configuration reads: lib/env.ts's and each workload's settings. */
export function settingKeys(): string[] {
  return [...envKeys, ...manifests().flatMap((w) => w.settings?.keys ?? [])];
}

/** Reads every workload's settings once: a bad variable fails the process at start, naming it. */
export function checkSettings(): void {
  for (const w of manifests()) w.settings?.();
}

/** The job-keyed tables the workloads own (pruned with their job by cascade). */
export function workloadTables(): (WorkloadTable & { workload: string })[] {
  return manifests().flatMap((w) => (w.tables ?? []).map((t) => ({ ...t, workload: w.name })));
}

/** The workloads' conditions under which a user owns a job they did not create (`Workload.ownedJobs`). */
export function ownedJobConditions(userId: string): string[] {
  return manifests().flatMap((w) => (w.ownedJobs ? [`(${w.ownedJobs(userId)})`] : []));
}

/** The history tables the workloads own (pruned after the tenant's job retention). */
export function historyTables(): (HistoryTable & { workload: string })[] {
  return manifests().flatMap((w) => (w.history ?? []).map((t) => ({ ...t, workload: w.name })));
}

/** Every workload's CLI commands. */
export function cliCommands(): CliCommands[] {
  return manifests().flatMap((w) => (w.cli ? [w.cli] : []));
}

/** Every input field any task marks sensitive (for searches, which must not look inside them). */
export function sensitiveFields(): string[] {
  return [...new Set(taskDefinitions().flatMap((d) => d.sensitive ?? []))];
}

/**
 * The input as anyone reads it back: fields the task marks `sensitive`
 * (secrets) are write-only, "[redacted]" — wherever they are, at any depth of
 * objects and arrays.
 */
export function redactInput(type: string, input: unknown): unknown {
  const sensitive = new Set(getTaskDefinition(type)?.sensitive ?? []);
  return sensitive.size ? redact(input, sensitive) : input;
}

function redact(value: unknown, sensitive: Set<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => redact(v, sensitive));
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([k, v]) => [
      k,
      sensitive.has(k) ? "[redacted]" : redact(v, sensitive),
    ]),
  );
}
