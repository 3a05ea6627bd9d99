-- Serialises the opening of the streams of the principal key $1 until the transaction ends.
SELECT pg_advisory_xact_lock(hashtext('conveyor.sse'), hashtext($1::text))
