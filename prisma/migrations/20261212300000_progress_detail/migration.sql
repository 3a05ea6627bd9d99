-- Structured progress (issue 33, item 4): a stage's own counts as fields ({ "good": 10, "bad": 2 }),
-- written by workers instead of a sentence; the words are made at the edge (lib/client/progress.ts).
-- progress_message stays for the rows written before, and is no longer written.
ALTER TABLE jobs ADD COLUMN progress_detail jsonb;
