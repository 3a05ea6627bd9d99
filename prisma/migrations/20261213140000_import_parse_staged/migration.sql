-- Staged parse output that will never be finished (issue 35): an import's parse stage that ends
-- without succeeding (failed for good, cancelled) keeps in its checkpoint the segmented write of
-- its clean file and the objects of its pieces' bad rows. The imports cleanup throws those away
-- and drops them from the checkpoint; this index holds only the ones still to sweep.
CREATE INDEX jobs_staged_parse_idx ON jobs (finished_at)
  WHERE type = 'import_parse' AND status IN ('failed', 'cancelled')
    AND checkpoint ->> 'phase' = 'parse' AND checkpoint ? 'clean';
