-- A worker known to be gone (issue 37). The process that started a worker (npm start's supervisor,
-- a test or benchmark harness) sees it exit and records when and how here. The reaper then treats
-- its running attempts as lost at once, instead of waiting out their leases as it must for a
-- worker that is merely silent (stalled, paused, cut off: it may still be running its attempts).
ALTER TABLE workers ADD COLUMN exited_at timestamptz(3), ADD COLUMN exit text;
