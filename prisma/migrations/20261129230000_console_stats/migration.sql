-- Operator console: the statistics rollup the overview reads, indexes for the
-- jobs explorer at a million rows, and trigram search over input and errors.

-- CreateTable
CREATE TABLE "job_stats_minute" (
    "bucket" TIMESTAMPTZ(3) NOT NULL,
    "tenant_id" UUID NOT NULL,
    "queue" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "succeeded" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "cancelled" INTEGER NOT NULL DEFAULT 0,
    "dead" INTEGER NOT NULL DEFAULT 0,
    "runtime_ms" BIGINT NOT NULL DEFAULT 0,
    "runtime_hist" INTEGER[],

    CONSTRAINT "job_stats_minute_pkey" PRIMARY KEY ("tenant_id","bucket","queue","type")
);

-- CreateTable
CREATE TABLE "job_state_counts" (
    "tenant_id" UUID NOT NULL,
    "queue" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "n" INTEGER NOT NULL,
    "oldest_at" TIMESTAMPTZ(3),

    CONSTRAINT "job_state_counts_pkey" PRIMARY KEY ("tenant_id","queue","type","state")
);

-- CreateTable
CREATE TABLE "stats_rollup" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "rolled_to" TIMESTAMPTZ(3) NOT NULL,
    "counts_at" TIMESTAMPTZ(3),

    CONSTRAINT "stats_rollup_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "job_stats_minute_bucket_idx" ON "job_stats_minute"("bucket");

-- CreateIndex
CREATE INDEX "job_attempts_finished_at_idx" ON "job_attempts"("finished_at");

-- CreateIndex
CREATE INDEX "jobs_created_at_id_idx" ON "jobs"("created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "jobs_status_created_at_idx" ON "jobs"("status", "created_at" DESC);


-- The explorer's text search (`q`): `ILIKE '%…%'` over the input (as JSON text)
-- and the error message, served by one trigram index instead of a scan.
-- pg_trgm ships with Postgres (contrib) and is a trusted extension since 13.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX "jobs_search_idx" ON "jobs"
  USING gin ((input::text || ' ' || coalesce(error_message, '')) gin_trgm_ops);

INSERT INTO "stats_rollup" (id, rolled_to) VALUES (1, now() - interval '1 day');
