-- Serialises the opening of tenant $1's streams until the transaction ends (taken before the user's).
SELECT pg_advisory_xact_lock(hashtext('conveyor.sse.tenant'), hashtext($1::text))
