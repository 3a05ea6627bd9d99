-- Health signals (issue 16 §9): when each attempt's job became ready, so the rollup
-- can count job-start latency; per-minute starts, retries and a start-latency
-- histogram beside the finished counts; running totals the rollup folds finished
-- minutes into, so counters never go backwards when minute rows (kept 8 days) or
-- the attempt history (pruned by retention) are deleted; and an index that finds
-- the oldest ready job per queue, tenant and type in one probe each.

-- When the attempt's job became due (its run_at at the claim): start latency is started_at - ready_at.
ALTER TABLE "job_attempts" ADD COLUMN "ready_at" TIMESTAMPTZ(3);

-- The rollup reads attempts by start minute as it reads them by finish minute.
CREATE INDEX "job_attempts_started_at_idx" ON "job_attempts"("started_at");

ALTER TABLE "job_stats_minute"
  ADD COLUMN "lost" INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN "interrupted" INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN "started" INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN "retries" INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN "start_latency_hist" INTEGER[];

-- CreateTable
CREATE TABLE "job_stats_total" (
    "tenant_id" UUID NOT NULL,
    "queue" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "succeeded" BIGINT NOT NULL DEFAULT 0,
    "failed" BIGINT NOT NULL DEFAULT 0,
    "cancelled" BIGINT NOT NULL DEFAULT 0,
    "lost" BIGINT NOT NULL DEFAULT 0,
    "interrupted" BIGINT NOT NULL DEFAULT 0,
    "dead" BIGINT NOT NULL DEFAULT 0,
    "started" BIGINT NOT NULL DEFAULT 0,
    "retries" BIGINT NOT NULL DEFAULT 0,
    "runtime_ms" BIGINT NOT NULL DEFAULT 0,
    "runtime_hist" BIGINT[],

    CONSTRAINT "job_stats_total_pkey" PRIMARY KEY ("tenant_id","queue","type")
);

-- Minute rows before this are in job_stats_total; null: none folded yet.
ALTER TABLE "stats_rollup" ADD COLUMN "totals_to" TIMESTAMPTZ(3);

-- Ready jobs (queued, or retrying with their backoff over) per queue, tenant and type, oldest first.
CREATE INDEX "jobs_ready_idx" ON "jobs"("queue", "tenant_id", "type", "run_at") WHERE "status" IN ('queued', 'retrying');
