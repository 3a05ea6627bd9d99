-- A stream ended.
DELETE FROM sse_streams WHERE id = $1
