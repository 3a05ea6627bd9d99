/** Finding a job type's entry among the kinds, and what a type with none says. */
import { KINDS } from "./index";
import { capitalize } from "./words";
import type { JobKind, JobLike, TypeEntry } from "./types";

const byType = new Map<string, { kind: JobKind; entry: TypeEntry }>(
  KINDS.flatMap((kind) => Object.entries(kind.types).map(([type, entry]) => [type, { kind, entry }] as const)),
);

/** A job type's entry and the kind it belongs to; null for a type no kind describes. */
export function kindOf(type: string): { kind: JobKind; entry: TypeEntry } | null {
  return byType.get(type) ?? null;
}

/**
 * The name of a job for people: "Events · CSV.gz export", "Part 3 of 20 · Events · CSV export",
 * "Parse · Events · CSV import"; a type no kind describes by its name ("Probe").
 */
export function jobTitle(job: JobLike): string {
  return kindOf(job.type)?.entry.title(job) ?? capitalize(job.type.replace(/[_.]/g, " "));
}

/**
 * A job's attempts in words: "3 of 5", or "16" alone for a type whose max attempts is no budget
 * (`unboundedAttempts`: a webhook delivery read "attempt 16/1011").
 */
export function attemptsText(job: Pick<JobLike, "type"> & { attempts: number; maxAttempts: number }): string {
  return kindOf(job.type)?.entry.unboundedAttempts ? String(job.attempts) : `${job.attempts} of ${job.maxAttempts}`;
}

/** What a job's child jobs are called: an export's parts, an import's stages, the load stage's chunks. */
export function childNoun(type: string): string {
  return kindOf(type)?.entry.children ?? "parts";
}

/** A child's name on its parent's tile (`type`: the parent's): "Parse", "Chunk 3", else "Part 3". */
export function tileLabel(type: string, child: JobLike, i: number): string {
  return kindOf(type)?.entry.tileLabel?.(child, i) ?? `Part ${i + 1}`;
}
