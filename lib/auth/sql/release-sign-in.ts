/**
 * Gives back a try reserved by reserve-sign-in.ts that succeeded: one failure
 * fewer, and the wait it set (if any) lifted when the key is back under its
 * threshold. `clear`: forget the key altogether (an account's count from one
 * address ends with a success there).
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export async function releaseSignIn(
  client: SqlClient,
  opts: { key: string; threshold: number; clear: boolean },
): Promise<void> {
  await run(client, sql.releaseSignIn, [opts.key, opts.threshold, opts.clear]);
}
