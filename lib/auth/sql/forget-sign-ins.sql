-- Throttle keys untouched for a day and with no wait in force.
-- @prepare
DELETE FROM sign_in_throttle WHERE first_at < now() - interval '1 day'
   AND (locked_until IS NULL OR locked_until < now())
