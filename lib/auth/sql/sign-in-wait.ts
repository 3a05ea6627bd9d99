/** Seconds until the longest wait among throttle keys ends (0: none in force). */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function signInWaitOf(client: SqlClient, keys: string[]): Promise<number> {
  const { rows } = await run(client, sql.signInWait, [keys]);
  return Math.max(0, rows[0]?.wait ?? 0);
}
