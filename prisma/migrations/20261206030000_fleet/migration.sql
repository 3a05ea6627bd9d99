-- Queue caps and windows live in the database, edited by platform admins
-- (PATCH /api/v1/ops/queues/{queue}, the console's Queues page). A worker's
-- QUEUE_*_TENANT_CAP / QUEUE_*_WINDOW only seed a queue's values once: the
-- first worker to start on a database writes them where `configured_at` is
-- still NULL (the defaults the migrations inserted), and never again, so
-- workers started later with other environments change nothing.
ALTER TABLE "queues" ADD COLUMN "configured_at" TIMESTAMPTZ(3),
                     ADD COLUMN "updated_by_id" UUID;

-- tus's lock on an upload, fleet-wide: the holder of one upload's requests (a HEAD, a PATCH),
-- whichever app process serves it. A lease the holder renews while it works, so a dead process's
-- lock expires; a waiter asks the holder to let go (`release_requested_at`), as tus's in-memory
-- locker does within one process. Unlogged: locks need not survive a crash of Postgres.
CREATE UNLOGGED TABLE "upload_locks" (
    "upload_id" TEXT NOT NULL,
    "holder" UUID NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "release_requested_at" TIMESTAMPTZ(3),
    CONSTRAINT "upload_locks_pkey" PRIMARY KEY ("upload_id")
);
