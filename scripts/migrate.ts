// npm run db:migrate – apply Prisma migrations and graphile-worker's schema
import { directDatabaseUrl } from "@/lib/env";
import { openDatabase, migrate } from "./database";

async function main() {
  const database = await openDatabase();
  try {
    // Prisma's migrate takes a session advisory lock: DATABASE_DIRECT_URL when set (docs/DEPLOY.md).
    await migrate(directDatabaseUrl());
    console.log("[migrate] database is up to date");
  } finally {
    await database.stop();
  }
}

main().catch((err: Error) => {
  console.error(`[migrate] failed: ${err.message}`);
  process.exit(1);
});
