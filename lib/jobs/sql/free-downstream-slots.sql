-- After reap-attempt, in its transaction: the slots the lost attempt of job $1 held in downstream
-- guards are freed and go to parked callers at once (not after the sweep). Its calls were never
-- answered: they teach the guard's adaptive limit and breaker nothing (conveyor_downstream_drop_holder).
SELECT conveyor_downstream_drop_holder($1::uuid) AS "slotsFreed"
