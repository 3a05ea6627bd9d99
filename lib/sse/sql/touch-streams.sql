-- Refreshes the rows of the open streams $1.
UPDATE sse_streams SET seen_at = now() WHERE id = ANY($1::uuid[])
