-- Dead letters group by error fingerprint: the message with uuids, hex ids and
-- numbers masked, so "timeout after 3012 ms on job 01a2…" and "… 2988 ms on job 01b7…"
-- are one group. Generated, so every writer gets it right.
ALTER TABLE "jobs" ADD COLUMN "error_fingerprint" TEXT GENERATED ALWAYS AS (
  CASE WHEN "error_message" IS NULL THEN NULL ELSE
    left(regexp_replace(
      regexp_replace("error_message", '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}', '<id>', 'g'),
      '[0-9]+(\.[0-9]+)?', '<n>', 'g'), 500)
  END
) STORED;

-- The dead-letter queue per tenant, by group.
CREATE INDEX "jobs_dead_letters_idx" ON "jobs" ("tenant_id", "type", "error_class", "error_fingerprint")
  WHERE "status" = 'failed' AND "discarded_at" IS NULL;
