-- Repairing a split export (issue 35): the complete archive of a repair replaces the partial file of
-- the export it repairs. The old file names its replacement (downloads and links follow it), as data
-- rather than a flag in the job's result; a pruned replacement leaves the old row as it was.
ALTER TABLE export_files ADD COLUMN replaced_by_id uuid REFERENCES export_files(id) ON DELETE SET NULL;
CREATE INDEX export_files_replaced_by_idx ON export_files (replaced_by_id) WHERE replaced_by_id IS NOT NULL;
