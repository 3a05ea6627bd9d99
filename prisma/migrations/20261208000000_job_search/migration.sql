-- The explorer's text search (`q`) moves off "jobs" into a table of its own.
--
-- A GIN index gets an entry for every new version of a row, and a job's row gets a new version
-- (not a HOT update: its status is indexed) at every step: admitted, running, succeeded, each
-- retry. On "jobs", the trigram index over the input and the error took ~100 keys at each of
-- them, and now and then the backend whose insert overflowed the index's pending list merged it
-- (a 100-200 ms stall for that one statement). Measured with pgbench on a copy of the table
-- (4 clients, status flips of random rows): 1,171 updates/s with the index, 1,821 without it;
-- p99 16.0 ms against 7.4 ms; worst 211 ms against 38 ms. Here a row is written when a job is
-- created and when its input or error changes, nothing else.
-- Kept by the triggers below alone, so no foreign key: its per-row checks on insert and its per-row
-- cascade on delete would cost more than the statement-level triggers that do the same.
CREATE TABLE "job_search" (
  "job_id" uuid PRIMARY KEY,
  -- The same text as before: the input as JSON text, a space, the error message.
  "text" text NOT NULL
);

INSERT INTO "job_search" ("job_id", "text")
SELECT id, input::text || ' ' || coalesce(error_message, '') FROM "jobs";

CREATE INDEX "job_search_text_idx" ON "job_search" USING gin ("text" gin_trgm_ops);

-- New jobs: one statement per statement (a batch of creates, an export's parts).
CREATE FUNCTION "conveyor_job_search_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_search (job_id, text)
  SELECT id, input::text || ' ' || coalesce(error_message, '') FROM new_jobs;
  RETURN NULL;
END $$;

CREATE TRIGGER "jobs_search_insert" AFTER INSERT ON "jobs"
  REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION "conveyor_job_search_insert"();

-- A changed input (rare) or error (a failed attempt, a cancel): the job's text again.
CREATE FUNCTION "conveyor_job_search_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE job_search SET text = NEW.input::text || ' ' || coalesce(NEW.error_message, '')
   WHERE job_id = NEW.id;
  RETURN NULL;
END $$;

CREATE TRIGGER "jobs_search_update" AFTER UPDATE OF input, error_message ON "jobs"
  FOR EACH ROW WHEN (NEW.input IS DISTINCT FROM OLD.input OR NEW.error_message IS DISTINCT FROM OLD.error_message)
  EXECUTE FUNCTION "conveyor_job_search_update"();

-- Deleted jobs (retention's batches, a tenant's removal): their rows, in one statement.
CREATE FUNCTION "conveyor_job_search_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM job_search s USING old_jobs o WHERE s.job_id = o.id;
  RETURN NULL;
END $$;

CREATE TRIGGER "jobs_search_delete" AFTER DELETE ON "jobs"
  REFERENCING OLD TABLE AS old_jobs FOR EACH STATEMENT EXECUTE FUNCTION "conveyor_job_search_delete"();

CREATE FUNCTION "conveyor_job_search_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE job_search;
  RETURN NULL;
END $$;

CREATE TRIGGER "jobs_search_truncate" AFTER TRUNCATE ON "jobs"
  FOR EACH STATEMENT EXECUTE FUNCTION "conveyor_job_search_truncate"();

DROP INDEX "jobs_search_idx";
