-- How many of member $1's notifications in tenant $2 are unread (the bell's number).
SELECT count(*)::int AS "unread!" FROM notifications
 WHERE user_id = $1::uuid AND tenant_id = $2::uuid AND read_at IS NULL
