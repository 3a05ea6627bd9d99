/**
 * The registry of task types. Workloads register their definitions once per
 * process (lib/workloads does it for every workload); the engine looks them up
 * by type — to validate an enqueue, to run an attempt, to choose a retry, to
 * redact what a task marks sensitive — and never imports a workload itself.
 */
import type { PeriodicTask, TaskDefinition, Workload } from "./task";

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
    registry().workloads.set(w.name, w);
    for (const def of w.tasks) claim(def, w.name);
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

/** Every registered workload's periodic work. */
export function periodicTasks(): PeriodicTask[] {
  return [...requireRegistered().workloads.values()].flatMap((w) => w.periodic ?? []);
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
