-- Queue caps and windows live in the database, edited by platform admins
-- (PATCH /api/v1/ops/queues/{queue}, the console's Queues page). A worker's
-- QUEUE_*_TENANT_CAP / QUEUE_*_WINDOW only seed a queue's values once: the
-- first worker to start on a database writes them where `configured_at` is
-- still NULL (the defaults the migrations inserted), and never again, so
-- workers started later with other environments change nothing.
ALTER TABLE "queues" ADD COLUMN "configured_at" TIMESTAMPTZ(3),
                     ADD COLUMN "updated_by_id" UUID;
