-- A platform admin's API token may have no tenant: it acts as the admin, across tenants (the ops API).
-- AlterTable
ALTER TABLE "api_tokens" ALTER COLUMN "tenant_id" DROP NOT NULL;

