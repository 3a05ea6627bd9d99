-- Uploads: files sent with the tus 1.0 resumable upload protocol (/api/v1/uploads),
-- the first stage of an import. The id is the tus upload id (random, URL-safe);
-- the bytes live in storage (local disk or S3), this row says whose they are,
-- how far they arrived and which import took them. Live uploads (deleted_at
-- NULL) count against the tenant's stored-bytes quota with their declared size.

CREATE TABLE "uploads" (
    "id" TEXT NOT NULL,
    "tenant_id" UUID NOT NULL,
    "created_by_id" UUID,
    "filename" TEXT NOT NULL,
    "content_type" TEXT,
    -- The declared Upload-Length, in bytes.
    "size" BIGINT NOT NULL,
    -- The offset last seen (bytes received); the store's own offset is the truth while bytes arrive.
    "received" BIGINT NOT NULL DEFAULT 0,
    "completed_at" TIMESTAMPTZ(3),
    -- Bytes sent, resumed, or read by an import: the cleanup removes uploads unused for UPLOAD_UNUSED_HOURS.
    "last_used_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    -- The import job that claimed the upload.
    "import_job_id" UUID,
    "deleted_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "uploads_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "uploads_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "uploads_created_by_id_fkey" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE CASCADE,
    CONSTRAINT "uploads_import_job_id_fkey" FOREIGN KEY ("import_job_id") REFERENCES "jobs"("id") ON DELETE SET NULL ON UPDATE CASCADE
        -- Checked at commit: an import claims its upload in the transaction that inserts its job, before the insert.
        DEFERRABLE INITIALLY DEFERRED,
    CONSTRAINT "uploads_size_check" CHECK ("size" >= 0 AND "received" >= 0 AND "received" <= "size")
);
-- A tenant's live uploads, newest first (the list; the quota's sum).
CREATE INDEX "uploads_tenant_id_created_at_idx" ON "uploads"("tenant_id", "created_at" DESC) WHERE "deleted_at" IS NULL;
-- The cleanup: live uploads by last use, and those an import claimed (its job may have ended).
CREATE INDEX "uploads_last_used_at_idx" ON "uploads"("last_used_at") WHERE "deleted_at" IS NULL;
CREATE INDEX "uploads_import_job_id_idx" ON "uploads"("import_job_id") WHERE "import_job_id" IS NOT NULL AND "deleted_at" IS NULL;
