-- Dead-letters waiting jobs of $1 that can never run (their type is registered nowhere, their
-- endpoint is disabled): `failed`, permanent, with message $2. $3: only the unadmitted ones.
UPDATE jobs SET status = 'failed', error_class = 'permanent', error_message = $2::text, finished_at = now(),
       updated_at = now()
 WHERE id = ANY($1::uuid[]) AND status IN ('queued', 'retrying') AND (NOT $3::boolean OR admitted_at IS NULL)
RETURNING id
