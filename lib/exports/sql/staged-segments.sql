-- Up to $1 exports and parts that ended without their file (failed for good, cancelled; an expired export had succeeded, its file finished) whose checkpoint still names the segmented write they had staged: each job's id and that write's state.
SELECT id AS "id!", checkpoint -> 'file' AS "file!" FROM jobs
WHERE type IN ('export', 'export_part') AND status IN ('failed', 'cancelled')
  AND checkpoint ->> 'phase' = 'segments' AND checkpoint ? 'file'
ORDER BY finished_at LIMIT $1
