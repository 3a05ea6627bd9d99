// npm run sql:generate – migrate a scratch database and write each lib/**/sql/ folder's statements.ts
// from its .sql files (scripts/sql-statements.ts; lib/sql.ts says why).
import { writeFile } from "node:fs/promises";
import pg from "pg";
import { logger } from "@/lib/log";
import { withScratchDatabase } from "./database";
import { generateStatements } from "./sql-statements";

async function main(): Promise<void> {
  const written = await withScratchDatabase("conveyor_sql", async ({ url }) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const files = await generateStatements(client, process.cwd());
      for (const [file, text] of files) await writeFile(file, text);
      return [...files.keys()];
    } finally {
      await client.end();
    }
  });
  logger.info(`[sql:generate] wrote ${written.join(", ")}`);
}

main().catch((err: Error) => {
  logger.fatal({ err }, `[sql:generate] failed: ${err.message}`);
  process.exit(1);
});
