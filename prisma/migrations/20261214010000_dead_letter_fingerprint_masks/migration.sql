-- Dead letters of one cause group once: the fingerprint now masks worker ids (vm:31405:1fd691),
-- ULIDs, hosts and ports, IPv4 addresses, durations and long hex ids besides uuids and numbers.
-- The expression is lib/jobs/fingerprint.ts's fingerprintSql (a unit test holds them together).
-- Postgres 15 cannot change a generated column's expression: the column (and its index) is made again.
DROP INDEX "jobs_dead_letters_idx";
ALTER TABLE "jobs" DROP COLUMN "error_fingerprint";
ALTER TABLE "jobs" ADD COLUMN "error_fingerprint" TEXT GENERATED ALWAYS AS (
  CASE WHEN "error_message" IS NULL THEN NULL ELSE
    left(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace("error_message", '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}', '<id>', 'g'), '[A-Za-z0-9._-]+:[0-9]+:[0-9a-f]{6}(?![0-9A-Za-z])', '<worker>', 'g'), '[0-7][0-9A-HJKMNP-TV-Z]{25}(?![0-9A-Za-z])', '<id>', 'g'), '([A-Za-z][A-Za-z0-9-]*([.][A-Za-z0-9-]+)*|[0-9]{1,3}([.][0-9]{1,3}){3}):[0-9]{2,5}(?![0-9])', '<host>', 'g'), '[0-9]{1,3}([.][0-9]{1,3}){3}', '<host>', 'g'), '[0-9]+([.][0-9]+)? ?(seconds|second|minutes|minute|hours|hour|min|sec|ms|s|m|h)(?![A-Za-z])', '<duration>', 'g'), '[0-9a-f]{8,}', '<id>', 'g'), '[0-9]+([.][0-9]+)?', '<n>', 'g'), 500)
  END
) STORED;
CREATE INDEX "jobs_dead_letters_idx" ON "jobs" ("tenant_id", "type", "error_class", "error_fingerprint")
  WHERE "status" = 'failed' AND "discarded_at" IS NULL;

-- A job's page lists the webhook deliveries of events about it.
CREATE INDEX "webhook_messages_job_idx" ON "webhook_messages" ("job_id") WHERE "job_id" IS NOT NULL;
