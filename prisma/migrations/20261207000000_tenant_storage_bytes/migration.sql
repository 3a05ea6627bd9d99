-- The bytes a tenant keeps, as running totals (issue 15): the export-bytes quota checked on every
-- create summed the tenant's live export files and uploads, O(files kept) on the hot path of every
-- `POST /api/v1/exports` (963 files: 3.5 ms of a create). Triggers keep the totals with the rows;
-- the gate reads one row, less the few files already past their expiry that the sweeper has not
-- marked deleted yet (found through a partial index), so the quota means what it meant.

CREATE TABLE "tenant_storage" (
    "tenant_id" UUID NOT NULL,
    -- live export files (deleted_at IS NULL), expired or not
    "export_bytes" BIGINT NOT NULL DEFAULT 0,
    -- live uploads (deleted_at IS NULL), their declared sizes
    "upload_bytes" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "tenant_storage_pkey" PRIMARY KEY ("tenant_id")
);
-- (No foreign key: a tenant's deletion cascades to its files, whose triggers then write here.)

CREATE INDEX "export_files_live_expiry_idx" ON "export_files" ("tenant_id", "expires_at") WHERE "deleted_at" IS NULL;

CREATE FUNCTION "conveyor_storage_bytes_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_tenant uuid;
  v_delta bigint := 0;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
    v_delta := v_delta - OLD.size;
    v_tenant := OLD.tenant_id;
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.deleted_at IS NULL THEN
    v_delta := v_delta + NEW.size;
    v_tenant := NEW.tenant_id;
  END IF;
  IF v_delta <> 0 THEN
    IF TG_TABLE_NAME = 'export_files' THEN
      INSERT INTO tenant_storage AS s (tenant_id, export_bytes) VALUES (v_tenant, v_delta)
      ON CONFLICT (tenant_id) DO UPDATE SET export_bytes = s.export_bytes + EXCLUDED.export_bytes;
    ELSE
      INSERT INTO tenant_storage AS s (tenant_id, upload_bytes) VALUES (v_tenant, v_delta)
      ON CONFLICT (tenant_id) DO UPDATE SET upload_bytes = s.upload_bytes + EXCLUDED.upload_bytes;
    END IF;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "export_files_storage_bytes" AFTER INSERT OR DELETE OR UPDATE OF "size", "deleted_at" ON "export_files"
  FOR EACH ROW EXECUTE FUNCTION conveyor_storage_bytes_changed();
CREATE TRIGGER "uploads_storage_bytes" AFTER INSERT OR DELETE OR UPDATE OF "size", "deleted_at" ON "uploads"
  FOR EACH ROW EXECUTE FUNCTION conveyor_storage_bytes_changed();

INSERT INTO tenant_storage (tenant_id, export_bytes, upload_bytes)
SELECT t.id,
       (SELECT coalesce(sum(size), 0) FROM export_files WHERE tenant_id = t.id AND deleted_at IS NULL),
       (SELECT coalesce(sum(size), 0) FROM uploads WHERE tenant_id = t.id AND deleted_at IS NULL)
  FROM tenants t;

-- The quota check, as before but for the bytes: the totals less the live files already expired.
CREATE OR REPLACE FUNCTION "conveyor_quota_refusal"(p_tenant uuid, p_user uuid, p_export_bytes boolean,
                                                    p_per_user integer, p_per_tenant integer, p_bytes bigint)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_per_user integer;
  v_per_tenant integer;
  v_bytes_limit bigint;
  v_used bigint;
BEGIN
  SELECT coalesce(quota_jobs_per_user, p_per_user), coalesce(quota_jobs_per_tenant, p_per_tenant),
         coalesce(quota_export_bytes, p_bytes)
    INTO v_per_user, v_per_tenant, v_bytes_limit
    FROM tenants WHERE id = p_tenant;
  IF NOT FOUND THEN RETURN NULL; END IF;
  IF p_user IS NOT NULL THEN
    SELECT count(*) INTO v_used FROM (
      SELECT 1 FROM jobs WHERE created_by_id = p_user
         AND status IN ('scheduled', 'queued', 'running', 'retrying') AND parent_id IS NULL
       LIMIT v_per_user) s;
    IF v_used >= v_per_user THEN
      RETURN jsonb_build_object('quota', 'jobs_per_user', 'limit', v_per_user, 'used', v_used);
    END IF;
  END IF;
  SELECT count(*) INTO v_used FROM (
    SELECT 1 FROM jobs WHERE tenant_id = p_tenant
       AND status IN ('scheduled', 'queued', 'running', 'retrying') AND parent_id IS NULL
     LIMIT v_per_tenant) s;
  IF v_used >= v_per_tenant THEN
    RETURN jsonb_build_object('quota', 'jobs_per_tenant', 'limit', v_per_tenant, 'used', v_used);
  END IF;
  IF p_export_bytes THEN
    -- The bytes the tenant keeps: its live export files that have not expired, and its live uploads.
    v_used := coalesce((SELECT export_bytes + upload_bytes FROM tenant_storage WHERE tenant_id = p_tenant), 0)
            - (SELECT coalesce(sum(size), 0) FROM export_files
                WHERE tenant_id = p_tenant AND deleted_at IS NULL AND expires_at <= now());
    IF v_used >= v_bytes_limit THEN
      RETURN jsonb_build_object('quota', 'export_bytes', 'limit', v_bytes_limit, 'used', v_used);
    END IF;
  END IF;
  RETURN NULL;
END $$;
