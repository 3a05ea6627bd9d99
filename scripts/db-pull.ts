/**
 * prisma/schema.prisma is generated from the migrated database (`prisma db pull`), so it covers
 * every table. Re-introspection keeps the committed file's model and field names (@@map, @map),
 * relation names and /// comments: a new table's model gets its table's name until renamed here
 * (with @@map), and a rename is kept by the next pull.
 *   npm run db:pull     migrates a scratch database and rewrites prisma/schema.prisma from it
 * tests/integration/schema-prisma.test.ts fails when the file is not what the database gives.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { writeFile } from "node:fs/promises";
import { logger } from "@/lib/log";
import { withScratchDatabase } from "./database";

const require = createRequire(__filename);

/** The schema `prisma db pull` makes from the database at `url`, over the committed schema.prisma. */
export async function pullSchema(url: string): Promise<string> {
  const prismaCli = require.resolve("prisma/build/index.js");
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [prismaCli, "db", "pull", "--print"], {
      env: { ...process.env, DATABASE_URL: url, CHECKPOINT_DISABLE: "1", PRISMA_HIDE_UPDATE_MESSAGE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(out) : reject(new Error(`prisma db pull failed (exit ${code}):\n${err}${out}`)),
    );
  });
  // --print wraps the schema in the CLI's notices: keep from the generator to the last block's end.
  const start = output.indexOf("generator client {");
  const end = output.lastIndexOf("\n}");
  if (start < 0 || end < start) throw new Error(`prisma db pull printed no schema:\n${output}`);
  return `${output.slice(start, end + 2)}\n`;
}

async function main(): Promise<void> {
  await withScratchDatabase("conveyor_pull", async ({ url }) => {
    await writeFile("prisma/schema.prisma", await pullSchema(url));
  });
  logger.info("[db:pull] wrote prisma/schema.prisma (run `npx prisma generate` next)");
}

if (require.main === module) {
  main().catch((err: Error) => {
    logger.fatal({ err }, `[db:pull] failed: ${err.message}`);
    process.exit(1);
  });
}
