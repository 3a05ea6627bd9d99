// npm run db:migrate – apply Prisma migrations and graphile-worker's schema
import { openDatabase, migrate } from "./database";

async function main() {
  const database = await openDatabase();
  try {
    await migrate(database.url);
    console.log("[migrate] database is up to date");
  } finally {
    await database.stop();
  }
}

main().catch((err: Error) => {
  console.error(`[migrate] failed: ${err.message}`);
  process.exit(1);
});
