-- Staged export files that will never be finished (issue 35): an export or part that ends without
-- succeeding (failed for good, cancelled) keeps in its checkpoint the segmented write it
-- had staged — a staging file on local disk, a multipart upload on S3. The export cleanup throws
-- those away and drops `file` from the checkpoint; this index holds only the ones still to sweep.
CREATE INDEX jobs_staged_segments_idx ON jobs (finished_at)
  WHERE type IN ('export', 'export_part') AND status IN ('failed', 'cancelled')
    AND checkpoint ->> 'phase' = 'segments' AND checkpoint ? 'file';
