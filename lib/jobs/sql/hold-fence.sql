-- Locks a running attempt's job row if the attempt (token $2) still holds it.
SELECT 1 AS "held!" FROM jobs WHERE id = $1 AND fencing_token = $2 AND status = 'running' FOR UPDATE
