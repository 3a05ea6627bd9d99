-- A restarted worker says so: `npm start` restarts a worker that exits (with
-- backoff, however often it dies) and tells the new one how many times it has
-- restarted the pool and how the previous worker ended (SIGKILL, code 1,
-- declared dead). The worker records both in its registry row, for the
-- console's Workers page.

-- AlterTable
ALTER TABLE "workers" ADD COLUMN "restarts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN "previous_exit" TEXT;
