-- Serialises the creation of one user's API tokens until the transaction ends.
SELECT true AS "locked!" FROM pg_advisory_xact_lock(hashtext('conveyor_tokens'), hashtext($1::text))
