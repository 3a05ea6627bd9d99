// npm run db:migrate – apply Prisma migrations and graphile-worker's schema
import { logger } from "@/lib/log";
import { openDatabase, migrate } from "./database";

async function main() {
  const database = await openDatabase();
  try {
    await migrate(database.url);
    logger.info("[migrate] database is up to date");
  } finally {
    await database.stop();
  }
}

main().catch((err: Error) => {
  logger.fatal({ err }, `[migrate] failed: ${err.message}`);
  process.exit(1);
});
