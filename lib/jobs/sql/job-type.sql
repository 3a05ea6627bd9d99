-- A job's type.
SELECT type FROM jobs WHERE id = $1
