-- Caller priorities (issue 35): a create may say `priority` (low | normal | high, lib/jobs/priority.ts);
-- `high` only where the tenant's operators allowed it.
ALTER TABLE tenants ADD COLUMN max_priority text NOT NULL DEFAULT 'normal'
  CONSTRAINT tenants_max_priority_check CHECK (max_priority IN ('normal', 'high'));

-- A schedule's runs are enqueued at the priority the schedule was made with (jobs.priority's scale).
ALTER TABLE schedules ADD COLUMN priority integer NOT NULL DEFAULT 0;

-- Admission alone orders admitted jobs: graphile-worker gets them all at one priority, so a high job
-- of one tenant cannot overtake another tenant's admitted turn in graphile's fetch. The dispatch
-- functions lose their priority parameter (their files in prisma/sql/functions define the new ones).
DROP FUNCTION conveyor_dispatch(uuid, text, text, integer);
DROP FUNCTION conveyor_dispatch_many(uuid[], text, text[], integer[]);
