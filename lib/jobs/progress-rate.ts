/**
 * A running job's rate and time left, from recent throughput. The database
 * keeps each run's last ~30 s of (time, done) samples in
 * `jobs.progress_samples` (the `conveyor_job_progress_sample` trigger: one
 * kept sample every 2 s, on the database's clock; a new status starts over);
 * this one function turns them into a rate, for the API, the pages and the
 * CLI alike. Plain data and arithmetic: the browser imports it too.
 */

/** The window the rate is measured over (ms); the trigger keeps it and the sample before it. */
export const RATE_WINDOW_MS = 30_000;

/** Less history than this and there is no rate yet (ms). */
const MIN_SPAN_MS = 1_000;

/** One sample: [ms since the epoch on the database's clock, done]. */
export type ProgressSample = [number, number];

/** The samples as stored (a jsonb array of pairs), or null when there are none or they are malformed. */
export function toSamples(raw: unknown): ProgressSample[] | null {
  if (!Array.isArray(raw)) return null;
  const out: ProgressSample[] = [];
  for (const s of raw) {
    if (!Array.isArray(s) || typeof s[0] !== "number" || typeof s[1] !== "number") return null;
    out.push([s[0], s[1]]);
  }
  return out.length ? out : null;
}

/** `done` at time `t` (linear between samples; before the first, the first's). */
function doneAt(samples: ProgressSample[], t: number): number {
  let prev = samples[0]!;
  if (t <= prev[0]) return prev[1];
  for (const s of samples.slice(1)) {
    if (t <= s[0]) return prev[1] + ((s[1] - prev[1]) * (t - prev[0])) / (s[0] - prev[0]);
    prev = s;
  }
  return prev[1];
}

/**
 * Units per second over the last RATE_WINDOW_MS before `now` (the span of the
 * run's samples if shorter): what was done in the window ÷ the window. Time with no
 * progress counts, so a stall shows as a falling rate and then 0, not as the
 * speed before it; rows redone after a retry are not progress (done never
 * moves backwards) and so add nothing. Null with fewer than two samples or under a second of them.
 * `now` is clamped to the newest sample, so a clock behind the database's
 * reads the rate as of that sample.
 */
export function recentRate(samples: ProgressSample[] | null, now: number): number | null {
  // One sample has no baseline: the rows before it came at an unknown pace.
  if (!samples || samples.length < 2) return null;
  const last = samples[samples.length - 1]!;
  const end = Math.max(now, last[0]);
  const start = Math.max(end - RATE_WINDOW_MS, samples[0]![0]);
  if (end - start < MIN_SPAN_MS) return null;
  return Math.max(0, (last[1] - doneAt(samples, start)) / ((end - start) / 1000));
}

/** The time left (ms) at `rate` units/s for what is left of `total`; null when either is unknown or the rate is 0. */
export function timeLeftMs(done: number, total: number | null, rate: number | null): number | null {
  if (total === null || rate === null || rate <= 0) return null;
  return (Math.max(0, total - done) / rate) * 1000;
}
