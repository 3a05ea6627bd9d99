-- The parts of export $1 in the order they were made: each one's status, result and input (a repair sorts them).
SELECT status::text AS "status!", result, input AS "input!" FROM jobs WHERE parent_id = $1 ORDER BY created_at
