-- Records that the worker process $2 on host $1 exited ($3), unless it stopped cleanly.
UPDATE workers SET exited_at = now(), exit = $3
 WHERE host = $1 AND pid = $2 AND exited_at IS NULL AND state IN ('running', 'stopping', 'dead')
RETURNING id
