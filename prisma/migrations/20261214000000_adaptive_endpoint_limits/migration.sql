-- Endpoints isolated (issue 34): an adaptive in-flight limit per downstream.
--
-- A fixed per-endpoint limit either lets a slow endpoint hold many of the
-- webhooks pool's slots for as long as it takes to answer (8 of 16 for 5 s per
-- request: two such endpoints hold the whole pool), or, set low, makes a fast
-- endpoint park behind itself. The limit now adapts to observed latency (AIMD):
-- it starts at 2 in flight; each answer within p_slow_ms adds one, up to the
-- configured limit (p_concurrency); a slower answer, or a call still unanswered
-- after p_slow_ms, halves it (at least 1; once per round trip). A fast endpoint
-- sits at its configured limit; a slow one holds one slot. Callers that pass no
-- p_slow_ms keep the fixed limit.

ALTER TABLE "downstreams" ADD COLUMN "adaptive_limit" DOUBLE PRECISION,
                          ADD COLUMN "limit_cut_at" TIMESTAMPTZ(3);
-- When the call began: the release measures its duration from it.
ALTER TABLE "downstream_slots" ADD COLUMN "acquired_at" TIMESTAMPTZ(3) NOT NULL DEFAULT clock_timestamp();

-- The guard's functions change signature (a p_slow_ms argument): the old ones go here; the new ones,
-- and conveyor_downstream_limit (the limit in force for a downstream), are their files under
-- prisma/sql/functions, applied after the migrations.
DROP FUNCTION "conveyor_downstream_acquire"(text, uuid, double precision, double precision, integer, integer);
DROP FUNCTION "conveyor_downstream_release"(text, uuid, text, integer, integer, double precision, integer, integer, integer);
