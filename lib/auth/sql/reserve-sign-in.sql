-- Reserves one sign-in try: $1 key, $2 threshold, $3 window (s), $4 base wait (s), $5 cap (s).
-- @prepare
INSERT INTO sign_in_throttle AS t (key, failures, first_at, locked_until)
VALUES ($1, 1, now(), CASE WHEN 1 >= $2::int THEN now() + make_interval(secs => least($5::float8, $4::float8)) END)
ON CONFLICT (key) DO UPDATE SET
  failures = CASE WHEN t.first_at < now() - make_interval(secs => $3::int) THEN 1 ELSE t.failures + 1 END,
  first_at = CASE WHEN t.first_at < now() - make_interval(secs => $3::int) THEN now() ELSE t.first_at END,
  locked_until = CASE
    WHEN (CASE WHEN t.first_at < now() - make_interval(secs => $3::int) THEN 1 ELSE t.failures + 1 END) >= $2::int
    THEN now() + make_interval(secs => least($5::float8, $4::float8 * power(2::float8,
      (CASE WHEN t.first_at < now() - make_interval(secs => $3::int) THEN 1 ELSE t.failures + 1 END) - $2::int)))
    END
WHERE t.locked_until IS NULL OR t.locked_until <= now()
RETURNING failures, coalesce(ceil(extract(epoch FROM locked_until - now())), 0)::int AS "waitSeconds!"
