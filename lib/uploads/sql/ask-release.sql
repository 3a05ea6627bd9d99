-- Asks the holder of upload $1's lock to let go (it sees it at its next renewal).
UPDATE upload_locks SET release_requested_at = now() WHERE upload_id = $1
