-- Gives back a reserved try: $1 key, $2 threshold, $3 clear (forget the key).
-- @prepare
UPDATE sign_in_throttle SET
   failures = CASE WHEN $3::boolean THEN 0 ELSE greatest(failures - 1, 0) END,
   locked_until = CASE WHEN $3::boolean OR failures - 1 < $2::int THEN NULL ELSE locked_until END
 WHERE key = $1
