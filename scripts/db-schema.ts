// npm run db:schema – migrate a scratch database and write its schema to prisma/schema.sql
import { writeFile } from "node:fs/promises";
import pg from "pg";
import { logger } from "@/lib/log";
import { withScratchDatabase } from "./database";
import { dumpSchema } from "./schema-dump";

async function main(): Promise<void> {
  await withScratchDatabase("conveyor_schema", async ({ url }) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await writeFile("prisma/schema.sql", await dumpSchema(client));
    } finally {
      await client.end();
    }
  });
  logger.info("[db:schema] wrote prisma/schema.sql");
}

main().catch((err: Error) => {
  logger.fatal({ err }, `[db:schema] failed: ${err.message}`);
  process.exit(1);
});
