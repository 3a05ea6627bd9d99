-- Stream caps per user and per tenant (issue 32, item 5). An open stream's row was counted per
-- token, and a user may make many tokens: it is now keyed by its user (`principal_key` `user:<id>`)
-- and carries its tenant, so a tenant's streams are counted too. Rows of older keys age out as
-- their streams end or miss their re-checks.
ALTER TABLE "sse_streams" ADD COLUMN "tenant_id" UUID;
CREATE INDEX "sse_streams_tenant_id_idx" ON "sse_streams" ("tenant_id", "seen_at");
