// npm run db:migrate – apply Prisma migrations, re-apply prisma/sql (functions and triggers), and graphile-worker's schema
import { directDatabaseUrl } from "@/lib/env";
import { logger } from "@/lib/log";
import { openDatabase, migrate } from "./database";

async function main() {
  const database = await openDatabase();
  try {
    // Prisma's migrate takes a session advisory lock: DATABASE_DIRECT_URL when set (docs/DEPLOY.md).
    await migrate(directDatabaseUrl());
    logger.info("[migrate] database is up to date");
  } finally {
    await database.stop();
  }
}

main().catch((err: Error) => {
  logger.fatal({ err }, `[migrate] failed: ${err.message}`);
  process.exit(1);
});
