-- Removes the graphile-worker dispatch of each job of $1 that is not running (an unlocked one):
-- no worker wakes for a job that ended while it waited.
SELECT count(graphile_worker.remove_job(id::text))::int AS "removed!" FROM unnest($1::uuid[]) AS id
