-- An open stream: $1 its id, $2 its principal key, $3 its tenant.
INSERT INTO sse_streams (id, principal_key, tenant_id) VALUES ($1, $2, $3)
