/** Forgets throttle keys that no longer matter: untouched for a day and with no wait in force. */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function forgetOldSignIns(client: SqlClient): Promise<void> {
  await run(client, sql.forgetSignIns, []);
}
