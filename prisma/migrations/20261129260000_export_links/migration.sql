-- Short-lived download links to export files (only the token's sha256 is stored); expiry is enforced
-- on every download and by the cleanup the workers run.

-- CreateTable
CREATE TABLE "export_links" (
    "id" UUID NOT NULL,
    "file_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "created_by_id" UUID,
    "token_hash" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),
    "download_count" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "export_links_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "export_links_token_hash_key" ON "export_links"("token_hash");

-- CreateIndex
CREATE INDEX "export_links_file_id_idx" ON "export_links"("file_id");

-- AddForeignKey
ALTER TABLE "export_links" ADD CONSTRAINT "export_links_file_id_fkey" FOREIGN KEY ("file_id") REFERENCES "export_files"("id") ON DELETE CASCADE ON UPDATE CASCADE;

