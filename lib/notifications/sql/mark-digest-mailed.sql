-- The mail server took digest $1's mail.
UPDATE notification_digests SET mailed_at = now() WHERE id = $1::uuid AND mailed_at IS NULL
