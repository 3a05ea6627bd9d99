/** Seconds until the longest wait among throttle keys ends (0: none in force). */
import { prepared, type SqlClient } from "../../db";

export async function signInWaitOf(client: SqlClient, keys: string[]): Promise<number> {
  const { rows } = await client.query<{ wait: number | null }>({
    ...prepared(`SELECT ceil(max(extract(epoch FROM locked_until - now())))::int AS wait FROM sign_in_throttle
     WHERE key = ANY($1::text[]) AND locked_until > now()`),
    values: [keys],
  });
  return Math.max(0, rows[0]?.wait ?? 0);
}
