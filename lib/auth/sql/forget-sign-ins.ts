/** Forgets throttle keys that no longer matter: untouched for a day and with no wait in force. */
import { prepared, type SqlClient } from "../../db";

export async function forgetOldSignIns(client: SqlClient): Promise<void> {
  await client.query({
    ...prepared(`DELETE FROM sign_in_throttle WHERE first_at < now() - interval '1 day'
       AND (locked_until IS NULL OR locked_until < now())`),
    values: [],
  });
}
