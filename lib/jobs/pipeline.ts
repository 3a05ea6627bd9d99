/**
 * Pipelines: a named list of stages, each stage a task type of its own (its
 * retry policy, timeout, lease and queue), run one after the other as child
 * jobs of the pipeline's job. The pipeline's job is thin: each run starts the
 * next stage with `waitForChildren` and gives up its worker until that stage
 * has ended (a stage may fan out into children of its own, as an export's
 * parts do). What a finished stage returned is kept in the pipeline's
 * checkpoint and never recomputed; a failed stage has retried alone (its own
 * budget) before the pipeline fails naming it; a replay of the failed
 * pipeline starts again at the failed stage (or at the earliest stage before
 * it whose output did not outlive the pipeline); a cancel reaches the running
 * stage through the reaper within a second.
 *
 * Progress: the pipeline's own is "stage k of n" (unit `stages`), each stage's
 * child job reports its own (rows, bytes) — `pipelineStages` reads them all.
 */
import type { z } from "zod";
import { pool, type SqlClient } from "../db";
import { PermanentError } from "./errors";
import type { JobContext, JobInfo, QueueName, RetryPolicy, TaskDefinition } from "./task";
import { defineTask } from "./task";
import { progressWords } from "./progress-words";
import { toSamples, type ProgressSample } from "./progress-rate";

/** A stage: its task type, and how its input is made from the pipeline's input and earlier outputs. */
export type StageDefinition<I> = {
  /** Shown in timelines ("scan", "load"). */
  name: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  task: TaskDefinition<any, any>;
  input(args: { input: I; outputs: Record<string, unknown>; job: JobInfo; pipelineId: string }): unknown;
  /**
   * False when what the stage produced does not outlive the pipeline's end
   * (a staging table dropped when it ends): a replay starting after it runs it
   * again. Default true.
   */
  durable?: boolean;
};

export type PipelineDefinition<I, R> = {
  type: string;
  queue: QueueName;
  inputSchema: z.ZodType<I>;
  stages: readonly StageDefinition<I>[];
  /** The pipeline's result, from every stage's output (by stage name). */
  result(args: { input: I; outputs: Record<string, unknown>; job: JobInfo; pipelineId: string }): R;
  /** The pipeline's own budget: its runs are short (start a stage, read its end), so failures here are infrastructure. */
  retry?: RetryPolicy;
  /** The longest a whole pipeline may take; stages have their own timeouts. Default 24 h. */
  timeoutMs?: number;
  /** Where a file recorded for the pipeline's job downloads from (see TaskDefinition.fileUrl). */
  fileUrl?(jobId: string, fileName: string): string;
};

/**
 * Where a pipeline is. `pipelineId`: the id its stages key their artifacts by
 * (the first job's: a replay keeps it, so it finds what earlier stages made).
 */
export type PipelineCheckpoint = {
  pipeline: 1;
  pipelineId: string;
  /** The stage running (or to run next). */
  stage: number;
  /** True while the stage's job runs: the next run reads how it ended. */
  started: boolean;
  outputs: Record<string, unknown>;
};

export type PipelineTask<I, R> = TaskDefinition<I, R> & { stages: { name: string; type: string }[] };

const PIPELINE_RETRY: RetryPolicy = {
  maxAttempts: 5,
  initialBackoffMs: 1_000,
  maxBackoffMs: 30_000,
  multiplier: 3,
  jitter: "full",
};

function readCheckpoint(value: unknown, jobId: string): PipelineCheckpoint {
  const cp = value as Partial<PipelineCheckpoint> | null;
  if (cp && cp.pipeline === 1 && typeof cp.stage === "number" && cp.outputs && typeof cp.pipelineId === "string") {
    return cp as PipelineCheckpoint;
  }
  return { pipeline: 1, pipelineId: jobId, stage: 0, started: false, outputs: {} };
}

