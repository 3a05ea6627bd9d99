-- Progress that stays honest (issue 35, must-have 3).
-- progress_samples: the last ~30 s of (time, done) pairs of the current run, kept by the
-- jobs_progress_sample trigger, so the rate shown is recent throughput, not done ÷ time since start.
-- children_retrying / children_retries: a parent's parts in a retry (how many; the first few with
-- their place, attempt and next run), kept by the roll-up, so a retry is shown where it is.
ALTER TABLE jobs ADD COLUMN progress_samples jsonb;
ALTER TABLE jobs ADD COLUMN children_retrying integer;
ALTER TABLE jobs ADD COLUMN children_retries jsonb;
