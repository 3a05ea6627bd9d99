-- Up to $1 parse stages that ended without their output (failed for good, cancelled) whose checkpoint still names what they had staged: each job's id, its clean file's segmented write and its bad-row objects.
SELECT id AS "id!", checkpoint -> 'clean' AS "clean!", checkpoint -> 'errorPieces' AS pieces FROM jobs
WHERE type = 'import_parse' AND status IN ('failed', 'cancelled')
  AND checkpoint ->> 'phase' = 'parse' AND checkpoint ? 'clean'
ORDER BY finished_at LIMIT $1