/** How the stage's job (the newest child of that index) ended. */
async function stageJob(
  client: SqlClient,
  jobId: string,
  index: number,
): Promise<{ id: string; status: string; result: unknown; error: string | null } | null> {
  const { rows } = await client.query<{ id: string; status: string; result: unknown; error: string | null }>(
    `SELECT id, status::text AS status, result, error_message AS error FROM jobs
     WHERE parent_id = $1 AND child_index = $2 ORDER BY created_at DESC LIMIT 1`,
    [jobId, index],
  );
  return rows[0] ?? null;
}

/** Defines a pipeline as a task type; register it, and each stage's task, in a workload. */
export function definePipeline<I, R>(def: PipelineDefinition<I, R>): PipelineTask<I, R> {
  const stages = def.stages;
  const task = defineTask<I, R>({
    type: def.type,
    queue: def.queue,
    inputSchema: def.inputSchema,
    retry: def.retry ?? PIPELINE_RETRY,
    timeoutMs: def.timeoutMs ?? 24 * 3_600_000,
    leaseMs: 30_000,
    ...(def.fileUrl ? { fileUrl: def.fileUrl } : {}),
    async handler(ctx: JobContext<I>): Promise<R> {
      const cp = readCheckpoint(ctx.lastCheckpoint, ctx.job.id);
      const args = () => ({ input: ctx.input, outputs: cp.outputs, job: ctx.job, pipelineId: cp.pipelineId });
      if (cp.started) {
        const stage = stages[cp.stage]!;
        const ended = await stageJob(pool(), ctx.job.id, cp.stage);
        if (!ended || ended.status !== "succeeded") {
          const how = ended ? `${ended.status}${ended.error ? `: ${ended.error}` : ""}` : "missing";
          // Saved as not started: a replay (replayCheckpoint) runs this stage again.
          await ctx.checkpoint({ ...cp, started: false } satisfies PipelineCheckpoint);
          if (ended?.status === "cancelled") throw new PermanentError(`Stage ${stage.name} was cancelled`);
          throw new PermanentError(`Stage ${stage.name} ${how}`);
        }
        cp.outputs = { ...cp.outputs, [stage.name]: ended.result };
        cp.stage += 1;
        cp.started = false;
      }
      if (cp.stage >= stages.length) {
        ctx.progress({ done: stages.length, total: stages.length, unit: "stages", stage: "done" });
        return def.result(args());
      }
      const stage = stages[cp.stage]!;
      ctx.progress({
        done: cp.stage,
        total: stages.length,
        unit: "stages",
        stage: stage.name,
        // The stage's name again: a job waiting for its children has the stage key "waiting".
        detail: { name: stage.name },
      });
      return ctx.waitForChildren(
        [{ type: stage.task.type, input: stage.input(args()), index: cp.stage }],
        { ...cp, started: true } satisfies PipelineCheckpoint,
        { rollup: false },
      );
    },
    replayCheckpoint(value: unknown): unknown {
      const cp = value as Partial<PipelineCheckpoint> | null;
      if (!cp || cp.pipeline !== 1 || typeof cp.stage !== "number" || typeof cp.pipelineId !== "string") return null;
      // Back to the earliest stage whose output did not outlive the end (it is gone now).
      let from = Math.min(cp.stage, stages.length - 1);
      while (from > 0 && stages[from - 1]!.durable === false) from -= 1;
      const outputs = Object.fromEntries(
        Object.entries(cp.outputs ?? {}).filter(([name]) => stages.findIndex((s) => s.name === name) < from),
      );
      return { pipeline: 1, pipelineId: cp.pipelineId, stage: from, started: false, outputs };
    },
  });
  return Object.assign(task, { stages: stages.map((s) => ({ name: s.name, type: s.task.type })) });
}

export type StageView = {
  name: string;
  type: string;
  /** The stage's latest job, or null before it started. */
  jobId: string | null;
  status: string;
  attempts: number;
  progress: {
    done: number;
    total: number | null;
    unit: string | null;
    /** In words, made at the edge from the fields (`progressWords`). */
    message: string | null;
    stage: string | null;
    detail: Record<string, unknown> | null;
    /** The running stage's recent (ms, done) samples, for its rate (lib/jobs/progress-rate.ts). */
    samples: ProgressSample[] | null;
  };
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  result: unknown;
};

