/**
 * A job's progress in words, made once from the structured fields the worker
 * wrote (stage key, unit, done/total, detail): the job's kind words its own
 * stages (`lib/client/kinds`), a pipeline's stage count reads "Stage 2 of 5:
 * parse". The UI, the CLI and the API's `progress.message` all come from here.
 */
import type { JobDto } from "../jobs/dto";
import { kindOf } from "./kinds/lookup";

export type ProgressOf = Pick<JobDto, "type" | "input"> & {
  progress: Pick<JobDto["progress"], "stage" | "unit" | "done" | "total" | "detail" | "message">;
};

export function progressMessage(job: ProgressOf): string | null {
  const p = job.progress;
  const own = kindOf(job.type)?.entry.progress?.(p, job);
  if (own) return own;
  // A pipeline counts its stages; detail.name is the one it runs (its stage key is "waiting" meanwhile).
  if (p.unit === "stages" && p.total !== null) {
    if (p.stage === "done") return "Done";
    const name = typeof p.detail?.name === "string" ? p.detail.name : p.stage;
    if (name) return `Stage ${Math.min(p.done + 1, p.total)} of ${p.total}: ${name}`;
  }
  // A row written before progress was structured kept its sentence.
  return p.message ?? null;
}
