/**
 * How a job's structured progress reads. Workers write fields (stage, unit,
 * counts, a small `detail`), never sentences; the words are made at the edge
 * (`lib/client/progress.ts`), which the app sets here once
 * (`lib/http/progress-words.ts`) so the DTOs it serves carry
 * `progress.message`. Until set (a worker, a script), a job's message is the
 * sentence an older row stored, if any.
 */
export type ProgressWordsInput = {
  type: string;
  input: unknown;
  progress: {
    stage: string | null;
    unit: string | null;
    done: number;
    total: number | null;
    detail: Record<string, unknown> | null;
    message: string | null;
  };
};

type Words = (job: ProgressWordsInput) => string | null;

let words: Words = (job) => job.progress.message;

export function setProgressWords(w: Words): void {
  words = w;
}

export function progressWords(job: ProgressWordsInput): string | null {
  return words(job);
}
