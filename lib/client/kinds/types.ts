/**
 * A job kind: what the browser (and the CLI) knows about one workload's jobs —
 * how to name them, what their children are called, where their pages are,
 * what the generic job page offers for them and how their progress reads. Each
 * workload keeps its own in this folder (`<workload>.ts`); `index.ts` lists
 * them, one line each. Plain data and pure functions: no server import, no JSX.
 */
import type { JobDto, JobFileDto } from "../../jobs/dto";

export type JobLike = Pick<JobDto, "type" | "input">;

/** Who sees a navigation entry. */
export type NavAudience = "everyone" | "members" | "operators" | "admins";

/**
 * A page in the main navigation. `area`: `user` entries come first (the pages
 * people work in), `console` ones among the operator console's pages.
 */
export type NavEntry = { href: string; label: string; for: NavAudience; area: "user" | "console" };

/** A link the job page shows beside a job's actions ("Request again"). */
export type JobLink = { label: string; href: string };

/** The structured progress a worker writes: its stage key, unit, counts and a small typed detail. */
export type ProgressFields = Pick<JobDto["progress"], "stage" | "unit" | "done" | "total" | "detail">;

/** What one job type of the kind says; every field may be left out. */
export type TypeEntry = {
  /** Its name for people: "Events · CSV.gz export". */
  title(job: JobLike): string;
  /** What its children are called, plural ("parts", "stages"); left out when it has none. */
  children?: string;
  /** A child's name on its tile ("Parse", "Chunk 3"); the default is "Part 3". */
  tileLabel?(child: JobLike, i: number): string;
  /** What a child job of this type is, on its own page ("A stage of an import"). */
  childOf?: string;
  /** Links beside the job's actions on its page. */
  links?(job: Pick<JobDto, "id">): JobLink[];
  /** Where a finished file downloads from (the default: the file's own `downloadUrl`). */
  fileHref?(job: Pick<JobDto, "id">, file: JobFileDto): string;
  /** Its files may be shared by download links (the links panel under its files). */
  shareLinks?: boolean;
  /** What it reads and writes, for a row of the jobs explorer ("events · csv.gz"). */
  summary?(job: JobLike): string | null;
  /** Its progress in words, from the structured fields; null to fall back to the generic wording. */
  progress?(p: ProgressFields, job: JobLike): string | null;
  /**
   * What replaying a dead job of it does, for the operator's Replay button ("Repair 1 dead
   * part"); null (or left out) for the plain "Replay job".
   */
  replayLabel?(job: Pick<JobDto, "type" | "input" | "progress">): string | null;
  /**
   * Its `maxAttempts` is no budget people should read (a webhook delivery's own schedule
   * bounds its requests; the engine's count grows with each deferral): its attempts are shown
   * alone, "attempt 16", never "16 of 1011".
   */
  unboundedAttempts?: true;
};

export type JobKind = {
  /** The workload's name. */
  name: string;
  /** Its job types, by type name. */
  types: Record<string, TypeEntry>;
  /** The list a member goes back to from one of its jobs (the breadcrumb). */
  list?: { href: string; label: string };
  /** Its pages in the main navigation. */
  nav?: NavEntry[];
};
