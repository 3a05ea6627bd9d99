-- What parse stage $1 had staged is thrown away: its checkpoint no longer names it.
UPDATE jobs SET checkpoint = checkpoint - 'clean' - 'errorPieces' WHERE id = $1 AND checkpoint ? 'clean'
