-- Marks member $1's unread notifications in tenant $2 read: those of $3, or all when $3 is null.
UPDATE notifications SET read_at = now()
 WHERE user_id = $1::uuid AND tenant_id = $2::uuid AND read_at IS NULL
   AND ($3::uuid[] IS NULL OR id = ANY ($3::uuid[]))
