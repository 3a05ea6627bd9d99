-- Seconds until the longest wait among the throttle keys $1 ends (null: none in force).
-- @prepare
SELECT ceil(max(extract(epoch FROM locked_until - now())))::int AS wait FROM sign_in_throttle
 WHERE key = ANY($1::text[]) AND locked_until > now()
