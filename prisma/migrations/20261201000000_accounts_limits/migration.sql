-- Safe to put in front of users: accounts by invitation, sign-in throttling,
-- API rate limits, quotas, bounded SSE streams, scoped and expiring tokens.

-- Invitations: a link with a random token (only its sha256 is kept), one use, 7 days.
-- A platform admin's invite has no tenant (`platform_admin`); a tenant invite names
-- the role the invited user gets there.
CREATE TABLE "invites" (
    "id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "tenant_id" UUID,
    "role" "membership_role",
    "platform_admin" BOOLEAN NOT NULL DEFAULT false,
    "token_hash" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "accepted_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),
    "created_by_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "invites_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "invites_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "invites_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE,
    CONSTRAINT "invites_role_or_admin" CHECK (("tenant_id" IS NULL) = ("role" IS NULL))
);
CREATE UNIQUE INDEX "invites_token_hash_key" ON "invites"("token_hash");
CREATE INDEX "invites_tenant_id_idx" ON "invites"("tenant_id");

ALTER TABLE "users" ADD COLUMN "password_changed_at" TIMESTAMPTZ(3);

-- Failed sign-ins, per account and address (`acct:<email> ip:<address>`) and per address
-- (`ip:<address>`): shared by every app process. A key locks for a while past its threshold;
-- a success clears its account key. Unlogged: a crash forgets them, which only forgives.
CREATE UNLOGGED TABLE "sign_in_throttle" (
    "key" TEXT NOT NULL,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "first_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "locked_until" TIMESTAMPTZ(3),
    CONSTRAINT "sign_in_throttle_pkey" PRIMARY KEY ("key")
);

-- API rate limits, fleet-wide: one row per principal and budget holding its theoretical
-- arrival time (GCRA), updated in one statement per request. Unlogged, as above.
CREATE UNLOGGED TABLE "rate_limits" (
    "key" TEXT NOT NULL,
    "tat" TIMESTAMPTZ(6) NOT NULL,
    CONSTRAINT "rate_limits_pkey" PRIMARY KEY ("key")
);

-- Open SSE streams, fleet-wide, to hold each principal to a number of them; a stream
-- refreshes `seen_at` while open, so a dead process's rows age out.
CREATE UNLOGGED TABLE "sse_streams" (
    "id" UUID NOT NULL,
    "principal_key" TEXT NOT NULL,
    "opened_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "sse_streams_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "sse_streams_principal_key_idx" ON "sse_streams"("principal_key", "seen_at");

-- API tokens: an optional expiry and scopes (`read`, `write`).
ALTER TABLE "api_tokens" ADD COLUMN "expires_at" TIMESTAMPTZ(3),
  ADD COLUMN "scopes" TEXT[] NOT NULL DEFAULT ARRAY['read', 'write']::TEXT[];

-- A tenant's quotas, set by platform admins (null: the platform default).
ALTER TABLE "tenants" ADD COLUMN "quota_jobs_per_user" INTEGER,
  ADD COLUMN "quota_jobs_per_tenant" INTEGER,
  ADD COLUMN "quota_export_bytes" BIGINT;

-- Counting a user's and a tenant's unfinished jobs for their quotas: index probes that
-- stop at the limit. (Children — an export's parts — belong to their parent's count.)
CREATE INDEX "jobs_open_by_user_idx" ON "jobs"("created_by_id")
  WHERE "parent_id" IS NULL AND "status" IN ('scheduled', 'queued', 'running', 'retrying');
CREATE INDEX "jobs_open_by_tenant_idx" ON "jobs"("tenant_id")
  WHERE "parent_id" IS NULL AND "status" IN ('scheduled', 'queued', 'running', 'retrying');

-- A JSON document without the keys a task marks sensitive, at any depth: what the
-- operator console's search looks in (it must never match inside a secret).
CREATE FUNCTION "conveyor_jsonb_strip_keys"(doc jsonb, keys text[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE jsonb_typeof(doc)
    WHEN 'object' THEN coalesce(
      (SELECT jsonb_object_agg(e.k, conveyor_jsonb_strip_keys(e.v, keys))
         FROM jsonb_each(doc) AS e(k, v) WHERE NOT e.k = ANY(keys)), '{}'::jsonb)
    WHEN 'array' THEN coalesce(
      (SELECT jsonb_agg(conveyor_jsonb_strip_keys(a.v, keys) ORDER BY a.i)
         FROM jsonb_array_elements(doc) WITH ORDINALITY AS a(v, i)), '[]'::jsonb)
    ELSE doc END
$$;
