import { execFileSync } from "node:child_process";
import path from "node:path";
import pg from "pg";

export const DEMO_PASSWORD = "conveyor-demo";
export const storageStateFor = (who: string) => path.join("test-results", ".auth", `${who}.json`);

/** A query against the database the app under test uses. */
export async function sql<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** The number a `SELECT count(*) AS n …` returns. */
export async function sqlCount(text: string, values: unknown[] = []): Promise<number> {
  const [row] = await sql<{ n: string }>(text, values);
  return Number(row?.n ?? NaN);
}

/** A fresh API token for a demo user, made by the real CLI. */
export function cliToken(email: string): string {
  const out = execFileSync(
    process.execPath,
    ["--import", "tsx", "scripts/cli.ts", "token", "create", "--email", email, "--name", "e2e"],
    {
      env: process.env,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  return out.trim().split("\n").at(-1)!.trim();
}

/** Counts CSV records (quoted fields may hold newlines). */
export function countCsvRecords(text: string): number {
  let rows = 0;
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    else if (ch === "\n" && !quoted) rows++;
  }
  return rows;
}

export { unzip } from "../helpers/zip";
