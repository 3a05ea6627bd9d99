/**
 * Reserves one sign-in try under a throttle key, before its password is
 * checked: counted as a failure at once (a success gives it back, see
 * release-sign-in.ts), so a concurrent burst cannot all pass a check before the
 * first failure is written — the row's lock orders them. A key whose wait is in
 * force reserves nothing (null: refused). Past `threshold` failures within
 * `windowS`, the try that counts sets the wait: `baseS` doubling per further
 * failure, at most `capS`. A key whose window has passed starts again at 1.
 */
import type { SqlClient } from "../../db";
import { run } from "../../sql";
import * as sql from "./statements";

export type ThrottlePolicy = { key: string; threshold: number; windowS: number; baseS: number; capS: number };

export async function reserveSignIn(
  client: SqlClient,
  p: ThrottlePolicy,
): Promise<{ failures: number; waitSeconds: number } | null> {
  const { rows } = await run(client, sql.reserveSignIn, [p.key, p.threshold, p.windowS, p.baseS, p.capS]);
  return rows[0] ?? null;
}
