-- Repair $1 (tenant $2) replaces the live files of the exports it repairs (its replay chain) by its archive
-- and moves their links to it; a row per repaired export: its replaced files' names, links moved, the archive.
WITH RECURSIVE chain AS (
  SELECT id, replay_of_id, 0 AS depth FROM jobs WHERE id = $1 AND tenant_id = $2
  UNION ALL
  SELECT j.id, j.replay_of_id, c.depth + 1 FROM jobs j JOIN chain c ON j.id = c.replay_of_id
  WHERE c.depth < 50 AND j.tenant_id = $2
), archive AS (
  SELECT id FROM export_files WHERE job_id = $1 ORDER BY created_at LIMIT 1
), replaced AS (
  UPDATE export_files f SET replaced_by_id = a.id, expires_at = least(f.expires_at, now())
  FROM archive a
  WHERE f.job_id IN (SELECT id FROM chain WHERE id <> $1) AND f.replaced_by_id IS NULL AND f.deleted_at IS NULL
  RETURNING f.id, f.job_id, f.name, a.id AS archive_id
), moved AS (
  UPDATE export_links l SET file_id = r.archive_id FROM replaced r WHERE l.file_id = r.id
  RETURNING r.id AS file_id
)
SELECT r.job_id AS "job_id!", array_agg(r.name ORDER BY r.name) AS "files!", coalesce(sum(m.n), 0)::int AS "links!",
       min(r.archive_id::text) AS "file_id!"
FROM replaced r LEFT JOIN (SELECT file_id, count(*) AS n FROM moved GROUP BY file_id) m ON m.file_id = r.id
GROUP BY r.job_id
