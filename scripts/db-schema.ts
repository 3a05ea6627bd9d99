// npm run db:schema – migrate a scratch database and write its schema to prisma/schema.sql
import { writeFile } from "node:fs/promises";
import pg from "pg";
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
  console.log("[db:schema] wrote prisma/schema.sql");
}

main().catch((err: Error) => {
  console.error(`[db:schema] failed: ${err.stack ?? err.message}`);
  process.exit(1);
});
