-- The staged write of job $1 is thrown away: its checkpoint no longer names it.
UPDATE jobs SET checkpoint = checkpoint - 'file' WHERE id = $1 AND checkpoint ? 'file'