/**
 * The jobs each pipeline job ran as: itself and the jobs it replays, newest
 * first (its stages may have run under any of them), for many at once.
 */
export async function replayChains(client: SqlClient, jobIds: string[]): Promise<Map<string, string[]>> {
  const { rows } = await client.query<{ root: string; id: string }>(
    `WITH RECURSIVE chain AS (
       SELECT id AS root, id, replay_of_id, 0 AS depth FROM jobs WHERE id = ANY($1::uuid[])
       UNION ALL
       SELECT c.root, j.id, j.replay_of_id, c.depth + 1 FROM jobs j JOIN chain c ON j.id = c.replay_of_id
       WHERE c.depth < 50
     ) SELECT root, id FROM chain ORDER BY root, depth`,
    [jobIds],
  );
  const chains = new Map<string, string[]>(jobIds.map((id) => [id, []]));
  for (const r of rows) chains.get(r.root)?.push(r.id);
  return chains;
}

/**
 * Every stage of each pipeline job, in order, with its latest job's state —
 * over the job's replay chain (`replayChains`), so a replay shows the stages it
 * kept from the job it replays. One query however many pipelines.
 */
export async function pipelineStages(
  client: SqlClient,
  def: { stages: { name: string; type: string }[] },
  chains: Map<string, string[]>,
): Promise<Map<string, StageView[]>> {
  const roots = [...chains].flatMap(([root, ids]) => ids.map(() => root));
  const ids = [...chains.values()].flat();
  const { rows } = await client.query<{
    root: string;
    id: string;
    child_index: number;
    status: string;
    attempts: number;
    progress_done: string;
    progress_total: string | null;
    progress_unit: string | null;
    progress_message: string | null;
    progress_stage: string | null;
    progress_detail: Record<string, unknown> | null;
    progress_samples: unknown;
    input: unknown;
    started_at: Date | null;
    finished_at: Date | null;
    error_message: string | null;
    result: unknown;
  }>(
    // The newest job of each stage of each pipeline, over the pipeline's chain.
    `SELECT DISTINCT ON (c.root, j.child_index) c.root::text, j.id, j.child_index, j.status::text AS status,
            j.attempts, j.progress_done::text, j.progress_total::text, j.progress_unit, j.progress_message,
            j.progress_stage, j.progress_detail, j.progress_samples, j.input, j.started_at, j.finished_at, j.error_message, j.result
     FROM unnest($1::uuid[], $2::uuid[]) AS c(root, id)
     JOIN jobs j ON j.parent_id = c.id AND j.child_index IS NOT NULL
     ORDER BY c.root, j.child_index, j.created_at DESC`,
    [roots, ids],
  );
  const found = new Map(rows.map((r) => [`${r.root}:${r.child_index}`, r]));
  return new Map(
    [...chains.keys()].map((root) => [
      root,
      def.stages.map((s, i) => {
        const r = found.get(`${root}:${i}`);
        const progress = {
          done: Number(r?.progress_done ?? 0),
          total: r?.progress_total == null ? null : Number(r.progress_total),
          unit: r?.progress_unit ?? null,
          message: r?.progress_message ?? null,
          stage: r?.progress_stage ?? null,
          detail: r?.progress_detail ?? null,
        };
        return {
          name: s.name,
          type: s.type,
          jobId: r?.id ?? null,
          status: r?.status ?? "pending",
          attempts: r?.attempts ?? 0,
          progress: {
            ...progress,
            message: progressWords({ type: s.type, input: r?.input ?? null, progress }),
            samples: r?.status === "running" ? toSamples(r.progress_samples) : null,
          },
          startedAt: r?.started_at?.toISOString() ?? null,
          finishedAt: r?.finished_at?.toISOString() ?? null,
          error: r?.error_message ?? null,
          result: r?.result ?? null,
        };
      }),
    ]),
  );
}
