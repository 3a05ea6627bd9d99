-- Tenant $1's digest mark when a window ($2 ms) has passed since it, locked to the transaction's
-- end (however many processes tick, one writes a window: a second one finds it moved), and the
-- end of the window due now: a second ago, so jobs failing in transactions not yet committed fall
-- in the next one.
SELECT covered_to AS "coveredTo", now() - interval '1 second' AS "windowTo!"
  FROM notification_digest_marks
 WHERE tenant_id = $1::uuid AND covered_to <= now() - interval '1 second' - make_interval(secs => $2::int / 1000.0)
   FOR UPDATE
