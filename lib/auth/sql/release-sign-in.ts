/**
 * Gives back a try reserved by reserve-sign-in.ts that succeeded: one failure
 * fewer, and the wait it set (if any) lifted when the key is back under its
 * threshold. `clear`: forget the key altogether (an account's count from one
 * address ends with a success there).
 */
import { prepared, type SqlClient } from "../../db";

export async function releaseSignIn(
  client: SqlClient,
  opts: { key: string; threshold: number; clear: boolean },
): Promise<void> {
  await client.query({
    ...prepared(`UPDATE sign_in_throttle SET
       failures = CASE WHEN $3::boolean THEN 0 ELSE greatest(failures - 1, 0) END,
       locked_until = CASE WHEN $3::boolean OR failures - 1 < $2::int THEN NULL ELSE locked_until END
     WHERE key = $1`),
    values: [opts.key, opts.threshold, opts.clear],
  });
}
