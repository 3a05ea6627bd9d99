-- The mail server took notification $1's mail.
UPDATE notifications SET mailed_at = now() WHERE id = $1::uuid AND mailed_at IS NULL
